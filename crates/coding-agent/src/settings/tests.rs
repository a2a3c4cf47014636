//! Settings files merged, checked and typed: the merge table, errors that
//! name file and key, what a project may not do.

use super::*;
use serde_json::json;

#[test]
fn merge_table() {
    let global = json!({
        "shellPath": "/bin/sh",
        "images": {"autoResize": false, "blockImages": true},
        "list": [1, 2],
        "nested": {"a": {"x": 1}},
        "onlyGlobal": 1
    });
    let project = json!({
        "shellPath": "/bin/bash",
        "images": {"autoResize": true},
        "list": [3],
        "nested": {"a": {"y": 2}},
        "onlyProject": 2
    });
    let s = Settings::merged(global, project);
    assert_eq!(
        s.to_value(),
        json!({
            "shellPath": "/bin/sh",
            "images": {"autoResize": true, "blockImages": true},
            "list": [3],
            "nested": {"a": {"y": 2}},
            "onlyGlobal": 1,
            "onlyProject": 2
        })
    );
    // The project's shell runs code: held back until it is trusted.
    assert_eq!(
        s.held_back(),
        json!({"shellPath": "/bin/bash"}).as_object().unwrap()
    );
    let mut s = s;
    s.apply_held_back();
    assert_eq!(s.shell_path().as_deref(), Some("/bin/bash"));
}

#[test]
fn a_project_cannot_name_skills_or_templates_even_once_trusted() {
    let global = json!({"skills": ["~/my-skills"], "prompts": ["~/p.md"]});
    let project = json!({
        "skills": ["/proc/self/cwd/evil", "!*"],
        "prompts": ["~/secret.txt"],
        "enableSkillCommands": false
    });
    let mut s = Settings::merged(global, project);
    s.apply_held_back();
    assert_eq!(
        s.to_value(),
        json!({"skills": ["~/my-skills"], "prompts": ["~/p.md"]})
    );
}

#[test]
fn malformed_file_is_an_error_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let global = dir.path().join("global.json");
    let project = dir.path().join("project.json");
    std::fs::write(&global, "{\"shellPath\": \"/bin/zsh\"}").unwrap();
    std::fs::write(&project, "{\n  \"shellPath\": \"/bin/bash\",\n  oops\n}").unwrap();
    let msg = Settings::load_files(Some(&global), Some(&project))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("project.json"), "{msg}");
    assert!(msg.contains("line 3"), "{msg}");
}

#[test]
fn missing_files_are_empty_and_defaults_apply() {
    let dir = tempfile::tempdir().unwrap();
    let s = Settings::load_files(Some(&dir.path().join("nope.json")), None).unwrap();
    assert_eq!(s.bash_timeout_seconds(), Some(180.0));
    assert!(s.images_auto_resize());
    assert!(!s.images_block_images());
    assert_eq!(s.allowed_tools(), None);
}

#[test]
fn a_project_only_shortens_timeouts() {
    let s = Settings::merged(
        json!({}),
        json!({"bashTimeoutSeconds": 0, "streamIdleTimeoutSeconds": 9999}),
    );
    assert_eq!(s.bash_timeout_seconds(), Some(DEFAULT_BASH_TIMEOUT_SECONDS));
    assert_eq!(
        s.stream_idle_timeout_seconds(),
        Some(DEFAULT_STREAM_IDLE_TIMEOUT_SECONDS)
    );
    let s = Settings::merged(
        json!({"bashTimeoutSeconds": 0}),
        json!({"bashTimeoutSeconds": 30}),
    );
    assert_eq!(s.bash_timeout_seconds(), Some(30.0));
    let s = Settings::merged(
        json!({"bashTimeoutSeconds": 20}),
        json!({"bashTimeoutSeconds": 30}),
    );
    assert_eq!(s.bash_timeout_seconds(), Some(20.0));
}

#[test]
fn bash_timeout_zero_disables() {
    let s = Settings::from_value(json!({"bashTimeoutSeconds": 0}));
    assert_eq!(s.bash_timeout_seconds(), None);
    let s = Settings::from_value(json!({"bashTimeoutSeconds": 2.5}));
    assert_eq!(s.bash_timeout_seconds(), Some(2.5));
}

#[test]
fn non_object_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.json");
    std::fs::write(&p, "[1,2]").unwrap();
    assert!(Settings::load_files(Some(&p), None).is_err());
}

fn load_pair(global: &str, project: &str) -> Result<Settings, SettingsError> {
    let dir = tempfile::tempdir().unwrap();
    let g = dir.path().join("global.json");
    let p = dir.path().join("project.json");
    std::fs::write(&g, global).unwrap();
    std::fs::write(&p, project).unwrap();
    Settings::load_files(Some(&g), Some(&p))
}

#[test]
fn allowed_tools_never_fail_open() {
    // A typo anywhere is an error, not "everything allowed".
    assert!(load_pair(r#"{"allowedTools": ["read"],}"#, "{}").is_err());
    // Wrong types name the key.
    let e = load_pair(r#"{"allowedTools": "read"}"#, "{}").unwrap_err();
    assert!(e.message.contains("allowedTools"), "{e}");
    let e = load_pair(r#"{"allowedTools": ["read"]}"#, r#"{"allowedTools": null}"#).unwrap_err();
    assert!(e.to_string().contains("project.json"), "{e}");
    // The project can narrow, never widen.
    let s = load_pair(
        r#"{"allowedTools": ["read", "grep"]}"#,
        r#"{"allowedTools": ["bash", "grep", "edit"]}"#,
    )
    .unwrap();
    assert_eq!(s.allowed_tools(), Some(vec!["grep".to_string()]));
    let s = load_pair("{}", r#"{"allowedTools": ["read"]}"#).unwrap();
    assert_eq!(s.allowed_tools(), Some(vec!["read".to_string()]));
}

#[test]
fn values_are_validated_and_clamped() {
    let s = load_pair(r#"{"bashTimeoutSeconds": 1e20}"#, "{}").unwrap();
    assert_eq!(s.bash_timeout_seconds(), Some(MAX_TIMEOUT_SECONDS));
    let e = load_pair(r#"{"bashTimeoutSeconds": -5}"#, "{}").unwrap_err();
    assert!(e.message.contains("bashTimeoutSeconds"), "{e}");
    let e = load_pair("{}", r#"{"bashTimeoutSeconds": "10"}"#).unwrap_err();
    assert!(e.message.contains("bashTimeoutSeconds"), "{e}");
    let e = load_pair("{}", r#"{"images": {"blockImages": "yes"}}"#).unwrap_err();
    assert!(e.message.contains("images.blockImages"), "{e}");
    let e = load_pair("{}", r#"{"steeringMode": "sometimes"}"#).unwrap_err();
    assert!(e.message.contains("steeringMode"), "{e}");
    // Unvalidated values from code never panic either.
    let s = Settings::from_value(json!({"bashTimeoutSeconds": -1}));
    assert_eq!(s.bash_timeout_seconds(), Some(DEFAULT_BASH_TIMEOUT_SECONDS));
}

#[test]
fn special_files_are_refused_without_hanging() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.json");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()));
    let e = Settings::load_files(None, Some(&fifo)).unwrap_err();
    assert!(e.message.contains("not a regular file"), "{e}");
    let zero = dir.path().join("zero.json");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let e = Settings::load_files(None, Some(&zero)).unwrap_err();
    assert!(e.message.contains("not a regular file"), "{e}");
    let big = dir.path().join("big.json");
    std::fs::write(&big, " ".repeat(2 * 1024 * 1024)).unwrap();
    let e = Settings::load_files(None, Some(&big)).unwrap_err();
    assert!(e.message.contains("larger than"), "{e}");
}

#[test]
fn unknown_keys_are_kept_and_reported_by_name() {
    let s = load_pair(
        r#"{"shelPath": "/bin/zsh", "theme": "dark"}"#,
        r#"{"images": {"autoResise": false}, "compaction": {"enable": false}, "bashTimeoutSeconds": 5}"#,
    )
    .unwrap();
    let [global, project] = s.warnings() else {
        panic!("one warning per file: {:?}", s.warnings());
    };
    assert!(global.contains("global.json"), "{global}");
    assert!(global.contains("`shelPath`"), "{global}");
    // Pi's own keys are not this agent's, but not mistakes either.
    assert!(!global.contains("theme"), "{global}");
    assert!(project.contains("project.json"), "{project}");
    assert!(project.contains("`images.autoResise`"), "{project}");
    assert!(project.contains("`compaction.enable`"), "{project}");
    assert!(!project.contains("bashTimeoutSeconds"), "{project}");
    // Kept for extensions, and the known keys still apply.
    assert_eq!(s.get("shelPath"), Some(&json!("/bin/zsh")));
    assert_eq!(s.bash_timeout_seconds(), Some(5.0));
    assert!(s.images_auto_resize());
    // Known keys only: no warning.
    let s = load_pair(r#"{"shellPath": "/bin/zsh"}"#, r#"{"images": {}}"#).unwrap();
    assert!(s.warnings().is_empty(), "{:?}", s.warnings());
}

#[test]
fn a_known_key_of_the_wrong_type_is_an_error_naming_it() {
    for (project, key) in [
        (r#"{"maxParallelTools": 0}"#, "`maxParallelTools`"),
        (r#"{"maxParallelTools": "4"}"#, "`maxParallelTools`"),
        (
            r#"{"compaction": {"reserveTokens": "lots"}}"#,
            "`compaction.reserveTokens`",
        ),
        (r#"{"compaction": 3}"#, "`compaction`"),
        (r#"{"extensions": [1]}"#, "`extensions`"),
        (r#"{"mcpServers": []}"#, "`mcpServers`"),
        (r#"{"shellPath": null}"#, "`shellPath`"),
        (r#"{"images": null}"#, "`images`"),
        (
            r#"{"streamIdleTimeoutSeconds": -1.5}"#,
            "`streamIdleTimeoutSeconds`",
        ),
        (
            r#"{"codemode": {"timeoutSeconds": -1}}"#,
            "`codemode.timeoutSeconds`",
        ),
    ] {
        let e = load_pair("{}", project).unwrap_err();
        assert!(e.message.contains(key), "{project}: {e}");
        assert!(e.to_string().contains("project.json"), "{e}");
    }
    let e = load_pair(r#"{"bashTimeoutSeconds": "10"}"#, "{}").unwrap_err();
    assert!(e.message.contains("non-negative number of seconds"), "{e}");
}

#[test]
fn values_from_code_fall_back_key_by_key() {
    let s = Settings::from_value(json!({
        "images": {"autoResize": "no", "blockImages": true},
        "maxParallelTools": 0,
        "steeringMode": "all",
        "defaultModel": 7
    }));
    assert!(s.images_auto_resize());
    assert!(s.images_block_images());
    assert_eq!(s.max_parallel_tools(), None);
    assert_eq!(s.known().steering_mode, Some(agent_core::QueueMode::All));
    assert_eq!(s.known().default_model, None);
    let mut s = s;
    s.set("defaultModel", json!("m"));
    assert_eq!(s.known().default_model.as_deref(), Some("m"));
}

/// A project cannot keep the user's extensions from starting (or cut
/// their calls short) before it is trusted, nor turn image blocking off.
#[test]
fn a_project_cannot_weaken_the_users_setup_before_trust() {
    let mut s = Settings::merged(
        json!({"extensionStartupTimeoutSec": 30, "images": {"blockImages": true}}),
        json!({
            "extensionStartupTimeoutSec": 0.000001,
            "extensionToolTimeoutSec": 0.000001,
            "images": {"blockImages": false, "autoResize": false}
        }),
    );
    assert_eq!(s.known().extension_startup_timeout_sec, Some(30.0));
    assert_eq!(s.known().extension_tool_timeout_sec, None);
    assert!(s.images_block_images());
    assert!(!s.images_auto_resize());
    let mut held: Vec<&String> = s.held_back().keys().collect();
    held.sort();
    assert_eq!(
        held,
        ["extensionStartupTimeoutSec", "extensionToolTimeoutSec"]
    );
    s.apply_held_back();
    assert_eq!(s.known().extension_startup_timeout_sec, Some(0.000001));
}
