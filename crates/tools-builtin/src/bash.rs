//! `bash`: run a shell command, stream its output, keep the tail.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_tool::{AgentToolResult, ToolError};
use agent_tool::{
    DEFAULT_BASH_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS, RenderContext, RenderResultOptions,
    StyledLine, StyledText, Theme, ToolCallContext, ToolDefinition, ToolHints, ToolSettings,
    TypedTool, timeout_seconds,
};
use serde::Deserialize;
use serde_json::Value;

use crate::bash_output::OutputAccumulator;
use crate::view::preview;
use agent_tool::ops::{ExecEnd, ExecRequest, ProcessOps};

/// Arguments of `bash`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct BashParams {
    /// The command to run with bash.
    pub command: String,
    /// Timeout in seconds. Defaults to the session's setting (180 unless configured); 0 disables the timer.
    pub timeout: Option<f64>,
}

/// What a spawn hook may rewrite before a command starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnContext {
    /// The command text (after the command prefix was applied).
    pub command: String,
    /// Working directory.
    pub cwd: PathBuf,
    /// The complete environment.
    pub env: Vec<(OsString, OsString)>,
}

/// Rewrites a command before it is spawned.
pub type SpawnHook = Arc<dyn Fn(SpawnContext) -> SpawnContext + Send + Sync>;

/// The settings the bash tool reads when its options leave them unset.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct BashSettings {
    /// `bashTimeoutSeconds`: a call's timeout when it names none (`0`: none).
    bash_timeout_seconds: Option<f64>,
    /// `shellPath`: the shell commands run in.
    shell_path: Option<String>,
    /// `shellCommandPrefix`: text run before every command.
    shell_command_prefix: Option<String>,
}

/// Options of the bash tool; unset fields fall back to the settings.
#[derive(Clone, Default)]
pub struct BashOptions {
    /// Prepended as `<prefix>\n<command>` (setting `shellCommandPrefix`).
    pub command_prefix: Option<String>,
    /// Shell binary (setting `shellPath`).
    pub shell_path: Option<String>,
    /// Called with every command before it starts.
    pub spawn_hook: Option<SpawnHook>,
}

impl std::fmt::Debug for BashOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BashOptions")
            .field("command_prefix", &self.command_prefix)
            .field("shell_path", &self.shell_path)
            .field("spawn_hook", &self.spawn_hook.is_some())
            .finish()
    }
}

/// The `bash` tool.
pub struct BashTool {
    cwd: PathBuf,
    processes: Arc<dyn ProcessOps>,
    options: BashOptions,
}

impl BashTool {
    /// A bash tool running commands in `cwd` through `processes`.
    pub fn new(
        cwd: impl Into<PathBuf>,
        processes: Arc<dyn ProcessOps>,
        options: BashOptions,
    ) -> Self {
        BashTool {
            cwd: cwd.into(),
            processes,
            options,
        }
    }
}

/// Minimum time between progress updates.
const UPDATE_INTERVAL: Duration = Duration::from_millis(100);

/// `1`, `0.5`, `180`: a number of seconds as the caller wrote it; very
/// small values in exponent form (`1e-300`), as JavaScript prints them.
fn format_seconds(s: f64) -> String {
    if s != 0.0 && s.abs() < 1e-6 {
        format!("{s:e}")
    } else {
        format!("{s}")
    }
}

impl TypedTool for BashTool {
    type Params = BashParams;

    fn name(&self) -> &str {
        "bash"
    }

    fn label(&self) -> &str {
        "Bash"
    }

    fn description(&self) -> &str {
        "Run a bash command in the working directory and return its combined stdout and stderr. Output is cut to the last 2000 lines or 50KB, whichever comes first; the complete output is then saved to a file whose path is given. Commands time out after the session's default (180 seconds unless configured); pass timeout in seconds to change it, 0 for none."
    }

    async fn execute(
        &self,
        params: BashParams,
        cx: ToolCallContext,
    ) -> Result<AgentToolResult, ToolError> {
        let settings: BashSettings = cx
            .get::<ToolSettings>()
            .map(ToolSettings::read)
            .unwrap_or_default();
        let (on_update, cancel) = (cx.updates, cx.cancel);
        if cancel.is_cancelled() {
            return Err(ToolError::new("Command aborted"));
        }
        let timeout = match params.timeout {
            Some(t) if !t.is_finite() || t < 0.0 => {
                return Err(ToolError::new(
                    "Invalid timeout: must be a finite number of seconds, or 0 to disable the timer",
                ));
            }
            Some(t) if t > MAX_TIMEOUT_SECONDS => {
                return Err(ToolError::new(
                    "Invalid timeout: maximum is 2147483.647 seconds",
                ));
            }
            Some(0.0) => None,
            Some(t) => Some(t),
            None => timeout_seconds(settings.bash_timeout_seconds, DEFAULT_BASH_TIMEOUT_SECONDS),
        };
        if !self.processes.working_dir_exists(&self.cwd) {
            return Err(ToolError::new(format!(
                "Working directory does not exist: {}\nCannot execute bash commands.",
                self.cwd.display()
            )));
        }
        let shell_path = self.options.shell_path.clone().or(settings.shell_path);
        let shell = self.processes.resolve_shell(shell_path.as_deref())?;
        let prefix = self
            .options
            .command_prefix
            .clone()
            .or(settings.shell_command_prefix);
        let command = match prefix {
            Some(p) => format!("{p}\n{}", params.command),
            None => params.command.clone(),
        };
        let mut spawn = SpawnContext {
            command,
            cwd: self.cwd.clone(),
            env: std::env::vars_os().collect(),
        };
        if let Some(hook) = &self.options.spawn_hook {
            spawn = hook(spawn);
        }
        let request = ExecRequest {
            shell,
            command: spawn.command,
            cwd: spawn.cwd,
            env: spawn.env,
            timeout: timeout.map(Duration::from_secs_f64),
        };

        on_update.send(AgentToolResult::default());
        let mut output = OutputAccumulator::new(self.processes.clone());
        let mut last_update = Instant::now();
        let mut dirty = false;
        let ended = {
            let mut on_data = |chunk: &[u8]| {
                output.push(chunk);
                dirty = true;
                if last_update.elapsed() >= UPDATE_INTERVAL {
                    last_update = Instant::now();
                    dirty = false;
                    let snap = output.snapshot();
                    on_update.send(
                        AgentToolResult::text(snap.render(false))
                            .with_details(snap.details(output.full_output_path())),
                    );
                }
            };
            self.processes
                .exec(request, &mut on_data, cancel.clone())
                .await
        };
        output.finish();
        let snapshot = output.snapshot();
        if dirty || snapshot.truncation.is_some() {
            on_update.send(
                AgentToolResult::text(snapshot.render(false))
                    .with_details(snapshot.details(output.full_output_path())),
            );
        }
        let with_status = |status: String| {
            let out = snapshot.render(false);
            if out.is_empty() {
                status
            } else {
                format!("{out}\n\n{status}")
            }
        };
        let end = ended.map_err(|e| {
            // A backend whose link dropped mid-command (a remote): the
            // output so far, and why it stops there.
            if e.kind() == std::io::ErrorKind::ConnectionAborted {
                ToolError::new(with_status(format!("Command interrupted: {e}")))
            } else {
                ToolError::new(format!("Failed to start the shell: {e}"))
            }
        })?;
        match end {
            ExecEnd::Exited(Some(0)) | ExecEnd::Exited(None) => {
                let mut details = snapshot.details(output.full_output_path());
                if let Some(report) = self.processes.sandbox_report() {
                    if !details.is_object() {
                        details = serde_json::json!({});
                    }
                    details["sandbox"] = report;
                }
                Ok(AgentToolResult::text(snapshot.render(true)).with_details(details))
            }
            ExecEnd::Exited(Some(code)) => Err(ToolError::new(format!(
                "{}\n\nCommand exited with code {code}",
                snapshot.render(true)
            ))),
            ExecEnd::TimedOut => Err(ToolError::new(with_status(format!(
                "Command timed out after {} seconds",
                format_seconds(timeout.unwrap_or_default())
            )))),
            ExecEnd::Aborted => Err(ToolError::new(with_status("Command aborted".to_string()))),
        }
    }
}

impl BashTool {
    /// The tool with its prompt snippet, guidelines, renderers and
    /// declarations, as a session registers it.
    pub fn definition(self) -> ToolDefinition {
        ToolDefinition::typed(self)
            .with_command_argument("command")
            .with_prompt_snippet(
                "Run shell commands (tests, builds, git, and anything else the shell can do)",
            )
            .with_render_call(render_call)
            .with_render_result(render_result)
            .with_hints(ToolHints {
                read_only: Some(false),
                destructive: Some(true),
                idempotent: Some(false),
                open_world: Some(true),
            })
    }
}

fn render_call(args: &Value, theme: &Theme, _ctx: &RenderContext) -> Option<StyledText> {
    let command = args["command"].as_str().unwrap_or("");
    let mut text = StyledText::new();
    for (i, line) in command.lines().enumerate() {
        let prompt = if i == 0 { "$ " } else { "  " };
        text.push(StyledLine::styled(prompt, theme.muted).push(line, theme.accent));
    }
    if let Some(t) = args["timeout"].as_f64() {
        text.push(StyledLine::styled(
            format!("  (timeout {}s)", format_seconds(t)),
            theme.muted,
        ));
    }
    Some(text)
}

fn render_result(
    result: &AgentToolResult,
    options: &RenderResultOptions,
    theme: &Theme,
    _ctx: &RenderContext,
) -> Option<StyledText> {
    let style = if options.is_error {
        theme.error
    } else {
        agent_tool::anstyle::Style::new()
    };
    let n = if options.expanded {
        usize::MAX
    } else if options.is_partial {
        5
    } else {
        20
    };
    Some(preview(&result.text_content(), n, true, style, theme))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_print_like_the_caller_wrote_them() {
        assert_eq!(format_seconds(180.0), "180");
        assert_eq!(format_seconds(0.5), "0.5");
        assert_eq!(format_seconds(1e-300), "1e-300");
    }

    #[test]
    fn seconds_format() {
        assert_eq!(format_seconds(1.0), "1");
        assert_eq!(format_seconds(0.5), "0.5");
    }
}
