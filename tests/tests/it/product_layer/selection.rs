//! The registry's selection: active sets per flag, order, overrides,
//! extension precedence and allowedTools.

use std::sync::atomic::Ordering;

use agent_core::AgentToolResult;
use coding_agent::{
    AgentSessionBuilder, RenderContext, Settings, Theme, ToolRegistry, ToolSelection, ToolSource,
};
use serde_json::json;
use test_support::agent_loop::*;

use super::{builtins, def};

fn active(selection: ToolSelection, extra: &[&'static str]) -> Vec<String> {
    let mut r = ToolRegistry::new(builtins());
    for name in extra {
        r.register_extension_tool("ext", def(name).arc());
    }
    r.apply_selection(selection);
    r.active_names()
}

fn list(s: &str) -> Option<Vec<String>> {
    Some(ToolSelection::parse_list(s))
}

#[test]
fn active_sets_for_each_flag_combination() {
    assert_eq!(
        active(ToolSelection::default(), &[]),
        ["read", "bash", "edit", "write"]
    );
    assert_eq!(
        active(ToolSelection::default(), &["weather"]),
        ["read", "bash", "edit", "write", "weather"]
    );
    assert_eq!(
        active(
            ToolSelection {
                tools: list("grep, read,nope"),
                ..Default::default()
            },
            &["weather"]
        ),
        ["grep", "read"],
        "--tools keeps its order, drops unknown names and limits extension tools too"
    );
    assert_eq!(
        active(
            ToolSelection {
                tools: list("read,weather"),
                ..Default::default()
            },
            &["weather"]
        ),
        ["read", "weather"]
    );
    assert_eq!(
        active(
            ToolSelection {
                exclude_tools: vec!["bash".into(), "weather".into()],
                ..Default::default()
            },
            &["weather"]
        ),
        ["read", "edit", "write"]
    );
    assert_eq!(
        active(
            ToolSelection {
                tools: list("read,bash"),
                exclude_tools: vec!["bash".into()],
                ..Default::default()
            },
            &[]
        ),
        ["read"]
    );
    assert!(
        active(
            ToolSelection {
                no_tools: true,
                ..Default::default()
            },
            &["weather"]
        )
        .is_empty()
    );
    assert_eq!(
        active(
            ToolSelection {
                no_builtin_tools: true,
                ..Default::default()
            },
            &["weather"]
        ),
        ["weather"]
    );
}

#[test]
fn set_active_tools_keeps_order_and_ignores_unknown_names() {
    let mut r = ToolRegistry::new(builtins());
    r.set_active_tools(&["ls", "ghost", "read", "ls"]);
    assert_eq!(r.active_names(), ["ls", "read"]);
}

#[test]
fn override_inherits_renderers_per_slot_but_never_prompt_metadata() {
    let mut r = ToolRegistry::new(builtins());
    r.register_extension_tool("ext", def("read").bare().arc());
    r.register_tool(def("bash").snippet("my bash").arc());
    let d = r.get("read").unwrap();
    assert_eq!(d.prompt_snippet(), None);
    assert!(d.prompt_guidelines().is_empty());
    assert_eq!(r.source("read"), Some(ToolSource::Extension("ext".into())));
    assert_eq!(r.source("bash"), Some(ToolSource::Sdk));
    // Position of the overridden built-in is kept.
    assert_eq!(&r.names()[..2], ["read", "bash"]);
    let ctx = RenderContext::default();
    let theme = Theme::plain();
    // The bare override has no renderers: the built-in's are used.
    assert_eq!(
        r.render_call("read", &json!({}), &theme, &ctx).to_plain(),
        "read call"
    );
    assert_eq!(
        r.render_result(
            "read",
            &AgentToolResult::text("x"),
            &Default::default(),
            &theme,
            &ctx
        )
        .to_plain(),
        "read result"
    );
    // A tool without any renderer gets the generic ones, headed by its label.
    let mut r2 = ToolRegistry::new(vec![]);
    r2.register_tool(def("plain").bare().arc());
    assert_eq!(
        r2.render_call("plain", &json!({"a": 1}), &theme, &ctx)
            .to_plain(),
        "Label {\"a\":1}"
    );
}

#[test]
fn first_extension_wins_and_sdk_overrides_extension() {
    let mut r = ToolRegistry::new(vec![]);
    r.register_extension_tool("one", def("t").snippet("first").arc());
    r.register_extension_tool("two", def("t").snippet("second").arc());
    assert_eq!(r.get("t").unwrap().prompt_snippet(), Some("first"));
    r.register_tool(def("t").snippet("sdk").arc());
    assert_eq!(r.get("t").unwrap().prompt_snippet(), Some("sdk"));
}

#[tokio::test]
async fn allowed_tools_are_neither_offered_nor_executed() {
    let read = def("read");
    let bash = def("bash");
    let (read_runs, bash_runs) = (read.runs.clone(), bash.runs.clone());
    let client = scripted(vec![
        calls(&[("c1", "bash", json!({})), ("c2", "read", json!({}))]),
        text("done"),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let session = AgentSessionBuilder::new(model(), client.clone())
        .cwd(dir.path())
        .builtin_tools(vec![read.arc(), bash.arc()])
        .settings(Settings::from_value(json!({"allowedTools": ["read"]})))
        .context_files(false)
        .build()
        .unwrap();
    // Even an explicit activation cannot bring it back.
    session.set_active_tools(&["read", "bash"]);
    assert_eq!(session.active_tool_names(), ["read"]);
    session.prompt("go").await.unwrap();
    let offered: Vec<String> = client.requests()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(offered, ["read"]);
    assert_eq!(bash_runs.load(Ordering::SeqCst), 0);
    assert_eq!(read_runs.load(Ordering::SeqCst), 1);
    let messages = session.agent().messages();
    let refused = messages
        .iter()
        .filter_map(|m| m.as_tool_result())
        .find(|r| r.tool_call_id == "c1")
        .unwrap();
    assert!(refused.is_error);
    assert_eq!(refused.text(), "Tool bash not found");
    assert!(!session.system_prompt().contains("- bash:"));
}
