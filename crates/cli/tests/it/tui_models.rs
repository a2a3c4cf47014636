//! Ctrl+P in the terminal UI within a model scope: the `enabledModels`
//! setting, or `--models` instead of it (the harness is `tui_pty`'s).

use serde_json::json;

use crate::tui_harness::Tui;
use crate::tui_pty::hi_script;

#[test]
fn ctrl_p_cycles_through_enabled_models_or_the_models_flag() {
    let dir = tempfile::tempdir().unwrap();
    let script = hi_script(dir.path());
    std::fs::create_dir_all(dir.path().join("agent")).unwrap();
    let patterns = json!({"enabledModels": ["gpt-5-mini", "claude-haiku-4-5:low", "no-such"]});
    std::fs::write(dir.path().join("agent/settings.json"), patterns.to_string()).unwrap();
    // The footer's last line names the model.
    let on = |t: &str, m: &str| {
        t.lines()
            .rev()
            .find(|l| l.contains("% of"))
            .is_some_and(|l| l.contains(m))
    };
    let mut tui = Tui::start(dir.path(), &script);
    tui.wait_for("the footer", |t| t.contains("scripted/"));
    // From outside the scope to its first model; a bad pattern said once.
    tui.send("\x10");
    tui.wait_for("the first", |t| on(t, "scripted/gpt-5-mini"));
    tui.wait_for("the warning", |t| {
        t.contains("match the pattern \"no-such\"")
    });
    // The next, then the level its pattern pinned (a scripted model has
    // none: the session says so); then round again.
    tui.send("\x10");
    tui.wait_for("the second", |t| on(t, "scripted/claude-haiku-4-5"));
    tui.wait_for("the level", |t| t.contains("think at level low; using off"));
    tui.send("\x10");
    tui.wait_for("round", |t| on(t, "scripted/gpt-5-mini"));
    tui.send("/exit\r");
    assert!(tui.wait_exit().success());
    // `--models` replaces the setting.
    let mut tui = Tui::start_with(
        dir.path(),
        &script,
        "xterm-256color",
        &["--models", "gpt-5-nano"],
    );
    tui.wait_for("the footer", |t| t.contains("scripted/"));
    tui.send("\x10");
    tui.wait_for("the flag's model", |t| on(t, "scripted/gpt-5-nano"));
    tui.send("\x10");
    tui.wait_for("the only one", |t| t.contains("the only model in the"));
    tui.send("/exit\r");
    assert!(tui.wait_exit().success());
}
