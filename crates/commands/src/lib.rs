//! Pi's built-in slash commands over an [`AgentSession`], one
//! implementation for every front end: the line prompt, the terminal UI
//! (through its `SlashCommands` hook) and any program of your own.
//!
//! A command answers text for the user (`Ok`) or an error (`Err`);
//! anything that is not a built-in command answers `None` and is a prompt
//! (where `/skill:` and templates are expanded by the session).
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use std::sync::Arc;
//! use agent_commands::Commands;
//! use coding_agent::AgentSessionBuilder;
//! use coding_agent::agent_ai::{Model, providers::scripted::ScriptedClient};
//!
//! let session = AgentSessionBuilder::new(Model::new("scripted", "demo"), Arc::new(ScriptedClient::new(vec![])))
//!     .cwd(std::env::temp_dir())
//!     .build()?;
//! let commands = Commands::default();
//! let help = commands.run(&session, "/help").await.expect("a command")?;
//! assert!(help.contains("/export"));
//! assert!(commands.run(&session, "fix the bug").await.is_none());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

mod clipboard;
mod model;
mod session;
mod setup;

use std::path::PathBuf;
use std::sync::Arc;

use coding_agent::AgentSession;
pub use coding_agent::ModelResolver;
use coding_agent::agent_ai::Model;

pub use clipboard::{Clipboard, ClipboardError};
pub use session::describe;

/// A built-in command: its name (without the `/`), what it takes, and
/// what it does, for `/help`, completion and RPC `get_commands`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandSpec {
    /// The name, without the slash.
    pub name: &'static str,
    /// Its arguments, as the user types them (`""`: none).
    pub arguments: &'static str,
    /// One line on what it does.
    pub description: &'static str,
}

/// Every built-in command, in `/help` order.
pub const BUILTIN: &[CommandSpec] = &[
    spec("help", "", "List the commands"),
    spec(
        "session",
        "",
        "Show the session: file, id, messages, tokens, cost, context use",
    ),
    spec("new", "", "Start a new session"),
    spec(
        "resume",
        "[ID]",
        "List this directory's sessions, or continue one",
    ),
    spec("tree", "", "Show the session's entries as a tree"),
    spec(
        "fork",
        "ENTRY",
        "Continue in a new session from an entry of /tree",
    ),
    spec("clone", "", "Duplicate the session at its current position"),
    spec(
        "import",
        "PATH",
        "Open a JSONL session file (its id and directory kept)",
    ),
    spec("name", "[NAME]", "Show or set the session's name"),
    spec(
        "compact",
        "[INSTRUCTIONS]",
        "Summarise older messages to free context",
    ),
    spec(
        "export",
        "[PATH]",
        "Write the session as an HTML page (JSONL for a .jsonl PATH)",
    ),
    spec("copy", "", "Copy the last answer to the clipboard"),
    spec(
        "model",
        "[PROVIDER/ID]",
        "List the models, or switch to one",
    ),
    spec("thinking", "[LEVEL]", "Show or set the thinking level"),
    spec(
        "settings",
        "[KEY [VALUE]]",
        "Show the settings, or set one in the user settings file",
    ),
    spec(
        "reload",
        "",
        "Read skills, prompt templates and settings again, keeping the conversation",
    ),
    spec("hotkeys", "", "List the keys of the terminal UI"),
    spec("trust", "", "Show whether this project is trusted"),
    spec("exit", "", "Leave"),
];

const fn spec(
    name: &'static str,
    arguments: &'static str,
    description: &'static str,
) -> CommandSpec {
    CommandSpec {
        name,
        arguments,
        description,
    }
}

/// What a [`CommandHandler`] returns: its output or error, when it is done
/// (a command may connect, sign in or wait).
pub type CommandFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<String, String>> + Send>>;

/// A command the assembling program adds (see [`Commands::custom`]): runs
/// on the session with the text after the command's name.
///
/// ```
/// use std::sync::Arc;
/// use agent_commands::{CommandHandler, CommandSpec};
/// let spec = CommandSpec { name: "hello", arguments: "[NAME]", description: "Greet" };
/// let handler: CommandHandler = Arc::new(|_session, rest| {
///     let rest = rest.to_string();
///     Box::pin(async move { Ok(format!("hello {rest}")) })
/// });
/// # let _ = (spec, handler);
/// ```
pub type CommandHandler = Arc<dyn Fn(&AgentSession, &str) -> CommandFuture + Send + Sync>;

/// Reloads what the assembling program read at start (see
/// [`Commands::reload`]).
pub type Reloader = Arc<dyn Fn(&AgentSession) -> Result<String, String> + Send + Sync>;

/// What the commands need besides the session: supplied by the program
/// that assembles the agent (the stock CLI fills every field).
#[derive(Clone, Default)]
pub struct Commands {
    /// Directory of new sessions (`/new`, `/import`); `None`: the
    /// session's own directory, or the default one.
    pub session_dir: Option<PathBuf>,
    /// The models `/model` lists.
    pub models: Vec<Model>,
    /// Finds a model and a client for `/model PROVIDER/ID`; without it,
    /// only the current provider's models in [`Commands::models`] switch.
    pub resolve_model: Option<ModelResolver>,
    /// The text of `/hotkeys` (the terminal UI's key table).
    pub hotkeys: Option<Arc<dyn Fn() -> String + Send + Sync>>,
    /// `/reload`: reads the skills, prompt templates and settings again
    /// the way the program read them at start, hands them to the session
    /// and answers what it loaded.
    pub reload: Option<Reloader>,
    /// Where `/copy` writes.
    pub clipboard: Clipboard,
    /// Commands of the assembling program (the stock CLI adds `/mcp`),
    /// listed and completed with the built-in ones; a built-in name wins.
    pub custom: Vec<(CommandSpec, CommandHandler)>,
}

impl std::fmt::Debug for Commands {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Commands")
            .field("session_dir", &self.session_dir)
            .field("models", &self.models.len())
            .field("resolve_model", &self.resolve_model.is_some())
            .field("hotkeys", &self.hotkeys.is_some())
            .field("reload", &self.reload.is_some())
            .field("clipboard", &self.clipboard)
            .field(
                "custom",
                &self.custom.iter().map(|(s, _)| s.name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Commands {
    /// Runs `line` if it is a built-in command: its output or error;
    /// `None` when it is a prompt (or `/exit`, which the front end
    /// handles).
    pub async fn run(&self, session: &AgentSession, line: &str) -> Option<Result<String, String>> {
        let line = line.trim();
        let (command, rest) = match line.split_once(char::is_whitespace) {
            Some((c, r)) => (c, r.trim()),
            None => (line, ""),
        };
        let name = command.strip_prefix('/')?;
        tracing::debug!(command = name, "slash command");
        let result = match name {
            "session" => session::info(session),
            "new" => session::new_session(self, session),
            "resume" => session::resume(self, session, rest),
            "tree" => session::with_manager(session, |m| Ok(m.tree_text())),
            "fork" => session::fork(session, rest),
            "clone" => session::clone(session),
            "import" => session::import(self, session, rest),
            "name" => session::name(session, rest),
            "compact" => session
                .compact((!rest.is_empty()).then_some(rest))
                .await
                .map(|r| format!("compacted: about {} tokens summarised", r.tokens_before))
                .map_err(|e| e.to_string()),
            "export" => session::export(session, rest),
            "copy" => clipboard::copy_last_answer(&self.clipboard, session),
            "model" => model::model(self, session, rest),
            "thinking" => model::thinking(session, rest),
            "settings" => setup::settings(session, rest),
            "hotkeys" => Ok(self
                .hotkeys
                .as_ref()
                .map(|f| f())
                .unwrap_or_else(|| "this front end has no key bindings".to_string())),
            "trust" => setup::trust(session),
            "reload" => match &self.reload {
                Some(reload) => reload(session),
                None => Err("this program cannot reload its resources".into()),
            },
            "help" => Ok(help(&self.custom)),
            other => {
                let (_, handler) = self.custom.iter().find(|(spec, _)| spec.name == other)?;
                handler(session, rest).await
            }
        };
        Some(result)
    }

    /// This directory's sessions, newest first: what `/resume` lists and
    /// `/resume ID` finds (the session directory as `/new` uses it). Reads
    /// every session file's head, so a front end that must not wait calls
    /// it off its own task.
    pub fn sessions(&self, session: &AgentSession) -> Vec<agent_sessions::SessionInfo> {
        session::list(self, session)
    }

    /// The directory [`Commands::sessions`] lists: the configured one, the
    /// current session's, or the working directory's default.
    pub fn sessions_dir(&self, session: &AgentSession) -> Option<PathBuf> {
        session::session_dir(self, session)
    }

    /// The built-in commands and the program's own, for listings and
    /// completion.
    pub fn specs(&self) -> Vec<CommandSpec> {
        let mut all = BUILTIN.to_vec();
        let custom = self.custom.iter().map(|(spec, _)| *spec);
        all.extend(custom.filter(|c| !BUILTIN.iter().any(|b| b.name == c.name)));
        all
    }
}

/// `/help`: every command with its arguments and description.
fn help(custom: &[(CommandSpec, CommandHandler)]) -> String {
    let all: Vec<&CommandSpec> = BUILTIN
        .iter()
        .chain(custom.iter().map(|(s, _)| s))
        .collect();
    let width = all
        .iter()
        .map(|c| c.name.len() + c.arguments.len() + 2)
        .max()
        .unwrap_or(0);
    all.iter()
        .map(|c| {
            let usage = if c.arguments.is_empty() {
                format!("/{}", c.name)
            } else {
                format!("/{} {}", c.name, c.arguments)
            };
            format!("{usage:<width$}  {}", c.description)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first argument of `rest`: a quoted string, or up to the first
/// space (Pi's reading of a path argument).
pub(crate) fn first_argument(rest: &str) -> Option<&str> {
    let rest = rest.trim_start();
    match rest.chars().next()? {
        quote @ ('"' | '\'') => {
            let inner = &rest[1..];
            inner.find(quote).map(|end| &inner[..end])
        }
        _ => rest.split_whitespace().next(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_and_skills_never_shadow_a_builtin() {
        // coding-agent never expands a template or skill under these names.
        for spec in BUILTIN {
            assert!(
                coding_agent::BUILTIN_COMMANDS.contains(&spec.name),
                "{}",
                spec.name
            );
        }
    }

    #[test]
    fn path_arguments_are_quoted_or_a_word() {
        assert_eq!(first_argument(""), None);
        assert_eq!(first_argument("  out.html extra"), Some("out.html"));
        assert_eq!(first_argument("\"my file.html\" x"), Some("my file.html"));
        assert_eq!(first_argument("'unclosed"), None);
    }

    #[test]
    fn help_lists_every_command() {
        let text = help(&[]);
        for spec in BUILTIN {
            assert!(text.contains(&format!("/{}", spec.name)), "{}", spec.name);
        }
    }
}
