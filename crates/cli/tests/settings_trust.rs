//! Settings never fail open: a broken file stops the CLI (exit 2) naming the
//! file and line, and `allowedTools` binds every entry point.

use std::path::Path;
use std::process::Stdio;

use serde_json::{Value, json};

fn bin(agent_dir: &Path) -> std::process::Command {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin!("coding-agent"));
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
