//! A process doing write/edit in a loop is SIGKILLed at random moments: every
//! target file must hold its old or its new complete content, and no temporary
//! file may outlive the next successful write.

use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;

fn iterations() -> usize {
    if std::env::var_os("CODING_AGENT_SLOW_TESTS").is_some() {
        200
    } else {
        60
    }
}

#[test]
fn sigkill_mid_write_never_tears_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("data.txt");
    let a = format!("A-BEGIN\n{}\nA-END\n", "a".repeat(2 * 1024 * 1024));
    let b = format!("B-BEGIN\n{}\nB-END\n", "b".repeat(3 * 1024 * 1024));
    std::fs::write(&target, &a).unwrap();
    // Alternate full rewrites and edits that flip the markers.
    let mut cases = String::new();
    for i in 0..400 {
        let case = match i % 4 {
            0 => {
                json!({"tool": "write", "args": {"path": "data.txt", "content": b}, "cwd": dir.path()})
            }
            1 => {
                json!({"tool": "write", "args": {"path": "data.txt", "content": a}, "cwd": dir.path()})
            }
            2 => {
                json!({"tool": "edit", "args": {"path": "data.txt", "edits": [{"oldText": "A-BEGIN", "newText": "B-BEGIN"}, {"oldText": "A-END", "newText": "B-END"}]}, "cwd": dir.path()})
            }
            _ => {
                json!({"tool": "edit", "args": {"path": "data.txt", "edits": [{"oldText": "B-BEGIN", "newText": "A-BEGIN"}, {"oldText": "B-END", "newText": "A-END"}]}, "cwd": dir.path()})
            }
        };
        cases.push_str(&format!("{case}\n"));
    }
    let batch = dir.path().join("cases.jsonl");
    std::fs::write(&batch, cases).unwrap();
    let valid = |content: &str| {
        let a_like = content.len() == a.len()
            && content.starts_with("A-BEGIN\n")
            && content.ends_with("\nA-END\n");
        let b_like = content.len() == b.len()
            && content.starts_with("B-BEGIN\n")
            && content.ends_with("\nB-END\n");
        // An edit flips the markers of either body.
        let flipped = (content.len() == a.len() || content.len() == b.len())
            && (content.starts_with("A-BEGIN\n") || content.starts_with("B-BEGIN\n"))
            && (content.ends_with("\nA-END\n") || content.ends_with("\nB-END\n"));
        a_like || b_like || flipped
    };
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..iterations() {
        let mut child = std::process::Command::new(crate::bin())
            .args(["tool", "--batch"])
            .arg(&batch)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        std::thread::sleep(Duration::from_millis(5 + seed % 60));
        child.kill().unwrap();
        child.wait().unwrap();
        let content = std::fs::read_to_string(&target).unwrap();
        assert!(
            valid(&content),
            "iteration {i}: torn file of {} bytes",
            content.len()
        );
    }
    // The next successful write cleans up what the killed processes left.
    let out = std::process::Command::new(crate::bin())
        .args(["tool", "write", "--cwd"])
        .arg(dir.path())
        .args([
            "--args",
            &json!({"path": "data.txt", "content": "final\n"}).to_string(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut names = names;
    names.sort();
    assert_eq!(names, ["cases.jsonl", "data.txt"], "stray files");
    let _ = std::io::stdout().flush();
}
