//! `coding-agent trust [DIR]` and the trust question of interactive runs
//! (the records are `agent_trust`'s; `coding_agent::resolve_project_trust`
//! applies them to the settings).

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use agent_trust::{TrustError, TrustState, TrustStore};
use coding_agent::{Settings, TrustOutcome, resolve_project_trust};

use crate::args::TrustArgs;

/// Applies the project's code-running settings if it is trusted; asks on a
/// terminal when `may_ask`, else leaves them out with one warning. The
/// settings' own warnings (unknown keys) are printed first: every command
/// that loads settings for a run comes through here.
/// Returns whether the project is trusted (its skills and prompt templates
/// may be read).
pub fn apply(settings: &mut Settings, cwd: &Path, may_ask: bool) -> bool {
    for warning in settings.warnings() {
        eprintln!("coding-agent: warning: {}", shown(warning));
    }
    let store = user_trust_store();
    let can_ask = may_ask && std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let mut ask = |question: &str| -> bool {
        eprint!("{} [y/N] ", shown(question));
        let _ = std::io::stderr().flush();
        let mut line = String::new();
        // One line from the shared stdin: nothing else reads it yet.
        let _ = std::io::stdin().lock().read_line(&mut line);
        matches!(line.trim(), "y" | "Y" | "yes" | "Yes")
    };
    let outcome = resolve_project_trust(
        settings,
        cwd,
        store.as_ref(),
        if can_ask { Some(&mut ask) } else { None },
    );
    match outcome {
        TrustOutcome::Ignored { warning } => {
            eprintln!("coding-agent: warning: {}", shown(warning));
            false
        }
        TrustOutcome::Applied => true,
        _ => store
            .is_some_and(|s| matches!(s.state(cwd, settings.held_back()), Ok(TrustState::Trusted))),
    }
}

/// `coding-agent trust`.
pub fn run(args: TrustArgs) -> i32 {
    let Some(store) = user_trust_store() else {
        eprintln!("coding-agent trust: no agent directory (set CODING_AGENT_DIR or HOME)");
        return 2;
    };
    if args.list {
        return match store.projects() {
            Ok(list) => {
                for p in list {
                    crate::print_line(&p);
                }
                0
            }
            Err(e) => {
                eprintln!("coding-agent trust: {}", shown(&e));
                1
            }
        };
    }
    let dir = match args.dir.map(Ok).unwrap_or_else(std::env::current_dir) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("coding-agent trust: {}", shown(&e));
            return 2;
        }
    };
    let dir = match std::fs::canonicalize(&dir) {
        Ok(d) if d.is_dir() => d,
        Ok(d) => {
            eprintln!(
                "coding-agent trust: {} is not a directory",
                shown(d.display())
            );
            return 2;
        }
        Err(e) => {
            eprintln!(
                "coding-agent trust: {}: {}",
                shown(dir.display()),
                shown(&e)
            );
            return 2;
        }
    };
    if args.revoke {
        return match store.revoke(&dir) {
            Ok(true) => {
                eprintln!("{} is no longer trusted", shown(dir.display()));
                0
            }
            Ok(false) => {
                eprintln!("{} was not trusted", shown(dir.display()));
                0
            }
            Err(e) => {
                eprintln!("coding-agent trust: {}", shown(&e));
                1
            }
        };
    }
    let settings = match Settings::load(&dir) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("coding-agent trust: cannot use the settings file {e}");
            return 2;
        }
    };
    let held = settings.held_back();
    let pins = agent_trust::pins(&dir, held);
    if let Err(e) = store.trust_pinned(&dir, held, &pins) {
        eprintln!("coding-agent trust: {}", shown(&e));
        if matches!(e, TrustError::CannotPin { .. }) {
            eprintln!(
                "coding-agent trust: an interactive run asks about this project each time instead"
            );
        }
        return 1;
    }
    for (link, target) in &pins.links_out {
        eprintln!(
            "{} is a link out of the project to {} (pinned by its content)",
            shown(link),
            shown(target.display())
        );
    }
    if held.is_empty() {
        eprintln!(
            "{} is trusted (its settings start no programs now; if that changes, it must be trusted again)",
            shown(dir.display())
        );
    } else {
        eprintln!(
            "{} is trusted with these settings (a change to them needs another `coding-agent trust`):\n{}",
            shown(dir.display()),
            serde_json::to_string_pretty(&serde_json::Value::Object(held.clone()))
                .unwrap_or_default()
        );
    }
    0
}

/// The user's trust records, in the agent directory; `None` without one.
fn user_trust_store() -> Option<TrustStore> {
    coding_agent::agent_dir().map(|dir| TrustStore::in_agent_dir(&dir))
}

/// `text` as it may be printed on a terminal: names and messages here come
/// from the project's files (file names, skill names), which may hold
/// escape sequences.
fn shown(text: impl std::fmt::Display) -> String {
    coding_agent::sanitize_terminal_text(&text.to_string()).into_owned()
}
