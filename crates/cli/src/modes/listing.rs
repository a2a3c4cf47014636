//! `--list-tools` (the registry as JSON) and `--print-system-prompt`: a
//! session assembled like a run's, described instead of run.

use std::sync::Arc;

use agent_ai::Model;
use agent_ai::providers::scripted::ScriptedClient;
use coding_agent::AgentSession;
use serde_json::json;

use crate::args::{Mode, RunArgs};
use crate::startup::{Purpose, SessionPlan};

/// Prints the tools or the system prompt; the process's exit code.
pub async fn run(args: &RunArgs) -> i32 {
    // Trust may ask for the system prompt on a terminal, never for a listing.
    let may_ask = !args.print && args.mode == Mode::Text && !args.list_tools;
    let startup = crate::startup::assemble(args, Purpose::Describe, may_ask, |_| {
        let plan = SessionPlan {
            client: Arc::new(ScriptedClient::new(Vec::new())),
            model: Model::new("none", "none"),
            asker: None,
            label: "this mode",
        };
        Ok((plan, ()))
    })
    .await;
    let session = match startup {
        Ok(s) => s.session,
        Err(code) => return code,
    };
    if args.list_tools {
        crate::print_line(&serde_json::to_string_pretty(&list_tools(&session)).unwrap_or_default());
    } else {
        crate::print_line(&session.system_prompt());
    }
    0
}

fn list_tools(session: &AgentSession) -> serde_json::Value {
    let registry = session.registry();
    let active = registry.active_names();
    serde_json::Value::Array(
        registry
            .definitions()
            .iter()
            .map(|d| {
                json!({
                    "name": d.name(),
                    "label": d.label(),
                    "description": d.description(),
                    "promptSnippet": d.prompt_snippet(),
                    "promptGuidelines": d.prompt_guidelines(),
                    "parameters": d.parameters(),
                    "active": active.iter().any(|n| n == d.name()),
                    "source": match registry.source(d.name()) {
                        Some(coding_agent::ToolSource::Builtin) => json!("builtin"),
                        Some(coding_agent::ToolSource::Extension(path)) => json!({"extension": path}),
                        _ => json!("program"),
                    },
                })
            })
            .collect(),
    )
}
