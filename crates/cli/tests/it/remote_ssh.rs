//! `--remote ssh://` against a real OpenSSH server: started by the test on
//! a loopback port with generated host and user keys, logging in an
//! unprivileged user, through the system `ssh` client.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use agent_remote::{Remote, RemoteOptions, RemoteTarget};
use serde_json::{Value, json};
use test_support::process::{processes_of, wait_until};
use test_support::tool_call::execute_one;

/// The remote user the server logs in.
const USER: &str = "ca-remote-test";

use crate::bin;

struct Sshd {
    server: test_support::sshd::LoopbackSshd,
    _dir: tempfile::TempDir,
    port: u16,
    uid: u32,
    ws: PathBuf,
}

/// A server on 127.0.0.1 logging in [`USER`], or `None` (with a message)
/// where one cannot run.
fn sshd() -> Option<Sshd> {
    use test_support::sshd;
    if !test_support::prerequisite(
        sshd::installed(),
        "OpenSSH server and client",
        sshd::INSTALL,
    ) || !test_support::prerequisite(
        rustix::process::geteuid().is_root(),
        "root (the SSH tests start sshd and add a user)",
        "run the suite as root, as CI does",
    ) {
        return None;
    }
    let uid = test_user();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    let server = sshd::LoopbackSshd::start(d, USER).unwrap();
    let ws = d.join("ws");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("notes.txt"), "alpha\nbeta\n").unwrap();
    std::fs::write(ws.join("src/lib.rs"), "fn zanzibar_marker() {}\n").unwrap();
    for p in [
        ws.clone(),
        ws.join("src"),
        ws.join("notes.txt"),
        ws.join("src/lib.rs"),
    ] {
        std::os::unix::fs::lchown(&p, Some(uid), Some(uid)).unwrap();
    }
    std::fs::write(ws.join("secret.txt"), "root only\n").unwrap();
    std::fs::set_permissions(
        ws.join("secret.txt"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    Some(Sshd {
        port: server.port(),
        server,
        _dir: dir,
        uid,
        ws,
    })
}

/// The remote user, created once (tests of this binary run in threads).
fn test_user() -> u32 {
    static USER_READY: std::sync::Mutex<Option<u32>> = std::sync::Mutex::new(None);
    let mut ready = USER_READY.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(uid) = *ready {
        return uid;
    }
    let uid = test_support::sshd::ensure_user(USER).unwrap();
    *ready = Some(uid);
    uid
}

impl Sshd {
    fn uri(&self) -> String {
        self.server.uri(&self.ws)
    }

    fn dir(&self) -> &Path {
        self.server.dir()
    }

    /// The client options: this server's key, our identity, nothing else
    /// (our own multiplexing applies).
    fn options(&self, known_hosts: &Path, identity: &Path) -> Vec<String> {
        let mut o = self
            .server
            .client_options_with(known_hosts, identity, false);
        // Leave ControlMaster and ControlPath to the client under test.
        o.retain(|o| !o.starts_with("Control"));
        o
    }

    fn good_options(&self) -> Vec<String> {
        self.options(&self.dir().join("known_hosts"), &self.dir().join("id_user"))
    }

    fn cli_args(&self, options: &[String]) -> Vec<String> {
        let mut args = vec!["--remote".to_string(), self.uri()];
        for o in options {
            args.extend(["--ssh-option".to_string(), o.clone()]);
        }
        args
    }

    fn accepted_logins(&self) -> usize {
        self.server.logins()
    }
}

use test_support::cli::first_text as text;

#[test]
fn the_seven_tools_over_ssh_and_clear_errors_for_keys() {
    let Some(server) = sshd() else { return };
    let cases = [
        json!({"id": "read", "tool": "read", "args": {"path": "notes.txt"}}),
        json!({"id": "write", "tool": "write", "args": {"path": "made/new.txt", "content": "made remotely\n"}}),
        json!({"id": "edit", "tool": "edit", "args": {"path": "notes.txt", "edits": [{"oldText": "alpha", "newText": "gamma"}]}}),
        json!({"id": "grep", "tool": "grep", "args": {"pattern": "zanzibar_marker"}}),
        json!({"id": "find", "tool": "find", "args": {"pattern": "*.rs"}}),
        json!({"id": "ls", "tool": "ls", "args": {}}),
        json!({"id": "bash", "tool": "bash", "args": {"command": "id -u; pwd; echo \"key=${REMOTE_TEST_API_KEY:-unset}\""}}),
        json!({"id": "secret", "tool": "read", "args": {"path": "secret.txt"}}),
    ];
    let input: String = cases.iter().map(|c| format!("{c}\n")).collect();
    let mut child = Command::new(bin())
        .args(["tool", "--batch", "-"])
        .args(server.cli_args(&server.good_options()))
        .env("REMOTE_TEST_API_KEY", "sk-must-not-travel")
        // Even a client configured to forward every variable has none to send.
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let by_id = |id: &str| results.iter().find(|r| r["id"] == id).unwrap().clone();
    for id in ["read", "write", "edit", "grep", "find", "ls", "bash"] {
        assert_eq!(by_id(id)["isError"], false, "{id}: {}", by_id(id));
    }
    assert!(text(&by_id("grep")).contains("src/lib.rs:1: fn zanzibar_marker"));
    let bash = text(&by_id("bash"));
    assert!(bash.starts_with(&format!("{}\n", server.uid)), "{bash}");
    assert!(bash.contains("key=unset"), "{bash}");
    let made = server.ws.join("made/new.txt");
    assert_eq!(std::fs::metadata(&made).unwrap().uid(), server.uid);
    assert_eq!(by_id("secret")["isError"], true);

    // A wrong host key and a wrong user key: each its own error. No
    // multiplexing, so an earlier master cannot hide the check.
    let other = server.dir().join("other");
    Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&other)
        .output()
        .unwrap();
    let other_pub = std::fs::read_to_string(other.with_extension("pub")).unwrap();
    let bad_hosts = server.dir().join("bad_known_hosts");
    std::fs::write(
        &bad_hosts,
        format!("[127.0.0.1]:{} {other_pub}", server.port),
    )
    .unwrap();
    let no_mux = [
        "ControlMaster=no".to_string(),
        "ControlPath=none".to_string(),
    ];
    let attempt = |known: &Path, identity: &Path| {
        let mut options = no_mux.to_vec();
        options.extend(server.options(known, identity));
        let out = Command::new(bin())
            .args(["tool", "ls"])
            .args(server.cli_args(&options))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    let stderr = attempt(&bad_hosts, &server.dir().join("id_user"));
    assert!(stderr.contains("host key was refused"), "{stderr}");
    let stderr = attempt(&server.dir().join("known_hosts"), &other);
    assert!(stderr.contains("authentication failed"), "{stderr}");
}

async fn connect(server: &Sshd) -> Remote {
    let options = RemoteOptions::default()
        .helper_binary(bin())
        .ssh_options(server.good_options())
        .keepalive(Duration::from_secs(2));
    Remote::connect(RemoteTarget::parse(&server.uri()).unwrap(), options)
        .await
        .unwrap()
}

/// The scripted model asks for every built-in tool and a custom one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_run_over_ssh_with_a_custom_tool_one_connection_and_a_cut_link() {
    let Some(server) = sshd() else { return };
    let remote = connect(&server).await;
    let logins = server.accepted_logins();

    // A custom tool written on the operations: it runs remotely unchanged.
    let files = remote.operations().files;
    let cwd = remote.cwd().to_path_buf();
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Params {
        /// File to count lines of.
        path: String,
    }
    let line_count = agent_tool::tool("line_count")
        .description("Counts the lines of a file.")
        .prompt_snippet("Count lines of a file")
        .execute(move |p: Params, _cx| {
            let (files, cwd) = (files.clone(), cwd.clone());
            async move {
                let data = files
                    .read_file(&cwd.join(&p.path))
                    .map_err(|e| agent_core::ToolError::new(e.to_string()))?;
                let n = data.iter().filter(|b| **b == b'\n').count();
                Ok(agent_core::AgentToolResult::text(format!("{n} lines")))
            }
        });
    let calls = [
        ("read", json!({"path": "notes.txt"})),
        (
            "write",
            json!({"path": "agent.txt", "content": "one\ntwo\nthree\n"}),
        ),
        (
            "edit",
            json!({"path": "agent.txt", "edits": [{"oldText": "two", "newText": "deux"}]}),
        ),
        ("grep", json!({"pattern": "deux"})),
        ("find", json!({"pattern": "agent.*"})),
        ("ls", json!({})),
        ("bash", json!({"command": "id -un"})),
        ("line_count", json!({"path": "agent.txt"})),
    ];
    let mut script = String::new();
    for (i, (name, args)) in calls.iter().enumerate() {
        script.push_str(&format!(
            "{}\n",
            json!({"content": [{"type": "toolCall", "id": format!("c{i}"), "name": name, "arguments": args}]})
        ));
    }
    script.push_str(&format!(
        "{}\n",
        json!({"content": [{"type": "text", "text": "done"}]})
    ));
    let client =
        Arc::new(agent_ai::providers::scripted::ScriptedClient::from_jsonl(&script).unwrap());
    let tools = tools_builtin::ToolSet::new(remote.cwd())
        .operations(remote.operations())
        .queue(remote.mutation_queue());
    let session =
        coding_agent::AgentSessionBuilder::new(agent_ai::Model::new("scripted", "s"), client)
            .cwd(remote.cwd())
            .builtin_tools(tools.all())
            .tool(line_count)
            .tool_extension(remote.mutation_queue())
            .active_tools([
                "read",
                "bash",
                "edit",
                "write",
                "grep",
                "find",
                "ls",
                "line_count",
            ])
            .build()
            .unwrap();
    session.prompt("use every tool").await.unwrap();
    let messages = serde_json::to_value(session.agent().messages()).unwrap();
    let results: Vec<&Value> = messages
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "toolResult")
        .collect();
    assert_eq!(results.len(), calls.len(), "{messages:#}");
    for r in &results {
        assert_eq!(r["isError"], false, "{r}");
    }
    let text_of = |name: &str| {
        results
            .iter()
            .find(|r| r["toolName"] == name)
            .map(|r| r["content"][0]["text"].as_str().unwrap_or("").to_string())
            .unwrap()
    };
    assert_eq!(text_of("bash"), format!("{USER}\n"));
    assert_eq!(text_of("line_count"), "3 lines");
    assert!(text_of("grep").contains("agent.txt:2: deux"));
    assert_eq!(
        std::fs::read_to_string(server.ws.join("agent.txt")).unwrap(),
        "one\ndeux\nthree\n"
    );

    // 100 sequential calls: one channel, no new SSH login.
    let read = tools.tool("read").unwrap().tool();
    for i in 0..100 {
        let call = agent_ai::ToolCall::new(format!("r{i}"), "read", json!({"path": "notes.txt"}));
        let (_, is_error) = execute_one(&read, &call, &agent_core::CancellationToken::new()).await;
        assert!(!is_error);
    }
    assert_eq!(remote.channels_opened(), 1);
    assert_eq!(server.accepted_logins(), logins);

    // Cut the link mid-bash: the call ends with an error, the remote
    // helper sees the channel close and kills the command, the next call
    // reconnects.
    let marker = format!("sleep 4545{}", std::process::id() % 97);
    let bash = tools.tool("bash").unwrap().tool();
    let m = marker.clone();
    let running = tokio::spawn(async move {
        let call = agent_ai::ToolCall::new("b", "bash", json!({ "command": m }));
        execute_one(&bash, &call, &agent_core::CancellationToken::new()).await
    });
    wait_until("the remote sleep runs", || {
        !processes_of(server.uid, &marker).is_empty()
    })
    .await;
    let ssh = remote.transport_pid().unwrap();
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(ssh as i32).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    let (result, is_error) = tokio::time::timeout(Duration::from_secs(60), running)
        .await
        .expect("no hang after a cut link")
        .unwrap();
    assert!(is_error);
    let text = serde_json::to_value(&result.content).unwrap()[0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(text.contains("was lost"), "{text}");
    wait_until("the remote command is killed", || {
        processes_of(server.uid, &marker).is_empty()
    })
    .await;
    let call = agent_ai::ToolCall::new("again", "read", json!({"path": "notes.txt"}));
    let (_, is_error) = execute_one(&read, &call, &agent_core::CancellationToken::new()).await;
    assert!(!is_error);
    assert_eq!(remote.channels_opened(), 2);
}
