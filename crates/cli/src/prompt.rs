//! The terminal: one reader of standard input shared by the line prompt and
//! permission questions, so an answer never goes to the wrong one.

use std::sync::OnceLock;

use agent_permissions::{PermissionAnswer, PermissionPrompt, PermissionRequest};
use coding_agent::prelude::BoxFuture;
use tokio::sync::{Mutex, mpsc};

/// Lines of standard input, read by one thread for the whole process.
pub struct StdinLines {
    rx: Mutex<mpsc::UnboundedReceiver<String>>,
}

/// The process's stdin lines (the reading thread starts on first use).
pub fn stdin_lines() -> &'static StdinLines {
    static LINES: OnceLock<StdinLines> = OnceLock::new();
    LINES.get_or_init(|| {
        let (tx, rx) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            let stdin = std::io::stdin();
            loop {
                let mut line = String::new();
                match stdin.read_line(&mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        StdinLines { rx: Mutex::new(rx) }
    })
}

impl StdinLines {
    /// The next line, `None` at end of input.
    pub async fn next(&self) -> Option<String> {
        self.rx.lock().await.recv().await
    }
}

/// Asks on the terminal: `[y]es / [n]o / [a]lways this session / r
/// <reason>`. One question at a time; end of input counts as no.
#[derive(Default)]
pub struct TerminalPrompt {
    one_at_a_time: Mutex<()>,
}

impl PermissionPrompt for TerminalPrompt {
    fn ask(&self, request: PermissionRequest) -> BoxFuture<'static, PermissionAnswer> {
        let question = coding_agent::sanitize_terminal_text(&request.question()).into_owned();
        // 'static: the prompt lives for the process (see run.rs).
        let this: &'static TerminalPrompt = prompt();
        Box::pin(async move {
            let _turn = this.one_at_a_time.lock().await;
            loop {
                eprint!(
                    "\n{question} [y]es / [n]o / [a]lways this session / r <reason> (no, and tell the model why): "
                );
                let Some(line) = stdin_lines().next().await else {
                    return PermissionAnswer::No;
                };
                let line = line.trim();
                match line.to_ascii_lowercase().as_str() {
                    "y" | "yes" => return PermissionAnswer::Yes,
                    "n" | "no" => return PermissionAnswer::No,
                    "a" | "always" => return PermissionAnswer::Always,
                    _ => {}
                }
                // `r <reason>`: the reason as typed (control characters
                // dropped), for the model to read.
                if let Some(reason) = line.strip_prefix("r ").or_else(|| line.strip_prefix("R ")) {
                    let reason: String = reason.chars().filter(|c| !c.is_control()).collect();
                    if !reason.trim().is_empty() {
                        return PermissionAnswer::NoBecause(reason.trim().to_string());
                    }
                }
            }
        })
    }
}

/// The process's terminal prompt.
pub fn prompt() -> &'static TerminalPrompt {
    static PROMPT: OnceLock<TerminalPrompt> = OnceLock::new();
    PROMPT.get_or_init(TerminalPrompt::default)
}

/// A handle to [`prompt`] for the session builder.
pub struct SharedTerminalPrompt;

impl PermissionPrompt for SharedTerminalPrompt {
    fn ask(&self, request: PermissionRequest) -> BoxFuture<'static, PermissionAnswer> {
        prompt().ask(request)
    }
}
