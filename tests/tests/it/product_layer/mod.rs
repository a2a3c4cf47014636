//! The product layer: definitions and conversions, the registry's selection and
//! override rules, allowedTools, the system prompt, extensions and sessions,
//! a module per theme; the shared tool definitions here.

mod definitions;
mod extensions;
mod prompt;
mod selection;
mod session;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_core::{AgentTool, AgentToolResult, ToolError};
use coding_agent::{StyledLine, StyledText, ToolDefinition, WorkingDir};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};

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
