//! JSON that leaves the process uses Pi's field names. Each test parses JSON
//! written by hand and serializes it back unchanged.

use agent_ai::{ContentBlock, Message, StopReason};
use agent_core::{AgentEvent, AgentToolResult};
use agent_tool::{TypedTool, params_schema};
use serde_json::{Value, json};

fn round_trip(value: Value) {
    let message: Message = serde_json::from_value(value.clone()).expect("parses");
    assert_eq!(serde_json::to_value(&message).unwrap(), value);
}

#[test]
fn user_message_with_blocks_and_with_a_string() {
    round_trip(json!({
        "role": "user",
        "content": [
            {"type": "text", "text": "look at this"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
        ],
        "timestamp": 1700000000000i64
    }));
    round_trip(json!({"role": "user", "content": "plain", "timestamp": 1}));
}

#[test]
fn assistant_message_with_every_block_kind() {
    round_trip(json!({
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig"},
            {"type": "text", "text": "Reading."},
            {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a.txt"}}
        ],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude",
        "usage": {
            "input": 10, "output": 5, "cacheRead": 1, "cacheWrite": 2, "totalTokens": 18,
            "cost": {"input": 0.1, "output": 0.2, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.3}
        },
        "stopReason": "toolUse",
        "timestamp": 5
    }));
    round_trip(json!({
        "role": "assistant",
        "content": [],
        "provider": "openai",
        "model": "gpt",
        "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                  "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0}},
        "stopReason": "error",
        "errorMessage": "HTTP 500",
        "timestamp": 6
    }));
}

#[test]
fn tool_result_message_omits_empty_added_tool_names() {
    round_trip(json!({
        "role": "toolResult",
        "toolCallId": "c1",
        "toolName": "read",
        "content": [{"type": "text", "text": "hello"}],
        "details": {"truncation": null},
        "isError": false,
        "timestamp": 7
    }));
    round_trip(json!({
        "role": "toolResult",
        "toolCallId": "c2",
        "toolName": "load",
        "content": [],
        "addedToolNames": ["extra"],
        "isError": true,
        "timestamp": 8
    }));
}

#[test]
fn every_stop_reason_has_its_wire_name() {
    for (reason, name) in [
        (StopReason::Stop, "stop"),
        (StopReason::Length, "length"),
        (StopReason::ToolUse, "toolUse"),
        (StopReason::Error, "error"),
        (StopReason::Aborted, "aborted"),
    ] {
        assert_eq!(serde_json::to_value(reason).unwrap(), json!(name));
    }
}

#[test]
fn events_use_snake_case_types_and_camel_case_fields() {
    let start = AgentEvent::ToolExecutionStart {
        tool_call_id: "c1".into(),
        tool_name: "bash".into(),
        args: json!({"command": "ls"}),
        parent_tool_call_id: None,
    };
    assert_eq!(
        serde_json::to_value(&start).unwrap(),
        json!({"type": "tool_execution_start", "toolCallId": "c1", "toolName": "bash", "args": {"command": "ls"}})
    );
    let end = AgentEvent::ToolExecutionEnd {
        tool_call_id: "c1".into(),
        tool_name: "bash".into(),
        result: AgentToolResult::error("boom"),
        is_error: true,
        parent_tool_call_id: None,
    };
    assert_eq!(
        serde_json::to_value(&end).unwrap(),
        json!({"type": "tool_execution_end", "toolCallId": "c1", "toolName": "bash",
               "result": {"content": [{"type": "text", "text": "boom"}], "details": {}}, "isError": true})
    );
    let update = AgentEvent::ToolExecutionUpdate {
        tool_call_id: "c1".into(),
        tool_name: "bash".into(),
        args: json!({}),
        partial_result: AgentToolResult::text("half"),
        parent_tool_call_id: None,
    };
    let v = serde_json::to_value(&update).unwrap();
    assert_eq!(v["partialResult"]["content"][0]["text"], "half");
    assert_eq!(
        serde_json::to_value(AgentEvent::AgentStart).unwrap(),
        json!({"type": "agent_start"})
    );
    let back: AgentEvent = serde_json::from_value(v).unwrap();
    assert_eq!(back, update);
}

#[test]
fn nested_tool_events_name_their_parent_and_top_level_ones_do_not() {
    let start = AgentEvent::ToolExecutionStart {
        tool_call_id: "c1/1".into(),
        tool_name: "read".into(),
        args: json!({"path": "a"}),
        parent_tool_call_id: Some("c1".into()),
    };
    assert_eq!(
        serde_json::to_value(&start).unwrap(),
        json!({"type": "tool_execution_start", "toolCallId": "c1/1", "toolName": "read",
               "args": {"path": "a"}, "parentToolCallId": "c1"})
    );
    let decision = AgentEvent::ToolCallDecision {
        tool_call_id: "c1/2".into(),
        tool_name: "bash".into(),
        decision: json!({"permission": "deny"}),
        parent_tool_call_id: Some("c1".into()),
    };
    let end = AgentEvent::ToolExecutionEnd {
        tool_call_id: "c1/2".into(),
        tool_name: "bash".into(),
        result: AgentToolResult::error("denied"),
        is_error: true,
        parent_tool_call_id: Some("c1".into()),
    };
    let update = AgentEvent::ToolExecutionUpdate {
        tool_call_id: "c1/2".into(),
        tool_name: "bash".into(),
        args: json!({}),
        partial_result: AgentToolResult::text("half"),
        parent_tool_call_id: Some("c1".into()),
    };
    for event in [&start, &decision, &update, &end] {
        let v = serde_json::to_value(event).unwrap();
        assert_eq!(v["parentToolCallId"], "c1", "{v}");
        let back: AgentEvent = serde_json::from_value(v).unwrap();
        assert_eq!(&back, event);
        assert_eq!(back.parent_tool_call_id(), Some("c1"));
    }
    // A top-level event written without the field (as Pi and older
    // versions write it) reads back as top-level.
    let old: AgentEvent = serde_json::from_value(json!({"type": "tool_call_decision",
        "toolCallId": "c2", "toolName": "bash", "decision": {}}))
    .unwrap();
    assert_eq!(old.parent_tool_call_id(), None);
    assert!(
        !serde_json::to_string(&old)
            .unwrap()
            .contains("parentToolCallId")
    );
}

#[test]
fn message_update_shares_the_snapshot_and_keeps_pi_shape() {
    use std::sync::Arc;
    let mut partial = agent_ai::AssistantMessage::empty("scripted", "m");
    partial.content.push(ContentBlock::text("he"));
    let partial = Arc::new(partial);
    let update = AgentEvent::MessageUpdate {
        message: partial.clone(),
        assistant_message_event: agent_ai::AssistantMessageEvent::TextDelta {
            content_index: 0,
            delta: "he".into(),
            partial: partial.clone(),
        },
    };
    let v = serde_json::to_value(&update).unwrap();
    assert_eq!(v["type"], "message_update");
    assert_eq!(v["message"]["role"], "assistant");
    assert_eq!(v["message"]["content"][0]["text"], "he");
    assert_eq!(v["assistantMessageEvent"]["type"], "text_delta");
    assert_eq!(v["assistantMessageEvent"]["contentIndex"], 0);
    assert_eq!(
        v["assistantMessageEvent"]["partial"]["content"][0]["text"],
        "he"
    );
    let back: AgentEvent = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(back, update);
    // Any other role is refused, with the reason.
    let mut wrong = v;
    wrong["message"] = serde_json::to_value(agent_ai::Message::user("hi")).unwrap();
    let err = serde_json::from_value::<AgentEvent>(wrong).unwrap_err();
    assert!(err.to_string().contains("not a user message"), "{err}");
}

#[test]
fn content_block_helpers() {
    assert_eq!(ContentBlock::text("x").as_text(), Some("x"));
    assert_eq!(
        serde_json::to_value(ContentBlock::image("AA==", "image/png")).unwrap(),
        json!({"type": "image", "data": "AA==", "mimeType": "image/png"})
    );
}

#[allow(dead_code)]
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct ReadParams {
    /// Path to the file.
    path: String,
    /// First line to show (1-based).
    offset: Option<u32>,
    /// Unit system.
    unit: Option<Unit>,
    /// Nested options.
    nested: Option<Nested>,
}

#[allow(dead_code)]
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Unit {
    // Metric units.
    Metric,
    // Imperial units.
    Imperial,
}

#[allow(dead_code)]
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nested {
    /// Flag.
    flag: bool,
}

fn contains_key(value: &Value, keys: &[&str]) -> Option<String> {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if keys.contains(&k.as_str()) {
                    return Some(k.clone());
                }
                if let Some(found) = contains_key(v, keys) {
                    return Some(found);
                }
            }
            None
        }
        Value::Array(items) => items.iter().find_map(|v| contains_key(v, keys)),
        _ => None,
    }
}

#[test]
fn derived_schemas_are_plain() {
    let schema = params_schema::<ReadParams>();
    assert_eq!(
        contains_key(
            &schema,
            &[
                "oneOf", "anyOf", "const", "$ref", "$schema", "$defs", "format"
            ]
        ),
        None,
        "{schema:#}"
    );
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["path"]));
    assert_eq!(schema["properties"]["offset"]["type"], "integer");
    assert_eq!(
        schema["properties"]["path"]["description"],
        "Path to the file."
    );
    assert_eq!(
        schema["properties"]["unit"]["enum"],
        json!(["metric", "imperial"])
    );
    assert_eq!(schema["properties"]["unit"]["type"], "string");
    assert_eq!(
        schema["properties"]["nested"]["properties"]["flag"]["type"],
        "boolean"
    );
}

struct Noop;

impl TypedTool for Noop {
    type Params = ReadParams;
    fn name(&self) -> &str {
        "noop"
    }
    fn description(&self) -> &str {
        "does nothing"
    }
    async fn execute(
        &self,
        params: ReadParams,
        _cx: agent_core::ToolCallContext,
    ) -> Result<AgentToolResult, agent_core::ToolError> {
        Ok(AgentToolResult::text(params.path))
    }
}

#[tokio::test]
async fn typed_tool_deserializes_into_its_params() {
    let tool = agent_tool::typed_tool(Noop);
    let out = tool
        .execute(
            json!({"path": "a.txt", "offset": 3}),
            agent_core::ToolCallContext::new("c1"),
        )
        .await
        .unwrap();
    assert_eq!(out.text_content(), "a.txt");
    let err = tool
        .execute(json!({"offset": 3}), agent_core::ToolCallContext::new("c1"))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("Invalid arguments for tool \"noop\""),
        "{err}"
    );
}
