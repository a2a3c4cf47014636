//! The terminal UI under a pseudo-terminal (the harness is
//! `tui_harness`): keys typed, the screen read through vt100.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::tui_harness::{COLS, PATIENCE, Tui};

mod clipboard;

#[test]
fn the_terminal_ui_answers_interrupts_pastes_and_restores_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.jsonl");
    let turns = [
        json!({"content":[{"type":"text","text":"The **scripted** answer is forty-two."}]}),
        // A model that takes its time: Esc stops it.
        json!({"content":[{"type":"text","text":"never seen"}],"delayMs":600000}),
    ];
    let text: String = turns.iter().map(|t| format!("{t}\n")).collect();
    std::fs::write(&script, text).unwrap();
    let mut tui = Tui::start(dir.path(), &script);
    tui.wait_for("the footer", |t| t.contains("scripted/"));

    // Text, then Enter apart.
    tui.send("what is the answer");
    tui.wait_for("the typed text", |t| t.contains("> what is the answer"));
    tui.send("\r");
    let shown = tui.wait_for("the answer", |t| t.contains("answer is forty-two."));
    // Markdown drawn, not shown raw; the prompt appears once in history.
    assert!(!shown.contains("**scripted**"), "{shown}");
    assert_eq!(shown.matches("> what is the answer").count(), 1, "{shown}");

    tui.send("wait forever");
    tui.send("\r");
    tui.wait_for("the spinner", |t| t.contains("esc to interrupt"));
    tui.send("\x1b");
    tui.wait_for("the cancellation", |t| {
        t.contains("cancelled") && !t.contains("esc to interrupt")
    });

    // A big paste becomes one marker; Ctrl+C clears it.
    let paste = "pasted line\n".repeat(20);
    tui.send(&format!("\x1b[200~{paste}\x1b[201~"));
    tui.wait_for("the paste marker", |t| t.contains("[paste #1 +21 lines]"));
    tui.send("\x03");
    tui.wait_for("an empty editor", |t| !t.contains("[paste #1"));

    // Ctrl+D on an empty editor leaves; the terminal is as it was.
    tui.send("\x04");
    let status = tui.wait_exit();
    assert!(status.success(), "exit status {status:?}");
    let mut screen = tui.screen.lock().unwrap_or_else(|p| p.into_inner());
    assert!(
        !screen.parser.screen().hide_cursor(),
        "the cursor is shown again"
    );
    assert!(
        !screen.parser.screen().bracketed_paste(),
        "bracketed paste is off again"
    );
    let raw = String::from_utf8_lossy(&screen.raw).into_owned();
    let on = raw
        .rfind("\x1b[?2004h")
        .expect("bracketed paste was turned on");
    let off = raw.rfind("\x1b[?2004l").expect("and off");
    assert!(off > on);
    assert!(!raw.contains("\x1b[3J"), "the scrollback is never cleared");
    let text = screen.text();
    assert_eq!(text.matches("answer is forty-two.").count(), 1, "{text}");
}

/// A script whose one answer is "hi".
pub(super) fn hi_script(dir: &std::path::Path) -> std::path::PathBuf {
    let script = dir.join("script.jsonl");
    std::fs::write(
        &script,
        "{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}\n",
    )
    .unwrap();
    script
}

#[test]
fn ctrl_z_and_sigterm_restore_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let script = hi_script(dir.path());
    let mut tui = Tui::start(dir.path(), &script);
    tui.wait_for("the footer", |t| t.contains("scripted/"));
    tui.send("abc");
    tui.wait_for("the typed text", |t| t.contains("> abc"));
    // Ctrl+Z: modes off before the stop (here the process group is
    // orphaned, so the kernel does not stop it), on again after.
    tui.send("\x1a");
    tui.wait_raw("modes off and on again", |raw| {
        raw.matches("\x1b[?2004l").count() >= 1 && raw.matches("\x1b[?2004h").count() >= 2
    });
    tui.send("d");
    tui.wait_for("the editor, still there", |t| t.contains("> abcd"));
    tui.terminate();
    let status = tui.wait_exit();
    assert_eq!(status.exit_code(), 143);
    let screen = tui.screen.lock().unwrap_or_else(|p| p.into_inner());
    assert!(!screen.parser.screen().hide_cursor());
    assert!(!screen.parser.screen().bracketed_paste());
    let raw = String::from_utf8_lossy(&screen.raw).into_owned();
    assert!(raw.rfind("\x1b[?2004l") > raw.rfind("\x1b[?2004h"));
}

#[test]
fn a_permission_question_replaces_the_editor() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("agent");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::write(
        agent.join("settings.json"),
        json!({"permissions": {"ask": ["Bash(touch:*)"]}}).to_string(),
    )
    .unwrap();
    let script = dir.path().join("script.jsonl");
    let turns = [
        json!({"content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"touch made-here"}}]}),
        json!({"content":[{"type":"text","text":"all done"}]}),
    ];
    let text: String = turns.iter().map(|t| format!("{t}\n")).collect();
    std::fs::write(&script, text).unwrap();
    let mut tui = Tui::start(dir.path(), &script);
    tui.wait_for("the footer", |t| t.contains("scripted/"));
    tui.send("make a file");
    tui.send("\r");
    let shown = tui.wait_for("the question", |t| {
        t.contains("[y] yes  [a] always  [n] no")
    });
    assert!(shown.contains("touch made-here"), "{shown}");
    assert!(
        !dir.path().join("made-here").exists(),
        "nothing runs before the answer"
    );
    tui.send("y");
    tui.wait_for("the answer", |t| t.contains("all done"));
    assert!(dir.path().join("made-here").exists());
    tui.send("\x04");
    assert!(tui.wait_exit().success());
}

#[test]
fn r_refuses_with_a_reason_and_the_title_tells_what_waits() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("agent");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::write(
        agent.join("settings.json"),
        json!({"permissions": {"ask": ["Bash(touch:*)"]}}).to_string(),
    )
    .unwrap();
    let script = dir.path().join("script.jsonl");
    let turns = [
        json!({"content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"touch made-here"}}]}),
        json!({"content":[{"type":"text","text":"fine, no file"}]}),
    ];
    let text: String = turns.iter().map(|t| format!("{t}\n")).collect();
    std::fs::write(&script, text).unwrap();
    let mut tui = Tui::start(dir.path(), &script);
    tui.wait_for("the footer", |t| t.contains("scripted/"));
    tui.send("make a file");
    tui.send("\r");
    tui.wait_for("the question", |t| t.contains("[r] no, with a reason"));
    tui.wait_raw("the title marks the question", |raw| {
        raw.contains("\x1b]0;? coding-agent - ")
    });
    tui.send("r");
    tui.wait_for("the reason row", |t| t.contains("Reason: "));
    tui.send("use a temp dir");
    tui.wait_for("the typed reason", |t| t.contains("Reason: use a temp dir"));
    tui.send("\r");
    // The refused call's result, which the model reads, carries it.
    // (The line is longer than the screen: compared without the wrap.)
    tui.wait_for("the refusal", |t| {
        let joined = t.replace(['\n', ' '], "");
        joined.contains("Theusersays:useatempdir") && t.contains("fine, no file")
    });
    assert!(!dir.path().join("made-here").exists());
    tui.send("\x04");
    assert!(tui.wait_exit().success());
    let screen = tui.screen.lock().unwrap_or_else(|p| p.into_inner());
    let raw = String::from_utf8_lossy(&screen.raw).into_owned();
    let pushed = raw.find("\x1b[22;0t").expect("the old title is saved");
    let popped = raw.rfind("\x1b[23;0t").expect("and given back");
    assert!(pushed < popped);
}

#[test]
fn term_dumb_and_no_tui_keep_the_line_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.jsonl");
    let answer = json!({"content":[{"type":"text","text":"plain answer"}]});
    std::fs::write(&script, format!("{answer}\n{answer}\n")).unwrap();
    for (term, args) in [("dumb", &[][..]), ("xterm-256color", &["--no-tui"][..])] {
        let mut tui = Tui::start_with(dir.path(), &script, term, args);
        tui.wait_raw("the line prompt", |raw| raw.contains("> "));
        tui.send("hello\r");
        tui.wait_for("the answer", |t| t.contains("plain answer"));
        tui.send("/exit\r");
        assert!(tui.wait_exit().success());
        let screen = tui.screen.lock().unwrap_or_else(|p| p.into_inner());
        let raw = String::from_utf8_lossy(&screen.raw);
        assert!(
            !raw.contains("\x1b[?2026h") && !raw.contains("\x1b[?2004h"),
            "{term} {args:?}: {raw:?}"
        );
    }
}

#[test]
fn templates_and_skills_expand_in_the_terminal_ui() {
    let dir = tempfile::tempdir().unwrap();
    let prompts = dir.path().join("agent/prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    std::fs::write(prompts.join("hello.md"), "Say hello to $1.\n").unwrap();
    let skill = dir.path().join("agent/skills/greet");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\ndescription: Greets.\n---\nGreet warmly.\n",
    )
    .unwrap();
    let (mut tui, log) = Tui::answering_twice(dir.path(), "Greeted.");
    tui.send("/hello world");
    tui.send("\r");
    tui.wait_for("the answer", |t| t.contains("Greeted."));
    tui.send("/skill:greet now");
    tui.send("\r");
    tui.wait_for("the second answer", |t| t.matches("Greeted.").count() == 2);
    tui.send("\x04");
    assert!(tui.wait_exit().success());
    let sent = std::fs::read_to_string(&log).unwrap();
    assert!(sent.contains("Say hello to world."), "{sent}");
    assert!(sent.contains("Greet warmly.\\n</skill>\\n\\nnow"), "{sent}");
}

#[test]
fn completion_and_history_search_in_the_terminal_ui() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("notes")).unwrap();
    std::fs::write(dir.path().join("notes/plan-for-today.md"), "plan").unwrap();
    let (mut tui, log) = Tui::answering_twice(dir.path(), "Read it.");

    // `/` opens the command menu; Enter takes the choice and runs it.
    tui.send("/hel");
    tui.wait_for("the command menu", |t| t.contains("> /help"));
    tui.send("\r");
    tui.wait_for("the command's output", |t| t.contains("/resume [ID]"));
    tui.send("/hotkeys\r");
    tui.wait_for("the key table", |t| {
        t.contains("ctrl+r") && t.contains("tui.editor.historySearch")
    });

    // `@` completes a file found by the background walk, fuzzily.
    tui.send("read @planfor");
    tui.wait_for("the file menu", |t| t.contains("notes/plan-for-today.md"));
    // The hardware cursor sits at the caret, the menu below it (polled:
    // the frame may still be arriving).
    let start = Instant::now();
    loop {
        let screen = tui.screen.lock().unwrap_or_else(|p| p.into_inner());
        let rows: Vec<String> = screen.parser.screen().rows(0, COLS).collect();
        let editor_row = rows.iter().position(|r| r.starts_with("> read @planfor"));
        let menu_row = rows
            .iter()
            .position(|r| r.contains("notes/plan-for-today.md"));
        let (row, col) = screen.parser.screen().cursor_position();
        if editor_row.is_some_and(|e| menu_row > Some(e) && (usize::from(row), col) == (e, 15)) {
            break;
        }
        assert!(
            start.elapsed() < PATIENCE, // hang guard
            "cursor at {row},{col}; rows: {rows:#?}"
        );
        drop(screen);
        std::thread::sleep(Duration::from_millis(20));
    }
    tui.send("\t");
    tui.wait_for("the completed mention", |t| {
        t.contains("> read @notes/plan-for-today.md")
    });
    tui.send("\r");
    tui.wait_for("the answer", |t| t.contains("Read it."));

    // Ctrl+R finds the prompt again; Enter takes it, Enter sends it.
    tui.send("\x12");
    tui.send("plan");
    tui.wait_for("the search row", |t| {
        t.contains("(reverse-i-search) plan") && t.contains("> read @notes/plan-for-today.md")
    });
    tui.send("\r");
    tui.wait_for("the search closed", |t| !t.contains("reverse-i-search"));
    tui.send("\r");
    tui.wait_for("the second answer", |t| t.matches("Read it.").count() == 2);
    tui.send("\x04");
    assert!(tui.wait_exit().success());
    let sent = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        sent.matches("read @notes/plan-for-today.md").count(),
        // The second request carries the first prompt and the second.
        3,
        "{sent}"
    );
}

#[test]
fn bang_runs_a_command_into_the_context_and_double_bang_only_shows_it() {
    let dir = tempfile::tempdir().unwrap();
    let (mut tui, log) = Tui::answering_twice(dir.path(), "Noted.");
    tui.send("!echo shared-$((40+2))");
    tui.send("\r");
    tui.wait_for("the command's cell", |t| {
        t.contains("$ echo shared-$((40+2))") && t.contains("shared-42")
    });
    tui.send("!!echo private-$((6*7))");
    tui.send("\r");
    tui.wait_for("the second cell", |t| {
        t.contains("private-42") && t.contains("(not sent to the model)")
    });
    tui.send("!false");
    tui.send("\r");
    tui.wait_for("a failing command", |t| t.contains("(exit code 1)"));
    tui.send("what did I run");
    tui.send("\r");
    tui.wait_for("the answer", |t| t.contains("Noted."));
    tui.send("\x04");
    assert!(tui.wait_exit().success());
    let sent = std::fs::read_to_string(&log).unwrap();
    assert!(sent.contains("shared-42"), "{sent}");
    assert!(!sent.contains("private-42"), "{sent}");
}

#[test]
fn builtin_commands_work_in_the_line_prompt_and_the_terminal_ui() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.jsonl");
    let answer = json!({"content":[{"type":"text","text":"plain answer"}]});
    std::fs::write(&script, format!("{answer}\n{answer}\n")).unwrap();
    // "plain answer" in base64, as OSC 52 carries it.
    let osc52 = "\x1b]52;c;cGxhaW4gYW5zd2Vy\x07";
    for args in [&["--no-tui"][..], &[][..]] {
        let mut tui = Tui::start_with(dir.path(), &script, "xterm-256color", args);
        tui.wait_raw("a prompt", |raw| {
            raw.contains("> ") || raw.contains("scripted/")
        });
        tui.send("hello\r");
        tui.wait_for("the answer", |t| t.contains("plain answer"));
        tui.send("/copy\r");
        tui.wait_for("the copy", |t| t.contains("copied the last answer"));
        tui.wait_raw("OSC 52 with the answer", |raw| raw.contains(osc52));
        tui.send("/session\r");
        tui.wait_for("the session's numbers", |t| {
            t.contains("Messages:  2 (1 user, 1 assistant") && t.contains("File:      in memory")
        });
        // A template written now is found by /reload, and then expands.
        let prompts = dir.path().join("agent/prompts");
        std::fs::create_dir_all(&prompts).unwrap();
        std::fs::write(prompts.join("later.md"), "Later, $1.\n").unwrap();
        tui.send("/reload\r");
        tui.wait_for("the reload", |t| {
            t.contains("reloaded: 0 skills, 1 prompt templates")
        });
        tui.send("/mcp\r");
        tui.wait_for("the MCP listing", |t| {
            t.contains("no MCP servers are configured")
        });
        tui.send("/thinking nonsense\r");
        tui.wait_for("the error", |t| t.contains("unknown thinking level"));
        tui.send("/exit\r");
        assert!(tui.wait_exit().success(), "{args:?}");
    }
}

#[test]
fn fullscreen_scrolls_switches_live_and_leaves_the_main_screen_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.jsonl");
    let answer: String = (0..60).map(|i| format!("answer line {i:02}\n\n")).collect();
    let turn = json!({"content":[{"type":"text","text":answer}]});
    std::fs::write(&script, format!("{turn}\n")).unwrap();
    let mut tui = Tui::start_with(
        dir.path(),
        &script,
        "xterm-256color",
        &["--tui-mode", "fullscreen"],
    );
    tui.wait_raw("the alternate screen", |raw| raw.contains("\x1b[?1049h"));
    tui.wait_for("the footer", |t| t.contains("scripted/"));
    tui.send("tell me");
    tui.send("\r");
    tui.wait_for("the end of the answer", |t| t.contains("answer line 59"));
    {
        let screen = tui.screen.lock().unwrap_or_else(|p| p.into_inner());
        assert!(screen.parser.screen().alternate_screen());
        assert_ne!(
            screen.parser.screen().mouse_protocol_mode(),
            vt100::MouseProtocolMode::None
        );
    }
    // Page up: the view stops following; the wheel (SGR) scrolls on.
    tui.send("\x1b[5~");
    tui.wait_for("the scrolled view", |t| {
        t.contains("rows below") && !t.contains("answer line 59")
    });
    tui.send("\x1b[<64;5;3M");
    tui.send("\x1b[6~\x1b[6~\x1b[6~\x1b[6~\x1b[6~\x1b[6~\x1b[6~\x1b[6~");
    tui.wait_for("the tail again", |t| {
        t.contains("answer line 59") && !t.contains("rows below")
    });

    // Inline, live: the main screen gets the conversation once.
    tui.send("/tui inline");
    tui.send("\r");
    tui.wait_raw("the main screen", |raw| raw.contains("\x1b[?1049l"));
    let text = tui.wait_for("the history inline", |t| t.contains("answer line 59"));
    assert_eq!(text.matches("answer line 30").count(), 1, "{text}");
    assert_eq!(text.matches("> tell me").count(), 1, "{text}");
    // And back to fullscreen, then out.
    tui.send("/tui fullscreen");
    tui.send("\r");
    tui.wait_raw("fullscreen again", |raw| {
        raw.matches("\x1b[?1049h").count() == 2
    });
    tui.send("\x04");
    let status = tui.wait_exit();
    assert!(status.success(), "exit status {status:?}");
    let mut screen = tui.screen.lock().unwrap_or_else(|p| p.into_inner());
    let s = screen.parser.screen();
    assert!(!s.alternate_screen(), "back on the main screen");
    assert_eq!(s.mouse_protocol_mode(), vt100::MouseProtocolMode::None);
    assert!(!s.bracketed_paste());
    assert!(!s.hide_cursor());
    let raw = String::from_utf8_lossy(&screen.raw).into_owned();
    assert!(raw.rfind("\x1b[?1049l") > raw.rfind("\x1b[?1049h"));
    assert!(raw.rfind("\x1b[?1002l") > raw.rfind("\x1b[?1002h"));
    assert!(!raw.contains("\x1b[3J"));
    // Nothing lost or doubled by the switches and the exit.
    let text = screen.text();
    assert_eq!(text.matches("answer line 30").count(), 1, "{text}");
    assert_eq!(text.matches("answer line 59").count(), 1, "{text}");
}

#[test]
fn ctrl_z_and_sigterm_in_fullscreen_leave_the_alternate_screen() {
    let dir = tempfile::tempdir().unwrap();
    let script = hi_script(dir.path());
    let mut tui = Tui::start_with(
        dir.path(),
        &script,
        "xterm-256color",
        &["--tui-mode", "fullscreen"],
    );
    tui.wait_for("the footer", |t| t.contains("scripted/"));
    // Ctrl+Z: the main screen back before the stop (the process group is
    // orphaned here, so it goes on at once), fullscreen again after.
    tui.send("\x1a");
    tui.wait_raw("fullscreen left and entered again", |raw| {
        let (on, off) = ("\x1b[?1049h", "\x1b[?1049l");
        raw.matches(on).count() == 2 && raw.find(off).is_some_and(|o| raw.rfind(on) > Some(o))
    });
    tui.send("xyz");
    tui.wait_for("the editor, redrawn", |t| t.contains("> xyz"));
    tui.terminate();
    assert_eq!(tui.wait_exit().exit_code(), 143);
    let screen = tui.screen.lock().unwrap_or_else(|p| p.into_inner());
    assert!(!screen.parser.screen().alternate_screen());
    assert_eq!(
        screen.parser.screen().mouse_protocol_mode(),
        vt100::MouseProtocolMode::None
    );
}

/// `/mcp` turns a server off and on for the session and connects it
/// again, in the line prompt and the terminal UI alike.
#[test]
fn mcp_servers_are_disabled_enabled_and_reconnected_from_the_prompt() {
    if !test_support::python_package("mcp.server.mcpserver", "mcp") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.jsonl");
    std::fs::write(&script, "").unwrap();
    let server = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/python_mcp_server.py");
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"py": {"command": "python3", "args": [server.display().to_string()]}}}).to_string(),
    )
    .unwrap();
    for args in [&["--no-tui"][..], &[][..]] {
        let mut all = vec!["--mcp-config", config.to_str().unwrap()];
        all.extend_from_slice(args);
        let mut tui = Tui::start_with(dir.path(), &script, "xterm-256color", &all);
        tui.wait_raw("a prompt", |raw| {
            raw.contains("> ") || raw.contains("scripted/")
        });
        tui.send("/mcp\r");
        tui.wait_for("the server connected", |t| t.contains("py: connected"));
        tui.send("/mcp disable py\r");
        tui.wait_for("the server disabled", |t| {
            t.contains("py: disabled for this session")
        });
        tui.send("/mcp\r");
        tui.wait_for("the listing says so", |t| t.contains("(/mcp enable py)"));
        tui.send("/mcp enable py\r");
        tui.wait_for("the server back", |t| {
            t.matches("py: connected").count() >= 2
        });
        tui.send("/mcp login nope\r");
        tui.wait_for("an unknown server named", |t| {
            t.contains("no MCP server named nope (configured: py)")
        });
        tui.send("/mcp login py\r");
        tui.wait_for("stdio servers do not sign in", |t| {
            t.contains("only HTTP servers")
        });
        tui.send("/exit\r");
        assert!(tui.wait_exit().success(), "{args:?}");
    }
}
