use serde_json::json;

use super::*;
use crate::content::{TextContent, ThinkingContent, ToolCall};
use crate::message::ToolResultMessage;

fn gemini() -> Model {
    let mut m = Model::new("google", "gemini-2.5-pro");
    m.api = API.into();
    m.reasoning = true;
    m.input = vec!["text".into(), "image".into()];
    m
}

fn answer(model: &str, content: Vec<ContentBlock>) -> Message {
    let mut a = AssistantMessage::empty("google", model);
    a.api = Some(API.into());
    a.content = content;
    a.stop_reason = StopReason::ToolUse;
    Message::Assistant(a)
}

fn contents(model: &Model, messages: Vec<Message>) -> Value {
    let context = Context {
        system_prompt: None,
        messages,
        tools: Vec::new(),
    };
    serde_json::to_value(convert_contents(model, API, &context)).unwrap()
}

fn signed_call(id: &str, name: &str, sig: Option<&str>) -> ContentBlock {
    let mut c = ToolCall::new(id, name, json!({"path": "a"}));
    c.thought_signature = sig.map(str::to_string);
    ContentBlock::ToolCall(c)
}

fn transcript(model_id: &str) -> Vec<Message> {
    vec![
        Message::user("hi"),
        answer(
            model_id,
            vec![
                ContentBlock::Thinking(ThinkingContent {
                    thinking: "plan".into(),
                    thinking_signature: Some("c2lnMQ==".into()),
                }),
                ContentBlock::Text(TextContent {
                    text: "Reading.".into(),
                    text_signature: Some("c2lnMg".into()),
                }),
                signed_call("read_1712_1", "read", Some("c2lnMw==")),
                signed_call("srv-id", "ls", None),
            ],
        ),
        Message::ToolResult(ToolResultMessage::new(
            "read_1712_1",
            "read",
            vec![ContentBlock::text("file")],
        )),
        Message::ToolResult({
            let mut r = ToolResultMessage::new("srv-id", "ls", vec![ContentBlock::text("no")]);
            r.is_error = true;
            r
        }),
    ]
}

#[test]
fn same_model_gets_its_signatures_and_server_ids_back() {
    assert_eq!(
        contents(&gemini(), transcript("gemini-2.5-pro")),
        json!([
            {"role": "user", "parts": [{"text": "hi"}]},
            {"role": "model", "parts": [
                {"text": "plan", "thought": true, "thoughtSignature": "c2lnMQ=="},
                {"text": "Reading.", "thoughtSignature": "c2lnMg"},
                {"functionCall": {"name": "read", "args": {"path": "a"}}, "thoughtSignature": "c2lnMw=="},
                {"functionCall": {"name": "ls", "args": {"path": "a"}, "id": "srv-id"}},
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "read", "response": {"output": "file"}}},
                {"functionResponse": {"name": "ls", "response": {"error": "no"}, "id": "srv-id"}},
            ]},
        ])
    );
}

#[test]
fn another_models_thinking_is_text_and_signatures_stay_home() {
    let got = contents(&gemini(), transcript("gemini-2.5-flash"));
    assert_eq!(
        got[1]["parts"],
        json!([
            {"text": "plan"},
            {"text": "Reading."},
            {"functionCall": {"name": "read", "args": {"path": "a"}}},
            {"functionCall": {"name": "ls", "args": {"path": "a"}, "id": "srv-id"}},
        ])
    );
    // Gemini 3 gets the placeholder signature on unsigned calls.
    let mut g3 = gemini();
    g3.id = "gemini-3-pro-preview".into();
    let got = contents(&g3, transcript("gemini-2.5-pro"));
    assert_eq!(got[1]["parts"][2]["thoughtSignature"], SKIP_SIGNATURE);
}

#[test]
fn signatures_that_are_not_base64_are_dropped() {
    assert_eq!(valid_signature(Some("abc+/_-==")), Some("abc+/_-==".into()));
    assert_eq!(valid_signature(Some("{\"v\":1}")), None);
    assert_eq!(valid_signature(Some("")), None);
}

#[test]
fn made_up_ids_are_recognised() {
    let id = new_call_id("read_file");
    assert!(made_up_id(&id, "read_file"), "{id}");
    assert!(!made_up_id("abc123", "read_file"));
    assert!(!made_up_id("read_file_12", "read_file"));
    assert_ne!(new_call_id("x"), new_call_id("x"));
}

#[test]
fn thinking_levels_follow_pi() {
    let budget = |m: &str, e| thinking_config(m, e, None).thinking_budget;
    let level = |m: &str, e| thinking_config(m, e, None).thinking_level;
    use ReasoningEffort as E;
    assert_eq!(budget("gemini-2.5-pro", E::Minimal), Some(128));
    assert_eq!(budget("gemini-2.5-pro", E::High), Some(32_768));
    assert_eq!(budget("gemini-2.5-flash", E::Xhigh), Some(24_576));
    assert_eq!(budget("gemini-2.5-flash-lite", E::Medium), Some(8_192));
    assert_eq!(budget("gemini-2.0-flash-thinking", E::Low), Some(-1));
    assert_eq!(level("gemini-3-pro-preview", E::Low), Some("LOW"));
    assert_eq!(level("gemini-3-pro-preview", E::Medium), Some("HIGH"));
    assert_eq!(level("gemini-3-flash-preview", E::Minimal), Some("MINIMAL"));
}

#[test]
fn budgets_a_user_set_replace_the_gemini_defaults_up_to_the_models_top() {
    use crate::thinking::ThinkingBudgets;
    use ReasoningEffort as E;
    let custom = ThinkingBudgets {
        minimal: 512,
        low: 1000,
        medium: 4000,
        high: 100_000,
    };
    let budget = |m: &str, e| thinking_config(m, e, Some(&custom)).thinking_budget;
    assert_eq!(budget("gemini-2.5-flash", E::Minimal), Some(512));
    assert_eq!(budget("gemini-2.5-pro", E::Medium), Some(4000));
    assert_eq!(budget("gemini-2.5-flash", E::High), Some(24_576));
    // Models without a budget scale and Gemini 3's levels are unchanged.
    assert_eq!(budget("gemini-2.0-flash-thinking", E::Low), Some(-1));
    let gemini3 = thinking_config("gemini-3-pro-preview", E::Low, Some(&custom));
    assert_eq!(gemini3.thinking_level, Some("LOW"));
}

#[test]
fn vertex_url() {
    let c = GoogleClient::vertex(vertex_base_url("p", "global"), None);
    assert_eq!(
        c.url("gemini-2.5-pro"),
        "https://aiplatform.googleapis.com/v1/projects/p/locations/global/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    );
    assert_eq!(c.api(), VERTEX_API);
}

#[test]
fn legacy_parameters_are_lowered() {
    let tool = crate::Tool::new(
        "read",
        "Read",
        json!({"type": "object", "properties": {"n": {"type": ["integer", "null"]}}, "additionalProperties": false}),
    );
    let context = Context {
        system_prompt: Some("sys".into()),
        messages: vec![Message::user("hi")],
        tools: vec![tool],
    };
    let client = GoogleClient::new(GOOGLE_BASE_URL, None);
    let body = client.request_body(&gemini(), &context, &StreamOptions::default());
    assert!(body["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"].is_object());
    assert_eq!(
        body["systemInstruction"],
        json!({"parts": [{"text": "sys"}]})
    );
    assert!(body.get("generationConfig").is_none());
    let body = client.with_legacy_parameters(true).request_body(
        &gemini(),
        &context,
        &StreamOptions::default(),
    );
    assert_eq!(
        body["tools"][0]["functionDeclarations"][0]["parameters"],
        json!({"type": "object", "properties": {"n": {"type": "integer", "nullable": true}}})
    );
    assert!(refuses_a_schema_field(
        "HTTP 400: Invalid JSON payload received. Unknown name \"parametersJsonSchema\""
    ));
}
