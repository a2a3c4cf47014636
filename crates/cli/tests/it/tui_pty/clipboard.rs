//! A mouse selection in fullscreen: OSC 52 always, and a system clipboard
//! program as well when the session has a display of its own (a fake
//! `xclip` on `PATH` that keeps what it is given); none spawned without
//! one. The UI waits for a copy still going on before it exits, so after
//! the exit the file tells whether the program ran.

use super::*;

/// A `bin` directory in `dir` with an `xclip` that writes its arguments
/// and then its stdin to `clip.txt` (renamed into place whole); the file.
fn fake_xclip(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let out = dir.join("clip.txt");
    let script = format!(
        "#!/bin/sh\n{{ echo \"$@\"; cat; }} > '{0}.part' && mv '{0}.part' '{0}'\n",
        out.display()
    );
    let xclip = bin.join("xclip");
    std::fs::write(&xclip, script).unwrap();
    std::fs::set_permissions(&xclip, std::fs::Permissions::from_mode(0o755)).unwrap();
    (bin, out)
}

/// Fullscreen with `env`, a question answered "plain answer", the answer
/// selected with the mouse (SGR press, drag, release) and the OSC 52
/// escape seen; then the UI left.
fn select_the_answer(dir: &std::path::Path, env: &[(&str, &std::ffi::OsStr)]) {
    let script = dir.join("script.jsonl");
    let answer = json!({"content":[{"type":"text","text":"plain answer"}]});
    std::fs::write(&script, format!("{answer}\n")).unwrap();
    let args = ["--tui-mode", "fullscreen"];
    let mut tui = Tui::start_env(dir, &script, "xterm-256color", &args, env);
    tui.wait_for("the footer", |t| t.contains("scripted/"));
    tui.send("hello");
    tui.send("\r");
    tui.wait_for("the answer", |t| t.contains("plain answer"));
    let (row, col) = {
        let screen = tui.screen.lock().unwrap_or_else(|p| p.into_inner());
        let rows: Vec<String> = screen.parser.screen().rows(0, COLS).collect();
        let row = rows.iter().position(|r| r.starts_with("plain answer"));
        (row.expect("the answer on a row of its own") + 1, 1)
    };
    let end = col + "plain answer".len() - 1;
    tui.send(&format!(
        "\x1b[<0;{col};{row}M\x1b[<32;{end};{row}M\x1b[<0;{end};{row}m"
    ));
    // "plain answer" in base64, as OSC 52 carries it.
    tui.wait_raw("OSC 52 with the answer", |raw| {
        raw.contains("\x1b]52;c;cGxhaW4gYW5zd2Vy\x07")
    });
    tui.send("\x04");
    assert!(tui.wait_exit().success());
}

#[test]
fn a_selection_reaches_xclip_too_when_a_display_is_set() {
    let dir = tempfile::tempdir().unwrap();
    let (bin, out) = fake_xclip(dir.path());
    let path = std::env::join_paths(
        std::iter::once(bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let display = std::ffi::OsString::from(":99");
    select_the_answer(dir.path(), &[("PATH", &path), ("DISPLAY", &display)]);
    let copied = std::fs::read_to_string(&out).expect("xclip ran before the exit");
    assert_eq!(copied, "-selection clipboard\nplain answer");
}

#[test]
fn no_clipboard_program_runs_without_a_display() {
    let dir = tempfile::tempdir().unwrap();
    let (bin, out) = fake_xclip(dir.path());
    let path = std::env::join_paths(
        std::iter::once(bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    // An xclip on PATH, but no DISPLAY (and no SSH): OSC 52 only.
    select_the_answer(dir.path(), &[("PATH", &path)]);
    assert!(!out.exists(), "xclip ran without a display");
}
