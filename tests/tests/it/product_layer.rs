//! The product layer: definitions and conversions, the registry's selection and
//! override rules, allowedTools, the system prompt, extensions and sessions.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agent_core::{AgentTool, AgentToolResult, ToolError};
use coding_agent::{
    AgentSessionBuilder, Extension, ExtensionApi, RenderContext, Settings, StyledLine, StyledText,
    SystemPromptOptions, Theme, ToolCallDecision, ToolDefinition, ToolRegistry, ToolResultPatch,
    ToolSelection, ToolSource, WorkingDir, build_system_prompt,
};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use test_support::agent_loop::*;

/// A definition with every optional part, counting its executions.
struct Def {
    name: &'static str,
    snippet: Option<&'static str>,
    guidelines: Vec<String>,
    renders: bool,
    runs: Arc<AtomicUsize>,
    meta: agent_core::ToolMeta,
}

fn def(name: &'static str) -> Def {
    Def {
        name,
        snippet: Some("does things"),
        guidelines: vec![format!("Use {name} wisely")],
        renders: true,
        runs: Arc::new(AtomicUsize::new(0)),
        meta: agent_core::ToolMeta::new(name, "desc")
            .with_label("Label")
            .with_parameters(json!({"type":"object","properties":{}}))
            .sequential(),
    }
}

impl Def {
    fn bare(mut self) -> Self {
        self.snippet = None;
        self.guidelines.clear();
        self.renders = false;
        self
    }
    fn snippet(mut self, s: &'static str) -> Self {
        self.snippet = Some(s);
        self
    }
    fn arc(self) -> ToolDefinition {
        let (name, snippet, guidelines, renders) = (
            self.name,
            self.snippet,
            self.guidelines.clone(),
            self.renders,
        );
        let mut d = ToolDefinition::new(Arc::new(self)).with_guidelines(guidelines);
        if let Some(s) = snippet {
            d = d.with_prompt_snippet(s);
        }
        if renders {
            d = d
                .with_render_call(move |_args, _t, _c| {
                    let mut t = StyledText::new();
                    t.push(StyledLine::plain(format!("{name} call")));
                    Some(t)
                })
                .with_render_result(move |_r, _o, _t, _c| {
                    Some(StyledText::plain(&format!("{name} result")))
                });
        }
        d
    }
}

impl AgentTool for Def {
    fn meta(&self) -> &agent_core::ToolMeta {
        &self.meta
    }
    fn prepare_arguments(&self, mut args: Value) -> Result<Value, ToolError> {
        args["prepared"] = json!(true);
        Ok(args)
    }
    fn execute(
        &self,
        _params: Value,
        cx: agent_core::ToolCallContext,
    ) -> BoxFuture<'_, Result<AgentToolResult, ToolError>> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let cwd = WorkingDir::of(&cx).map(|p| p.display().to_string());
        async move {
            Ok(AgentToolResult::text(format!(
                "{} ran in {}",
                self.name,
                cwd.unwrap_or_else(|| "?".into())
            )))
        }
        .boxed()
    }
}

fn builtins() -> Vec<ToolDefinition> {
    ["read", "bash", "edit", "write", "grep", "find", "ls"]
        .into_iter()
        .map(|n| {
            def(n)
                .arc()
                .with_active_by_default(["read", "bash", "edit", "write"].contains(&n))
        })
        .collect()
}

#[tokio::test]
async fn a_definition_and_its_tool_convert_both_ways() {
    let d = def("read").arc();
    let cwd = std::env::temp_dir();
    let tool: Arc<dyn AgentTool> = d.tool();
    assert_eq!(tool.name(), "read");
    assert_eq!(tool.label(), "Label");
    assert_eq!(tool.description(), "desc");
    assert_eq!(tool.parameters(), d.parameters());
    assert_eq!(
        tool.execution_mode(),
        Some(agent_core::ExecutionMode::Sequential)
    );
    assert_eq!(
        tool.prepare_arguments(json!({})).unwrap(),
        json!({"prepared": true})
    );
    // The session's working directory reaches the tool through the context.
    let cx = agent_core::ToolCallContext::new("c1")
        .with_extensions(coding_agent::tool_extensions(&cwd, &Settings::default()));
    let out = tool.execute(json!({}), cx).await.unwrap();
    assert_eq!(out.text_content(), format!("read ran in {}", cwd.display()));

    // Back to a definition: the core fields survive, prompt metadata and renderers do not.
    let back = ToolDefinition::new(tool);
    assert_eq!(back.name(), "read");
    assert_eq!(back.label(), "Label");
    assert_eq!(back.description(), "desc");
    assert_eq!(
        back.execution_mode(),
        Some(agent_core::ExecutionMode::Sequential)
    );
    assert_eq!(
        back.prepare_arguments(json!({})).unwrap(),
        json!({"prepared": true})
    );
    assert_eq!(back.prompt_snippet(), None);
    assert!(back.prompt_guidelines().is_empty());
    assert!(
        back.render_call(&json!({}), &Theme::plain(), &RenderContext::default())
            .is_none()
    );
    assert!(
        back.render_result(
            &AgentToolResult::text("x"),
            &Default::default(),
            &Theme::plain(),
            &RenderContext::default()
        )
        .is_none()
    );
}

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

#[test]
fn system_prompt_lines() {
    let prompt = build_system_prompt(&SystemPromptOptions {
        selected_tools: vec!["read".into(), "bash".into(), "custom".into()],
        tool_snippets: vec![
            ("bash".into(), "Run  shell\ncommands".into()),
            ("read".into(), "Read file contents".into()),
        ],
        tool_guidelines: vec![
            "Use read to examine files.".into(),
            "  ".into(),
            "Use read to examine files.".into(),
        ],
        extra_guidelines: vec!["Be careful".into()],
        append_prompts: vec!["Extra words.".into()],
        context_files: vec![coding_agent::ContextFile {
            path: "/p/AGENTS.md".into(),
            content: "Rules.\n".into(),
        }],
        date: Some("2026-11-29".into()),
        cwd: "/p".into(),
        ..Default::default()
    });
    let lines: Vec<&str> = prompt.lines().collect();
    let tools = lines.iter().position(|l| *l == "Available tools:").unwrap();
    assert_eq!(lines[tools + 1], "- read: Read file contents");
    assert_eq!(lines[tools + 2], "- bash: Run shell commands");
    assert_eq!(lines[tools + 3], "");
    let g = lines.iter().position(|l| *l == "Guidelines:").unwrap();
    assert_eq!(
        &lines[g + 1..g + 6],
        [
            "- Use bash for file operations such as ls, rg and find",
            "- Use read to examine files.",
            "- Be careful",
            "- Keep your answers short and to the point",
            "- Name file paths clearly whenever you work with files",
        ]
    );
    assert!(prompt.contains("\n\nExtra words.\n\n<project_context>\n<project_instructions path=\"/p/AGENTS.md\">\nRules.\n</project_instructions>\n</project_context>"));
    assert!(prompt.ends_with("\nCurrent date: 2026-11-29\nCurrent working directory: /p"));

    // No snippets at all: "(none)"; grep active: no bash heuristic.
    let prompt = build_system_prompt(&SystemPromptOptions {
        selected_tools: vec!["bash".into(), "grep".into()],
        cwd: "/p".into(),
        ..Default::default()
    });
    assert!(prompt.contains("Available tools:\n(none)\n"));
    assert!(!prompt.contains("Use bash for file operations"));

    // A custom prompt replaces preamble, tools and guidelines.
    let prompt = build_system_prompt(&SystemPromptOptions {
        selected_tools: vec!["read".into()],
        tool_snippets: vec![("read".into(), "Read".into())],
        custom_prompt: Some("You are a pirate.".into()),
        date: Some("2026-11-29".into()),
        cwd: "/p".into(),
        ..Default::default()
    });
    assert_eq!(
        prompt,
        "You are a pirate.\nCurrent date: 2026-11-29\nCurrent working directory: /p"
    );
}

#[test]
fn session_prompt_follows_the_active_set() {
    let session = AgentSessionBuilder::new(model(), scripted(vec![]))
        .cwd("/tmp")
        .builtin_tools(builtins())
        .settings(Settings::default())
        .context_files(false)
        .build()
        .unwrap();
    let prompt = session.system_prompt();
    assert!(prompt.contains(
        "- read: does things\n- bash: does things\n- edit: does things\n- write: does things\n"
    ));
    assert!(prompt.contains("- Use bash for file operations such as ls, rg and find"));
    session.set_active_tools(&["grep", "read"]);
    let prompt = session.system_prompt();
    assert!(prompt.contains("Available tools:\n- grep: does things\n- read: does things\n\n"));
    assert!(prompt.contains("- Use grep wisely\n- Use read wisely\n"));
    assert!(!prompt.contains("Use bash for file operations"));
    assert_eq!(session.agent().state().tool_names, ["grep", "read"]);
}

#[test]
fn context_files_are_found_from_cwd_upwards() {
    let root = tempfile::tempdir().unwrap();
    let sub = root.path().join("a").join("b");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(root.path().join("AGENTS.md"), "root rules").unwrap();
    std::fs::write(root.path().join("a").join("CLAUDE.md"), "claude rules").unwrap();
    std::fs::write(sub.join("AGENTS.md"), "leaf rules").unwrap();
    std::fs::write(sub.join("CLAUDE.md"), "ignored: AGENTS.md wins").unwrap();
    // The repository root bounds the search.
    std::fs::create_dir(root.path().join(".git")).unwrap();
    let files = coding_agent::load_context_files(&sub, None);
    let contents: Vec<&str> = files.iter().map(|f| f.content.as_str()).collect();
    assert_eq!(contents, ["root rules", "claude rules", "leaf rules"]);
}

#[test]
fn context_files_come_only_from_the_project_and_trusted_owners() {
    use std::os::unix::fs::PermissionsExt;
    // A shared, world-writable directory (like /tmp) holding a planted file,
    // with a repository below it.
    let shared = tempfile::tempdir().unwrap();
    std::fs::set_permissions(shared.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::fs::write(shared.path().join("AGENTS.md"), "planted above the repo").unwrap();
    let repo = shared.path().join("repo");
    let sub = repo.join("src");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(repo.join("AGENTS.md"), "repo rules").unwrap();
    // A file inside the project owned by someone else is skipped (needs root to set up).
    let foreign = sub.join("AGENTS.md");
    std::fs::write(&foreign, "someone else's rules").unwrap();
    let chowned = std::os::unix::fs::chown(&foreign, Some(41001), Some(41001)).is_ok();
    let files = coding_agent::load_context_files(&sub, None);
    let contents: Vec<&str> = files.iter().map(|f| f.content.as_str()).collect();
    if chowned {
        assert_eq!(contents, ["repo rules"]);
    } else {
        assert_eq!(contents, ["repo rules", "someone else's rules"]);
    }
    // Without a repository, only the working directory itself is read.
    let lone = shared.path().join("lone");
    std::fs::create_dir(&lone).unwrap();
    std::fs::write(lone.join("CLAUDE.md"), "lone rules").unwrap();
    let files = coding_agent::load_context_files(&lone, None);
    let contents: Vec<&str> = files.iter().map(|f| f.content.as_str()).collect();
    assert_eq!(contents, ["lone rules"]);
    // A FIFO or a link to /dev/zero is skipped without hanging or eating memory.
    std::fs::remove_file(lone.join("CLAUDE.md")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", lone.join("CLAUDE.md")).unwrap();
    assert!(
        std::process::Command::new("mkfifo")
            .arg(lone.join("AGENTS.md"))
            .status()
            .unwrap()
            .success()
    );
    assert!(coding_agent::load_context_files(&lone, None).is_empty());
}

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
