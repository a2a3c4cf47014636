//! Extensions: rewrite and patch order, blocks and failures, what their
//! handlers see.

use std::sync::{Arc, Mutex};

use coding_agent::{
    AgentSessionBuilder, Extension, ExtensionApi, Settings, ToolCallDecision, ToolDefinition,
    ToolResultPatch,
};
use serde_json::json;
use test_support::agent_loop::*;

struct Recording {
    name: &'static str,
    log: Arc<Mutex<Vec<String>>>,
    mode: &'static str,
}

impl Extension for Recording {
    fn name(&self) -> &str {
        self.name
    }
    fn register(&self, api: &mut ExtensionApi) {
        let (log, name, mode) = (self.log.clone(), self.name, self.mode);
        api.on_tool_call(move |event| {
            let log = log.clone();
            async move {
                log.lock()
                    .unwrap()
                    .push(format!("{name}:call:{}", event.input));
                match mode {
                    "rewrite" => Ok(Some(ToolCallDecision::rewrite(
                        json!({"ms": 1, "label": "rewritten"}),
                    ))),
                    "block" => Ok(Some(ToolCallDecision::block("blocked by policy"))),
                    "fail" => Err("cannot decide".into()),
                    _ => Ok(None),
                }
            }
        });
        let (log, name) = (self.log.clone(), self.name);
        api.on_tool_result(move |event| {
            let log = log.clone();
            async move {
                log.lock().unwrap().push(format!(
                    "{name}:result:{}",
                    event.content[0].as_text().unwrap_or_default()
                ));
                Ok(Some(ToolResultPatch {
                    content: Some(vec![agent_ai::ContentBlock::text(format!(
                        "{}+{name}",
                        event.content[0].as_text().unwrap_or_default()
                    ))]),
                    ..Default::default()
                }))
            }
        });
    }
}

fn session_with(
    extensions: Vec<Arc<dyn Extension>>,
    client: Arc<agent_ai::providers::scripted::ScriptedClient>,
) -> coding_agent::AgentSession {
    let (tool, _) = sleeper("sleep").arc();
    let mut b = AgentSessionBuilder::new(model(), client)
        .cwd("/tmp")
        .settings(Settings::default())
        .context_files(false)
        .tool(ToolDefinition::new(tool));
    for e in extensions {
        b = b.extension(e);
    }
    b.build().unwrap()
}

#[tokio::test]
async fn extensions_rewrite_then_patch_in_load_order() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let client = scripted(vec![
        calls(&[("c1", "sleep", json!({"ms": 1, "label": "orig"}))]),
        text("ok"),
    ]);
    let session = session_with(
        vec![
            Arc::new(Recording {
                name: "a",
                log: log.clone(),
                mode: "rewrite",
            }),
            Arc::new(Recording {
                name: "b",
                log: log.clone(),
                mode: "pass",
            }),
        ],
        client,
    );
    session.prompt("go").await.unwrap();
    let log = log.lock().unwrap().clone();
    assert_eq!(
        log,
        [
            "a:call:{\"ms\":1,\"label\":\"orig\"}",
            "b:call:{\"ms\":1,\"label\":\"rewritten\"}",
            "a:result:slept rewritten",
            "b:result:slept rewritten+a",
        ]
    );
    let result = session.agent().messages()[2]
        .as_tool_result()
        .unwrap()
        .clone();
    assert_eq!(result.text(), "slept rewritten+a+b");
}

#[tokio::test]
async fn extension_block_and_failure_stop_the_call() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let client = scripted(vec![
        calls(&[("c1", "sleep", json!({"ms": 1}))]),
        text("ok"),
    ]);
    let session = session_with(
        vec![
            Arc::new(Recording {
                name: "a",
                log: log.clone(),
                mode: "block",
            }),
            Arc::new(Recording {
                name: "b",
                log: log.clone(),
                mode: "pass",
            }),
        ],
        client,
    );
    session.prompt("go").await.unwrap();
    let result = session.agent().messages()[2]
        .as_tool_result()
        .unwrap()
        .clone();
    assert!(result.is_error);
    assert!(
        result.text().starts_with("blocked by policy"),
        "{}",
        result.text()
    );
    // Neither b nor any result handler saw the blocked call.
    assert_eq!(*log.lock().unwrap(), ["a:call:{\"ms\":1}"]);

    let client = scripted(vec![
        calls(&[("c1", "sleep", json!({"ms": 1}))]),
        text("ok"),
    ]);
    let session = session_with(
        vec![Arc::new(Recording {
            name: "broken",
            log: log.clone(),
            mode: "fail",
        })],
        client,
    );
    session.prompt("go").await.unwrap();
    let result = session.agent().messages()[2]
        .as_tool_result()
        .unwrap()
        .clone();
    assert!(result.is_error);
    assert!(
        result
            .text()
            .starts_with("Extension \"broken\" failed, blocking execution: cannot decide"),
        "{}",
        result.text()
    );
}

/// Records what its handlers see of the run: the transcript, the active
/// tools and the system prompt.
struct Observer {
    seen: Arc<Mutex<Vec<String>>>,
}

impl Extension for Observer {
    fn name(&self) -> &str {
        "observer"
    }
    fn register(&self, api: &mut ExtensionApi) {
        let seen = self.seen.clone();
        api.on_tool_call(move |event| {
            let seen = seen.clone();
            async move {
                let roles: Vec<&str> = event
                    .context
                    .messages
                    .iter()
                    .map(|m| match m {
                        agent_ai::Message::User(_) => "user",
                        agent_ai::Message::Assistant(_) => "assistant",
                        agent_ai::Message::ToolResult(_) => "toolResult",
                    })
                    .collect();
                let asked = event
                    .context
                    .messages
                    .last()
                    .and_then(|m| m.as_assistant())
                    .is_some_and(|a| a.tool_calls().any(|c| c.id == event.tool_call_id));
                seen.lock().unwrap().push(format!(
                    "call {}: {} asked={asked} tools={} prompt_has_snippet={}",
                    event.tool_call_id,
                    roles.join(","),
                    event.context.tool_names().join(","),
                    event.context.system_prompt.contains("- sleep: naps"),
                ));
                Ok(None)
            }
        });
        let seen = self.seen.clone();
        api.on_tool_result(move |event| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(format!(
                    "result {}: {} messages",
                    event.tool_call_id,
                    event.context.messages.len()
                ));
                Ok(None)
            }
        });
    }
}

#[tokio::test]
async fn extension_handlers_see_the_transcript_tools_and_prompt() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let client = scripted(vec![
        calls(&[("c1", "sleep", json!({"ms": 1}))]),
        calls(&[("c2", "sleep", json!({"ms": 1}))]),
        text("ok"),
    ]);
    let (tool, _) = sleeper("sleep").arc();
    let (other, _) = sleeper("nap_log").arc();
    let session = AgentSessionBuilder::new(model(), client)
        .cwd("/tmp")
        .settings(Settings::default())
        .context_files(false)
        .tool(ToolDefinition::new(tool).with_prompt_snippet("naps"))
        .tool(ToolDefinition::new(other))
        .extension(Arc::new(Observer { seen: seen.clone() }))
        .build()
        .unwrap();
    session.prompt("go").await.unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "call c1: user,assistant asked=true tools=sleep,nap_log prompt_has_snippet=true",
            "result c1: 2 messages",
            "call c2: user,assistant,toolResult,assistant asked=true tools=sleep,nap_log prompt_has_snippet=true",
            "result c2: 4 messages",
        ]
    );
}
