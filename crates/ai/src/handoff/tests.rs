use std::borrow::Cow;

use serde_json::json;

use super::*;
use crate::content::ThinkingContent;

fn answer(provider: &str, api: &str, model: &str, content: Vec<ContentBlock>) -> Message {
    let mut a = AssistantMessage::empty(provider, model);
    a.api = Some(api.into());
    a.content = content;
    if a.tool_calls().next().is_some() {
        a.stop_reason = StopReason::ToolUse;
    }
    Message::Assistant(a)
}

fn thinking(text: &str, signature: Option<&str>) -> ContentBlock {
    ContentBlock::Thinking(ThinkingContent {
        thinking: text.into(),
        thinking_signature: signature.map(str::to_string),
    })
}

fn call(id: &str) -> ContentBlock {
    ContentBlock::ToolCall(ToolCall::new(id, "read", json!({"path": "a"})))
}

fn result(id: &str) -> Message {
    Message::ToolResult(ToolResultMessage::new(
        id,
        "read",
        vec![ContentBlock::text("contents")],
    ))
}

fn claude() -> Model {
    Model::new("anthropic", "claude-sonnet-4-5")
}

fn assistant(m: &Message) -> &AssistantMessage {
    match m {
        Message::Assistant(a) => a,
        other => panic!("not an assistant message: {other:?}"),
    }
}

fn result_of(m: &Message) -> &ToolResultMessage {
    match m {
        Message::ToolResult(r) => r,
        other => panic!("not a tool result: {other:?}"),
    }
}

#[test]
fn the_same_models_transcript_passes_unchanged_and_uncopied() {
    let transcript = vec![
        Message::user("hi"),
        answer(
            "anthropic",
            "anthropic-messages",
            "claude-sonnet-4-5",
            vec![thinking("hmm", Some("sig")), call("toolu_01")],
        ),
        result("toolu_01"),
    ];
    let fitted = fit_transcript(&transcript, &claude(), "anthropic-messages");
    assert_eq!(fitted.len(), 3);
    assert!(fitted.iter().all(|m| matches!(m, Cow::Borrowed(_))));
}

#[test]
fn another_models_thinking_becomes_text_and_loses_its_signatures() {
    let mut gemini_call = ToolCall::new("read_1_1", "read", json!({}));
    gemini_call.thought_signature = Some("c2ln".into());
    let transcript = vec![
        Message::user("hi"),
        answer(
            "anthropic",
            "anthropic-messages",
            "claude-opus-4-1",
            vec![
                thinking("first I look", Some("opus-signature")),
                thinking("   ", Some("empty-but-signed")),
                ContentBlock::ToolCall(gemini_call),
            ],
        ),
        result("read_1_1"),
    ];
    let fitted = fit_transcript(&transcript, &claude(), "anthropic-messages");
    let a = assistant(&fitted[1]);
    assert_eq!(a.content.len(), 2, "{:?}", a.content);
    assert_eq!(a.content[0].as_text(), Some("first I look"));
    assert_eq!(a.content[1].as_tool_call().unwrap().thought_signature, None);
    // The same provider and model through another API is another model.
    let fitted = fit_transcript(&transcript, &claude(), "bedrock-converse-stream");
    assert_eq!(
        assistant(&fitted[1]).content[0].as_text(),
        Some("first I look")
    );
}

#[test]
fn failed_and_cancelled_answers_are_left_out_with_their_results() {
    let mut failed = AssistantMessage::empty("anthropic", "claude-sonnet-4-5");
    failed.api = Some("anthropic-messages".into());
    failed.stop_reason = StopReason::Error;
    failed.content = vec![ContentBlock::text("half an ans"), call("toolu_lost")];
    let mut aborted = failed.clone();
    aborted.stop_reason = StopReason::Aborted;
    let transcript = vec![
        Message::user("hi"),
        Message::Assistant(failed),
        result("toolu_lost"),
        Message::Assistant(aborted),
        Message::user("again"),
    ];
    let fitted = fit_transcript(&transcript, &claude(), "anthropic-messages");
    let roles: Vec<&str> = fitted
        .iter()
        .map(|m| match m.as_ref() {
            Message::User(_) => "user",
            Message::Assistant(_) => "assistant",
            Message::ToolResult(_) => "toolResult",
        })
        .collect();
    assert_eq!(roles, ["user", "user"]);
}

#[test]
fn calls_without_results_are_answered_before_the_conversation_goes_on() {
    let transcript = vec![
        Message::user("hi"),
        answer(
            "openai",
            "openai-completions",
            "gpt-4o",
            vec![call("call_a"), call("call_b")],
        ),
        result("call_b"),
        Message::user("never mind"),
        answer(
            "openai",
            "openai-completions",
            "gpt-4o",
            vec![call("call_c")],
        ),
    ];
    let model = Model::new("openai", "gpt-4o");
    let fitted = fit_transcript(&transcript, &model, "openai-completions");
    assert_eq!(fitted.len(), 7);
    assert_eq!(result_of(&fitted[2]).tool_call_id, "call_b");
    let closed = result_of(&fitted[3]);
    assert_eq!(
        (closed.tool_call_id.as_str(), closed.is_error, closed.text()),
        ("call_a", true, NO_RESULT.to_string())
    );
    assert!(matches!(fitted[4].as_ref(), Message::User(_)));
    // The last answer's call is closed too: no API takes a dangling call.
    assert_eq!(result_of(&fitted[6]).tool_call_id, "call_c");
}

#[test]
fn responses_ids_are_cleaned_for_anthropic_and_the_results_follow() {
    let long = format!("call_{}|fc_{}", "x".repeat(40), "y".repeat(40));
    let transcript = vec![
        Message::user("hi"),
        answer(
            "openai",
            "openai-responses",
            "gpt-5",
            vec![call("call_1|fc_1"), call(&long)],
        ),
        result("call_1|fc_1"),
        result(&long),
    ];
    let fitted = fit_transcript(&transcript, &claude(), "anthropic-messages");
    let ids: Vec<String> = assistant(&fitted[1])
        .tool_calls()
        .map(|c| c.id.clone())
        .collect();
    assert_eq!(ids[0], "call_1_fc_1");
    assert!(
        ids[1].len() <= 64
            && IdRule::for_api("anthropic-messages")
                .unwrap()
                .accepts(&ids[1])
    );
    assert_eq!(result_of(&fitted[2]).tool_call_id, ids[0]);
    assert_eq!(result_of(&fitted[3]).tool_call_id, ids[1]);
    // Chat Completions: the call part only, at most 40 characters.
    let gpt = Model::new("openai", "gpt-4o");
    let fitted = fit_transcript(&transcript, &gpt, "openai-completions");
    let ids: Vec<String> = assistant(&fitted[1])
        .tool_calls()
        .map(|c| c.id.clone())
        .collect();
    assert_eq!(ids[0], "call_1");
    assert_eq!(ids[1].len(), 40);
    assert_eq!(result_of(&fitted[3]).tool_call_id, ids[1]);
}

#[test]
fn ids_reused_across_turns_or_cleaned_alike_stay_distinct() {
    // A local server that numbers calls from zero every turn, and two ids
    // that clean to the same text.
    let transcript = vec![
        Message::user("hi"),
        answer("local", "openai-completions", "qwen", vec![call("call_0")]),
        result("call_0"),
        answer("local", "openai-completions", "qwen", vec![call("call_0")]),
        result("call_0"),
        answer(
            "local",
            "openai-completions",
            "qwen",
            vec![call("a.b"), call("a:b")],
        ),
        result("a:b"),
        result("a.b"),
    ];
    let fitted = fit_transcript(&transcript, &claude(), "anthropic-messages");
    let first = assistant(&fitted[1])
        .tool_calls()
        .next()
        .unwrap()
        .id
        .clone();
    let second = assistant(&fitted[3])
        .tool_calls()
        .next()
        .unwrap()
        .id
        .clone();
    assert_eq!(first, "call_0");
    assert_ne!(second, first);
    assert_eq!(result_of(&fitted[2]).tool_call_id, first);
    assert_eq!(result_of(&fitted[4]).tool_call_id, second);
    let pair: Vec<String> = assistant(&fitted[5])
        .tool_calls()
        .map(|c| c.id.clone())
        .collect();
    assert_ne!(pair[0], pair[1]);
    assert_eq!(result_of(&fitted[6]).tool_call_id, pair[1]);
    assert_eq!(result_of(&fitted[7]).tool_call_id, pair[0]);
}

#[test]
fn an_id_of_nothing_but_symbols_still_gets_a_usable_one() {
    let transcript = vec![
        Message::user("hi"),
        answer("x", "openai-completions", "m", vec![call("|||")]),
        result("|||"),
    ];
    let fitted = fit_transcript(&transcript, &claude(), "anthropic-messages");
    let id = &assistant(&fitted[1]).tool_calls().next().unwrap().id;
    assert_eq!(id, "call");
    assert_eq!(&result_of(&fitted[2]).tool_call_id, id);
}
