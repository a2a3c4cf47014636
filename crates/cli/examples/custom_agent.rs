//! A custom agent assembled from the crates: read-only built-ins, one custom
//! tool, an extension that guards bash, and any model client.
//!
//! Runs with the scripted provider so it needs no key:
//! `cargo run -p coding-agent-cli --example custom_agent`.
//! Swap `ScriptedClient` for `OpenAiClient::new(base_url, key)` or
//! `AnthropicClient::new(base_url, key)` to talk to a real model.

use std::sync::Arc;

use agent_ai::Model;
use agent_ai::providers::scripted::ScriptedClient;
use agent_core::{AgentEvent, AgentToolResult, ToolError};
use coding_agent::{
    AgentSessionBuilder, Extension, ExtensionApi, PathArgument, Settings, ToolCallContext,
    ToolCallDecision, ToolDefinition, ToolHints, ToolSelection, TypedTool, WorkingDir,
};

/// A custom tool: counts lines of a file under the session's cwd.
struct LineCount;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct LineCountParams {
    /// File to count, relative to the working directory.
    path: String,
}

impl TypedTool for LineCount {
    type Params = LineCountParams;
    fn name(&self) -> &str {
        "line_count"
    }
    fn description(&self) -> &str {
        "Count the lines of a text file."
    }
    async fn execute(
        &self,
        p: LineCountParams,
        cx: ToolCallContext,
    ) -> Result<AgentToolResult, ToolError> {
        let cwd = WorkingDir::of(&cx).unwrap_or(std::path::Path::new("."));
        let text = tokio::fs::read_to_string(cwd.join(&p.path)).await?;
        Ok(AgentToolResult::text(format!(
            "{} lines",
            text.lines().count()
        )))
    }
}

impl LineCount {
    /// The tool with its prompt snippet and its path declaration (so
    /// `Read(...)` rules cover it).
    fn definition(self) -> ToolDefinition {
        ToolDefinition::typed(self)
            .with_prompt_snippet("Count lines of a file")
            .with_path_argument(PathArgument::read("path"))
            .with_hints(ToolHints::read_only())
    }
}

/// An extension that refuses destructive shell commands.
struct NoRmRf;

impl Extension for NoRmRf {
    fn name(&self) -> &str {
        "no-rm-rf"
    }
    fn register(&self, api: &mut ExtensionApi) {
        api.on_tool_call(|event| async move {
            let command = event.input["command"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            Ok((event.tool_name == "bash" && command.contains("rm -rf"))
                .then(|| ToolCallDecision::block("rm -rf is not allowed in this project")))
        });
    }
}

const SCRIPT: &str = r#"
{"content":[{"type":"toolCall","id":"c1","name":"line_count","arguments":{"path":"Cargo.toml"}},{"type":"toolCall","id":"c2","name":"grep","arguments":{"pattern":"\\[workspace\\]","path":"Cargo.toml"}}]}
{"content":[{"type":"text","text":"The workspace manifest is short and declares a [workspace] section."}]}
"#;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cwd = std::env::current_dir()?;
    let client = Arc::new(ScriptedClient::from_jsonl(SCRIPT)?);
    let session = AgentSessionBuilder::new(Model::new("scripted", "example"), client)
        .cwd(&cwd)
        .builtin_tools(tools_builtin::read_only_tools(&cwd))
        .tool(LineCount.definition())
        .extension(Arc::new(NoRmRf))
        // grep, find and ls are not active by default: ask for them.
        .selection(ToolSelection {
            tools: Some(ToolSelection::parse_list("read,grep,find,ls,line_count")),
            ..Default::default()
        })
        .settings(Settings::default())
        .context_files(false)
        .build()?;
    println!("active tools: {:?}", session.active_tool_names());
    session.agent().subscribe(|event| match event {
        AgentEvent::ToolExecutionEnd {
            tool_name, result, ..
        } => println!("[{tool_name}] {}", result.text_content()),
        AgentEvent::MessageEnd {
            message: agent_ai::Message::Assistant(a),
        } if !a.text().is_empty() => println!("assistant: {}", a.text()),
        _ => {}
    });
    session.prompt("Tell me about Cargo.toml").await?;
    Ok(())
}
