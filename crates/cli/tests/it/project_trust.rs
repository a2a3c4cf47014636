//! The trust question of an interactive terminal run (through `script(1)`,
//! which gives the agent a real pseudo-terminal): "y" records the trust and
//! applies the project's settings, anything else leaves them out.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;

fn run_on_terminal(dir: &Path, ws: &Path, answer: &str) -> String {
    let script = dir.join("script.jsonl");
    std::fs::write(
        &script,
        format!(
            "{}\n{}\n",
            json!({"content": [{"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "echo hi"}}]}),
            json!({"content": [{"type": "text", "text": "done"}]})
        ),
    )
    .unwrap();
    let agent_cmd = format!(
        "{} --script {} --cwd {} go",
        crate::bin().display(),
        script.display(),
        ws.display()
    );
    let mut child = Command::new("script")
        .args(["-qec", &agent_cmd, "/dev/null"])
        .env("CODING_AGENT_DIR", dir.join("agent"))
        .env("HOME", dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        // Typed ahead: the terminal keeps it until the question reads it.
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "{answer}").unwrap();
        // Held open until the agent is done, as a person's terminal is.
        let out = child.wait_with_output().unwrap();
        drop(stdin);
        String::from_utf8_lossy(&out.stdout).replace('\r', "")
    }
}

#[test]
fn the_terminal_asks_before_a_project_runs_anything() {
    if !test_support::prerequisite(
        Command::new("script").arg("--version").output().is_ok(),
        "script(1), the terminal these tests type into",
        "install it with `apt-get install bsdutils`",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join(".pi")).unwrap();
    let marker = dir.path().join("prefix-ran");
    std::fs::write(
        ws.join(".pi/settings.json"),
        json!({"shellCommandPrefix": format!("touch '{}'", marker.display())}).to_string(),
    )
    .unwrap();

    let screen = run_on_terminal(dir.path(), &ws, "n");
    assert!(screen.contains("Trust this project"), "{screen}");
    assert!(screen.contains("shellCommandPrefix"), "{screen}");
    assert!(!marker.exists(), "{screen}");
    assert!(!dir.path().join("agent/trusted-projects.json").exists());

    let screen = run_on_terminal(dir.path(), &ws, "y");
    assert!(marker.exists(), "{screen}");
    let record = std::fs::read_to_string(dir.path().join("agent/trusted-projects.json")).unwrap();
    assert!(record.contains("shellCommandPrefix"), "{record}");

    // Trusted with these values: no question the next time.
    std::fs::remove_file(&marker).unwrap();
    let screen = run_on_terminal(dir.path(), &ws, "n");
    assert!(!screen.contains("Trust this project"), "{screen}");
    assert!(marker.exists(), "{screen}");
}
