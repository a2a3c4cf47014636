//! Text mode: the events drawn by the tools' renderers (`crate::render`)
//! on stdout, for one prompt or, on a terminal without one, the line
//! prompt.

use std::path::PathBuf;
use std::sync::Mutex;

use coding_agent::AgentSession;

use crate::render::TextRenderer;

/// Draws each event of `session` with the registry's renderers.
pub fn attach(session: &AgentSession, cwd: PathBuf) {
    let renderer = Mutex::new(TextRenderer::new(session.registry(), cwd));
    session.agent().subscribe(move |event| {
        if let Ok(mut r) = renderer.lock() {
            r.handle(event);
        }
    });
}

/// `--verbose`: the session's tokens and cost as a line on stderr.
pub fn report_usage(session: &AgentSession) {
    let usage = session.usage();
    eprintln!(
        "usage: {} input, {} output, {} cache read, {} cache write tokens; cost ${:.6}",
        usage.input, usage.output, usage.cache_read, usage.cache_write, usage.cost.total
    );
}

/// The line prompt: reads prompts (and slash commands) line by line until
/// end of input or `/exit`.
pub async fn line_prompt(session: &AgentSession, commands: &agent_commands::Commands) -> i32 {
    loop {
        eprint!("> ");
        let Some(line) = crate::prompt::stdin_lines().next().await else {
            break;
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if matches!(line, "/exit" | "/quit") {
            break;
        }
        if line.starts_with('/') && crate::slash::handle(commands, session, line).await {
            continue;
        }
        let line = match session.expand_input(line) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("coding-agent: {e}");
                continue;
            }
        };
        if let Err(e) = session.prompt(line).await
            && e.outcome().is_none()
        {
            eprintln!("coding-agent: {e}");
        }
    }
    0
}
