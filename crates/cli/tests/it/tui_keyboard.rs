//! The keyboard protocol under a pseudo-terminal that plays a terminal
//! speaking the Kitty keyboard protocol: the test answers the UI's
//! start-up query itself, then types Kitty-encoded keys.

use serde_json::json;

use crate::tui_harness::Tui;

/// The answers a Kitty-protocol terminal with a light background gives to
/// OSC 11, `CSI ? u` and the device-attributes query.
const KITTY_TERMINAL_ANSWERS: &str = "\x1b]11;rgb:ffff/ffff/ffff\x1b\\\x1b[?0u\x1b[?62;22c";

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

#[test]
fn a_kitty_terminal_gets_the_protocol_pushed_per_screen_and_popped_at_exit() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.jsonl");
    let turn = json!({"content":[{"type":"text","text":"KITTY-ANSWER"}]});
    std::fs::write(&script, format!("{turn}\n")).unwrap();
    let log = dir.path().join("requests.jsonl");
    let log_arg = log.to_string_lossy().into_owned();
    // The answer is typed by this test after it sees the query: the UI is
    // told to wait for it as long as a slow link would need.
    let mut tui = Tui::start_env(
        dir.path(),
        &script,
        "xterm-kitty",
        &["--script-log", &log_arg],
        &[(
            "CODING_AGENT_QUERY_TIMEOUT_MS",
            std::ffi::OsStr::new("60000"),
        )],
    );
    tui.wait_raw("the start-up query", |raw| raw.contains("\x1b[?u\x1b[c"));
    tui.send(KITTY_TERMINAL_ANSWERS);
    tui.wait_for("the footer", |t| t.contains("scripted/"));
    tui.wait_raw("the protocol pushed", |raw| raw.contains("\x1b[>1u"));

    // Shift+Enter as the protocol sends it: a new line, not a send.
    tui.send("first");
    tui.wait_for("the first line", |t| t.contains("first"));
    tui.send("\x1b[13;2u");
    tui.send("second");
    let screen = tui.wait_for("the second line", |t| t.contains("second"));
    let rows: Vec<&str> = screen.lines().map(str::trim_end).collect();
    let first = rows.iter().position(|r| r.ends_with("first"));
    assert_eq!(
        rows.iter().position(|r| r.ends_with("second")),
        first.map(|i| i + 1),
        "Shift+Enter did not make a new line:\n{screen}"
    );
    assert!(!log.exists(), "Shift+Enter sent the message");
    // Ctrl+U as the protocol sends it (`CSI 117;5u`) clears the line.
    tui.send("\x1b[117;5u");
    tui.wait_for("Ctrl+U to clear the second line", |t| {
        !t.lines().any(|l| l.trim_end().ends_with("second"))
    });
    tui.send("third\r");
    tui.wait_for("the answer", |t| t.contains("KITTY-ANSWER"));
    let sent = std::fs::read_to_string(&log).unwrap();
    assert!(sent.contains("first\\nthird"), "the message sent: {sent}");

    // The alternate screen has a flag stack of its own.
    tui.send("/tui fullscreen\r");
    tui.wait_raw("a push on the alternate screen", |raw| {
        raw.contains("\x1b[?1049h\x1b[?1002h\x1b[?1006h\x1b[>1u")
    });
    tui.send("/tui inline\r");
    tui.wait_raw("a pop before leaving it", |raw| {
        raw.contains("\x1b[<u\x1b[?1006l\x1b[?1002l\x1b[?1049l")
    });
    tui.send("/exit\r");
    let status = tui.wait_exit();
    assert!(status.success(), "{status:?}");
    let raw = {
        let s = tui.screen.lock().unwrap_or_else(|p| p.into_inner());
        String::from_utf8_lossy(&s.raw).into_owned()
    };
    // Every push was popped: two on the main screen's stack in all (start
    // and exit), one each way on the alternate screen's.
    assert_eq!(count(&raw, "\x1b[>1u"), 2, "pushes: {raw:?}");
    assert_eq!(count(&raw, "\x1b[<u"), 2, "pops: {raw:?}");
    assert!(
        raw.rfind("\x1b[<u") > raw.rfind("\x1b[>1u"),
        "the last push was not popped"
    );
}

#[test]
fn a_terminal_that_does_not_answer_the_kitty_query_gets_no_protocol() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.jsonl");
    std::fs::write(&script, "").unwrap();
    let mut tui = Tui::start_env(
        dir.path(),
        &script,
        "xterm-256color",
        &[],
        &[(
            "CODING_AGENT_QUERY_TIMEOUT_MS",
            std::ffi::OsStr::new("60000"),
        )],
    );
    tui.wait_raw("the start-up query", |raw| raw.contains("\x1b[?u\x1b[c"));
    // Only the attributes: the query ends without a Kitty answer.
    tui.send("\x1b[?62;22c");
    tui.wait_for("the footer", |t| t.contains("scripted/"));
    tui.send("/exit\r");
    assert!(tui.wait_exit().success());
    let s = tui.screen.lock().unwrap_or_else(|p| p.into_inner());
    let raw = String::from_utf8_lossy(&s.raw);
    assert!(
        !raw.contains("\x1b[>1u") && !raw.contains("\x1b[>4;2m"),
        "a protocol was asked for: {raw:?}"
    );
}
