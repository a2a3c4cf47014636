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
    let mut c = Command::new(assert_cmd::cargo::cargo_bin!("coding-agent"));
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
fn bash_fails_closed_without_landlock() {
    let f = fixture();
    let out = agent(&f)
        .env("CODING_AGENT_SIMULATE_NO_LANDLOCK", "1")
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
        text.contains("Landlock") && text.contains("--sandbox off"),
        "{text}"
    );
    assert!(!f.ws.join("ran").exists());
}

#[test]
fn a_project_cannot_loosen_but_can_tighten() {
    let f = fixture();
    std::fs::create_dir_all(f.ws.join(".pi")).unwrap();
    std::fs::write(
        f.ws.join(".pi/settings.json"),
        r#"{"sandbox": {"mode": "off", "network": true, "additionalDirectories": ["/"], "roots": ["/"]}}"#,
    )
    .unwrap();
    let (text, e) = tool(&f, "read", json!({"path": "../outside/s.txt"}));
    assert!(e && text.contains("outside the workspace roots"), "{text}");
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
    let command = tokio::process::Command::new(assert_cmd::cargo::cargo_bin!("coding-agent"))
        .configure(|c| {
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
    let command = tokio::process::Command::new(assert_cmd::cargo::cargo_bin!("coding-agent"))
        .configure(|c| {
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
    assert_eq!(report["enforcedBy"], "landlock");
    assert_eq!(report["tcp"], "blocked");
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
