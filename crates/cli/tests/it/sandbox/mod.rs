//! The sandbox against an escape table, on real files and processes: each
//! row is a tool, a path trick and the refusal expected. Everything lives
//! under the target dir (not the system temp dir, which the sandbox treats
//! as writable), and the tools get a temp dir of their own.

mod commands;
mod file_tools;
mod git;
mod network;
mod places;
mod settings;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

struct Fixture {
    _base: tempfile::TempDir,
    base: PathBuf,
    ws: PathBuf,
    outside: PathBuf,
}

fn fixture() -> Fixture {
    let base_dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let base = std::fs::canonicalize(base_dir.path()).unwrap();
    let ws = base.join("ws");
    let outside = base.join("outside");
    for d in [
        &ws,
        &outside,
        &base.join("tmp"),
        &base.join("home/.ssh"),
        &base.join("agent"),
    ] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(outside.join("s.txt"), "outside secret\n").unwrap();
    std::fs::write(base.join("home/.ssh/id_rsa"), "PRIVATE KEY\n").unwrap();
    std::fs::write(ws.join("a.txt"), "inside\n").unwrap();
    std::fs::write(ws.join(".env"), "API_KEY=dotenv-secret\n").unwrap();
    std::fs::write(ws.join(".ENV"), "API_KEY=upper-secret\n").unwrap();
    std::fs::write(ws.join("server.pem"), "PEM-SECRET\n").unwrap();
    std::os::unix::fs::symlink("../outside/s.txt", ws.join("link")).unwrap();
    std::os::unix::fs::symlink("../outside", ws.join("dirlink")).unwrap();
    std::os::unix::fs::symlink(outside.join("new.txt"), ws.join("dangling")).unwrap();
    std::fs::hard_link(outside.join("s.txt"), ws.join("hard")).unwrap();
    // Look-alike directories next to the root: other case, other Unicode form.
    std::fs::create_dir_all(base.join("WS")).unwrap();
    std::fs::write(base.join("WS/a.txt"), "case trick\n").unwrap();
    let nfc = base.join("caf\u{e9}");
    let nfd = base.join("cafe\u{301}");
    std::fs::create_dir_all(&nfc).unwrap();
    std::fs::create_dir_all(&nfd).unwrap();
    std::fs::write(nfd.join("x.txt"), "normalisation trick\n").unwrap();
    Fixture {
        _base: base_dir,
        base,
        ws,
        outside,
    }
}

fn agent(f: &Fixture) -> Command {
    let mut c = Command::new(crate::bin());
    c.env("TMPDIR", f.base.join("tmp"))
        .env("HOME", f.base.join("home"))
        .env("CODING_AGENT_DIR", f.base.join("agent"))
        .env_remove("CODING_AGENT_SIMULATE_NO_LANDLOCK")
        .stdin(Stdio::null());
    c
}

/// `coding-agent tool NAME --sandbox MODE` in the workspace; (text, isError).
fn tool_in(f: &Fixture, cwd: &Path, mode: Option<&str>, name: &str, args: Value) -> (String, bool) {
    let mut c = agent(f);
    c.args(["tool", name, "--cwd"]).arg(cwd);
    if let Some(mode) = mode {
        c.args(["--sandbox", mode]);
    }
    let out = c.arg("--args").arg(args.to_string()).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    (
        v["content"][0]["text"].as_str().unwrap_or("").to_string(),
        v["isError"] == true,
    )
}

fn tool(f: &Fixture, name: &str, args: Value) -> (String, bool) {
    tool_in(f, &f.ws, Some("workspace-write"), name, args)
}

fn bash(f: &Fixture, command: &str) -> String {
    let (text, _) = tool(f, "bash", json!({"command": command}));
    text
}

/// `coding-agent tool bash` with extra environment and settings; the text.
fn bash_with(f: &Fixture, mode: &str, env: &[(&str, &str)], command: &str) -> String {
    let mut c = agent(f);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c
        .args(["tool", "bash", "--sandbox", mode, "--cwd"])
        .arg(&f.ws)
        .arg("--args")
        .arg(json!({"command": command}).to_string())
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "no JSON: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    v["content"][0]["text"].as_str().unwrap_or("").to_string()
}

/// git with a fixed identity and the fixture's home, which must succeed.
fn git_in(f: &Fixture, dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args([
            "-c",
            "user.email=a@b",
            "-c",
            "user.name=a",
            "-c",
            "protocol.file.allow=always",
        ])
        .args(args)
        .current_dir(dir)
        .env("HOME", f.base.join("home"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The workspace made a repository with the submodule `sub` (from
/// `subsrc`), whose `.git` is a gitfile.
fn workspace_with_submodule(f: &Fixture) {
    let src = f.base.join("subsrc");
    std::fs::create_dir_all(&src).unwrap();
    git_in(f, &src, &["init", "-q", "."]);
    git_in(f, &src, &["commit", "-q", "--allow-empty", "-m", "i"]);
    git_in(f, &f.ws, &["init", "-q", "."]);
    git_in(
        f,
        &f.ws,
        &["submodule", "add", "-q", src.to_str().unwrap(), "sub"],
    );
}

/// `coding-agent tool --batch` (one process, one session) of bash
/// commands in the workspace; the texts.
fn bash_batch(f: &Fixture, commands: &[&str]) -> Vec<String> {
    let batch = f.base.join("batch.jsonl");
    std::fs::write(
        &batch,
        commands
            .iter()
            .map(|c| format!("{}\n", json!({"tool": "bash", "args": {"command": c}})))
            .collect::<String>(),
    )
    .unwrap();
    let out = agent(f)
        .args(["tool", "--sandbox", "workspace-write", "--cwd"])
        .arg(&f.ws)
        .arg("--batch")
        .arg(&batch)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["content"][0]["text"].as_str().unwrap_or("").to_string()
        })
        .collect()
}

/// Polls the process table until no process's command line contains
/// `needle`, for at most `limit`; returns the lines still matching (empty
/// once they are gone).
fn wait_for_no_process_with(needle: &str, limit: std::time::Duration) -> Vec<String> {
    let deadline = std::time::Instant::now() + limit;
    loop {
        let ps = Command::new("ps")
            .args(["-eo", "pid=,stat=,args="])
            .output()
            .unwrap();
        let left: Vec<String> = String::from_utf8_lossy(&ps.stdout)
            .lines()
            .filter(|l| l.contains(needle))
            .map(str::to_string)
            .collect();
        if left.is_empty() || std::time::Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// `git init --separate-git-dir=WS/DIR WS`: `.git` becomes a file naming DIR.
fn init_with_separate_git_dir(f: &Fixture, dir: &str) {
    let git_dir = f.ws.join(dir);
    std::fs::create_dir_all(git_dir.parent().unwrap()).unwrap();
    let out = Command::new("git")
        .args(["init", "-q", "--separate-git-dir"])
        .arg(&git_dir)
        .arg(&f.ws)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
