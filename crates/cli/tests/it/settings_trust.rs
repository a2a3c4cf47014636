//! Settings never fail open: a broken file stops the CLI (exit 2) naming the
//! file and line, and `allowedTools` binds every entry point.

use std::path::Path;
use std::process::Stdio;

use serde_json::{Value, json};

fn bin(agent_dir: &Path) -> std::process::Command {
    let mut c = std::process::Command::new(crate::bin());
    c.env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env("CODING_AGENT_DIR", agent_dir)
        .stdin(Stdio::null());
    c
}

fn script(dir: &Path, turns: &[Value]) -> std::path::PathBuf {
    let path = dir.join("script.jsonl");
    let text: String = turns.iter().map(|t| format!("{t}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

/// `coding-agent -p hello` in `work`, the model answering "hi".
fn print_hello(agent_dir: &Path, work: &Path) -> std::process::Output {
    let s = script(work, &[json!({"content":[{"type":"text","text":"hi"}]})]);
    bin(agent_dir)
        .arg("--script")
        .arg(&s)
        .arg("--cwd")
        .arg(work)
        .args(["-p", "hello"])
        .output()
        .unwrap()
}

#[test]
fn a_settings_typo_stops_the_cli_instead_of_dropping_allowed_tools() {
    let agent = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(
        agent.path().join("settings.json"),
        "{\n  \"allowedTools\": [\"read\"],\n}\n",
    )
    .unwrap();
    let out = print_hello(agent.path(), work.path());
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("settings.json"), "{err}");
    assert!(err.contains("line 3"), "{err}");
    // Said once, and without colour codes when stderr is not a terminal.
    assert_eq!(err.matches("settings.json").count(), 1, "{err}");
    assert!(!err.contains('\u{1b}'), "{err}");

    // The tool command too.
    let out = bin(agent.path())
        .args(["tool", "bash", "--cwd"])
        .arg(work.path())
        .args(["--args", r#"{"command": "echo hi"}"#])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("settings.json"));
}

#[test]
fn a_project_cannot_widen_or_null_allowed_tools() {
    let agent = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(
        agent.path().join("settings.json"),
        r#"{"allowedTools": ["read", "ls"]}"#,
    )
    .unwrap();
    std::fs::create_dir(work.path().join(".pi")).unwrap();
    let project = work.path().join(".pi").join("settings.json");
    std::fs::write(&project, r#"{"allowedTools": ["read", "bash"]}"#).unwrap();
    let out = bin(agent.path())
        .arg("--cwd")
        .arg(work.path())
        .args(["--list-tools", "--tools", "read,bash,ls"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["read"], "{listed}");

    std::fs::write(&project, r#"{"allowedTools": null}"#).unwrap();
    let out = bin(agent.path())
        .arg("--cwd")
        .arg(work.path())
        .arg("--list-tools")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("allowedTools"));
}

#[test]
fn the_tool_command_obeys_allowed_tools() {
    let agent = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(
        agent.path().join("settings.json"),
        r#"{"allowedTools": ["read"]}"#,
    )
    .unwrap();
    let marker = work.path().join("ran");
    let out = bin(agent.path())
        .args(["tool", "bash", "--cwd"])
        .arg(work.path())
        .args([
            "--args",
            &json!({"command": format!("touch {}", marker.display())}).to_string(),
        ])
        .output()
        .unwrap();
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["isError"], true, "{result}");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("allowedTools"),
        "{result}"
    );
    assert!(!marker.exists(), "a disallowed tool ran");
}

#[test]
fn an_unknown_key_is_a_warning_naming_it_and_the_run_goes_on() {
    let agent = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(
        agent.path().join("settings.json"),
        r#"{"bashTimeoutSecs": 5, "theme": "dark"}"#,
    )
    .unwrap();
    let out = print_hello(agent.path(), work.path());
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("warning:").count(), 1, "{err}");
    assert!(err.contains("settings.json"), "{err}");
    assert!(err.contains("`bashTimeoutSecs`"), "{err}");
    assert!(!err.contains("theme"), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "hi");
}

/// Runs `command` to its end, killed and failed if it is still running
/// after `bound`: a hang is a failure, not a stuck test run.
fn output_within(
    mut command: std::process::Command,
    bound: std::time::Duration,
) -> std::process::Output {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > bound {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "still running after {bound:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// `coding-agent trust DIR`, which must succeed.
fn trust(agent_dir: &Path, project: &Path) {
    let out = bin(agent_dir).arg("trust").arg(project).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `--cwd TRUSTED` from inside another checkout: the trusted server's
/// `sh srv.sh` and the project's extension run in the project, on the
/// files trust pinned, never on the other checkout's `srv.sh`.
#[test]
fn programs_start_in_the_project_not_in_the_agents_directory() {
    use std::os::unix::fs::PermissionsExt;
    let agent = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    let marks = tempfile::tempdir().unwrap();
    let ran = marks.path().join("server-ran");
    let ext_dir = marks.path().join("extension-dir");
    std::fs::create_dir(ws.path().join(".pi")).unwrap();
    std::fs::write(
        ws.path().join(".pi/settings.json"),
        json!({"mcpServers": {"s": {"command": "sh", "args": ["srv.sh"]}}}).to_string(),
    )
    .unwrap();
    std::fs::write(
        ws.path().join("srv.sh"),
        format!("echo project > '{}'\n", ran.display()),
    )
    .unwrap();
    std::fs::write(
        other.path().join("srv.sh"),
        format!("echo other > '{}'\n", ran.display()),
    )
    .unwrap();
    std::fs::create_dir(ws.path().join(".pi/extensions")).unwrap();
    let ext = ws.path().join(".pi/extensions/where");
    std::fs::write(
        &ext,
        format!("#!/bin/sh\npwd -P > '{}'\n", ext_dir.display()),
    )
    .unwrap();
    std::fs::set_permissions(&ext, std::fs::Permissions::from_mode(0o755)).unwrap();
    trust(agent.path(), ws.path());

    let mut command = bin(agent.path());
    command
        .current_dir(other.path())
        .args(["--sandbox", "off", "--list-tools", "--cwd"])
        .arg(ws.path());
    // hang guard: a listing takes about a second; 60 s means stuck.
    let out = output_within(command, std::time::Duration::from_secs(60));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        std::fs::read_to_string(&ran).unwrap_or_default().trim(),
        "project",
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&ext_dir).unwrap_or_default().trim(),
        std::fs::canonicalize(ws.path())
            .unwrap()
            .display()
            .to_string(),
        "{err}"
    );
}

/// A pinned file replaced by a FIFO (and a FIFO as `AGENTS.md`): print
/// mode and the `tool` command start, leave the project's settings out
/// naming the FIFO, and finish, instead of waiting for a writer for ever.
#[test]
fn a_fifo_in_place_of_a_pinned_file_does_not_hang_a_start() {
    let agent = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join(".pi")).unwrap();
    std::fs::write(
        ws.path().join(".pi/settings.json"),
        json!({"mcpServers": {"s": {"command": "sh", "args": ["srv.sh"]}}}).to_string(),
    )
    .unwrap();
    std::fs::write(ws.path().join("srv.sh"), "exit 0\n").unwrap();
    trust(agent.path(), ws.path());
    std::fs::remove_file(ws.path().join("srv.sh")).unwrap();
    let fifo = |path: &Path| {
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            path,
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap()
    };
    fifo(&ws.path().join("srv.sh"));
    fifo(&ws.path().join("AGENTS.md"));

    let s = script(
        agent.path(),
        &[json!({"content":[{"type":"text","text":"hi"}]})],
    );
    let mut print = bin(agent.path());
    print
        .args(["--sandbox", "off", "--script"])
        .arg(&s)
        .arg("--cwd")
        .arg(ws.path())
        .args(["-p", "hello"]);
    // hang guard: a start takes about a second; 60 s means it waits on the FIFO.
    let out = output_within(print, std::time::Duration::from_secs(60));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("srv.sh") && err.contains("FIFO"), "{err}");
    assert!(err.contains("mcpServers"), "{err}");

    let mut tool = bin(agent.path());
    tool.args(["tool", "ls", "--sandbox", "off", "--cwd"])
        .arg(ws.path())
        .args(["--args", "{}"]);
    // hang guard, as above.
    let out = output_within(tool, std::time::Duration::from_secs(60));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The user's own MCP server and extension start in the home directory,
/// not in the project: `sh srv.sh` of the user's settings never runs a
/// `srv.sh` an untrusted project planted (as `python -m`, `npx` or
/// `cargo run` would pick up the project's files). Both learn the
/// session's directory from `CODING_AGENT_CWD`.
#[test]
fn the_users_own_programs_start_outside_the_project() {
    use std::os::unix::fs::PermissionsExt;
    let agent = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let marks = tempfile::tempdir().unwrap();
    let ran = marks.path().join("ran");
    let seen = marks.path().join("seen");
    std::fs::write(
        agent.path().join("settings.json"),
        json!({"mcpServers": {"mine": {"command": "sh", "args": ["srv.sh"]}}}).to_string(),
    )
    .unwrap();
    std::fs::write(
        home.path().join("srv.sh"),
        format!("echo home > '{}'\n", ran.display()),
    )
    .unwrap();
    std::fs::write(
        ws.path().join("srv.sh"),
        format!("echo project > '{}'\n", ran.display()),
    )
    .unwrap();
    std::fs::create_dir(agent.path().join("extensions")).unwrap();
    let ext = agent.path().join("extensions/where");
    std::fs::write(
        &ext,
        format!(
            "#!/bin/sh\necho \"$(pwd -P) $CODING_AGENT_CWD\" > '{}'\n",
            seen.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&ext, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut command = bin(agent.path());
    command
        .env("HOME", home.path())
        .current_dir(ws.path())
        .args(["--sandbox", "off", "--list-tools", "--cwd"])
        .arg(ws.path());
    // hang guard: a listing takes about a second; 60 s means stuck.
    let out = output_within(command, std::time::Duration::from_secs(60));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        std::fs::read_to_string(&ran).unwrap_or_default().trim(),
        "home",
        "{err}"
    );
    let home_real = std::fs::canonicalize(home.path()).unwrap();
    assert_eq!(
        std::fs::read_to_string(&seen).unwrap_or_default().trim(),
        format!("{} {}", home_real.display(), ws.path().display()),
        "{err}"
    );
}
