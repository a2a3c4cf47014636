//! Path rules judged on the file the tool opens (issue #17, finding 11):
//! odd spellings of a denied path (`file://localhost/`, `%2E`, a no-break
//! space), symlinks and `self/` directories leading to it, and searches and
//! listings that would show it, all through the binary on real files.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

const SECRET: &str = "hunter2-do-not-show";

/// A workspace with `.env` (the secret), `my secret.txt`, `notes.txt`,
/// `envlink -> .env`, `self -> .`, `secrets/key`, and settings holding
/// `deny`.
struct Scene {
    _dir: tempfile::TempDir,
    base: PathBuf,
    ws: PathBuf,
}

fn scene(deny: &[&str]) -> Scene {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let ws = base.join("ws");
    for d in ["agent", "home", "ws/secrets", "ws/src"] {
        std::fs::create_dir_all(base.join(d)).unwrap();
    }
    std::fs::write(
        base.join("agent/settings.json"),
        json!({"permissions": {"deny": deny}}).to_string(),
    )
    .unwrap();
    std::fs::write(ws.join(".env"), format!("SECRET={SECRET}\n")).unwrap();
    std::fs::write(
        ws.join("my secret.txt"),
        "SECRET with a space in its name\n",
    )
    .unwrap();
    std::fs::write(ws.join("secrets/key"), format!("SECRET {SECRET}\n")).unwrap();
    std::fs::write(ws.join("notes.txt"), "SECRET lives elsewhere\n").unwrap();
    std::fs::write(ws.join("src/lib.rs"), "// SECRET handling\n").unwrap();
    std::os::unix::fs::symlink(".env", ws.join("envlink")).unwrap();
    std::os::unix::fs::symlink(".", ws.join("self")).unwrap();
    Scene {
        _dir: dir,
        base,
        ws,
    }
}

fn agent(s: &Scene) -> Command {
    let mut c = Command::new(crate::bin());
    c.env("HOME", s.base.join("home"))
        .env("CODING_AGENT_DIR", s.base.join("agent"))
        .stdin(Stdio::null());
    c
}

/// `coding-agent tool NAME` in the workspace: (text, isError).
fn tool(s: &Scene, sandbox: Option<&str>, name: &str, args: Value) -> (String, bool) {
    let mut c = agent(s);
    c.args(["tool", name, "--cwd"]).arg(&s.ws);
    if let Some(mode) = sandbox {
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

fn refused(what: &str, (text, is_error): &(String, bool), rule: &str) {
    assert!(*is_error, "{what}: not refused: {text}");
    assert!(
        text.contains("Permission denied by rule") && text.contains(rule),
        "{what}: {text}"
    );
    assert!(!text.contains(SECRET), "{what}: {text}");
}

#[test]
fn odd_spellings_of_a_denied_path_are_refused() {
    let s = scene(&["Read(./.env)", "Read(./my secret.txt)"]);
    let ws = s.ws.display().to_string();
    let env_spellings = [
        format!("file://localhost{ws}/.env"),
        format!("file://{ws}/%2Eenv"),
        format!("file://localhost{ws}/sub/..%2F%2e%65nv"),
        format!("@{ws}/./.env"),
        "./src/../.env".to_string(),
    ];
    for path in &env_spellings {
        for name in ["read", "grep", "ls", "find"] {
            let mut args = json!({"path": path, "pattern": "SECRET"});
            if name == "find" {
                args["pattern"] = json!("*");
            }
            refused(
                &format!("{name} {path}"),
                &tool(&s, None, name, args),
                "Read(./.env)",
            );
        }
    }
    // A no-break space (and its narrow and thin cousins) is a plain space to
    // the tools, so it is one to the rules too.
    for path in [
        "my\u{00A0}secret.txt",
        "my\u{202F}secret.txt",
        "my\u{2009}secret.txt",
    ] {
        let result = tool(&s, None, "read", json!({"path": path}));
        refused(&format!("read {path:?}"), &result, "Read(./my secret.txt)");
        assert!(!result.0.contains("space in its name"), "{}", result.0);
    }
    // The file itself still reads when no rule names it.
    let (text, is_error) = tool(&s, None, "read", json!({"path": "notes.txt"}));
    assert!(!is_error && text.contains("elsewhere"), "{text}");
}

#[test]
fn links_to_a_denied_file_are_neither_read_nor_written() {
    let s = scene(&["Read(./.env)", "Read(./new.env)"]);
    for path in ["envlink", "self/.env", "self/self/envlink"] {
        refused(
            &format!("read {path}"),
            &tool(&s, None, "read", json!({"path": path})),
            "Read(./.env)",
        );
        refused(
            &format!("grep {path}"),
            &tool(&s, None, "grep", json!({"path": path, "pattern": "SECRET"})),
            "Read(./.env)",
        );
        refused(
            &format!("write {path}"),
            &tool(&s, None, "write", json!({"path": path, "content": "x"})),
            "Read(./.env)",
        );
        refused(
            &format!("edit {path}"),
            &tool(
                &s,
                None,
                "edit",
                json!({"path": path, "edits": [{"oldText": "SECRET", "newText": "x"}]}),
            ),
            "Read(./.env)",
        );
    }
    assert_eq!(
        std::fs::read_to_string(s.ws.join(".env")).unwrap(),
        format!("SECRET={SECRET}\n")
    );
    assert!(s.ws.join("envlink").is_symlink());
    // A dangling link is judged on the file a write through it would create.
    std::os::unix::fs::symlink("new.env", s.ws.join("dangling")).unwrap();
    refused(
        "write dangling",
        &tool(
            &s,
            None,
            "write",
            json!({"path": "dangling", "content": "x"}),
        ),
        "Read(./new.env)",
    );
    assert!(!s.ws.join("new.env").exists());
    // The same with the sandbox on: both layers agree.
    refused(
        "sandboxed read envlink",
        &tool(
            &s,
            Some("workspace-write"),
            "read",
            json!({"path": "envlink"}),
        ),
        "Read(./.env)",
    );
}

#[test]
fn searches_and_listings_leave_denied_files_out() {
    let s = scene(&["Read(./.env)", "Read(./secrets/**)"]);
    for sandbox in [None, Some("workspace-write")] {
        for root in [".", "self", "self/self"] {
            let (text, is_error) = tool(
                &s,
                sandbox,
                "grep",
                json!({"pattern": "SECRET", "path": root}),
            );
            assert!(!is_error, "{sandbox:?} grep {root}: {text}");
            assert!(
                text.contains("notes.txt"),
                "{sandbox:?} grep {root}: {text}"
            );
            assert!(text.contains("lib.rs"), "{sandbox:?} grep {root}: {text}");
            assert!(
                !text.contains(SECRET) && !text.contains(".env") && !text.contains("key"),
                "{sandbox:?} grep {root}: {text}"
            );
            let (text, _) = tool(&s, sandbox, "find", json!({"pattern": "*", "path": root}));
            assert!(
                text.contains("notes.txt"),
                "{sandbox:?} find {root}: {text}"
            );
            assert!(
                !text.contains(".env") && !text.contains("envlink") && !text.contains("key"),
                "{sandbox:?} find {root}: {text}"
            );
            let (text, _) = tool(&s, sandbox, "ls", json!({"path": root}));
            assert!(text.contains("notes.txt"), "{sandbox:?} ls {root}: {text}");
            assert!(
                !text.contains(".env") && !text.contains("envlink"),
                "{sandbox:?} ls {root}: {text}"
            );
        }
    }
    // Listing the denied directory itself is refused, not shown empty.
    refused(
        "ls secrets",
        &tool(&s, None, "ls", json!({"path": "secrets"})),
        "Read(./secrets/**)",
    );
}

#[test]
fn a_model_searching_the_workspace_never_sees_the_denied_file() {
    let s = scene(&["Read(./.env)", "Read(./secrets)"]);
    let script = s.base.join("script.jsonl");
    let turns = [
        json!({"content": [
            {"type": "toolCall", "id": "g", "name": "grep", "arguments": {"pattern": "SECRET", "path": "."}},
            {"type": "toolCall", "id": "r", "name": "read", "arguments": {"path": format!("file://localhost{}/.env", s.ws.display())}},
        ]}),
        json!({"content": [{"type": "text", "text": "done"}]}),
    ];
    let text: String = turns.iter().map(|t| format!("{t}\n")).collect();
    std::fs::write(&script, text).unwrap();
    let out = agent(&s)
        .arg("--script")
        .arg(&script)
        .arg("--cwd")
        .arg(&s.ws)
        .args(["--tools", "read,grep", "--mode", "json", "go"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains(SECRET), "{stdout}");
    let ends: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "tool_execution_end")
        .collect();
    let result = |id: &str| -> (String, bool) {
        let e = ends
            .iter()
            .find(|e| e["toolCallId"] == id)
            .unwrap_or_else(|| panic!("no result for {id}: {stdout}"));
        (
            e["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or("")
                .to_string(),
            e["isError"] == true,
        )
    };
    let (grep, is_error) = result("g");
    assert!(
        !is_error && grep.contains("notes.txt") && !grep.contains(".env"),
        "{grep}"
    );
    refused("read file://localhost", &result("r"), "Read(./.env)");
}

/// A context file that a Read rule denies (here through a link) stays out
/// of the system prompt, as it stays out of the read tool.
#[test]
fn a_denied_context_file_stays_out_of_the_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let ws = base.join("ws");
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::create_dir_all(ws.join("secrets")).unwrap();
    std::fs::write(ws.join("secrets/keys.md"), "DENIED-MD-CONTENT\n").unwrap();
    std::os::unix::fs::symlink("secrets/keys.md", ws.join("AGENTS.md")).unwrap();
    let agent_dir = base.join("agent");
    std::fs::create_dir_all(&agent_dir).unwrap();
    std::fs::write(
        agent_dir.join("settings.json"),
        r#"{"permissions": {"deny": ["Read(./secrets/**)"]}}"#,
    )
    .unwrap();
    let prompt = || {
        let out = std::process::Command::new(crate::bin())
            .args(["--print-system-prompt", "--cwd"])
            .arg(&ws)
            .env("CODING_AGENT_DIR", &agent_dir)
            .env("HOME", base.join("home"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let text = prompt();
    assert!(!text.contains("DENIED-MD-CONTENT"), "{text}");
    // Without the rule it is read (a Markdown file inside the repository).
    std::fs::write(agent_dir.join("settings.json"), "{}").unwrap();
    assert!(prompt().contains("DENIED-MD-CONTENT"));
}
