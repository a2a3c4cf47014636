//! `--mode rpc`: the session driven by Pi's protocol on stdin and stdout
//! (`agent_rpc::run_rpc`); a rule's question goes to the client.

use std::sync::Arc;

use agent_rpc::{RpcOptions, RpcPermissionPrompt, run_rpc};

use crate::args::RunArgs;
use crate::startup::{Purpose, SessionPlan};

/// Serves the session until stdin ends; the process's exit code.
pub async fn run(args: &RunArgs) -> i32 {
    let startup = crate::startup::assemble(args, Purpose::Run, false, |prepared| {
        let (client, model) = crate::provider::select(args, prepared.settings).map_err(|e| {
            eprintln!("{e}");
            2
        })?;
        let prompt = RpcPermissionPrompt::new();
        let plan = SessionPlan {
            client,
            model,
            asker: Some(Arc::new(prompt.clone())),
            label: "RPC mode",
        };
        Ok((plan, prompt))
    })
    .await;
    let (session, prompt) = match startup {
        Ok(s) => (s.session, s.planned),
        Err(code) => return code,
    };
    let agent = session.agent().clone();
    crate::signals::exit_on_terminate(move || agent.abort(), || async {});
    let current = session.agent().model();
    let (models, resolve_model) = crate::provider::switchable(args, session.settings(), &current);
    let options = RpcOptions {
        session_dir: args.session_dir.clone(),
        models,
        resolve_model,
        export_html: Some(crate::export_cmd::rpc_exporter(session.registry())),
        builtin_commands: agent_commands::BUILTIN
            .iter()
            .map(|c| (c.name.to_string(), c.description.to_string()))
            .collect(),
    };
    match run_rpc(
        session,
        prompt,
        options,
        tokio::io::stdin(),
        tokio::io::stdout(),
    )
    .await
    {
        Ok(()) => 0,
        Err(e) => {
            tracing::debug!(error = %e, "the RPC client went away");
            0
        }
    }
}
