//! `coding-agent tool`: run one tool call (or a batch) without a model.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_ai::ToolCall;
use agent_core::{AgentToolResult, CancellationToken, execute_tool_call_with};
use coding_agent::Settings;
use serde_json::{Value, json};

/// A usage error: reported on stderr with exit code 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Runs `name` with `args` in `cwd` through the loop's preparation and
/// validation; returns the result and whether it failed.
pub async fn run_one(
    name: &str,
    cwd: &Path,
    args: Value,
    cancel: CancellationToken,
    sandbox: Option<agent_sandbox::SandboxMode>,
    remote: Option<&agent_remote::Remote>,
) -> Result<(AgentToolResult, bool), UsageError> {
    // On a remote, `cwd` is there; the settings are this machine's.
    let settings = match remote {
        Some(_) => local_settings()?,
        None => load_settings(cwd)?,
    };
    let settings = Arc::new(settings);
    let definition = match remote {
        Some(remote) => crate::remote::tools(remote, cwd, &settings)
            .map_err(UsageError)?
            .into_iter()
            .find(|d| d.name() == name)
            .ok_or_else(|| UsageError(format!("Unknown tool name: {name}")))?,
        None => crate::sandbox::tools(cwd, &settings, sandbox, false)
            .map_err(UsageError)?
            .0
            .tool(name)
            .map_err(|e| UsageError(e.to_string()))?,
    };
    if let Some(allowed) = settings.allowed_tools()
        && !allowed.iter().any(|a| a == name)
    {
        let message = format!(
            "Tool {name} is not allowed by the allowedTools setting (allowed: {})",
            allowed.join(", ")
        );
        return Ok((AgentToolResult::error(message), true));
    }
    let rules = settings
        .permission_rules(cwd)
        .map_err(|e| UsageError(format!("cannot use the settings: {e}")))?;
    let declared = definition.clone();
    let gate = agent_permissions::PermissionGate::new(rules, None, cwd, "the tool command")
        .with_tools(Arc::new(move |n: &str| {
            (n == declared.name()).then(|| declared.clone())
        }));
    let mut extensions = coding_agent::tool_extensions(cwd, &settings);
    if let Some(remote) = remote {
        extensions.insert(remote.mutation_queue());
    }
    let hook = (!gate.is_empty()).then(|| gate.hook());
    let call = ToolCall::new("call_1", name, args);
    Ok(execute_tool_call_with(
        &[definition.tool()],
        &call,
        &cancel,
        hook.as_ref(),
        &extensions,
        |_| {},
    )
    .await)
}

/// The printed shape: `{"content": [...], "details": <value or null>, "isError": bool}`.
pub fn result_json(result: &AgentToolResult, is_error: bool) -> Value {
    json!({
        "content": result.content,
        "details": result.details,
        "isError": is_error,
    })
}

/// The settings for `dir`, with its project's trust applied.
fn load_settings(dir: &Path) -> Result<Settings, UsageError> {
    let mut settings = Settings::load(dir).map_err(|e| UsageError(e.to_string()))?;
    crate::trust_cmd::apply(&mut settings, dir, false);
    Ok(settings)
}

/// The settings of this machine's current directory (with a remote, the
/// tools' directory is there).
fn local_settings() -> Result<Settings, UsageError> {
    load_settings(&resolve_cwd(None)?)
}

fn resolve_cwd(cwd: Option<&Path>) -> Result<PathBuf, UsageError> {
    let cwd = match cwd {
        Some(c) => c.to_path_buf(),
        None => std::env::current_dir()
            .map_err(|e| UsageError(format!("cannot read the current directory: {e}")))?,
    };
    std::path::absolute(&cwd)
        .map_err(|e| UsageError(format!("invalid --cwd {}: {e}", cwd.display())))
}

/// The remote of `--remote`, connected, and the working directory: with a
/// remote, `--cwd` there (relative to its working directory, which is the
/// default); else `--cwd` here.
async fn remote_and_cwd(
    remote: &crate::args::RemoteArgs,
    cwd: Option<&Path>,
    sandbox: Option<agent_sandbox::SandboxMode>,
) -> Result<(Option<agent_remote::Remote>, PathBuf), UsageError> {
    let Some(uri) = &remote.remote else {
        return Ok((None, resolve_cwd(cwd)?));
    };
    // The sandbox this machine's settings and flags decide travels there.
    let connected = crate::remote::connect(uri, remote, &local_settings()?, sandbox, false)
        .await
        .map_err(UsageError)?;
    let cwd = crate::remote::remote_dir(&connected, cwd);
    Ok((Some(connected), cwd))
}

/// `coding-agent tool NAME --args JSON`.
pub async fn single(
    name: &str,
    cwd: Option<&Path>,
    args: &str,
    sandbox: Option<agent_sandbox::SandboxMode>,
    remote: &crate::args::RemoteArgs,
) -> Result<(), UsageError> {
    let args: Value = serde_json::from_str(args)
        .map_err(|e| UsageError(format!("--args is not valid JSON: {e}")))?;
    let (remote, cwd) = remote_and_cwd(remote, cwd, sandbox).await?;
    let cancel = CancellationToken::new();
    let ctrl_c = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            ctrl_c.cancel();
        }
    });
    // SIGTERM/SIGHUP: cancel, let the result line be printed, then exit.
    let (on_term, done) = (
        cancel.clone(),
        std::sync::Arc::new(tokio::sync::Notify::new()),
    );
    let finished = done.clone();
    crate::signals::exit_on_terminate(
        move || on_term.cancel(),
        move || {
            let finished = finished.clone();
            async move { finished.notified().await }
        },
    );
    let (result, is_error) = run_one(name, &cwd, args, cancel, sandbox, remote.as_ref()).await?;
    crate::print_line(&result_json(&result, is_error).to_string());
    done.notify_one();
    Ok(())
}

/// One case of a batch file.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Case {
    cwd: Option<PathBuf>,
    tool: String,
    #[serde(default = "empty_object")]
    args: Value,
    #[serde(default)]
    id: Value,
    cancel_after_ms: Option<u64>,
}

fn empty_object() -> Value {
    json!({})
}

async fn run_case(
    line: &str,
    default_cwd: &Path,
    sandbox: Option<agent_sandbox::SandboxMode>,
    remote: Option<agent_remote::Remote>,
) -> Value {
    let parsed: Result<Case, _> = serde_json::from_str(line);
    let case = match parsed {
        Ok(c) => c,
        Err(e) => {
            let id = serde_json::from_str::<Value>(line)
                .ok()
                .and_then(|v| v.get("id").cloned())
                .unwrap_or(Value::Null);
            let mut v = result_json(
                &AgentToolResult::error(format!("invalid batch case: {e}")),
                true,
            );
            v["id"] = id;
            return v;
        }
    };
    let cwd = match &case.cwd {
        Some(c) if c.is_absolute() => c.clone(),
        Some(c) => default_cwd.join(c),
        None => default_cwd.to_path_buf(),
    };
    let cancel = CancellationToken::new();
    if let Some(ms) = case.cancel_after_ms {
        let c = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            c.cancel();
        });
    }
    let name = case.tool.clone();
    let args = case.args.clone();
    // A panic anywhere in the case still yields its line.
    let joined =
        tokio::spawn(
            async move { run_one(&name, &cwd, args, cancel, sandbox, remote.as_ref()).await },
        )
        .await;
    let (result, is_error) = match joined {
        Ok(Ok(r)) => r,
        Ok(Err(usage)) => (AgentToolResult::error(usage.0), true),
        Err(e) => (AgentToolResult::error(format!("internal error: {e}")), true),
    };
    json!({
        "id": case.id,
        "content": result.content,
        "details": result.details,
        "isError": is_error,
    })
}

/// `coding-agent tool --batch FILE|-`: one JSON line per case, in input order,
/// each flushed as soon as its case finishes.
pub async fn batch(
    source: &str,
    cwd: Option<&Path>,
    sandbox: Option<agent_sandbox::SandboxMode>,
    remote: &crate::args::RemoteArgs,
) -> Result<(), UsageError> {
    // Each case builds its tools anew; commands of the batch still share
    // the standing sandbox, as a session's do.
    let _sandbox = agent_sandbox::SandboxLease::take();
    // One channel for the whole batch.
    let (remote, default_cwd) = remote_and_cwd(remote, cwd, sandbox).await?;
    let reader: Box<dyn BufRead + Send> = if source == "-" {
        Box::new(std::io::BufReader::new(std::io::stdin()))
    } else {
        let file = std::fs::File::open(source)
            .map_err(|e| UsageError(format!("cannot open batch file {source}: {e}")))?;
        Box::new(std::io::BufReader::new(file))
    };
    // Read lines on a blocking thread so a slow producer on stdin never stalls the runtime.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<std::io::Result<Vec<u8>>>();
    std::thread::spawn(move || {
        for line in reader.split(b'\n') {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let stdout = std::io::stdout();
    let mut number = 0usize;
    while let Some(line) = rx.recv().await {
        let line = line.map_err(|e| UsageError(format!("cannot read batch input: {e}")))?;
        number += 1;
        let out = match String::from_utf8(line) {
            Ok(line) if line.trim().is_empty() => continue,
            Ok(line) => run_case(&line, &default_cwd, sandbox, remote.clone()).await,
            // One bad line is one error result; the rest still run.
            Err(_) => json!({
                "id": null,
                "content": [{"type": "text", "text": format!("Batch line {number} is not valid UTF-8")}],
                "details": null,
                "isError": true,
            }),
        };
        let mut lock = stdout.lock();
        let _ = writeln!(lock, "{out}");
        let _ = lock.flush();
    }
    Ok(())
}
