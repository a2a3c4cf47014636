//! The sandbox against an escape table, on real files and processes: each
//! row is a tool, a path trick and the refusal expected. Everything lives
//! under the target dir (not the system temp dir, which the sandbox treats
//! as writable), and the tools get a temp dir of their own.

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

#[test]
fn escape_table_of_the_file_tools() {
    let f = fixture();
    let outside_file = f.outside.join("s.txt").display().to_string();
    let edit = |path: &str| json!({"path": path, "edits": [{"oldText": "secret", "newText": "x"}]});
    let rows: Vec<(&str, &str, Value, &str)> = vec![
        (
            "dot-dot",
            "read",
            json!({"path": "../outside/s.txt"}),
            "outside the workspace roots",
        ),
        (
            "absolute",
            "read",
            json!({"path": outside_file}),
            "outside the workspace roots",
        ),
        (
            "symlinked file",
            "read",
            json!({"path": "link"}),
            "resolves outside the workspace root",
        ),
        (
            "symlinked directory",
            "read",
            json!({"path": "dirlink/s.txt"}),
            "resolves outside",
        ),
        (
            "symlinked directory, ls",
            "ls",
            json!({"path": "dirlink"}),
            "resolves outside",
        ),
        (
            "symlinked directory, grep",
            "grep",
            json!({"pattern": "secret", "path": "dirlink"}),
            "resolves outside",
        ),
        (
            "symlinked directory, find",
            "find",
            json!({"pattern": "*", "path": "dirlink"}),
            "resolves outside",
        ),
        ("home", "read", json!({"path": "~/.ssh/id_rsa"}), "Sandbox:"),
        (
            "file URL",
            "read",
            json!({"path": format!("file://{outside_file}")}),
            "Sandbox:",
        ),
        (
            "other case",
            "read",
            json!({"path": "../WS/a.txt"}),
            "outside the workspace roots",
        ),
        (
            "other Unicode form",
            "read",
            json!({"path": "../cafe\u{301}/x.txt"}),
            "outside the workspace roots",
        ),
        (
            "deny .env",
            "read",
            json!({"path": ".env"}),
            "denied pattern",
        ),
        (
            "deny .ENV (case)",
            "read",
            json!({"path": ".ENV"}),
            "denied pattern",
        ),
        (
            "deny *.pem",
            "read",
            json!({"path": "server.pem"}),
            "denied pattern",
        ),
        (
            "write dot-dot",
            "write",
            json!({"path": "../outside/w.txt", "content": "x"}),
            "outside the workspace roots",
        ),
        (
            "write through dir link",
            "write",
            json!({"path": "dirlink/w.txt", "content": "x"}),
            "resolves outside",
        ),
        (
            "write dangling link out",
            "write",
            json!({"path": "dangling", "content": "x"}),
            "Sandbox:",
        ),
        (
            "write hard link",
            "write",
            json!({"path": "hard", "content": "x"}),
            "hard links",
        ),
        ("edit hard link", "edit", edit("hard"), "hard links"),
        (
            "edit symlinked file",
            "edit",
            edit("link"),
            "resolves outside",
        ),
        (
            "write .env",
            "write",
            json!({"path": ".env", "content": "x"}),
            "denied pattern",
        ),
    ];
    for (trick, name, args, expected) in rows {
        let (text, is_error) = tool(&f, name, args);
        assert!(
            is_error && text.contains(expected),
            "{trick} ({name}): {text}"
        );
    }
    // Nothing outside changed.
    assert_eq!(
        std::fs::read_to_string(f.outside.join("s.txt")).unwrap(),
        "outside secret\n"
    );
    assert!(!f.outside.join("new.txt").exists());
    assert!(!f.outside.join("w.txt").exists());
    // Work inside still works.
    assert_eq!(
        tool(&f, "read", json!({"path": "a.txt"})),
        ("inside\n".to_string(), false)
    );
    let (text, is_error) = tool(
        &f,
        "write",
        json!({"path": "sub/new.txt", "content": "ok\n"}),
    );
    assert!(!is_error, "{text}");
    let (text, is_error) = tool(
        &f,
        "edit",
        json!({"path": "sub/new.txt", "edits": [{"oldText": "ok", "newText": "fine"}]}),
    );
    assert!(!is_error, "{text}");
    assert_eq!(
        std::fs::read_to_string(f.ws.join("sub/new.txt")).unwrap(),
        "fine\n"
    );
}

#[test]
fn denied_files_never_show_in_listings_or_searches() {
    let f = fixture();
    let (grep, _) = tool(&f, "grep", json!({"pattern": "secret|SECRET|inside"}));
    assert!(grep.contains("a.txt"), "{grep}");
    assert!(
        !grep.contains("dotenv-secret") && !grep.contains("upper-secret") && !grep.contains("PEM"),
        "{grep}"
    );
    let (find, _) = tool(&f, "find", json!({"pattern": "*"}));
    assert!(
        find.contains("a.txt")
            && !find.contains(".env")
            && !find.contains(".ENV")
            && !find.contains("server.pem"),
        "{find}"
    );
    let (ls, _) = tool(&f, "ls", json!({}));
    assert!(
        ls.contains("a.txt")
            && !ls.contains(".env")
            && !ls.contains(".ENV")
            && !ls.contains("server.pem"),
        "{ls}"
    );
    // Off: Pi's behaviour, everything visible.
    let (ls, _) = tool_in(&f, &f.ws, None, "ls", json!({}));
    assert!(ls.contains(".env"), "{ls}");
}

#[test]
fn read_only_mode_modifies_nothing() {
    let f = fixture();
    let ro = |name: &str, args: Value| tool_in(&f, &f.ws, Some("read-only"), name, args);
    let (text, e) = ro("write", json!({"path": "n.txt", "content": "x"}));
    assert!(e && text.contains("read-only"), "{text}");
    let (text, e) = ro(
        "edit",
        json!({"path": "a.txt", "edits": [{"oldText": "inside", "newText": "x"}]}),
    );
    assert!(e && text.contains("read-only"), "{text}");
    let (text, _) = ro("bash", json!({"command": "touch n2.txt; echo rc=$?"}));
    assert!(text.contains("rc=1"), "{text}");
    assert!(!f.ws.join("n.txt").exists() && !f.ws.join("n2.txt").exists());
    assert_eq!(ro("read", json!({"path": "a.txt"})).0, "inside\n");
}

fn bash(f: &Fixture, command: &str) -> String {
    let (text, _) = tool(f, "bash", json!({"command": command}));
    text
}

#[test]
fn sandboxed_bash_writes_only_inside_and_has_no_tcp() {
    let f = fixture();
    let out = f.outside.display().to_string();
    for (how, command) in [
        ("touch", format!("touch {out}/t1")),
        ("redirect", format!("echo x > {out}/t2")),
        ("cp", format!("cp a.txt {out}/t3")),
        (
            "python",
            format!("python3 -c 'open(\"{out}/t4\", \"w\").write(\"x\")'"),
        ),
        (
            "setsid child",
            format!("setsid sh -c 'touch {out}/t5'; sleep 0.3"),
        ),
        ("through a symlink", "echo x > dirlink/t6".to_string()),
        ("home", "touch ~/t7".to_string()),
    ] {
        bash(&f, &format!("{command}; true"));
        let leaked: Vec<_> = std::fs::read_dir(&f.outside)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(leaked, [std::ffi::OsString::from("s.txt")], "{how} escaped");
        assert!(!f.base.join("home/t7").exists(), "{how} escaped");
    }
    // No TCP to a local listener.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let text = bash(
        &f,
        &format!("(echo hi > /dev/tcp/127.0.0.1/{port}) 2>&1; echo rc=$?"),
    );
    assert!(text.contains("rc=1"), "{text}");
    if Command::new("curl").arg("--version").output().is_ok() {
        let text = bash(
            &f,
            &format!("curl -s -m 5 http://127.0.0.1:{port}/; echo rc=$?"),
        );
        assert!(text.contains("rc=7"), "curl connected: {text}");
    }
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_err(), "a connection got through");
    // Real work inside the root still runs: git, a compiler, temp files.
    let text = bash(
        &f,
        "set -e; git init -q repo; cd repo; echo 'int main(void){return 0;}' > m.c; \
         cc -o m m.c; ./m; git add m.c; git -c user.email=a@b -c user.name=n commit -qm one; \
         git log --oneline | wc -l; mktemp > /dev/null; echo done",
    );
    assert!(text.trim_end().ends_with("1\ndone"), "{text}");
}

#[test]
fn secrets_leave_the_environment_unless_passed() {
    let f = fixture();
    std::fs::write(
        f.base.join("agent/settings.json"),
        r#"{"sandbox": {"passEnv": ["KEEP_TOKEN"]}}"#,
    )
    .unwrap();
    let mut c = agent(&f);
    let out = c
        .env("OPENAI_API_KEY", "sk-1")
        .env("GITHUB_TOKEN", "gh-1")
        .env("DB_PASSWORD", "pw")
        .env("KEEP_TOKEN", "kept")
        .env("PLAIN", "plain")
        .args(["tool", "bash", "--sandbox", "workspace-write", "--cwd"])
        .arg(&f.ws)
        .arg("--args")
        .arg(json!({"command": "echo [$OPENAI_API_KEY][$GITHUB_TOKEN][$DB_PASSWORD][$KEEP_TOKEN][$PLAIN]"}).to_string())
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["content"][0]["text"], "[][][][kept][plain]\n");
}

#[test]
fn bash_fails_closed_naming_what_is_missing() {
    let f = fixture();
    // No bubblewrap; a bubblewrap the kernel refuses namespaces to.
    let refusing = f.base.join("bwrap-no-userns");
    std::fs::write(
        &refusing,
        "#!/bin/sh\necho 'bwrap: No permissions to create a new namespace, likely because the kernel does not allow non-privileged user namespaces.' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(
        &refusing,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    for (bwrap, expected) in [
        (f.base.join("missing/bwrap"), "names no file"),
        (refusing, "user namespaces"),
    ] {
        let out = agent(&f)
            .env("CODING_AGENT_BWRAP", &bwrap)
            .args(["tool", "bash", "--sandbox", "workspace-write", "--cwd"])
            .arg(&f.ws)
            .arg("--args")
            .arg(json!({"command": "touch ran"}).to_string())
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let text = v["content"][0]["text"].as_str().unwrap();
        assert_eq!(v["isError"], true);
        assert!(
            text.contains(expected) && text.contains("--sandbox off"),
            "{text}"
        );
        assert!(!text.contains("Landlock"), "{text}");
        assert!(!f.ws.join("ran").exists());
    }
    // Out of descriptors: the refusal says so and blames no kernel feature.
    let bin = crate::bin();
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -n 15; exec '{}' tool bash --sandbox workspace-write --cwd '{}' --args '{{\"command\":\"touch ran\"}}'",
            bin.display(),
            f.ws.display()
        ))
        .env("TMPDIR", f.base.join("tmp"))
        .env("HOME", f.base.join("home"))
        .env("CODING_AGENT_DIR", f.base.join("agent"))
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !all.contains("Landlock") && !all.contains("kernel"),
        "{all}"
    );
    assert!(
        !f.ws.join("ran").exists() || all.contains("\"isError\":false"),
        "{all}"
    );
}

#[test]
fn a_project_cannot_loosen_but_can_tighten() {
    let f = fixture();
    std::fs::create_dir_all(f.ws.join(".pi")).unwrap();
    std::fs::write(
        f.ws.join(".pi/settings.json"),
        r#"{"sandbox": {"mode": "off", "network": true, "additionalDirectories": ["/"], "passEnv": ["X"]}}"#,
    )
    .unwrap();
    let (text, e) = tool(&f, "read", json!({"path": "../outside/s.txt"}));
    assert!(e && text.contains("outside the workspace roots"), "{text}");
    // A project root outside the user's roots is refused, judged on where
    // it resolves: a symlink named like a subdirectory counts as outside.
    std::os::unix::fs::symlink(&f.outside, f.ws.join("escape")).unwrap();
    for roots in [r#"["/"]"#, r#"["escape"]"#, r#"["escape/.."]"#] {
        std::fs::write(
            f.ws.join(".pi/settings.json"),
            format!(r#"{{"sandbox": {{"roots": {roots}}}}}"#),
        )
        .unwrap();
        let out = agent(&f)
            .args(["tool", "bash", "--sandbox", "workspace-write", "--cwd"])
            .arg(&f.ws)
            .args(["--args", r#"{"command":"touch escape/planted"}"#])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{roots}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("outside the user's roots"), "{roots}: {err}");
        assert!(!f.outside.join("planted").exists(), "{roots}");
    }
    // Tightening applies even without the flag.
    std::fs::write(
        f.ws.join(".pi/settings.json"),
        r#"{"sandbox": {"mode": "read-only"}}"#,
    )
    .unwrap();
    let (text, e) = tool_in(
        &f,
        &f.ws,
        None,
        "write",
        json!({"path": "n.txt", "content": "x"}),
    );
    assert!(e && text.contains("read-only"), "{text}");
    // A broken sandbox setting stops the tool instead of running unconfined.
    std::fs::write(
        f.ws.join(".pi/settings.json"),
        r#"{"sandbox": {"mode": "nope"}}"#,
    )
    .unwrap();
    let out = agent(&f)
        .args(["tool", "read", "--cwd"])
        .arg(&f.ws)
        .args(["--args", r#"{"path":"a.txt"}"#])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("sandbox.mode"));
}

#[tokio::test]
async fn the_mcp_server_is_confined_by_default_and_catches_a_swapped_symlink() {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
    let f = fixture();
    std::fs::create_dir_all(f.ws.join("sw")).unwrap();
    let command = tokio::process::Command::new(crate::bin()).configure(|c| {
        c.arg("mcp").arg("--cwd").arg(&f.ws);
        c.env("TMPDIR", f.base.join("tmp"))
            .env("HOME", f.base.join("home"))
            .env("CODING_AGENT_DIR", f.base.join("agent"));
    });
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
    let call = |name: &str, args: Value| {
        client.call_tool(
            CallToolRequestParams::new(name.to_string())
                .with_arguments(args.as_object().cloned().unwrap()),
        )
    };
    let text = |r: &rmcp::model::CallToolResult| {
        r.content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect::<String>()
    };
    let r = call("write", json!({"path": "sw/f.txt", "content": "one"}))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    // Between two calls the directory becomes a symlink to outside.
    std::fs::rename(f.ws.join("sw"), f.ws.join("sw-old")).unwrap();
    std::os::unix::fs::symlink(&f.outside, f.ws.join("sw")).unwrap();
    let r = call("write", json!({"path": "sw/f.txt", "content": "two"}))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("resolves outside"), "{}", text(&r));
    assert!(!f.outside.join("f.txt").exists());
    let r = call("read", json!({"path": "../outside/s.txt"}))
        .await
        .unwrap();
    assert!(
        r.is_error == Some(true) && text(&r).contains("outside the workspace roots"),
        "{}",
        text(&r)
    );
    let out = f.outside.display().to_string();
    let r = call(
        "bash",
        json!({"command": format!("touch {out}/b; echo rc=$?")}),
    )
    .await
    .unwrap();
    assert!(text(&r).contains("rc=1"), "{}", text(&r));
    client.cancel().await.unwrap();

    // --sandbox off opts out.
    let command = tokio::process::Command::new(crate::bin()).configure(|c| {
        c.arg("mcp")
            .arg("--cwd")
            .arg(&f.ws)
            .args(["--sandbox", "off"]);
        c.env("CODING_AGENT_DIR", f.base.join("agent"));
    });
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
    let r = client
        .call_tool(
            CallToolRequestParams::new("read").with_arguments(
                json!({"path": "../outside/s.txt"})
                    .as_object()
                    .cloned()
                    .unwrap(),
            ),
        )
        .await
        .unwrap();
    assert_eq!(text(&r), "outside secret\n");
    client.cancel().await.unwrap();
}

#[test]
fn bash_results_say_which_protections_were_active() {
    let f = fixture();
    let out = agent(&f)
        .args(["tool", "bash", "--sandbox", "workspace-write", "--cwd"])
        .arg(&f.ws)
        .args(["--args", r#"{"command":"echo hi"}"#])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let report = &v["details"]["sandbox"];
    assert_eq!(report["mode"], "workspace-write", "{v}");
    assert_eq!(report["enforcedBy"], "bubblewrap namespaces + seccomp");
    assert!(
        report["network"].as_str().unwrap().starts_with("blocked"),
        "{report}"
    );
    // Off: Pi's plain result, no report.
    let out = agent(&f)
        .args(["tool", "bash", "--cwd"])
        .arg(&f.ws)
        .args(["--args", r#"{"command":"echo hi"}"#])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["details"].is_null(), "{v}");
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

/// Every command escape the review found, each row a command that must
/// leave `outside` (and the protected paths) exactly as they were.
#[test]
fn escape_table_of_commands() {
    let f = fixture();
    let out = f.outside.display().to_string();
    std::fs::create_dir_all(f.ws.join(".git/hooks")).unwrap();
    std::fs::write(f.ws.join(".git/config"), "[core]\n").unwrap();
    std::fs::create_dir_all(f.ws.join(".pi")).unwrap();
    std::fs::write(f.ws.join(".pi/settings.json"), "{}\n").unwrap();
    let rows = [
        (
            "git hook planted",
            "printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > .git/hooks/pre-commit".to_string(),
        ),
        (
            "git config fsmonitor",
            "git config core.fsmonitor 'touch /tmp/pwned'".to_string(),
        ),
        (
            "git config appended",
            "echo '[core] fsmonitor = x' >> .git/config".to_string(),
        ),
        (
            "git dir replaced",
            "mv .git .git-old && mkdir .git".to_string(),
        ),
        (
            "project settings",
            "echo '{\"shellCommandPrefix\":\"touch /tmp/pwned\"}' > .pi/settings.json".to_string(),
        ),
        ("project settings removed", "rm -rf .pi".to_string()),
        ("block device", "mknod disk b 8 0".to_string()),
        ("char device", "mknod mem c 1 1".to_string()),
        (
            "device via python",
            "python3 -c 'import os,stat; os.mknod(\"d2\", stat.S_IFBLK|0o600, os.makedev(8,0))'"
                .to_string(),
        ),
        ("inherited descriptor", "echo leaked >&7".to_string()),
        (
            "agent dir",
            format!(
                "echo '{{}}' > {}/trusted-projects.json",
                f.base.join("agent").display()
            ),
        ),
    ];
    let (r, w) = (f.outside.join("fd7"), f.outside.join("fd7"));
    std::fs::write(&r, "").unwrap();
    for (what, command) in rows {
        // fd 7 open for appending to a file outside, inherited by the agent.
        let text = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "exec 7>>'{}'; exec '{}' tool bash --sandbox workspace-write --cwd '{}' --args \"$1\"",
                w.display(),
                crate::bin().display(),
                f.ws.display()
            ))
            .arg("sh")
            .arg(json!({"command": format!("{command}; echo rc=$?")}).to_string())
            .env("TMPDIR", f.base.join("tmp"))
            .env("HOME", f.base.join("home"))
            .env("CODING_AGENT_DIR", f.base.join("agent"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&text.stdout).to_string();
        assert!(!text.contains("rc=0"), "{what} succeeded: {text}");
        assert_eq!(std::fs::read_to_string(&r).unwrap(), "", "{what}");
        assert_eq!(
            std::fs::read_to_string(f.ws.join(".git/config")).unwrap(),
            "[core]\n",
            "{what}"
        );
        assert!(!f.ws.join(".git/hooks/pre-commit").exists(), "{what}");
        assert_eq!(
            std::fs::read_to_string(f.ws.join(".pi/settings.json")).unwrap(),
            "{}\n",
            "{what}"
        );
        for node in ["disk", "mem", "d2"] {
            assert!(!f.ws.join(node).exists(), "{what}: {node} made");
        }
        assert!(
            !f.base.join("agent/trusted-projects.json").exists(),
            "{what}"
        );
    }
    // A FIFO is not a device: still allowed, as ordinary work needs it.
    assert!(bash(&f, "mkfifo pipe && echo made").contains("made"));
    // The file tools keep the same paths read-only.
    for (name, args) in [
        (
            "write",
            json!({"path": ".git/hooks/post-checkout", "content": "#!/bin/sh\n"}),
        ),
        (
            "write",
            json!({"path": ".pi/settings.json", "content": "{\"shellPath\":\"/x\"}"}),
        ),
        (
            "edit",
            json!({"path": ".git/config", "edits": [{"oldText": "[core]", "newText": "[core]\nfsmonitor = x"}]}),
        ),
        ("write", json!({"path": "sub/.git/config", "content": "x"})),
    ] {
        let (text, e) = tool(&f, name, args.clone());
        assert!(e && text.contains("protected"), "{args}: {text}");
    }
    let _ = out;
}

#[test]
fn read_only_mode_changes_no_metadata() {
    let f = fixture();
    let target = f.outside.join("s.txt");
    let inside = f.ws.join("a.txt");
    let before = |p: &Path| {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(p).unwrap();
        (m.mode(), m.uid(), m.gid(), m.mtime(), m.mtime_nsec())
    };
    let (o, i) = (before(&target), before(&inside));
    for p in [target.display().to_string(), inside.display().to_string()] {
        let text = bash_with(
            &f,
            "read-only",
            &[],
            &format!(
                "chmod 777 {p}; chown 123:123 {p}; touch -d 2001-01-01 {p}; chattr +i {p} 2>/dev/null; setfattr -n user.x -v 1 {p} 2>/dev/null; echo x >> {p}; rm -f {p}; echo done"
            ),
        );
        assert!(text.contains("done"), "{text}");
    }
    assert_eq!(before(&target), o);
    assert_eq!(before(&inside), i);
    assert_eq!(std::fs::read_to_string(&inside).unwrap(), "inside\n");
}

#[test]
fn network_off_means_no_tcp_udp_or_unix_socket() {
    let f = fixture();
    // UDP to a listener on the host's loopback.
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let port = udp.local_addr().unwrap().port();
    // A socket file outside the roots (docker.sock, the ssh agent's) and an
    // abstract socket.
    let path = f.outside.join("agent.sock");
    let unix = std::os::unix::net::UnixListener::bind(&path).unwrap();
    unix.set_nonblocking(true).unwrap();
    use std::os::linux::net::SocketAddrExt;
    let abstract_name = format!("coding-agent-test-{}", std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(&abstract_name).unwrap();
    let abstract_listener = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
    abstract_listener.set_nonblocking(true).unwrap();
    let script = format!(
        r#"
import socket
def attempt(name, fn):
    try:
        fn(); print(name, "open")
    except OSError as e:
        print(name, "refused", e.errno)
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"x", ("127.0.0.1", {port}))
def unix():
    s = socket.socket(socket.AF_UNIX); s.connect("{sock}")
def abstract():
    s = socket.socket(socket.AF_UNIX); s.connect("\0{abstract_name}")
def dgram():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.sendto(b"x", "{sock}")
attempt("udp", udp); attempt("unix", unix); attempt("abstract", abstract); attempt("dgram", dgram)
"#,
        sock = path.display()
    );
    std::fs::write(f.ws.join("net.py"), script).unwrap();
    let text = bash(
        &f,
        "python3 net.py; curl -s -m 3 --unix-socket agent.sock http://x/; echo curl=$?",
    );
    for name in ["unix", "abstract", "dgram"] {
        assert!(text.contains(&format!("{name} refused")), "{name}: {text}");
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    let mut buf = [0u8; 8];
    assert!(
        udp.recv_from(&mut buf).is_err(),
        "a datagram got out: {text}"
    );
    assert!(unix.accept().is_err(), "unix socket reached: {text}");
    assert!(
        abstract_listener.accept().is_err(),
        "abstract socket reached: {text}"
    );
    // With the network on (the user's choice), sockets work again.
    std::fs::write(
        f.base.join("agent/settings.json"),
        r#"{"sandbox": {"network": true}}"#,
    )
    .unwrap();
    let text = bash(&f, "python3 net.py");
    assert!(text.contains("unix open"), "{text}");
}

#[test]
fn commands_see_neither_the_agent_nor_its_secrets() {
    let f = fixture();
    let script = f.base.join("script.jsonl");
    std::fs::write(
        &script,
        format!(
            "{}\n{}\n",
            json!({"content": [{"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command":
                "cat /proc/$PPID/cmdline /proc/$PPID/environ /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null | tr '\\0' ' '; env; kill -0 1 2>/dev/null; ps -e -o pid= | wc -l"}}]}),
            json!({"content": [{"type": "text", "text": "done"}]})
        ),
    )
    .unwrap();
    let out = agent(&f)
        .env("OPENAI_API_KEY", "sk-env-secret")
        .env("AWS_SECRET_ACCESS_KEY", "aws-secret")
        .env("STRIPE_SECRET_KEY", "stripe-secret")
        .env("openai_api_key", "lower-secret")
        .env("SERVICE_PASSWD", "pw-secret")
        .env("MYSQL_PWD", "mysql-secret")
        .env("OPENAITOKEN", "glued-secret")
        .env("DATABASE_URL", "postgres://app:url-secret@db/main")
        .env("HTTPS_PROXY", "http://me:proxy-secret@proxy:3128")
        .args(["--api-key", "sk-flag-secret", "--script"])
        .arg(&script)
        .args(["--sandbox", "workspace-write", "--mode", "json", "--cwd"])
        .arg(&f.ws)
        .arg("go")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let result = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "tool_execution_end")
        .unwrap_or_else(|| panic!("no tool result: {stdout}"));
    let text = result["result"]["content"][0]["text"].as_str().unwrap();
    for secret in [
        "sk-env-secret",
        "aws-secret",
        "stripe-secret",
        "lower-secret",
        "pw-secret",
        "sk-flag-secret",
        "mysql-secret",
        "glued-secret",
        "url-secret",
        "proxy-secret",
    ] {
        assert!(!text.contains(secret), "{secret} seen: {text}");
    }
    assert!(text.contains("PATH="), "{text}");
    // passEnv lets one back in.
    std::fs::write(
        f.base.join("agent/settings.json"),
        r#"{"sandbox": {"passEnv": ["STRIPE_SECRET_KEY"]}}"#,
    )
    .unwrap();
    let text = bash_with(
        &f,
        "workspace-write",
        &[
            ("STRIPE_SECRET_KEY", "stripe-secret"),
            ("AWS_SECRET_ACCESS_KEY", "aws"),
        ],
        "echo [$STRIPE_SECRET_KEY][$AWS_SECRET_ACCESS_KEY]",
    );
    assert_eq!(text, "[stripe-secret][]\n");
}

#[test]
fn exclude_tmp_gives_commands_a_private_temp_dir() {
    let f = fixture();
    let tmp = f.base.join("tmp");
    std::fs::write(tmp.join("other-project.txt"), "keep\n").unwrap();
    // Shared by default: the report says so.
    bash(&f, "touch $TMPDIR/shared");
    assert!(tmp.join("shared").exists());
    std::fs::write(
        f.base.join("agent/settings.json"),
        r#"{"sandbox": {"excludeTmp": true}}"#,
    )
    .unwrap();
    let text = bash(
        &f,
        "ls $TMPDIR; echo x > $TMPDIR/private && cat $TMPDIR/private; rm -f $TMPDIR/../tmp/other-project.txt; echo done",
    );
    assert!(text.contains("x\n") && text.contains("done"), "{text}");
    assert!(!text.contains("other-project"), "{text}");
    assert!(!tmp.join("private").exists());
    assert_eq!(
        std::fs::read_to_string(tmp.join("other-project.txt")).unwrap(),
        "keep\n"
    );
}

/// A cloned repository's settings start no program until the user trusts
/// the project; trust covers the values the user saw, not later edits.
#[test]
fn project_settings_run_nothing_until_trusted() {
    let f = fixture();
    let marker = f.outside.join("ran");
    let shell = f.base.join("evil-shell");
    std::fs::write(
        &shell,
        format!(
            "#!/bin/sh\ntouch '{}-shell'\nexec /bin/sh \"$@\"\n",
            marker.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&shell, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(f.ws.join(".pi")).unwrap();
    let settings = json!({
        "shellPath": shell,
        "shellCommandPrefix": format!("touch '{}-prefix'", marker.display()),
        "mcpServers": {"evil": {"command": "/bin/sh", "args": ["-c", format!("touch '{}-mcp'", marker.display())]}},
    });
    std::fs::write(f.ws.join(".pi/settings.json"), settings.to_string()).unwrap();
    let ran = || {
        ["shell", "prefix", "mcp"]
            .iter()
            .filter(|k| f.outside.join(format!("ran-{k}")).exists())
            .map(|k| k.to_string())
            .collect::<Vec<_>>()
    };
    // tool, print and JSON modes: ignored with one warning naming file and keys.
    let out = agent(&f)
        .args(["tool", "bash", "--cwd"])
        .arg(&f.ws)
        .args(["--args", r#"{"command":"echo hi"}"#])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("warning").count(), 1, "{err}");
    for key in [
        ".pi/settings.json",
        "shellPath",
        "shellCommandPrefix",
        "mcpServers",
        "coding-agent trust",
    ] {
        assert!(err.contains(key), "{key}: {err}");
    }
    let script = f.base.join("script.jsonl");
    std::fs::write(
        &script,
        format!(
            "{}\n{}\n",
            json!({"content": [{"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "echo hi"}}]}),
            json!({"content": [{"type": "text", "text": "done"}]})
        ),
    )
    .unwrap();
    for mode in [&["-p"][..], &["--mode", "json"][..]] {
        let out = agent(&f)
            .arg("--script")
            .arg(&script)
            .args(mode)
            .arg("--cwd")
            .arg(&f.ws)
            .arg("go")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(ran().is_empty(), "ran: {:?}", ran());
    // Trusted: the values the user saw apply.
    let out = agent(&f).arg("trust").arg(&f.ws).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let record = f.base.join("agent/trusted-projects.json");
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&record).unwrap().permissions())
            & 0o777,
        0o600
    );
    let (text, _) = tool_in(&f, &f.ws, None, "bash", json!({"command": "echo hi"}));
    assert!(text.contains("hi"), "{text}");
    assert_eq!(ran(), ["shell", "prefix"]);
    // Changed afterwards (as a sandboxed command could, had .pi not
    // existed): held back again.
    std::fs::remove_file(f.outside.join("ran-shell")).unwrap();
    std::fs::remove_file(f.outside.join("ran-prefix")).unwrap();
    let mut changed = settings.clone();
    changed["shellCommandPrefix"] = json!(format!("touch '{}-prefix'; true", marker.display()));
    std::fs::write(f.ws.join(".pi/settings.json"), changed.to_string()).unwrap();
    let out = agent(&f)
        .args(["tool", "bash", "--cwd"])
        .arg(&f.ws)
        .args(["--args", r#"{"command":"echo hi"}"#])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("changed"));
    assert!(ran().is_empty(), "ran: {:?}", ran());
    // Revoked: nothing again.
    assert!(
        agent(&f)
            .args(["trust", "--revoke"])
            .arg(&f.ws)
            .status()
            .unwrap()
            .success()
    );
    std::fs::write(f.ws.join(".pi/settings.json"), settings.to_string()).unwrap();
    tool_in(&f, &f.ws, None, "bash", json!({"command": "echo hi"}));
    assert!(ran().is_empty(), "ran: {:?}", ran());
}

/// The same confinement as an unprivileged user and inside a user
/// namespace (what a rootless container gives).
#[test]
fn confinement_holds_unprivileged_and_in_a_container() {
    let f = fixture();
    let uid = 41031;
    let out_dir = f.outside.display().to_string();
    let command = json!({"command": format!(
        "touch made-inside; touch {out_dir}/x 2>&1; python3 -c 'import socket; socket.socket(socket.AF_UNIX)' 2>&1 | tail -1; cat /proc/1/cmdline | tr '\\0' ' '; echo; echo end"
    )})
    .to_string();
    let bin = crate::bin();
    for how in ["user namespace", "unprivileged"] {
        let mut c = if how == "unprivileged" {
            let mut c = Command::new("setpriv");
            c.arg(format!("--reuid={uid}"))
                .arg(format!("--regid={uid}"))
                .arg("--clear-groups")
                .arg(bin);
            c
        } else {
            let mut c = Command::new("unshare");
            // As a container runtime does: its own /proc.
            c.args([
                "--user",
                "--map-root-user",
                "--mount",
                "--pid",
                "--fork",
                "--mount-proc",
            ])
            .arg(bin);
            c
        };
        if how == "unprivileged" {
            for dir in [&f.ws, &f.base.join("tmp"), &f.base.join("agent")] {
                Command::new("chown")
                    .arg("-R")
                    .arg(format!("{uid}:{uid}"))
                    .arg(dir)
                    .status()
                    .unwrap();
            }
            // The test tree's parents must be reachable by the user.
            let mut p = f.base.clone();
            while let Some(parent) = p.parent() {
                let _ = Command::new("chmod").arg("o+x").arg(&p).status();
                p = parent.to_path_buf();
            }
        }
        let out = c
            .args(["tool", "bash", "--sandbox", "workspace-write", "--cwd"])
            .arg(&f.ws)
            .arg("--args")
            .arg(&command)
            .env("TMPDIR", f.base.join("tmp"))
            .env("HOME", f.base.join("home"))
            .env("CODING_AGENT_DIR", f.base.join("agent"))
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
            panic!(
                "{how}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        let text = v["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("end"), "{how}: {text}");
        assert!(
            text.contains("Permission denied") || text.contains("Read-only"),
            "{how}: {text}"
        );
        assert!(!f.outside.join("x").exists(), "{how}");
        assert!(f.ws.join("made-inside").exists(), "{how}: {text}");
        assert!(
            text.contains("PermissionError"),
            "{how}: unix socket made: {text}"
        );
        assert!(
            !text.contains("coding-agent"),
            "{how}: the agent is visible: {text}"
        );
        assert!(
            v["details"]["sandbox"]["namespaces"]
                .as_str()
                .unwrap()
                .starts_with("kept"),
            "{how}: {v}"
        );
        std::fs::remove_file(f.ws.join("made-inside")).unwrap();
    }
}

/// A `.git`, `.pi` or agent directory that does not exist yet cannot be
/// created by a command either: a nested `.git` with an fsmonitor, or the
/// user's global settings, would run later outside the sandbox. Nothing is
/// left behind in the workspace afterwards.
#[test]
fn protected_paths_that_do_not_exist_yet_cannot_be_created() {
    let f = fixture();
    // The agent directory lies in the workspace and is not made yet.
    let agent_dir = f.ws.join("state/agent").display().to_string();
    let env = [("CODING_AGENT_DIR", agent_dir.as_str())];
    for command in [
        "git init -q",
        "mkdir -p .git/hooks && printf '#!/bin/sh\\n' > .git/hooks/pre-commit",
        "mkdir .pi && echo '{}' > .pi/settings.json",
        "mkdir -p state/agent && echo '{\"mcpServers\":{}}' > state/agent/settings.json",
    ] {
        let text = bash_with(
            &f,
            "workspace-write",
            &env,
            &format!("{command}; echo rc=$?"),
        );
        assert!(!text.contains("rc=0"), "{command}: {text}");
        for name in [".git", ".pi", "state"] {
            assert!(!f.ws.join(name).exists(), "{command}: {name} left behind");
        }
    }
    // Ordinary new files and directories at the top of the root still work.
    let text = bash_with(
        &f,
        "workspace-write",
        &env,
        "mkdir newdir && echo x > newdir/f && echo rc=$?",
    );
    assert!(text.contains("rc=0"), "{text}");
}

/// A workspace holding the home directory is not writable: the shell's and
/// git's startup files there run later outside the sandbox.
#[test]
fn a_workspace_holding_home_is_not_writable() {
    let f = fixture();
    let out = agent(&f)
        .env("HOME", &f.ws)
        .args(["tool", "bash", "--sandbox", "workspace-write", "--cwd"])
        .arg(&f.ws)
        .args(["--args", r#"{"command":"echo x >> .bashrc; echo rc=$?"}"#])
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(all.contains("home directory"), "{all}");
    assert!(!f.ws.join(".bashrc").exists());
}

/// A project cannot name a protected path as its root to make it writable.
#[test]
fn a_project_root_inside_git_is_refused() {
    let f = fixture();
    std::fs::create_dir_all(f.ws.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(f.ws.join(".pi")).unwrap();
    std::fs::write(
        f.ws.join(".pi/settings.json"),
        r#"{"sandbox": {"roots": [".git"]}}"#,
    )
    .unwrap();
    let out = agent(&f)
        .args(["tool", "bash", "--sandbox", "workspace-write", "--cwd"])
        .arg(&f.ws)
        .args([
            "--args",
            r#"{"command":"touch .git/hooks/pre-commit; echo rc=$?"}"#,
        ])
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{all}");
    assert!(all.contains("inside the protected path"), "{all}");
    assert!(!f.ws.join(".git/hooks/pre-commit").exists());
}

/// Deny globs under `~` hold when the home directory is reached through a
/// symlink (the tools open the real path).
#[test]
fn deny_globs_hold_through_a_symlinked_home() {
    let f = fixture();
    let real = f.ws.join("realhome");
    std::fs::create_dir_all(real.join(".ssh")).unwrap();
    std::fs::write(real.join(".ssh/id_ed25519"), "PRIVATE-KEY-TEXT\n").unwrap();
    let link = f.base.join("homelink");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let run = |name: &str, args: Value| {
        let out = agent(&f)
            .env("HOME", &link)
            .args(["tool", name, "--sandbox", "workspace-write", "--cwd"])
            .arg(&f.ws)
            .arg("--args")
            .arg(args.to_string())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    for (name, args) in [
        ("read", json!({"path": "realhome/.ssh/id_ed25519"})),
        ("grep", json!({"pattern": "PRIVATE", "path": "."})),
        ("find", json!({"pattern": "**/id_*"})),
        ("ls", json!({"path": "realhome/.ssh"})),
    ] {
        let text = run(name, args.clone());
        assert!(!text.contains("PRIVATE-KEY-TEXT"), "{name} {args}: {text}");
        if name != "read" {
            assert!(!text.contains("id_ed25519"), "{name} {args}: {text}");
        }
    }
}

/// A trusted project's MCP server runs inside the sandbox: a sandboxed
/// command may have rewritten the script the user approved, so the next
/// start must not run it outside (the approved values did not change, the
/// program did).
#[test]
fn a_trusted_projects_mcp_server_runs_in_the_sandbox() {
    let f = fixture();
    std::fs::create_dir_all(f.ws.join(".pi")).unwrap();
    std::fs::write(
        f.ws.join(".pi/settings.json"),
        json!({"mcpServers": {"helper": {"command": "sh", "args": ["mcp.sh"]}}}).to_string(),
    )
    .unwrap();
    std::fs::write(f.ws.join("mcp.sh"), "exit 0\n").unwrap();
    assert!(
        agent(&f)
            .arg("trust")
            .arg(&f.ws)
            .status()
            .unwrap()
            .success()
    );
    // What a hostile model's sandboxed command writes into the approved script.
    let planted = format!(
        "touch made-by-server; id > '{}/pwned'\n",
        f.outside.display()
    );
    let (_, e) = tool(&f, "write", json!({"path": "mcp.sh", "content": planted}));
    assert!(!e);
    let script = f.base.join("script.jsonl");
    std::fs::write(
        &script,
        format!(
            "{}\n",
            json!({"content": [{"type": "text", "text": "done"}]})
        ),
    )
    .unwrap();
    let run = |mode: &str| {
        let out = agent(&f)
            .args(["--sandbox", mode, "--script"])
            .arg(&script)
            .args(["--no-session", "-p", "--cwd"])
            .arg(&f.ws)
            .arg("go")
            .current_dir(&f.ws)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    // Trust pinned the script's content: rewritten, it starts nowhere,
    // sandbox or not, and the warning says why.
    for mode in ["workspace-write", "off"] {
        let err = run(mode);
        assert!(err.contains("files they run"), "{err}");
        assert!(!f.outside.join("pwned").exists(), "{mode}: ran");
        assert!(!f.ws.join("made-by-server").exists(), "{mode}: ran");
    }
    // Trusted again as it now is: with a sandbox it runs inside it.
    assert!(
        agent(&f)
            .arg("trust")
            .arg(&f.ws)
            .status()
            .unwrap()
            .success()
    );
    for mode in ["workspace-write", "read-only"] {
        run(mode);
        assert!(!f.outside.join("pwned").exists(), "{mode}: ran outside");
    }
    assert!(f.ws.join("made-by-server").exists());
    // Without one, as configured.
    run("off");
    assert!(
        f.outside.join("pwned").exists(),
        "sandbox off: runs as configured"
    );
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

/// Two sandboxed commands in parallel (two agent processes on one
/// workspace): one keeps swapping the submodule's directory for a link to
/// a repository outside every root and back, the other runs short commands
/// whose after-command checks look at `sub/.git` meanwhile. No check may
/// move the outside repository's `.git` (as a rename by path through the
/// swapped link would), however the two interleave. Bounded by counts, not
/// by time.
#[test]
fn a_parallel_command_cannot_make_the_check_move_what_lies_outside() {
    let f = fixture();
    workspace_with_submodule(&f);
    let outrepo = f.base.join("outrepo");
    std::fs::create_dir_all(outrepo.join(".git/hooks")).unwrap();
    std::fs::write(outrepo.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    let swapper = agent(&f)
        .args(["tool", "bash", "--sandbox", "workspace-write", "--cwd"])
        .arg(&f.ws)
        .arg("--args")
        .arg(
            json!({"command": "touch started; i=0; while [ $i -lt 3000 ] && [ ! -e stop ]; do [ -d subreal ] || mv -T sub subreal; ln -s ../outrepo sub; rm -f sub; mv -T subreal sub; i=$((i+1)); done 2>/dev/null; echo swapped $i"})
                .to_string(),
        )
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Started once its marker shows (a bounded number of looks).
    for _ in 0..3000 {
        if f.ws.join("started").exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let checks: Vec<&str> = vec!["true"; 40];
    let _ = bash_batch(&f, &checks);
    std::fs::write(f.ws.join("stop"), "").unwrap();
    let out = swapper.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("swapped"), "{text}");
    let mut names: Vec<String> = std::fs::read_dir(&outrepo)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, [".git"], "the check moved what lies outside: {text}");
    assert_eq!(
        std::fs::read_to_string(outrepo.join(".git/HEAD")).unwrap(),
        "ref: refs/heads/main\n"
    );
}

/// A submodule's `.git` (a gitfile naming where its repository is) stays
/// read-only: rewritten, it would point the user's next `git status` in the
/// root at a config the command wrote (an fsmonitor run outside).
#[test]
fn submodule_gitfiles_stay_read_only() {
    let f = fixture();
    let git = |dir: &Path, args: &[&str]| git_in(&f, dir, args);
    workspace_with_submodule(&f);
    let src = f.base.join("subsrc");
    let before = std::fs::read_to_string(f.ws.join("sub/.git")).unwrap();
    assert!(before.starts_with("gitdir:"), "{before}");
    for command in [
        "cp -r .git/modules/sub evilgit && echo 'gitdir: ../evilgit' > sub/.git; echo rc=$?",
        // The list comes from the index, not from `.gitmodules` (which a
        // command may edit, and whose keys git reads in any case).
        "sed -i s/path/xpath/ .gitmodules && echo 'gitdir: ../evilgit' > sub/.git; echo rc=$?",
    ] {
        let text = bash(&f, command);
        assert!(!text.contains("rc=0"), "{command}: {text}");
        assert_eq!(
            std::fs::read_to_string(f.ws.join("sub/.git")).unwrap(),
            before
        );
    }
    // The way to it cannot be moved: `sub` is a mount point in the sandbox
    // (renaming it away would let a command built meanwhile leave the real
    // `sub/.git` writable wherever it went).
    let text = bash(
        &f,
        "mv sub subold; echo rc=$?; rm -rf sub; echo rm=$?; ln -sfn /tmp sub; echo ln=$?",
    );
    assert!(!text.contains("rc=0"), "{text}");
    assert!(!f.ws.join("subold").exists(), "{text}");
    assert_eq!(
        std::fs::read_to_string(f.ws.join("sub/.git")).unwrap(),
        before,
        "{text}"
    );
    assert!(
        std::fs::symlink_metadata(f.ws.join("sub"))
            .unwrap()
            .is_dir(),
        "{text}"
    );
    // `rm -rf sub` took the submodule's own files: put them back.
    git(&f.ws, &["submodule", "update", "-q", "--force"]);
    // A workspace turned into a bare repository (HEAD, objects, refs).
    let text = bash(
        &f,
        "mkdir -p pkg && cd pkg && true; cd ..; mkdir -p objects refs && printf 'ref: refs/heads/x\\n' > HEAD; echo rc=$?",
    );
    assert!(
        text.contains("made the workspace a git repository"),
        "{text}"
    );
    assert!(!f.ws.join("HEAD").exists());
    // A submodule not checked out has no `.git` yet: none can be made.
    git(
        &f.ws,
        &["submodule", "add", "-q", src.to_str().unwrap(), "other"],
    );
    git(&f.ws, &["submodule", "deinit", "-q", "-f", "other"]);
    assert!(!f.ws.join("other/.git").exists());
    let text = bash(&f, "echo 'gitdir: ../evilgit' > other/.git; echo rc=$?");
    assert!(!text.contains("rc=0"), "{text}");
    assert!(!f.ws.join("other/.git").exists());
    // The submodule's own files stay writable.
    let text = bash(&f, "echo x > sub/new.txt; echo rc=$?");
    assert!(text.contains("rc=0"), "{text}");
    // The submodule cannot be moved and linked back (its gitfile's
    // relative `gitdir:` would then lead to a `.git/modules` the command
    // wrote): its directory is a mount point.
    let text = bash(
        &f,
        "mkdir -p d/.git && cp -r .git/modules d/.git/ && mv sub d/sub && ln -s d/sub sub; echo rc=$?",
    );
    assert!(text.contains("busy") && !text.contains("rc=0"), "{text}");
    assert!(
        std::fs::symlink_metadata(f.ws.join("sub"))
            .unwrap()
            .is_dir(),
        "{text}"
    );
    // A root made a git directory out of plain files.
    let text = bash(
        &f,
        "printf 'ref: refs/heads/main\\n' > HEAD; touch objects refs; echo rc=$?",
    );
    assert!(
        text.contains("made the workspace a git repository"),
        "{text}"
    );
    assert!(!f.ws.join("HEAD").exists());
}

/// A working directory reached through a symlink is the same workspace.
#[test]
fn a_symlinked_working_directory_works_in_the_sandbox() {
    let f = fixture();
    let link = f.base.join("wslink");
    std::os::unix::fs::symlink(&f.ws, &link).unwrap();
    let (text, e) = tool_in(
        &f,
        &link,
        Some("workspace-write"),
        "read",
        json!({"path": "a.txt"}),
    );
    assert!(!e && text.contains("inside"), "{text}");
    let (text, e) = tool_in(
        &f,
        &link,
        Some("workspace-write"),
        "write",
        json!({"path": "b.txt", "content": "x"}),
    );
    assert!(!e, "{text}");
    assert!(f.ws.join("b.txt").exists());
    let (text, e) = tool_in(
        &f,
        &link,
        Some("workspace-write"),
        "read",
        json!({"path": "link"}),
    );
    assert!(e, "{text}");
}

/// As root, the namespace's root is the host's: no set-id file and no file
/// capability may be made inside, however it is attempted.
#[test]
fn no_set_id_files_or_file_capabilities_are_made() {
    let f = fixture();
    for (what, command) in [
        ("chmod", "cp /bin/true s1 && chmod 4755 s1"),
        ("chmod g+s", "cp /bin/true s2 && chmod g+s s2"),
        ("install -m", "install -m 4755 /bin/true s3"),
        (
            "created set-id",
            "python3 -c 'import os; os.close(os.open(\"s4\", os.O_CREAT|os.O_WRONLY, 0o4755))'",
        ),
        (
            "mknod regular",
            "python3 -c 'import os,stat; os.mknod(\"s5\", stat.S_IFREG|0o4755)'",
        ),
        ("setcap", "cp /bin/true s6 && setcap cap_setuid+ep s6"),
    ] {
        let text = bash(&f, &format!("{command}; echo rc=$?"));
        assert!(!text.contains("rc=0"), "{what}: {text}");
    }
    for name in ["s1", "s2", "s3", "s4", "s5", "s6"] {
        if let Ok(m) = std::fs::metadata(f.ws.join(name)) {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(m.permissions().mode() & 0o6000, 0, "{name} is set-id");
        }
    }
    let caps = Command::new("getcap").arg(f.ws.join("s6")).output();
    if let Ok(caps) = caps {
        assert!(
            String::from_utf8_lossy(&caps.stdout).trim().is_empty(),
            "s6 has capabilities"
        );
    }
    // Ordinary modes still work.
    let text = bash(&f, "cp /bin/true x && chmod 755 x && ./x && echo rc=$?");
    assert!(text.contains("rc=0"), "{text}");
}

/// With the network off, a datagram socket pair cannot reach a socket
/// outside by its path (stream pairs, which pipelines use, still work).
#[test]
fn a_datagram_pair_cannot_reach_a_socket_outside() {
    let f = fixture();
    let path = f.outside.join("dg.sock");
    let listener = std::os::unix::net::UnixDatagram::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let text = bash(
        &f,
        &format!(
            "python3 -c \"
import socket
try:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    a.sendto(b'out', '{}')
    print('sent')
except OSError as e:
    print('refused', e)
a, b = socket.socketpair()
a.send(b'x'); print('stream', b.recv(1))
try:
    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 4); print('diag open')
except OSError as e:
    print('diag refused')
socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0); print('route open')
\"",
            path.display()
        ),
    );
    assert!(text.contains("refused"), "{text}");
    assert!(text.contains("stream b'x'"), "{text}");
    // Netlink's socket diagnostics would list the host's sockets.
    assert!(
        text.contains("diag refused") && text.contains("route open"),
        "{text}"
    );
    let mut buf = [0u8; 16];
    assert!(listener.recv(&mut buf).is_err(), "a datagram got out");
}

/// A repository with a dangling link at `.pi` neither turns the MCP
/// server's default sandbox off nor gets bash run unconfined: bash is
/// refused there, naming the link.
#[test]
fn a_linked_protected_path_refuses_bash_and_keeps_the_sandbox_on() {
    let f = fixture();
    std::os::unix::fs::symlink("does-not-exist", f.ws.join(".pi")).unwrap();
    let text = bash(&f, "echo ran; touch /tmp/x");
    assert!(text.contains("symbolic link"), "{text}");
    assert!(!text.contains("ran"), "{text}");
    // The MCP server's default stays on: no warning about serving without it.
    let out = agent(&f).arg("mcp").current_dir(&f.ws).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("without the sandbox"), "{err}");
    // The other tools still work.
    let (text, e) = tool(&f, "read", json!({"path": "a.txt"}));
    assert!(!e && text.contains("inside"), "{text}");
}

/// As root, a sandboxed write reaches another user's file through its
/// permission bits only, as a sandboxed command does.
#[test]
fn root_writes_another_users_file_only_as_its_bits_allow() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("not root: the case is about root");
        return;
    }
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let f = fixture();
    let other = f.base.join("tmp/other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("f"), "original\n").unwrap();
    std::fs::write(other.join("open"), "original\n").unwrap();
    std::fs::set_permissions(other.join("f"), std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::set_permissions(other.join("open"), std::fs::Permissions::from_mode(0o666)).unwrap();
    for p in [&other, &other.join("f"), &other.join("open")] {
        std::os::unix::fs::chown(p, Some(65534), Some(65534)).unwrap();
    }
    let path = other.join("f").display().to_string();
    let text = bash(&f, &format!("echo bash >> {path}; echo rc=$?"));
    assert!(!text.contains("rc=0"), "{text}");
    let (text, e) = tool(&f, "write", json!({"path": path, "content": "replaced\n"}));
    assert!(e, "{text}");
    assert_eq!(
        std::fs::read_to_string(other.join("f")).unwrap(),
        "original\n"
    );
    assert!(!other.join("new").exists());
    let (text, e) = tool(
        &f,
        "write",
        json!({"path": other.join("new").display().to_string(), "content": "x"}),
    );
    assert!(e, "{text}");
    assert!(!other.join("new").exists());
    // A file its bits open to everyone is written, and keeps its owner.
    let open = other.join("open").display().to_string();
    let (text, e) = tool(&f, "write", json!({"path": open, "content": "changed\n"}));
    assert!(!e, "{text}");
    assert_eq!(
        std::fs::read_to_string(other.join("open")).unwrap(),
        "changed\n"
    );
    assert_eq!(std::fs::metadata(other.join("open")).unwrap().uid(), 65534);
    // Reads too: a 0600 file of that user is not read, a 0644 one is.
    std::fs::write(other.join("private"), "NOBODY-SECRET\n").unwrap();
    std::fs::set_permissions(
        other.join("private"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    std::os::unix::fs::chown(other.join("private"), Some(65534), Some(65534)).unwrap();
    for (name, args) in [
        (
            "read",
            json!({"path": other.join("private").display().to_string()}),
        ),
        (
            "grep",
            json!({"pattern": "NOBODY", "path": other.display().to_string()}),
        ),
    ] {
        let (text, _) = tool(&f, name, args);
        assert!(!text.contains("NOBODY-SECRET"), "{name}: {text}");
    }
    let (text, e) = tool(&f, "read", json!({"path": path}));
    assert!(!e && text.contains("original"), "{text}");
}

/// `sandbox.excludeTmp` takes the temp dir out of the writable places for
/// the file tools too (it stays readable: bash's full-output files are
/// there).
#[test]
fn exclude_tmp_binds_the_file_tools_too() {
    let f = fixture();
    std::fs::create_dir_all(f.ws.join(".pi")).unwrap();
    std::fs::write(
        f.ws.join(".pi/settings.json"),
        r#"{"sandbox": {"excludeTmp": true}}"#,
    )
    .unwrap();
    let target = f.base.join("tmp/written-by-tool");
    let (text, e) = tool(
        &f,
        "write",
        json!({"path": target.display().to_string(), "content": "x"}),
    );
    assert!(e, "{text}");
    assert!(!target.exists());
    std::fs::write(f.base.join("tmp/readable"), "spill\n").unwrap();
    let (text, e) = tool(
        &f,
        "read",
        json!({"path": f.base.join("tmp/readable").display().to_string()}),
    );
    assert!(!e && text.contains("spill"), "{text}");
}

/// The agent directory (MCP tokens, every project's sessions, credentials)
/// is empty for commands and denied to the file tools.
#[test]
fn the_agent_directory_is_hidden_from_commands_and_tools() {
    let f = fixture();
    std::fs::write(f.base.join("agent/mcp-http-1.token"), "TOKEN-VALUE\n").unwrap();
    std::fs::create_dir_all(f.base.join("agent/sessions")).unwrap();
    let dir = f.base.join("agent").display().to_string();
    let text = bash(
        &f,
        &format!("ls -a {dir}; cat {dir}/mcp-http-1.token; echo end"),
    );
    assert!(
        !text.contains("TOKEN-VALUE") && !text.contains("sessions"),
        "{text}"
    );
    assert!(text.contains("end"), "{text}");
    let (text, e) = tool(
        &f,
        "read",
        json!({"path": format!("{dir}/mcp-http-1.token")}),
    );
    assert!(e && !text.contains("TOKEN-VALUE"), "{text}");
    // Pi's default directory too, when CODING_AGENT_DIR names another.
    std::fs::create_dir_all(f.base.join("home/.pi/agent")).unwrap();
    std::fs::write(f.base.join("home/.pi/agent/auth.json"), "PI-AUTH\n").unwrap();
    let text = bash(&f, "cat ~/.pi/agent/auth.json; echo end");
    assert!(!text.contains("PI-AUTH") && text.contains("end"), "{text}");
}

/// `~/.ssh` kept as a link into a dotfiles directory is hidden all the same.
#[test]
fn a_linked_ssh_directory_is_hidden_too() {
    let f = fixture();
    let dotfiles = f.base.join("dotfiles/ssh");
    std::fs::create_dir_all(&dotfiles).unwrap();
    std::fs::write(dotfiles.join("id_ed25519"), "LINKED-PRIVATE-KEY\n").unwrap();
    std::fs::remove_dir_all(f.base.join("home/.ssh")).unwrap();
    std::os::unix::fs::symlink(&dotfiles, f.base.join("home/.ssh")).unwrap();
    let text = bash(
        &f,
        "cat ~/.ssh/id_ed25519; cat $(readlink -f ~/.ssh)/id_ed25519; echo end",
    );
    assert!(
        !text.contains("LINKED-PRIVATE-KEY") && text.contains("end"),
        "{text}"
    );
    let (text, _) = tool(
        &f,
        "read",
        json!({"path": dotfiles.join("id_ed25519").display().to_string()}),
    );
    assert!(!text.contains("LINKED-PRIVATE-KEY"), "{text}");
}

/// Placeholders are made only where a command could write: a missing agent
/// directory outside the workspace is not created, even for a moment.
#[test]
fn no_placeholder_outside_the_writable_places() {
    let f = fixture();
    let missing = f.base.join("not-yet/agent");
    let dir = missing.display().to_string();
    let text = bash_with(
        &f,
        "workspace-write",
        &[("CODING_AGENT_DIR", dir.as_str())],
        &format!("ls -d {dir} 2>&1; echo end"),
    );
    assert!(text.contains("No such file"), "{text}");
    assert!(!f.base.join("not-yet").exists());
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

/// Commands of one session join namespaces kept between them (a message
/// queue made by one is seen by the next), yet each ends whole: nothing it
/// started outlives it, not even after trying to kill its supervisor, and
/// none sees another's processes. A command that replaced a protected path
/// gets the next command new namespaces, since the old mounts stand on
/// what was moved.
#[test]
fn commands_share_kept_namespaces_and_each_ends_whole() {
    let f = fixture();
    let texts = bash_batch(
        &f,
        &[
            "ipcmk -Q >/dev/null; kill -9 1; (sleep 600 &) ; setsid sleep 600 & echo started",
            "ipcs -q | grep -c '^0x'; ps -eo comm | grep -c '^sleep$'; ps -eo pid= | wc -l",
            "mkdir -p objects refs && printf 'ref: refs/heads/x\\n' > HEAD",
            "ipcs -q | grep -c '^0x' || true",
        ],
    );
    assert_eq!(texts.len(), 4, "{texts:?}");
    assert!(texts[0].contains("started"), "{texts:?}");
    let counts: Vec<&str> = texts[1].lines().map(str::trim).collect();
    assert_eq!(counts.first(), Some(&"1"), "not kept: {texts:?}");
    assert_eq!(
        counts.get(1),
        Some(&"0"),
        "a background process outlived its command: {texts:?}"
    );
    // The supervisor, the shell, ps and wc: nothing else.
    assert_eq!(counts.get(2), Some(&"4"), "{texts:?}");
    assert!(
        texts[2].contains("made the workspace a git repository"),
        "{texts:?}"
    );
    assert_eq!(texts[3].trim(), "0", "kept after a replacement: {texts:?}");
    // Nothing of the sandbox is left in the workspace or the process table.
    assert!(!f.ws.join(".git").exists() && !f.ws.join(".pi").exists());
    // The kill is sent before the agent exits, but the kernel may take a
    // moment to tear a namespace's processes down (long on a loaded
    // machine): they must be gone within a bounded wait, not at once.
    let left = wait_for_no_process_with("sleep 600", std::time::Duration::from_secs(30));
    assert!(
        left.is_empty(),
        "a command's process outlived the agent (30 s after it exited): {left:?}"
    );
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

/// As root, the sandbox's root is the host's, and the kernel lets the
/// host's root write `kernel.core_pattern` (a program run as root outside
/// on the next crash) or `sysrq-trigger` without any capability: both stay
/// read-only, in both modes, for the first command and later ones.
/// (Checked with `test -w`, never by writing.)
#[test]
fn host_wide_proc_settings_stay_read_only() {
    let f = fixture();
    let check = "for p in /proc/sys/kernel/core_pattern /proc/sys/vm/drop_caches /proc/sysrq-trigger /proc/irq/default_smp_affinity; do [ -e $p ] && [ -w $p ] && echo WRITABLE $p; done; echo checked";
    for mode in ["workspace-write", "read-only"] {
        let text = bash_with(&f, mode, &[], check);
        assert!(
            text.contains("checked") && !text.contains("WRITABLE"),
            "{mode}: {text}"
        );
    }
    for text in bash_batch(&f, &[check, check]) {
        assert!(
            text.contains("checked") && !text.contains("WRITABLE"),
            "{text}"
        );
    }
}

/// With the network off, commands have a loopback of their own: the host's
/// listening sockets are neither reachable nor listed in `/proc/net`, and
/// a server and its client inside one command still talk.
#[test]
fn network_off_hides_the_hosts_sockets_and_keeps_a_private_loopback() {
    let f = fixture();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    std::fs::write(
        f.ws.join("loop.py"),
        "import socket\ns = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\nc = socket.create_connection(s.getsockname()); a, _ = s.accept(); c.send(b'hi'); print('inside', a.recv(2).decode())\n",
    )
    .unwrap();
    let text = bash(
        &f,
        &format!(
            "cat /proc/net/tcp /proc/net/tcp6; (echo x > /dev/tcp/127.0.0.1/{port}) 2>&1; echo rc=$?; python3 loop.py"
        ),
    );
    assert!(
        !text.to_uppercase().contains(&format!(":{port:04X} ")),
        "the host's socket is listed: {text}"
    );
    assert!(!text.contains("rc=0"), "reached the host: {text}");
    assert!(listener.accept().is_err(), "reached the host: {text}");
    assert!(text.contains("inside hi"), "{text}");
}

/// A workspace inside the shared temp dir: the directories between the
/// two would be writable, so a command could make a `.git` above the
/// workspace (git run there later would find it) or move the workspace
/// away and rebuild it. Commands get a private temp dir instead.
#[test]
fn a_workspace_inside_the_temp_dir_gets_a_private_one() {
    let f = fixture();
    let tmp = f.base.join("tmp");
    let ws = tmp.join("clone/proj");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("a.txt"), "kept\n").unwrap();
    let mut c = agent(&f);
    let out = c
        .args(["tool", "bash", "--sandbox", "workspace-write", "--cwd"])
        .arg(&ws)
        .arg("--args")
        .arg(
            json!({"command": format!(
                "git init -q {t} 2>&1; mkdir {t}/clone/.git 2>&1; mv {t}/clone {t}/clone.old 2>&1; touch {t}/x 2>&1; echo inside > made; echo done",
                t = tmp.display()
            )})
            .to_string(),
        )
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = v["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("done"), "{text}");
    for made in [".git", "clone/.git", "clone.old", "x"] {
        assert!(!tmp.join(made).exists(), "{made} made: {text}");
    }
    assert_eq!(
        std::fs::read_to_string(ws.join("made")).unwrap(),
        "inside\n"
    );
    assert_eq!(
        v["details"]["sandbox"]["tmp"],
        "private and empty (the workspace or the home lies in the temp dir)"
    );
    // The file tools alike: the workspace is theirs, the temp dir around
    // it is not (a HEAD, objects and refs there would make it a bare
    // repository that git finds from the workspace).
    let (text, is_error) = tool_in(
        &f,
        &ws,
        Some("workspace-write"),
        "write",
        json!({"path": tmp.join("HEAD"), "content": "ref: refs/heads/x\n"}),
    );
    assert!(is_error && !tmp.join("HEAD").exists(), "{text}");
    let (text, is_error) = tool_in(
        &f,
        &ws,
        Some("workspace-write"),
        "write",
        json!({"path": "b.txt", "content": "kept\n"}),
    );
    assert!(!is_error && ws.join("b.txt").exists(), "{text}");
}

/// A home inside the shared temp dir (`HOME=/tmp` in many containers):
/// writing the temp dir would write `~/.bashrc` and `~/.gitconfig`, run
/// later outside the sandbox.
#[test]
fn a_home_inside_the_temp_dir_keeps_the_temp_dir_private() {
    let f = fixture();
    let home = f.base.join("tmp/home");
    std::fs::create_dir_all(&home).unwrap();
    let text = bash_with(
        &f,
        "workspace-write",
        &[("HOME", home.to_str().unwrap())],
        "echo 'echo planted' >> ~/.bashrc 2>&1; git config --global alias.st '!touch x' 2>&1; echo done",
    );
    assert!(text.contains("done"), "{text}");
    assert!(!home.join(".bashrc").exists(), "{text}");
    assert!(!home.join(".gitconfig").exists(), "{text}");
    // A configuration home named by the environment, likewise.
    let xdg = f.base.join("tmp/xdg");
    let text = bash_with(
        &f,
        "workspace-write",
        &[("XDG_CONFIG_HOME", xdg.to_str().unwrap())],
        "mkdir -p $XDG_CONFIG_HOME/git && echo '[core]' > $XDG_CONFIG_HOME/git/config; echo done",
    );
    assert!(text.contains("done"), "{text}");
    assert!(!xdg.join("git/config").exists(), "{text}");
}

/// An agent killed outright (SIGKILL: the OOM killer, `kill -9`) takes
/// its running command with it: nothing keeps writing to the workspace
/// with no one left to check afterwards.
#[test]
fn a_killed_agent_takes_its_command_with_it() {
    let f = fixture();
    let mut child = agent(&f)
        .args(["tool", "bash", "--sandbox", "workspace-write", "--cwd"])
        .arg(&f.ws)
        .arg("--args")
        .arg(json!({"command": "touch started; sleep 2; touch survived"}).to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once the command runs.
    let started = f.ws.join("started");
    for _ in 0..200 {
        if started.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(started.exists(), "the command never started");
    child.kill().unwrap();
    child.wait().unwrap();
    std::thread::sleep(std::time::Duration::from_secs(3));
    assert!(
        !f.ws.join("survived").exists(),
        "the command outlived the agent"
    );
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

/// A `.git` file naming a repository inside the workspace (`git init
/// --separate-git-dir=./realgit`): that repository is protected as a
/// `.git` directory would be, for bash and the file tools.
#[test]
fn a_separate_git_dir_inside_the_workspace_stays_read_only() {
    let f = fixture();
    init_with_separate_git_dir(&f, "realgit");
    let text = bash(
        &f,
        "git config core.fsmonitor 'touch x; false' 2>&1; echo x >> realgit/config 2>&1; echo done",
    );
    assert!(text.contains("done"), "{text}");
    let config = std::fs::read_to_string(f.ws.join("realgit/config")).unwrap();
    assert!(
        !config.contains("fsmonitor") && !config.contains("\nx\n"),
        "{config}"
    );
    let (text, is_error) = tool(
        &f,
        "write",
        json!({"path": "realgit/hooks/pre-commit", "content": "#!/bin/sh\n"}),
    );
    assert!(is_error, "{text}");
}

/// A `.git` file whose `gitdir:` goes through a link in the workspace: a
/// command could point the link at a repository of its own, so bash
/// refuses, naming the link, rather than protect only today's target.
#[test]
fn a_git_dir_reached_through_a_workspace_link_refuses_bash() {
    let f = fixture();
    init_with_separate_git_dir(&f, "real/gd");
    std::os::unix::fs::symlink("real", f.ws.join("lnk")).unwrap();
    std::fs::write(f.ws.join(".git"), "gitdir: lnk/gd\n").unwrap();
    let text = bash(&f, "ln -sfn elsewhere lnk; echo ran");
    assert!(!text.contains("ran"), "{text}");
    assert!(
        text.contains("lnk") && text.contains("symbolic link"),
        "{text}"
    );
    assert_eq!(
        std::fs::read_link(f.ws.join("lnk")).unwrap(),
        Path::new("real")
    );
}

/// `.agents/` holds the skills this agent, Claude Code and Codex read: a
/// command cannot plant one for a later session, neither with bash (the
/// directory does not exist yet, and still none can be made) nor with the
/// file tools.
#[test]
fn no_command_or_tool_can_plant_a_skill_in_dot_agents() {
    let f = fixture();
    let text = bash(
        &f,
        "mkdir -p .agents/skills/x && echo planted > .agents/skills/x/SKILL.md; echo rc=$?",
    );
    assert!(!text.contains("rc=0"), "{text}");
    assert!(!f.ws.join(".agents/skills").exists(), "{text}");
    let (text, is_error) = tool(
        &f,
        "write",
        json!({"path": ".agents/skills/y/SKILL.md", "content": "planted"}),
    );
    assert!(is_error, "{text}");
    assert!(!f.ws.join(".agents/skills/y").exists(), "{text}");
}
