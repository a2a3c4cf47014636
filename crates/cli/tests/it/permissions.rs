//! Permission rules through the binary: decisions in the JSON stream,
//! refusals in print, JSON, tool and MCP modes, and the terminal question
//! (`script` gives the agent a real pseudo-terminal).

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use test_support::cli::{of_type, script};

fn setup(settings: Value) -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("agent");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(agent.join("settings.json"), settings.to_string()).unwrap();
    (dir, agent, ws)
}

fn bash_call(id: &str, command: &str) -> Value {
    json!({"type": "toolCall", "id": id, "name": "bash", "arguments": {"command": command}})
}

fn events(agent: &Path, ws: &Path, script: &Path, extra: &[&str]) -> Vec<Value> {
    let out = Command::new(crate::bin())
        .env("CODING_AGENT_DIR", agent)
        .arg("--script")
        .arg(script)
        .arg("--cwd")
        .arg(ws)
        .args(extra)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[test]
fn decisions_are_in_the_json_stream_and_asks_are_refused() {
    let (dir, agent, ws) = setup(json!({"permissions": {
        "allow": ["Bash(echo:*)"], "deny": ["Bash(rm:*)"]
    }}));
    let script = script(
        dir.path(),
        &[
            json!({"content": [
                bash_call("c1", "echo ok; rm -rf ~/x"),
                bash_call("c2", "echo fine"),
                bash_call("c3", "echo hi | tee made.txt"),
            ]}),
            json!({"content": [{"type": "text", "text": "done"}]}),
        ],
    );
    let events = events(&agent, &ws, &script, &["--mode", "json", "go"]);
    let decisions: Vec<(String, String, Value)> = of_type(&events, "tool_call_decision")
        .iter()
        .map(|e| {
            (
                e["toolCallId"].as_str().unwrap().to_string(),
                e["decision"]["permission"].as_str().unwrap().to_string(),
                e["decision"]["rule"].clone(),
            )
        })
        .collect();
    assert_eq!(
        decisions,
        [
            ("c1".into(), "deny".into(), json!("Bash(rm:*)")),
            ("c2".into(), "allow".into(), json!("Bash(echo:*)")),
            ("c3".into(), "ask".into(), Value::Null),
        ]
    );
    let ends = of_type(&events, "tool_execution_end");
    let text = |id: &str| {
        ends.iter()
            .find(|e| e["toolCallId"] == id)
            .map(|e| {
                (
                    e["result"]["content"][0]["text"]
                        .as_str()
                        .unwrap()
                        .to_string(),
                    e["isError"] == true,
                )
            })
            .unwrap()
    };
    assert_eq!(
        text("c1"),
        (
            "Permission denied by rule Bash(rm:*) (matched: rm -rf ~/x)".to_string(),
            true
        )
    );
    assert_eq!(text("c2"), ("fine\n".to_string(), false));
    let (refused, is_error) = text("c3");
    assert!(
        is_error && refused.contains("tee made.txt") && refused.contains("JSON mode"),
        "{refused}"
    );
    assert!(!ws.join("made.txt").exists());
}

#[test]
fn without_rules_the_stream_is_unchanged() {
    let (dir, agent, ws) = setup(json!({}));
    let script = script(
        dir.path(),
        &[
            json!({"content": [bash_call("c1", "echo ok")]}),
            json!({"content": [{"type": "text", "text": "done"}]}),
        ],
    );
    let events = events(&agent, &ws, &script, &["--mode", "json", "go"]);
    assert!(of_type(&events, "tool_call_decision").is_empty());
    assert_eq!(of_type(&events, "tool_execution_end").len(), 1);
}

#[test]
fn a_project_cannot_allow_itself_commands() {
    let (dir, agent, ws) = setup(json!({"permissions": {"allow": ["Bash(git status)"]}}));
    std::fs::create_dir_all(ws.join(".pi")).unwrap();
    std::fs::write(
        ws.join(".pi/settings.json"),
        json!({"permissions": {"allow": ["Bash"], "deny": ["Read(./private/**)"]}}).to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(ws.join("private")).unwrap();
    std::fs::write(ws.join("private/p.txt"), "p").unwrap();
    let script = script(
        dir.path(),
        &[
            json!({"content": [
                bash_call("c1", "touch pwned"),
                {"type": "toolCall", "id": "c2", "name": "read", "arguments": {"path": "private/p.txt"}},
            ]}),
            json!({"content": [{"type": "text", "text": "done"}]}),
        ],
    );
    let events = events(&agent, &ws, &script, &["--mode", "json", "go"]);
    let ends = of_type(&events, "tool_execution_end");
    assert!(ends.iter().all(|e| e["isError"] == true), "{ends:?}");
    assert!(!ws.join("pwned").exists());
    let read = ends.iter().find(|e| e["toolCallId"] == "c2").unwrap();
    assert!(
        read["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Read(./private/**)"),
        "{read}"
    );
}

#[test]
fn the_tool_command_obeys_the_rules() {
    let (_dir, agent, ws) = setup(json!({"permissions": {"deny": ["Write(**/*.lock)", "Grep"]}}));
    let run = |name: &str, args: Value| -> Value {
        let out = Command::new(crate::bin())
            .env("CODING_AGENT_DIR", &agent)
            .args(["tool", name, "--cwd"])
            .arg(&ws)
            .arg("--args")
            .arg(args.to_string())
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let out = run("write", json!({"path": "Cargo.lock", "content": "x"}));
    assert_eq!(out["isError"], true);
    assert!(
        out["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Write(**/*.lock)")
    );
    assert!(!ws.join("Cargo.lock").exists());
    assert_eq!(run("grep", json!({"pattern": "x"}))["isError"], true);
    assert_eq!(
        run("write", json!({"path": "ok.txt", "content": "x"}))["isError"],
        false
    );
}

#[tokio::test]
async fn mcp_refuses_what_needs_approval() {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
    let (_dir, agent, ws) =
        setup(json!({"permissions": {"ask": ["Bash(touch:*)"], "deny": ["Bash(rm:*)"]}}));
    let command = tokio::process::Command::new(crate::bin()).configure(|c| {
        c.arg("mcp")
            .arg("--cwd")
            .arg(&ws)
            .args(["--sandbox", "off"]);
        c.env("CODING_AGENT_DIR", &agent);
    });
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
    let call = |command: &str| {
        client.call_tool(
            CallToolRequestParams::new("bash")
                .with_arguments(json!({"command": command}).as_object().cloned().unwrap()),
        )
    };
    let text = |r: &rmcp::model::CallToolResult| {
        r.content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect::<String>()
    };
    let r = call("touch asked").await.unwrap();
    assert!(
        r.is_error == Some(true) && text(&r).contains("MCP mode"),
        "{}",
        text(&r)
    );
    let r = call("echo a && rm -rf b").await.unwrap();
    assert!(
        r.is_error == Some(true) && text(&r).contains("Bash(rm:*)"),
        "{}",
        text(&r)
    );
    let r = call("echo fine").await.unwrap();
    assert_eq!(text(&r), "fine\n");
    assert!(!ws.join("asked").exists());
    client.cancel().await.unwrap();
}

#[test]
fn the_terminal_asks_yes_no_always() {
    if !test_support::prerequisite(
        Command::new("script").arg("--version").output().is_ok(),
        "script(1), the terminal these tests type into",
        "install it with `apt-get install bsdutils`",
    ) {
        return;
    }
    let (dir, agent, ws) = setup(json!({"permissions": {"ask": ["Bash(touch:*)"]}}));
    let script_file = script(
        dir.path(),
        &[
            json!({"content": [bash_call("c1", "touch one")]}),
            json!({"content": [bash_call("c2", "touch two")]}),
            json!({"content": [bash_call("c3", "touch three")]}),
            json!({"content": [bash_call("c4", "touch three")]}),
            json!({"content": [bash_call("c5", "touch four")]}),
            json!({"content": [{"type": "text", "text": "done"}]}),
        ],
    );
    let agent_cmd = format!(
        "{} --script {} --cwd {} go",
        crate::bin().display(),
        script_file.display(),
        ws.display()
    );
    // Answers arrive one by one, as a person would type them.
    let mut child = Command::new("script")
        .args(["-qec", &agent_cmd, "/dev/null"])
        .env("CODING_AGENT_DIR", &agent)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        use std::io::Write;
        for answer in ["y", "n", "a", "r use mkdir instead"] {
            std::thread::sleep(std::time::Duration::from_millis(1500));
            let _ = writeln!(stdin, "{answer}");
        }
        std::thread::sleep(std::time::Duration::from_millis(1500));
    });
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    let screen = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    assert!(ws.join("one").exists(), "{screen}");
    assert!(!ws.join("two").exists(), "{screen}");
    assert!(ws.join("three").exists(), "{screen}");
    assert!(!ws.join("four").exists(), "{screen}");
    assert!(
        screen.contains("The user says: use mkdir instead"),
        "{screen}"
    );
    assert!(
        screen.contains("Permission refused by the user"),
        "{screen}"
    );
    // "always" covered the repeated call: four questions, not five.
    assert_eq!(
        screen
            .matches("[y]es / [n]o / [a]lways this session")
            .count(),
        4,
        "{screen}"
    );
}

/// Issue #17 items 9 and 10 through the binary: what the splitter cannot
/// model is never allowed, and wrappers do not hide a denied command.
#[test]
fn allow_rules_match_plain_commands_and_wrappers_do_not_hide_denied_ones() {
    let (dir, agent, ws) = setup(json!({"permissions": {
        "allow": ["Bash(echo:*)", "Bash(git status)"], "deny": ["Bash(rm:*)"]
    }}));
    for f in ["v", "victim"] {
        std::fs::write(ws.join(f), "x").unwrap();
    }
    let attempts = [
        r"echo $'\'' ; rm victim #'",
        "a='x[$(rm v)]'; echo $((a))",
        "a='x[$(rm v)]'; echo $[a]",
        "x='$(rm v)'; echo ${x@P}",
        "PATH=./evil git status",
        "time -p rm v",
        "timeout -s KILL 5 rm v",
        "env -S 'rm v'",
        "bash -c -- 'rm v'",
        "{rm,v}",
        "/usr/bin/r[m] v",
        "echo rm v | sh",
        "bash <<< 'rm v'",
    ];
    let mut turns: Vec<Value> = attempts
        .iter()
        .enumerate()
        .map(|(i, c)| json!({"content": [bash_call(&format!("c{i}"), c)]}))
        .collect();
    turns.push(json!({"content": [bash_call("plain", "echo fine")]}));
    turns.push(json!({"content": [{"type": "text", "text": "done"}]}));
    let script = script(dir.path(), &turns);
    let events = events(&agent, &ws, &script, &["--mode", "json", "go"]);
    let decisions = of_type(&events, "tool_call_decision");
    for (i, command) in attempts.iter().enumerate() {
        let id = format!("c{i}");
        let decision = decisions
            .iter()
            .find(|e| e["toolCallId"] == id.as_str())
            .unwrap_or_else(|| panic!("no decision for {command}"));
        assert_ne!(
            decision["decision"]["permission"], "allow",
            "{command}: {decision}"
        );
    }
    assert!(ws.join("v").exists() && ws.join("victim").exists());
    let plain = decisions
        .iter()
        .find(|e| e["toolCallId"] == "plain")
        .unwrap();
    assert_eq!(plain["decision"]["permission"], "allow");
}

/// A key `permissions` does not know (a misspelt `deny`) or a rule that
/// does not parse stops the agent, naming the file and the key: rules
/// silently left unread would fail open.
#[test]
fn unusable_permission_settings_stop_the_agent_naming_file_and_key() {
    let user_typo = json!({"permissions": {"deney": ["Bash(rm:*)"]}});
    let project_bad_rule = json!({"permissions": {"deny": ["Bash(rm:*"]}});
    for (user, project, file, key) in [
        (
            user_typo,
            None,
            "agent/settings.json",
            "`permissions.deney`",
        ),
        (
            json!({}),
            Some(project_bad_rule),
            "ws/.pi/settings.json",
            "`permissions.deny`",
        ),
    ] {
        let (dir, agent, ws) = setup(user);
        if let Some(project) = project {
            std::fs::create_dir_all(ws.join(".pi")).unwrap();
            std::fs::write(ws.join(".pi/settings.json"), project.to_string()).unwrap();
        }
        let turn = json!({"content": [{"type": "text", "text": "never shown"}]});
        let script = script(dir.path(), &[turn]);
        let out = Command::new(crate::bin())
            .env("CODING_AGENT_DIR", &agent)
            .arg("--script")
            .arg(&script)
            .arg("--cwd")
            .arg(&ws)
            .args(["-p", "hi"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(file) && stderr.contains(key), "{stderr}");
        assert!(out.stdout.is_empty(), "nothing ran");
    }
}
