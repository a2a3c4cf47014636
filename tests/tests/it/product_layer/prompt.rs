//! The system prompt's lines and the context files it takes.

use coding_agent::{AgentSessionBuilder, Settings, SystemPromptOptions, build_system_prompt};
use test_support::agent_loop::*;

use super::builtins;

#[test]
fn system_prompt_lines() {
    let prompt = build_system_prompt(&SystemPromptOptions {
        selected_tools: vec!["read".into(), "bash".into(), "custom".into()],
        tool_snippets: vec![
            ("bash".into(), "Run  shell\ncommands".into()),
            ("read".into(), "Read file contents".into()),
        ],
        tool_guidelines: vec![
            "Use read to examine files.".into(),
            "  ".into(),
            "Use read to examine files.".into(),
        ],
        extra_guidelines: vec!["Be careful".into()],
        append_prompts: vec!["Extra words.".into()],
        context_files: vec![coding_agent::ContextFile {
            path: "/p/AGENTS.md".into(),
            content: "Rules.\n".into(),
        }],
        date: Some("2026-11-29".into()),
        cwd: "/p".into(),
        ..Default::default()
    });
    let lines: Vec<&str> = prompt.lines().collect();
    let tools = lines.iter().position(|l| *l == "Available tools:").unwrap();
    assert_eq!(lines[tools + 1], "- read: Read file contents");
    assert_eq!(lines[tools + 2], "- bash: Run shell commands");
    assert_eq!(lines[tools + 3], "");
    let g = lines.iter().position(|l| *l == "Guidelines:").unwrap();
    assert_eq!(
        &lines[g + 1..g + 6],
        [
            "- Use bash for file operations such as ls, rg and find",
            "- Use read to examine files.",
            "- Be careful",
            "- Keep your answers short and to the point",
            "- Name file paths clearly whenever you work with files",
        ]
    );
    assert!(prompt.contains("\n\nExtra words.\n\n<project_context>\n<project_instructions path=\"/p/AGENTS.md\">\nRules.\n</project_instructions>\n</project_context>"));
    assert!(prompt.ends_with("\nCurrent date: 2026-11-29\nCurrent working directory: /p"));

    // No snippets at all: "(none)"; grep active: no bash heuristic.
    let prompt = build_system_prompt(&SystemPromptOptions {
        selected_tools: vec!["bash".into(), "grep".into()],
        cwd: "/p".into(),
        ..Default::default()
    });
    assert!(prompt.contains("Available tools:\n(none)\n"));
    assert!(!prompt.contains("Use bash for file operations"));

    // A custom prompt replaces preamble, tools and guidelines.
    let prompt = build_system_prompt(&SystemPromptOptions {
        selected_tools: vec!["read".into()],
        tool_snippets: vec![("read".into(), "Read".into())],
        custom_prompt: Some("You are a pirate.".into()),
        date: Some("2026-11-29".into()),
        cwd: "/p".into(),
        ..Default::default()
    });
    assert_eq!(
        prompt,
        "You are a pirate.\nCurrent date: 2026-11-29\nCurrent working directory: /p"
    );
}

#[test]
fn session_prompt_follows_the_active_set() {
    let session = AgentSessionBuilder::new(model(), scripted(vec![]))
        .cwd("/tmp")
        .builtin_tools(builtins())
        .settings(Settings::default())
        .context_files(false)
        .build()
        .unwrap();
    let prompt = session.system_prompt();
    assert!(prompt.contains(
        "- read: does things\n- bash: does things\n- edit: does things\n- write: does things\n"
    ));
    assert!(prompt.contains("- Use bash for file operations such as ls, rg and find"));
    session.set_active_tools(&["grep", "read"]);
    let prompt = session.system_prompt();
    assert!(prompt.contains("Available tools:\n- grep: does things\n- read: does things\n\n"));
    assert!(prompt.contains("- Use grep wisely\n- Use read wisely\n"));
    assert!(!prompt.contains("Use bash for file operations"));
    assert_eq!(session.agent().state().tool_names, ["grep", "read"]);
}

#[test]
fn context_files_are_found_from_cwd_upwards() {
    let root = tempfile::tempdir().unwrap();
    let sub = root.path().join("a").join("b");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(root.path().join("AGENTS.md"), "root rules").unwrap();
    std::fs::write(root.path().join("a").join("CLAUDE.md"), "claude rules").unwrap();
    std::fs::write(sub.join("AGENTS.md"), "leaf rules").unwrap();
    std::fs::write(sub.join("CLAUDE.md"), "ignored: AGENTS.md wins").unwrap();
    // The repository root bounds the search.
    std::fs::create_dir(root.path().join(".git")).unwrap();
    let files = coding_agent::load_context_files(&sub, None);
    let contents: Vec<&str> = files.iter().map(|f| f.content.as_str()).collect();
    assert_eq!(contents, ["root rules", "claude rules", "leaf rules"]);
}

#[test]
fn context_files_come_only_from_the_project_and_trusted_owners() {
    use std::os::unix::fs::PermissionsExt;
    // A shared, world-writable directory (like /tmp) holding a planted file,
    // with a repository below it.
    let shared = tempfile::tempdir().unwrap();
    std::fs::set_permissions(shared.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::fs::write(shared.path().join("AGENTS.md"), "planted above the repo").unwrap();
    let repo = shared.path().join("repo");
    let sub = repo.join("src");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(repo.join("AGENTS.md"), "repo rules").unwrap();
    // A file inside the project owned by someone else is skipped (needs root to set up).
    let foreign = sub.join("AGENTS.md");
    std::fs::write(&foreign, "someone else's rules").unwrap();
    let chowned = std::os::unix::fs::chown(&foreign, Some(41001), Some(41001)).is_ok();
    let files = coding_agent::load_context_files(&sub, None);
    let contents: Vec<&str> = files.iter().map(|f| f.content.as_str()).collect();
    if chowned {
        assert_eq!(contents, ["repo rules"]);
    } else {
        assert_eq!(contents, ["repo rules", "someone else's rules"]);
    }
    // Without a repository, only the working directory itself is read.
    let lone = shared.path().join("lone");
    std::fs::create_dir(&lone).unwrap();
    std::fs::write(lone.join("CLAUDE.md"), "lone rules").unwrap();
    let files = coding_agent::load_context_files(&lone, None);
    let contents: Vec<&str> = files.iter().map(|f| f.content.as_str()).collect();
    assert_eq!(contents, ["lone rules"]);
    // A FIFO or a link to /dev/zero is skipped without hanging or eating memory.
    std::fs::remove_file(lone.join("CLAUDE.md")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", lone.join("CLAUDE.md")).unwrap();
    assert!(
        std::process::Command::new("mkfifo")
            .arg(lone.join("AGENTS.md"))
            .status()
            .unwrap()
            .success()
    );
    assert!(coding_agent::load_context_files(&lone, None).is_empty());
}
