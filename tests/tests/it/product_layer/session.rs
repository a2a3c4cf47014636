//! Session settings on the run: blocked images, added tool names, and
//! constrained sampling's null optionals.

use std::sync::{Arc, Mutex};

use agent_core::AgentToolResult;
use coding_agent::{AgentSessionBuilder, Settings, ToolDefinition};
use serde_json::{Value, json};
use test_support::agent_loop::*;

#[tokio::test]
async fn block_images_setting_replaces_images_sent_to_the_model() {
    let (tool, _) = FnTool::new("shot", |_, _, _| async {
        Ok(AgentToolResult {
            content: vec![
                agent_ai::ContentBlock::text("a screenshot"),
                agent_ai::ContentBlock::image("AAAA", "image/png"),
            ],
            ..Default::default()
        })
    })
    .arc();
    let client = scripted(vec![calls(&[("c1", "shot", json!({}))]), text("ok")]);
    let session = AgentSessionBuilder::new(model(), client.clone())
        .cwd("/tmp")
        .tool(ToolDefinition::new(tool))
        .settings(Settings::from_value(
            json!({"images": {"blockImages": true}}),
        ))
        .context_files(false)
        .build()
        .unwrap();
    session.prompt("take a screenshot").await.unwrap();
    let sent = &client.requests()[1].messages;
    let result = sent.iter().find_map(|m| m.as_tool_result()).unwrap();
    assert_eq!(result.text(), "a screenshot\nImage reading is disabled.");
    assert!(
        result
            .content
            .iter()
            .all(|b| !matches!(b, agent_ai::ContentBlock::Image(_)))
    );
    // The stored transcript keeps the image.
    let stored = session.agent().messages();
    let kept = stored.iter().find_map(|m| m.as_tool_result()).unwrap();
    assert!(
        kept.content
            .iter()
            .any(|b| matches!(b, agent_ai::ContentBlock::Image(_)))
    );
}

/// A result naming tools in `addedToolNames` makes them active for the next
/// request (Pi's tool discovery); names that are not registered tools are
/// ignored.
#[tokio::test]
async fn added_tool_names_become_active_for_the_next_request() {
    let discover = coding_agent::tool("discover")
        .description("Finds more tools.")
        .execute(|_: Value, _cx| async move {
            Ok(AgentToolResult {
                added_tool_names: vec!["hidden".into(), "no_such_tool".into()],
                ..AgentToolResult::text("found hidden")
            })
        });
    let hidden = coding_agent::tool("hidden")
        .description("Only active once discovered.")
        .execute(|_: Value, _cx| async move { Ok(AgentToolResult::text("hidden ran")) });
    let client = scripted(vec![
        calls(&[("c1", "discover", json!({}))]),
        calls(&[("c2", "hidden", json!({}))]),
        text("done"),
    ]);
    let session = AgentSessionBuilder::new(model(), client)
        .cwd("/tmp")
        .settings(Settings::default())
        .context_files(false)
        .tool(discover)
        .tool(hidden)
        .active_tools(["discover"])
        .build()
        .unwrap();
    assert_eq!(session.active_tool_names(), ["discover"]);
    session.prompt("go").await.unwrap();
    let results: Vec<(String, bool)> = session
        .agent()
        .messages()
        .iter()
        .filter_map(|m| m.as_tool_result())
        .map(|r| (r.text(), r.is_error))
        .collect();
    assert_eq!(
        results,
        [
            ("found hidden".to_string(), false),
            ("hidden ran".to_string(), false)
        ]
    );
    assert_eq!(session.active_tool_names(), ["discover", "hidden"]);
}

/// A tool recording the arguments it ran with.
fn recorder(name: &str, seen: Arc<Mutex<Vec<Value>>>) -> ToolDefinition {
    coding_agent::tool(name)
        .parameters(json!({"type":"object","properties":{
            "path":{"type":"string"},"limit":{"type":"integer"}},"required":["path"]}))
        .execute(move |args: Value, _cx| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(args);
                Ok(AgentToolResult::text("ok"))
            }
        })
}

#[tokio::test]
async fn a_constrained_tool_takes_a_null_optional_argument_as_absent() {
    let (strict_seen, plain_seen) = (Arc::new(Mutex::new(vec![])), Arc::new(Mutex::new(vec![])));
    let args = json!({"path": "a.txt", "limit": null});
    let client = scripted(vec![
        calls(&[("c1", "strict", args.clone()), ("c2", "plain", args)]),
        text("ok"),
    ]);
    let session = AgentSessionBuilder::new(model(), client)
        .cwd("/tmp")
        .settings(Settings::default())
        .context_files(false)
        .tool(
            recorder("strict", strict_seen.clone())
                .with_constrained_sampling(Some(coding_agent::ConstrainedSampling::prefer())),
        )
        .tool(recorder("plain", plain_seen.clone()))
        .build()
        .unwrap();
    session.prompt("go").await.unwrap();
    assert_eq!(*strict_seen.lock().unwrap(), [json!({"path": "a.txt"})]);
    // Without constrained sampling, Pi's coercion turns null into 0.
    assert_eq!(
        *plain_seen.lock().unwrap(),
        [json!({"path": "a.txt", "limit": 0})]
    );
}

#[tokio::test]
async fn the_constrained_sampling_setting_overrides_what_tools_declare() {
    use coding_agent::ConstrainedSampling;
    let sent = |setting: Option<bool>| async move {
        let client = scripted(vec![text("ok")]);
        let settings = match setting {
            Some(on) => Settings::from_value(json!({"constrainedSampling": on})),
            None => Settings::default(),
        };
        let session = AgentSessionBuilder::new(model(), client.clone())
            .cwd("/tmp")
            .settings(settings)
            .context_files(false)
            .tool(recorder("plain", Default::default()))
            .tool(
                recorder("strict", Default::default())
                    .with_constrained_sampling(Some(ConstrainedSampling::require())),
            )
            .build()
            .unwrap();
        session.prompt("go").await.unwrap();
        client.requests()[0]
            .tools
            .iter()
            .map(|t| (t.name.clone(), t.constrained_sampling))
            .collect::<Vec<_>>()
    };
    let pair = |plain, strict| vec![("plain".to_string(), plain), ("strict".to_string(), strict)];
    assert_eq!(
        sent(None).await,
        pair(None, Some(ConstrainedSampling::require()))
    );
    assert_eq!(
        sent(Some(true)).await,
        pair(
            Some(ConstrainedSampling::prefer()),
            Some(ConstrainedSampling::require())
        )
    );
    assert_eq!(sent(Some(false)).await, pair(None, None));
}
