//! What a session tells its tools about their earlier calls, so a tool
//! that keeps state in its results' `details` can rebuild it (see
//! [`ToolDefinition::with_restore`](agent_tool::ToolDefinition::with_restore)).

use std::collections::HashMap;

use agent_ai::Message;
use agent_sessions::{EntryKind, SessionManager};
use agent_tool::EarlierResult;
use serde_json::Value;

/// The earlier calls of every tool on the session's current branch, by
/// tool name, each list root first, each result with its call's
/// arguments. Results compaction took out of the model's context are
/// included. Only typed messages count: a line the session keeps as JSON
/// is not a call or result of this agent's tools.
pub(crate) fn earlier_results(manager: &SessionManager) -> HashMap<String, Vec<EarlierResult>> {
    let mut arguments: HashMap<&str, &Value> = HashMap::new();
    let mut by_tool: HashMap<String, Vec<EarlierResult>> = HashMap::new();
    let branch = manager.branch_entries();
    for entry in &branch {
        let EntryKind::Message { message } = &entry.kind else {
            continue;
        };
        match message {
            Message::Assistant(asked) => {
                for call in asked.tool_calls() {
                    arguments.insert(&call.id, &call.arguments);
                }
            }
            Message::ToolResult(result) => {
                by_tool
                    .entry(result.tool_name.clone())
                    .or_default()
                    .push(EarlierResult {
                        tool_call_id: result.tool_call_id.clone(),
                        arguments: arguments
                            .get(result.tool_call_id.as_str())
                            .map_or(Value::Null, |a| (*a).clone()),
                        details: result.details.clone(),
                        is_error: result.is_error,
                    });
            }
            Message::User(_) => {}
        }
    }
    by_tool
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn results_of_the_current_branch_only_with_their_arguments() {
        let mut m = SessionManager::in_memory(std::path::Path::new("/tmp"));
        let call = |id: &str, item: &str| {
            let mut a = agent_ai::AssistantMessage::empty("p", "m");
            a.content
                .push(agent_ai::ContentBlock::ToolCall(agent_ai::ToolCall::new(
                    id,
                    "todo",
                    json!({ "item": item }),
                )));
            agent_ai::Message::Assistant(a)
        };
        let result = |id: &str, details: Value, is_error: bool| {
            agent_ai::Message::ToolResult(agent_ai::ToolResultMessage {
                tool_call_id: id.into(),
                tool_name: "todo".into(),
                content: vec![],
                details,
                usage: None,
                added_tool_names: vec![],
                is_error,
                timestamp: 0,
            })
        };
        m.append_message(&agent_ai::Message::user("go")).unwrap();
        m.append_message(&call("c1", "milk")).unwrap();
        let fork_point = m
            .append_message(&result("c1", json!({"n": 1}), false))
            .unwrap();
        m.append_message(&call("c2", "eggs")).unwrap();
        m.append_message(&result("c2", json!({}), true)).unwrap();
        let on_main = &earlier_results(&m)["todo"];
        assert_eq!(
            on_main
                .iter()
                .map(|r| (
                    r.tool_call_id.as_str(),
                    r.arguments["item"].as_str(),
                    r.is_error
                ))
                .collect::<Vec<_>>(),
            [("c1", Some("milk"), false), ("c2", Some("eggs"), true)]
        );
        // Another branch from the first result: c2 is not on it.
        m.branch(&fork_point).unwrap();
        m.append_message(&call("c3", "tea")).unwrap();
        m.append_message(&result("c3", json!({"n": 2}), false))
            .unwrap();
        let on_branch = &earlier_results(&m)["todo"];
        assert_eq!(
            on_branch
                .iter()
                .map(|r| (r.tool_call_id.as_str(), r.details.clone()))
                .collect::<Vec<_>>(),
            [("c1", json!({"n": 1})), ("c3", json!({"n": 2}))]
        );
    }
}
