//! Where the workspace, home and temp dir lie, and paths that move or do not exist yet.

use super::*;

/// A `.git`, `.pi` or agent directory that does not exist yet cannot be
/// created by a command either: a nested `.git` with an fsmonitor, or the
/// user's global settings, would run later outside the sandbox. Nothing is
/// left behind in the workspace afterwards.
#[test]
fn protected_paths_that_do_not_exist_yet_cannot_be_created() {
    let f = fixture();
    // The agent directory lies in the workspace and is not made yet.
    let agent_dir = f.ws.join("state/agent").display().to_string();
    let env = [("CODING_AGENT_DIR", agent_dir.as_str())];
    for command in [
        "git init -q",
        "mkdir -p .git/hooks && printf '#!/bin/sh\\n' > .git/hooks/pre-commit",
        "mkdir .pi && echo '{}' > .pi/settings.json",
        "mkdir -p state/agent && echo '{\"mcpServers\":{}}' > state/agent/settings.json",
    ] {
        let text = bash_with(
            &f,
            "workspace-write",
            &env,
            &format!("{command}; echo rc=$?"),
        );
        assert!(!text.contains("rc=0"), "{command}: {text}");
        for name in [".git", ".pi", "state"] {
            assert!(!f.ws.join(name).exists(), "{command}: {name} left behind");
        }
    }
    // Ordinary new files and directories at the top of the root still work.
    let text = bash_with(
        &f,
        "workspace-write",
        &env,
        "mkdir newdir && echo x > newdir/f && echo rc=$?",
    );
    assert!(text.contains("rc=0"), "{text}");
}

/// A workspace holding the home directory is not writable: the shell's and
/// git's startup files there run later outside the sandbox.
#[test]
fn a_workspace_holding_home_is_not_writable() {
    let f = fixture();
    let out = agent(&f)
        .env("HOME", &f.ws)
        .args(["tool", "bash", "--sandbox", "workspace-write", "--cwd"])
        .arg(&f.ws)
        .args(["--args", r#"{"command":"echo x >> .bashrc; echo rc=$?"}"#])
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(all.contains("home directory"), "{all}");
    assert!(!f.ws.join(".bashrc").exists());
}

/// Deny globs under `~` hold when the home directory is reached through a
/// symlink (the tools open the real path).
#[test]
fn deny_globs_hold_through_a_symlinked_home() {
    let f = fixture();
    let real = f.ws.join("realhome");
    std::fs::create_dir_all(real.join(".ssh")).unwrap();
    std::fs::write(real.join(".ssh/id_ed25519"), "PRIVATE-KEY-TEXT\n").unwrap();
    let link = f.base.join("homelink");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let run = |name: &str, args: Value| {
        let out = agent(&f)
            .env("HOME", &link)
            .args(["tool", name, "--sandbox", "workspace-write", "--cwd"])
            .arg(&f.ws)
            .arg("--args")
            .arg(args.to_string())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    for (name, args) in [
        ("read", json!({"path": "realhome/.ssh/id_ed25519"})),
        ("grep", json!({"pattern": "PRIVATE", "path": "."})),
        ("find", json!({"pattern": "**/id_*"})),
        ("ls", json!({"path": "realhome/.ssh"})),
    ] {
        let text = run(name, args.clone());
        assert!(!text.contains("PRIVATE-KEY-TEXT"), "{name} {args}: {text}");
        if name != "read" {
            assert!(!text.contains("id_ed25519"), "{name} {args}: {text}");
        }
    }
}

/// A working directory reached through a symlink is the same workspace.
#[test]
fn a_symlinked_working_directory_works_in_the_sandbox() {
    let f = fixture();
    let link = f.base.join("wslink");
    std::os::unix::fs::symlink(&f.ws, &link).unwrap();
    let (text, e) = tool_in(
        &f,
        &link,
        Some("workspace-write"),
        "read",
        json!({"path": "a.txt"}),
    );
    assert!(!e && text.contains("inside"), "{text}");
    let (text, e) = tool_in(
        &f,
        &link,
        Some("workspace-write"),
        "write",
        json!({"path": "b.txt", "content": "x"}),
    );
    assert!(!e, "{text}");
    assert!(f.ws.join("b.txt").exists());
    let (text, e) = tool_in(
        &f,
        &link,
        Some("workspace-write"),
        "read",
        json!({"path": "link"}),
    );
    assert!(e, "{text}");
}

/// A repository with a dangling link at `.pi` neither turns the MCP
/// server's default sandbox off nor gets bash run unconfined: bash is
/// refused there, naming the link.
#[test]
fn a_linked_protected_path_refuses_bash_and_keeps_the_sandbox_on() {
    let f = fixture();
    std::os::unix::fs::symlink("does-not-exist", f.ws.join(".pi")).unwrap();
    let text = bash(&f, "echo ran; touch /tmp/x");
    assert!(text.contains("symbolic link"), "{text}");
    assert!(!text.contains("ran"), "{text}");
    // The MCP server's default stays on: no warning about serving without it.
    let out = agent(&f).arg("mcp").current_dir(&f.ws).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("without the sandbox"), "{err}");
    // The other tools still work.
    let (text, e) = tool(&f, "read", json!({"path": "a.txt"}));
    assert!(!e && text.contains("inside"), "{text}");
}

/// A workspace inside the shared temp dir: the directories between the
/// two would be writable, so a command could make a `.git` above the
/// workspace (git run there later would find it) or move the workspace
/// away and rebuild it. Commands get a private temp dir instead.
#[test]
fn a_workspace_inside_the_temp_dir_gets_a_private_one() {
    let f = fixture();
    let tmp = f.base.join("tmp");
    let ws = tmp.join("clone/proj");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("a.txt"), "kept\n").unwrap();
    let mut c = agent(&f);
    let out = c
        .args(["tool", "bash", "--sandbox", "workspace-write", "--cwd"])
        .arg(&ws)
        .arg("--args")
        .arg(
            json!({"command": format!(
                "git init -q {t} 2>&1; mkdir {t}/clone/.git 2>&1; mv {t}/clone {t}/clone.old 2>&1; touch {t}/x 2>&1; echo inside > made; echo done",
                t = tmp.display()
            )})
            .to_string(),
        )
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = v["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("done"), "{text}");
    for made in [".git", "clone/.git", "clone.old", "x"] {
        assert!(!tmp.join(made).exists(), "{made} made: {text}");
    }
    assert_eq!(
        std::fs::read_to_string(ws.join("made")).unwrap(),
        "inside\n"
    );
    assert_eq!(
        v["details"]["sandbox"]["tmp"],
        "private and empty (the workspace or the home lies in the temp dir)"
    );
    // The file tools alike: the workspace is theirs, the temp dir around
    // it is not (a HEAD, objects and refs there would make it a bare
    // repository that git finds from the workspace).
    let (text, is_error) = tool_in(
        &f,
        &ws,
        Some("workspace-write"),
        "write",
        json!({"path": tmp.join("HEAD"), "content": "ref: refs/heads/x\n"}),
    );
    assert!(is_error && !tmp.join("HEAD").exists(), "{text}");
    let (text, is_error) = tool_in(
        &f,
        &ws,
        Some("workspace-write"),
        "write",
        json!({"path": "b.txt", "content": "kept\n"}),
    );
    assert!(!is_error && ws.join("b.txt").exists(), "{text}");
}

/// A home inside the shared temp dir (`HOME=/tmp` in many containers):
/// writing the temp dir would write `~/.bashrc` and `~/.gitconfig`, run
/// later outside the sandbox.
#[test]
fn a_home_inside_the_temp_dir_keeps_the_temp_dir_private() {
    let f = fixture();
    let home = f.base.join("tmp/home");
    std::fs::create_dir_all(&home).unwrap();
    let text = bash_with(
        &f,
        "workspace-write",
        &[("HOME", home.to_str().unwrap())],
        "echo 'echo planted' >> ~/.bashrc 2>&1; git config --global alias.st '!touch x' 2>&1; echo done",
    );
    assert!(text.contains("done"), "{text}");
    assert!(!home.join(".bashrc").exists(), "{text}");
    assert!(!home.join(".gitconfig").exists(), "{text}");
    // A configuration home named by the environment, likewise.
    let xdg = f.base.join("tmp/xdg");
    let text = bash_with(
        &f,
        "workspace-write",
        &[("XDG_CONFIG_HOME", xdg.to_str().unwrap())],
        "mkdir -p $XDG_CONFIG_HOME/git && echo '[core]' > $XDG_CONFIG_HOME/git/config; echo done",
    );
    assert!(text.contains("done"), "{text}");
    assert!(!xdg.join("git/config").exists(), "{text}");
}

/// `.agents/` holds the skills this agent, Claude Code and Codex read: a
/// command cannot plant one for a later session, neither with bash (the
/// directory does not exist yet, and still none can be made) nor with the
/// file tools.
#[test]
fn no_command_or_tool_can_plant_a_skill_in_dot_agents() {
    let f = fixture();
    let text = bash(
        &f,
        "mkdir -p .agents/skills/x && echo planted > .agents/skills/x/SKILL.md; echo rc=$?",
    );
    assert!(!text.contains("rc=0"), "{text}");
    assert!(!f.ws.join(".agents/skills").exists(), "{text}");
    let (text, is_error) = tool(
        &f,
        "write",
        json!({"path": ".agents/skills/y/SKILL.md", "content": "planted"}),
    );
    assert!(is_error, "{text}");
    assert!(!f.ws.join(".agents/skills/y").exists(), "{text}");
}
