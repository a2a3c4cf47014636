//! `cargo xtask tui-e2e [--only TEXT]`: the debug binary's terminal UI in
//! a private tmux server, with the scripted provider and a temporary HOME.
//!
//! Each case types (`send-keys`, the text and Enter apart), pastes
//! (`paste-buffer -p`) or resizes (`resize-window`) and then reads the
//! history (`capture-pane -J -S -`) and the raw bytes (`pipe-pane`). Every
//! wait polls for what the case expects; answers that must still be
//! streaming when a case acts are paced by the script (`paceMs`) so slowly
//! that a busy machine cannot outrun them.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use super::{Tmux, World, sanity, turn};

/// The pane's size at the start of every case.
const WIDTH: u16 = 80;
const HEIGHT: u16 = 24;
const NZ_WIDTH: std::num::NonZeroU16 = std::num::NonZeroU16::new(WIDTH).unwrap();
const NZ_HEIGHT: std::num::NonZeroU16 = std::num::NonZeroU16::new(HEIGHT).unwrap();

/// Shown in the status row while a run is going on.
const BUSY: &str = "esc to interrupt";

/// `cargo xtask tui-e2e`: builds the binary and runs every case (or the
/// ones whose name contains `--only TEXT`). Without tmux the step is
/// skipped, naming the install command, except under `CI=true`.
pub fn run(root: &Path, args: &[String]) -> Result<()> {
    if !super::has_tmux() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            bail!(
                "tmux is missing, needed by the TUI end-to-end tests (CI must install it: {})",
                super::TMUX_INSTALL
            );
        }
        println!(
            "==> SKIPPED group: the TUI end-to-end tests (tmux is missing; install it with `{}`)",
            super::TMUX_INSTALL
        );
        return Ok(());
    }
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1));
    let status = std::process::Command::new("cargo")
        .current_dir(root)
        .args(["build", "-p", "coding-agent-cli", "--bin", "coding-agent"])
        .status()
        .context("cannot run cargo build")?;
    if !status.success() {
        bail!("cargo build of coding-agent failed");
    }
    let bin = super::target_dir(root).join("debug/coding-agent");
    let work = super::target_dir(root).join("tui-e2e");
    let cases: [(&str, Case); 11] = [
        (
            "the sanity check catches a broken terminal",
            harness_catches_breakage,
        ),
        ("answer once, editor row still", answer_once_editor_still),
        ("esc stops a run", esc_stops_a_run),
        ("paste becomes one marker", paste_is_one_marker),
        ("resize mid-stream", resize_mid_stream),
        ("built-in commands", builtin_commands),
        ("ctrl+l model selector", model_selector),
        ("shift+enter through tmux extended keys", extended_keys),
        ("sane after /exit", sane_after_exit),
        ("sane after SIGTERM", |b, w| {
            sane_after_signal(b, w, libc::SIGTERM)
        }),
        ("sane after SIGHUP", |b, w| {
            sane_after_signal(b, w, libc::SIGHUP)
        }),
    ];
    let mut failed = Vec::new();
    for (name, case) in cases {
        if only.is_some_and(|o| !name.contains(o.as_str())) {
            continue;
        }
        let started = Instant::now();
        let dir = work.join(name.replace(|c: char| !c.is_ascii_alphanumeric(), "-"));
        match case(&bin, &dir) {
            Ok(()) => println!(
                "tui-e2e: {name} ... ok ({:.1}s)",
                started.elapsed().as_secs_f64()
            ),
            Err(e) => {
                println!("tui-e2e: {name} ... FAILED: {e:#}");
                failed.push(name);
            }
        }
    }
    if !failed.is_empty() {
        bail!("tui-e2e: {} case(s) failed: {failed:?}", failed.len());
    }
    Ok(())
}

type Case = fn(&Path, &Path) -> Result<()>;

/// An answer of `n` paragraphs, each tagged `[{tag}NNN]` and long enough
/// to wrap at 40 columns, between a first and a last line.
fn paragraphs(tag: &str, n: usize) -> String {
    let mut text = format!("{tag}-ANSWER-BEGIN");
    for i in 1..=n {
        text.push_str(&format!(
            "\n\n[{tag}{i:03}] the quick brown fox jumps over the lazy dog."
        ));
    }
    text.push_str(&format!("\n\n{tag}-ANSWER-END"));
    text
}

/// The binary in a fresh world, in a fresh tmux server, with its editor
/// on the screen.
fn launch(bin: &Path, dir: &Path, script: &[String]) -> Result<(World, Tmux)> {
    let world = World::new(dir.parent().context("no parent")?, &leaf(dir), script)?;
    let command = world.command(bin, &world.scripted_args(), &[]);
    let tmux = Tmux::start("tui-e2e", WIDTH, HEIGHT, &command, &world.raw())?;
    tmux.wait_for_text("scripted/")?;
    Ok((world, tmux))
}

fn leaf(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Types `text`, then presses Enter in a call of its own.
fn submit(tmux: &Tmux, text: &str) -> Result<()> {
    tmux.type_text(text)?;
    tmux.wait_for_text(text)?;
    tmux.key("Enter")
}

/// Waits until `text` is in the history and no run is going on.
fn wait_idle_with(tmux: &Tmux, text: &str) -> Result<String> {
    tmux.wait_for_text(text)?;
    tmux.wait_for("the run to end", |_| {
        tmux.screen().ok().filter(|s| !s.contains(BUSY))
    })?;
    tmux.history()
}

/// Checks that each of `tokens` occurs exactly once in `history`, in order.
fn once_in_order(history: &str, tokens: &[String]) -> Result<()> {
    let mut last = 0;
    for token in tokens {
        let n = history.matches(token.as_str()).count();
        if n != 1 {
            bail!("{token} appears {n} times in the history:\n{history}");
        }
        let at = history.find(token.as_str()).unwrap_or(0);
        if at < last {
            bail!("{token} is out of order in the history:\n{history}");
        }
        last = at;
    }
    Ok(())
}

fn tags(tag: &str, n: usize) -> Vec<String> {
    let mut out = vec![format!("{tag}-ANSWER-BEGIN")];
    out.extend((1..=n).map(|i| format!("[{tag}{i:03}]")));
    out.push(format!("{tag}-ANSWER-END"));
    out
}

/// The answer lands in the history once; while it streams, the editor
/// row never moves up (replayed frame by frame from the raw bytes).
fn answer_once_editor_still(bin: &Path, dir: &Path) -> Result<()> {
    let (_world, tmux) = launch(bin, dir, &[turn(&paragraphs("a", 40), 5, 16)])?;
    submit(&tmux, "tell me a story")?;
    let history = wait_idle_with(&tmux, "a-ANSWER-END")?;
    let mut tokens = vec!["tell me a story".to_string()];
    tokens.extend(tags("a", 40));
    once_in_order(&history, &tokens)?;

    let rows = editor_rows(&tmux.raw()?, "[a001]", "a-ANSWER-END");
    if rows.is_empty() {
        bail!("no frame showed the answer streaming");
    }
    if let Some(i) = rows.iter().position(Option::is_none) {
        bail!("streaming frame {i} has no editor row (rows per frame: {rows:?})");
    }
    if rows.windows(2).any(|w| w[1] < w[0]) {
        bail!("the editor row moved up while the answer streamed: {rows:?}");
    }
    Ok(())
}

/// The editor's row (the last row that is only the prompt `>`) in each
/// frame from the first showing `from` to the first showing `to`, the
/// program's bytes replayed on a vt100 screen of the pane's size; frames
/// end with synchronized output's `CSI ?2026l`.
fn editor_rows(raw: &[u8], from: &str, to: &str) -> Vec<Option<usize>> {
    let mut parser = vt100::Parser::new(NZ_HEIGHT, NZ_WIDTH, 0);
    let mut rows = Vec::new();
    let mut streaming = false;
    for frame in raw.split_inclusive(|&b| b == b'l') {
        parser.process(frame);
        if !frame.ends_with(b"\x1b[?2026l") {
            continue;
        }
        let screen: Vec<String> = parser.screen().rows(0, WIDTH).collect();
        let shows = |t: &str| screen.iter().any(|r| r.contains(t));
        streaming = streaming || shows(from);
        if !streaming {
            continue;
        }
        rows.push(screen.iter().rposition(|r| r.trim_end() == ">"));
        if shows(to) {
            break;
        }
    }
    rows
}

/// Esc ends a run long before its answer would end, and the next prompt
/// gets the next answer.
fn esc_stops_a_run(bin: &Path, dir: &Path) -> Result<()> {
    // 24,000 characters in 8-character deltas, 50 ms apart: over two
    // minutes unless interrupted.
    let script = [
        turn(&paragraphs("b", 400), 50, 8),
        turn("SECOND-ANSWER here", 0, 24),
    ];
    let (_world, tmux) = launch(bin, dir, &script)?;
    submit(&tmux, "start a long answer")?;
    tmux.wait_for_text("[b001]")?;
    tmux.key("Escape")?;
    let history = tmux.wait_for("the run to stop after Esc", |h| {
        tmux.screen()
            .ok()
            .filter(|s| !s.contains(BUSY))
            .map(|_| h.to_string())
    })?;
    if history.contains("b-ANSWER-END") {
        bail!("the answer ran to its end despite Esc");
    }
    submit(&tmux, "and now")?;
    let history = wait_idle_with(&tmux, "SECOND-ANSWER")?;
    once_in_order(&history, &["SECOND-ANSWER".to_string()])
}

/// A 50-line paste shows as one marker and reaches the model whole.
fn paste_is_one_marker(bin: &Path, dir: &Path) -> Result<()> {
    let (world, tmux) = launch(bin, dir, &[turn("PASTE-ANSWER", 0, 24)])?;
    let pasted: Vec<String> = (1..=50).map(|i| format!("pasted line {i:02}")).collect();
    let pasted = pasted.join("\n");
    tmux.paste(&pasted)?;
    tmux.wait_for("the paste marker", |_| {
        tmux.screen()
            .ok()
            .filter(|s| s.contains("[paste #1 +50 lines]"))
    })?;
    let screen = tmux.screen()?;
    if screen.contains("pasted line") {
        bail!("the pasted lines show in the editor:\n{screen}");
    }
    if screen.matches("[paste #").count() != 1 {
        bail!("the paste shows as more than one marker:\n{screen}");
    }
    tmux.key("Enter")?;
    wait_idle_with(&tmux, "PASTE-ANSWER")?;
    let requests = world.requests()?;
    let sent = requests
        .first()
        .and_then(|r| r.as_array())
        .and_then(|m| m.last())
        .map(|m| m["content"].to_string())
        .unwrap_or_default();
    let sent: serde_json::Value = serde_json::from_str(&sent).unwrap_or_default();
    let text = match &sent {
        serde_json::Value::String(s) => s.clone(),
        other => other
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|b| b["text"].as_str())
            .collect(),
    };
    if text != pasted {
        bail!("the model received {text:?}, not the pasted text");
    }
    Ok(())
}

/// Width and height changes while the answer streams lose and double no
/// line of it.
fn resize_mid_stream(bin: &Path, dir: &Path) -> Result<()> {
    // 3,600 characters in 8-character deltas, 20 ms apart: about 9 s.
    let (_world, tmux) = launch(bin, dir, &[turn(&paragraphs("c", 60), 20, 8)])?;
    submit(&tmux, "stream while I resize")?;
    for (after, width, height) in [("[c008]", 50, 24), ("[c020]", 110, 30), ("[c035]", 70, 18)] {
        tmux.wait_for_text(after)?;
        tmux.resize(width, height)?;
    }
    let history = wait_idle_with(&tmux, "c-ANSWER-END")?;
    let mut tokens = vec!["stream while I resize".to_string()];
    tokens.extend(tags("c", 60));
    once_in_order(&history, &tokens)
}

/// The checks themselves: a program that leaves raw mode, or only
/// bracketed paste, on must fail them (a check that cannot fail proves
/// nothing).
fn harness_catches_breakage(_bin: &Path, dir: &Path) -> Result<()> {
    for (name, breakage, expected) in [
        ("raw", "stty raw -echo", "raw mode"),
        ("paste", "printf '\\033[?2004h'", "?2004"),
    ] {
        let world = World::new(dir, name, &[])?;
        let sh = PathBuf::from("/bin/sh");
        let command = world.command(&sh, &["-c".to_string(), breakage.to_string()], &[]);
        let tmux = Tmux::start("tui-e2e", WIDTH, HEIGHT, &command, &world.raw())?;
        match sanity::check(&tmux, name, "0") {
            Ok(()) => bail!("`{breakage}` passed the sanity check"),
            Err(e) if e.to_string().contains(expected) => {}
            Err(e) => bail!("`{breakage}` failed the sanity check for another reason: {e:#}"),
        }
    }
    Ok(())
}

/// `/session`, `/export` and `/copy` typed as a person would: their
/// output shows in the transcript, the page is written, and the copy goes
/// out as OSC 52 (through tmux's passthrough) when no clipboard program
/// runs here.
fn builtin_commands(bin: &Path, dir: &Path) -> Result<()> {
    let (world, tmux) = launch(bin, dir, &[turn("CMD-ANSWER", 0, 24)])?;
    submit(&tmux, "hello")?;
    wait_idle_with(&tmux, "CMD-ANSWER")?;
    submit(&tmux, "/session")?;
    tmux.wait_for_text("Messages:  2 (1 user, 1 assistant")?;
    submit(&tmux, "/export page.html")?;
    tmux.wait_for_text("Session exported to")?;
    let page = std::fs::read_to_string(world.dir.join("project/page.html"))
        .context("/export wrote no page")?;
    if !page.contains("CMD-ANSWER") || !page.contains("Content-Security-Policy") {
        bail!("the exported page lacks the answer or its policy");
    }
    submit(&tmux, "/copy")?;
    let shown = tmux.wait_for_text("copied the last answer")?;
    if shown.contains("the terminal (OSC 52)") {
        // "CMD-ANSWER" in base64.
        let raw = String::from_utf8_lossy(&tmux.raw()?).into_owned();
        if !raw.contains("]52;c;Q01ELUFOU1dFUg==") {
            bail!("/copy said OSC 52, but no such sequence was written");
        }
    }
    submit(&tmux, "/exit")?;
    sanity::check(&tmux, "/exit after commands", "0")
}

/// Ctrl+L opens the model selector in place of the editor, typing
/// narrows it, Enter switches as `/model` does: the footer shows the new
/// model, the session records the change, and no selector row is left in
/// the scrollback. The model comes from the world's `models.json` (a
/// scripted run lists the registry's ids under the scripted provider).
fn model_selector(bin: &Path, dir: &Path) -> Result<()> {
    let world = World::new(dir.parent().context("no parent")?, &leaf(dir), &[])?;
    std::fs::write(
        world.dir.join("agent/models.json"),
        serde_json::json!({"providers": {"e2e": {
            "baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "unused",
            "models": [{"id": "e2e-picked-model", "name": "Picked In The Selector"},
                       {"id": "e2e-other-model", "name": "Not This One"}]
        }}})
        .to_string(),
    )?;
    let command = world.command(bin, &world.scripted_args(), &[]);
    let tmux = Tmux::start("tui-e2e", WIDTH, HEIGHT, &command, &world.raw())?;
    tmux.wait_for_text("scripted/")?;
    tmux.key("C-l")?;
    let on_screen = |what: &'static str, want: fn(&str) -> bool| {
        tmux.wait_for(what, |_| tmux.screen().ok().filter(|s| want(s)))
    };
    on_screen("the model selector", |s| {
        s.contains("Select a model") && s.contains(">* scripted/script")
    })?;
    tmux.type_text("e2e-picked")?;
    let screen = on_screen("the list narrowed to one model", |s| {
        s.contains("search: e2e-picked") && s.contains("(1/")
    })?;
    if !screen.contains("scripted/e2e-picked-model") || screen.contains("e2e-other-model") {
        bail!("typing did not narrow the list to the picked model:\n{screen}");
    }
    tmux.key("Enter")?;
    let screen = on_screen("the footer to show the new model", |s| {
        let footer: Vec<&str> = s.trim_end().lines().rev().take(2).collect();
        footer
            .iter()
            .any(|l| l.contains("scripted/e2e-picked-model"))
            && !s.contains("Select a model")
    })?;
    if !screen.contains("model: scripted/e2e-picked-model") {
        bail!("no notice of the switch:\n{screen}");
    }
    if tmux.history()?.contains("Select a model") {
        bail!("the selector's rows went into the scrollback");
    }
    let saved = sessions_text(&world.dir.join("sessions"))?;
    if !saved.contains("\"modelId\":\"e2e-picked-model\"") {
        bail!("the session does not record the switch");
    }
    submit(&tmux, "/exit")?;
    sanity::check(&tmux, "/exit after the model selector", "0")
}

/// In a tmux with `extended-keys on`, the UI asks for `modifyOtherKeys`:
/// Shift+Enter then arrives apart from Enter and makes a new line, while
/// Ctrl keys still work; the mode is turned off again at exit.
fn extended_keys(bin: &Path, dir: &Path) -> Result<()> {
    let world = World::new(
        dir.parent().context("no parent")?,
        &leaf(dir),
        &[turn("KEYS-ANSWER", 0, 24)],
    )?;
    let command = world.command(bin, &world.scripted_args(), &[]);
    let tmux = Tmux::start("tui-e2e", WIDTH, HEIGHT, &command, &world.raw())?;
    tmux.set_server_option("extended-keys", "on")?;
    tmux.wait_for_text("scripted/")?;
    if !contains(&tmux.raw()?, b"\x1b[>4;2m") {
        bail!("the UI did not ask tmux for modifyOtherKeys");
    }
    tmux.type_text("junk")?;
    tmux.wait_for_text("junk")?;
    tmux.key("C-u")?;
    tmux.wait_for("Ctrl+U to clear the editor", |_| {
        tmux.screen().ok().filter(|s| !s.contains("junk"))
    })?;
    tmux.type_text("first")?;
    tmux.wait_for_text("first")?;
    tmux.key("S-Enter")?;
    tmux.type_text("second")?;
    let screen = tmux.wait_for_text("second")?;
    let rows: Vec<&str> = screen.lines().collect();
    let first = rows.iter().position(|r| r.ends_with("first"));
    let second = rows.iter().position(|r| r.ends_with("second"));
    if first.is_none() || second != first.map(|i| i + 1) {
        bail!("Shift+Enter did not make a new line in the editor:\n{screen}");
    }
    tmux.key("Enter")?;
    wait_idle_with(&tmux, "KEYS-ANSWER")?;
    let requests = world.requests()?;
    let sent = requests.first().map(|r| r.to_string()).unwrap_or_default();
    if requests.len() != 1 || !sent.contains("first\\nsecond") {
        bail!("the model did not get one prompt of two lines: {requests:?}");
    }
    submit(&tmux, "/exit")?;
    sanity::check(&tmux, "/exit with extended keys", "0")?;
    if !contains(&tmux.raw()?, b"\x1b[>4;0m") {
        bail!("modifyOtherKeys was not turned off at exit");
    }
    Ok(())
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// `/exit` leaves a sane terminal and status 0.
fn sane_after_exit(bin: &Path, dir: &Path) -> Result<()> {
    let (_world, tmux) = launch(bin, dir, &[turn("EXIT-ANSWER", 0, 24)])?;
    submit(&tmux, "hello")?;
    wait_idle_with(&tmux, "EXIT-ANSWER")?;
    submit(&tmux, "/exit")?;
    sanity::check(&tmux, "/exit", "0")
}

/// A signal in the middle of a stream: status 128 + the signal, a sane
/// terminal, and the prompt saved in the session.
fn sane_after_signal(bin: &Path, dir: &Path, signal: i32) -> Result<()> {
    let (world, tmux) = launch(bin, dir, &[turn(&paragraphs("d", 400), 50, 8)])?;
    submit(&tmux, "a prompt to keep")?;
    tmux.wait_for_text("[d001]")?;
    let pid = tmux.child_pid()?;
    kill(pid, signal)?;
    let name = if signal == libc::SIGHUP {
        "SIGHUP"
    } else {
        "SIGTERM"
    };
    sanity::check(&tmux, name, &(128 + signal).to_string())?;
    let saved = sessions_text(&world.dir.join("sessions"))?;
    if !saved.contains("a prompt to keep") {
        bail!("{name}: the session files do not hold the prompt");
    }
    Ok(())
}

/// Everything under the session directory, as text.
fn sessions_text(dir: &Path) -> Result<String> {
    let mut text = String::new();
    let mut stack: Vec<PathBuf> = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                text.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
            }
        }
    }
    Ok(text)
}

#[allow(unsafe_code)]
fn kill(pid: u32, signal: i32) -> Result<()> {
    // SAFETY: kill has no memory effects; `pid` is the pane's program.
    if unsafe { libc::kill(pid as libc::pid_t, signal) } != 0 {
        bail!("kill {pid}: {}", std::io::Error::last_os_error());
    }
    Ok(())
}
