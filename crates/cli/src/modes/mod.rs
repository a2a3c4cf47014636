//! The run's modes, one module each, as Pi's `modes/`: `print` (`--print`,
//! the final text), `json` (`--mode json`, every event a line), `rpc`
//! (`--mode rpc`, Pi's protocol on stdin and stdout), `text` (the events
//! drawn by the renderers, and the line prompt), `tui` (the terminal UI),
//! and `listing` (`--list-tools`, `--print-system-prompt`). Start-up is
//! `crate::startup`; this module picks the mode and reads the prompt.

mod json;
mod listing;
mod print;
mod rpc;
mod text;
mod tui;

use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::sync::Arc;

use agent_ai::{Message, StopReason};
use coding_agent::AgentSession;

use crate::args::{Mode, RunArgs};
use crate::startup::{Purpose, SessionPlan};

/// `coding-agent [OPTIONS] [PROMPT]...`: the process's exit code.
pub async fn run(args: RunArgs) -> i32 {
    if let Some(search) = &args.list_models {
        return match crate::provider::registry() {
            Ok(registry) => {
                crate::print_line(&crate::provider::list_models(&registry, search));
                0
            }
            Err(e) => {
                eprintln!("{e}");
                2
            }
        };
    }
    if args.list_tools || args.print_system_prompt {
        return listing::run(&args).await;
    }
    if args.mode == Mode::Rpc {
        return rpc::run(&args).await;
    }
    prompted(args).await
}

/// How a prompted run goes, decided once the prompt is read.
enum Prompted {
    /// The terminal UI, and the channel its permission dialog answers on.
    Tui(agent_tui::PermissionQuestions),
    /// The line prompt (text mode on a terminal without a prompt).
    Lines,
    /// One prompt.
    Once(String),
}

/// Text, print and JSON modes, the line prompt and the terminal UI: the
/// prompt comes from the arguments or stdin.
async fn prompted(args: RunArgs) -> i32 {
    // Only the terminal text mode asks; print and JSON modes never do.
    let may_ask = !args.print && args.mode == Mode::Text;
    let startup = crate::startup::assemble(&args, Purpose::Run, may_ask, |prepared| {
        let mut prompt = args.prompt.join(" ");
        let stdin_tty = std::io::stdin().is_terminal();
        if prompt.trim().is_empty() && !stdin_tty {
            let mut input = String::new();
            if std::io::stdin().read_to_string(&mut input).is_ok() {
                prompt = input;
            }
        }
        let interactive = prompt.trim().is_empty();
        if interactive && (!stdin_tty || args.print || args.mode == Mode::Json) {
            eprintln!("coding-agent: no prompt given (pass it as arguments or on stdin)");
            return Err(2);
        }
        let (client, model) = crate::provider::select(&args, prepared.settings).map_err(|e| {
            eprintln!("{e}");
            2
        })?;
        let commands = crate::slash::commands(
            &args,
            prepared.settings,
            &model,
            prepared.cwd,
            prepared.trusted,
            prepared.policy,
        );
        // The terminal UI asks in its own dialog; the line prompt on the
        // terminal; print and JSON modes refuse.
        let plan = |asker, label| SessionPlan {
            client,
            model,
            asker,
            label,
        };
        let (plan, how) = if interactive && tui::wanted(&args) {
            let (asker, questions) = agent_tui::permission_channel();
            (
                plan(Some(Arc::new(asker) as _), "text mode"),
                Prompted::Tui(questions),
            )
        } else {
            let how = if interactive {
                Prompted::Lines
            } else {
                Prompted::Once(prompt)
            };
            let plan = if args.mode == Mode::Json {
                plan(None, "JSON mode")
            } else if args.print {
                plan(None, "print mode")
            } else if stdin_tty && std::io::stderr().is_terminal() {
                plan(
                    Some(Arc::new(crate::prompt::SharedTerminalPrompt) as _),
                    "text mode",
                )
            } else {
                plan(None, "text mode without a terminal")
            };
            (plan, how)
        };
        Ok((plan, (how, commands)))
    })
    .await;
    let startup = match startup {
        Ok(s) => s,
        Err(code) => return code,
    };
    let (session, cwd) = (startup.session, startup.cwd);
    let (how, commands) = startup.planned;
    if let Prompted::Tui(questions) = how {
        // The UI draws the events, reads Ctrl+C as a key and ends on
        // SIGTERM and SIGHUP itself (restoring the terminal first).
        return tui::run(session, questions, commands, &args).await;
    }
    attach_output(&session, args.mode, args.print, cwd);
    install_ctrl_c(&session);
    let (agent, idle) = (session.agent().clone(), session.agent().clone());
    crate::signals::exit_on_terminate(
        move || agent.abort(),
        move || {
            let idle = idle.clone();
            async move { idle.wait_for_idle().await }
        },
    );
    let prompt = match how {
        Prompted::Once(prompt) => prompt,
        _ => return text::line_prompt(&session, &commands).await,
    };
    // A run that fails is reported by the output (and the renderers); only
    // a refusal to run needs words here.
    let prompt = match session.expand_input(&prompt) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("coding-agent: {e}");
            return 1;
        }
    };
    if let Err(e) = session.prompt(prompt).await
        && e.outcome().is_none()
    {
        eprintln!("coding-agent: {e}");
        return 1;
    }
    if args.mode == Mode::Json {
        json::report_usage(&session);
    } else {
        if args.verbose {
            text::report_usage(&session);
        }
        if args.print {
            print::final_text(&session);
        }
    }
    exit_code(&session)
}

/// Attaches the output for `mode`: JSON lines, or (unless `print`, which
/// shows only the final text) the renderers' text.
pub fn attach_output(session: &AgentSession, mode: Mode, print: bool, cwd: PathBuf) {
    if mode == Mode::Json {
        json::attach(session);
    } else if !print {
        text::attach(session, cwd);
    }
}

/// Exit code of a finished run: 1 when its last assistant message failed.
fn exit_code(session: &AgentSession) -> i32 {
    let messages = session.agent().messages();
    match messages.iter().rev().find_map(Message::as_assistant) {
        Some(a) if matches!(a.stop_reason, StopReason::Error | StopReason::Aborted) => 1,
        _ => 0,
    }
}

/// Ctrl-C: the first cancels the run (tools and their processes included),
/// the second exits.
fn install_ctrl_c(session: &AgentSession) {
    let agent = session.agent().clone();
    tokio::spawn(async move {
        let mut presses = 0;
        while tokio::signal::ctrl_c().await.is_ok() {
            presses += 1;
            if presses >= 2 || !agent.is_running() {
                agent_sandbox::shut_down();
                std::process::exit(130);
            }
            eprintln!("\ncancelling... (press Ctrl-C again to exit)");
            agent.abort();
        }
    });
}
