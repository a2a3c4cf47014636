//! The file tools in the sandbox: escapes refused, denied files unseen, read-only means nothing changes.

use super::*;

#[test]
fn escape_table_of_the_file_tools() {
    let f = fixture();
    let outside_file = f.outside.join("s.txt").display().to_string();
    let edit = |path: &str| json!({"path": path, "edits": [{"oldText": "secret", "newText": "x"}]});
    let rows: Vec<(&str, &str, Value, &str)> = vec![
        (
            "dot-dot",
            "read",
            json!({"path": "../outside/s.txt"}),
            "outside the workspace roots",
        ),
        (
            "absolute",
            "read",
            json!({"path": outside_file}),
            "outside the workspace roots",
        ),
        (
            "symlinked file",
            "read",
            json!({"path": "link"}),
            "resolves outside the workspace root",
        ),
        (
            "symlinked directory",
            "read",
            json!({"path": "dirlink/s.txt"}),
            "resolves outside",
        ),
        (
            "symlinked directory, ls",
            "ls",
            json!({"path": "dirlink"}),
            "resolves outside",
        ),
        (
            "symlinked directory, grep",
            "grep",
            json!({"pattern": "secret", "path": "dirlink"}),
            "resolves outside",
        ),
        (
            "symlinked directory, find",
            "find",
            json!({"pattern": "*", "path": "dirlink"}),
            "resolves outside",
        ),
        ("home", "read", json!({"path": "~/.ssh/id_rsa"}), "Sandbox:"),
        (
            "file URL",
            "read",
            json!({"path": format!("file://{outside_file}")}),
            "Sandbox:",
        ),
        (
            "other case",
            "read",
            json!({"path": "../WS/a.txt"}),
            "outside the workspace roots",
        ),
        (
            "other Unicode form",
            "read",
            json!({"path": "../cafe\u{301}/x.txt"}),
            "outside the workspace roots",
        ),
        (
            "deny .env",
            "read",
            json!({"path": ".env"}),
            "denied pattern",
        ),
        (
            "deny .ENV (case)",
            "read",
            json!({"path": ".ENV"}),
            "denied pattern",
        ),
        (
            "deny *.pem",
            "read",
            json!({"path": "server.pem"}),
            "denied pattern",
        ),
        (
            "write dot-dot",
            "write",
            json!({"path": "../outside/w.txt", "content": "x"}),
            "outside the workspace roots",
        ),
        (
            "write through dir link",
            "write",
            json!({"path": "dirlink/w.txt", "content": "x"}),
            "resolves outside",
        ),
        (
            "write dangling link out",
            "write",
            json!({"path": "dangling", "content": "x"}),
            "Sandbox:",
        ),
        (
            "write hard link",
            "write",
            json!({"path": "hard", "content": "x"}),
            "hard links",
        ),
        ("edit hard link", "edit", edit("hard"), "hard links"),
        (
            "edit symlinked file",
            "edit",
            edit("link"),
            "resolves outside",
        ),
        (
            "write .env",
            "write",
            json!({"path": ".env", "content": "x"}),
            "denied pattern",
        ),
    ];
    for (trick, name, args, expected) in rows {
        let (text, is_error) = tool(&f, name, args);
        assert!(
            is_error && text.contains(expected),
            "{trick} ({name}): {text}"
        );
    }
    // Nothing outside changed.
    assert_eq!(
        std::fs::read_to_string(f.outside.join("s.txt")).unwrap(),
        "outside secret\n"
    );
    assert!(!f.outside.join("new.txt").exists());
    assert!(!f.outside.join("w.txt").exists());
    // Work inside still works.
    assert_eq!(
        tool(&f, "read", json!({"path": "a.txt"})),
        ("inside\n".to_string(), false)
    );
    let (text, is_error) = tool(
        &f,
        "write",
        json!({"path": "sub/new.txt", "content": "ok\n"}),
    );
    assert!(!is_error, "{text}");
    let (text, is_error) = tool(
        &f,
        "edit",
        json!({"path": "sub/new.txt", "edits": [{"oldText": "ok", "newText": "fine"}]}),
    );
    assert!(!is_error, "{text}");
    assert_eq!(
        std::fs::read_to_string(f.ws.join("sub/new.txt")).unwrap(),
        "fine\n"
    );
}

#[test]
fn denied_files_never_show_in_listings_or_searches() {
    let f = fixture();
    let (grep, _) = tool(&f, "grep", json!({"pattern": "secret|SECRET|inside"}));
    assert!(grep.contains("a.txt"), "{grep}");
    assert!(
        !grep.contains("dotenv-secret") && !grep.contains("upper-secret") && !grep.contains("PEM"),
        "{grep}"
    );
    let (find, _) = tool(&f, "find", json!({"pattern": "*"}));
    assert!(
        find.contains("a.txt")
            && !find.contains(".env")
            && !find.contains(".ENV")
            && !find.contains("server.pem"),
        "{find}"
    );
    let (ls, _) = tool(&f, "ls", json!({}));
    assert!(
        ls.contains("a.txt")
            && !ls.contains(".env")
            && !ls.contains(".ENV")
            && !ls.contains("server.pem"),
        "{ls}"
    );
    // Off: Pi's behaviour, everything visible.
    let (ls, _) = tool_in(&f, &f.ws, None, "ls", json!({}));
    assert!(ls.contains(".env"), "{ls}");
}

#[test]
fn read_only_mode_modifies_nothing() {
    let f = fixture();
    let ro = |name: &str, args: Value| tool_in(&f, &f.ws, Some("read-only"), name, args);
    let (text, e) = ro("write", json!({"path": "n.txt", "content": "x"}));
    assert!(e && text.contains("read-only"), "{text}");
    let (text, e) = ro(
        "edit",
        json!({"path": "a.txt", "edits": [{"oldText": "inside", "newText": "x"}]}),
    );
    assert!(e && text.contains("read-only"), "{text}");
    let (text, _) = ro("bash", json!({"command": "touch n2.txt; echo rc=$?"}));
    assert!(text.contains("rc=1"), "{text}");
    assert!(!f.ws.join("n.txt").exists() && !f.ws.join("n2.txt").exists());
    assert_eq!(ro("read", json!({"path": "a.txt"})).0, "inside\n");
}

#[test]
fn read_only_mode_changes_no_metadata() {
    let f = fixture();
    let target = f.outside.join("s.txt");
    let inside = f.ws.join("a.txt");
    let before = |p: &Path| {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(p).unwrap();
        (m.mode(), m.uid(), m.gid(), m.mtime(), m.mtime_nsec())
    };
    let (o, i) = (before(&target), before(&inside));
    for p in [target.display().to_string(), inside.display().to_string()] {
        let text = bash_with(
            &f,
            "read-only",
            &[],
            &format!(
                "chmod 777 {p}; chown 123:123 {p}; touch -d 2001-01-01 {p}; chattr +i {p} 2>/dev/null; setfattr -n user.x -v 1 {p} 2>/dev/null; echo x >> {p}; rm -f {p}; echo done"
            ),
        );
        assert!(text.contains("done"), "{text}");
    }
    assert_eq!(before(&target), o);
    assert_eq!(before(&inside), i);
    assert_eq!(std::fs::read_to_string(&inside).unwrap(), "inside\n");
}

/// As root, a sandboxed write reaches another user's file through its
/// permission bits only, as a sandboxed command does.
#[test]
fn root_writes_another_users_file_only_as_its_bits_allow() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("not root: the case is about root");
        return;
    }
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let f = fixture();
    let other = f.base.join("tmp/other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("f"), "original\n").unwrap();
    std::fs::write(other.join("open"), "original\n").unwrap();
    std::fs::set_permissions(other.join("f"), std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::set_permissions(other.join("open"), std::fs::Permissions::from_mode(0o666)).unwrap();
    for p in [&other, &other.join("f"), &other.join("open")] {
        std::os::unix::fs::chown(p, Some(65534), Some(65534)).unwrap();
    }
    let path = other.join("f").display().to_string();
    let text = bash(&f, &format!("echo bash >> {path}; echo rc=$?"));
    assert!(!text.contains("rc=0"), "{text}");
    let (text, e) = tool(&f, "write", json!({"path": path, "content": "replaced\n"}));
    assert!(e, "{text}");
    assert_eq!(
        std::fs::read_to_string(other.join("f")).unwrap(),
        "original\n"
    );
    assert!(!other.join("new").exists());
    let (text, e) = tool(
        &f,
        "write",
        json!({"path": other.join("new").display().to_string(), "content": "x"}),
    );
    assert!(e, "{text}");
    assert!(!other.join("new").exists());
    // A file its bits open to everyone is written, and keeps its owner.
    let open = other.join("open").display().to_string();
    let (text, e) = tool(&f, "write", json!({"path": open, "content": "changed\n"}));
    assert!(!e, "{text}");
    assert_eq!(
        std::fs::read_to_string(other.join("open")).unwrap(),
        "changed\n"
    );
    assert_eq!(std::fs::metadata(other.join("open")).unwrap().uid(), 65534);
    // Reads too: a 0600 file of that user is not read, a 0644 one is.
    std::fs::write(other.join("private"), "NOBODY-SECRET\n").unwrap();
    std::fs::set_permissions(
        other.join("private"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    std::os::unix::fs::chown(other.join("private"), Some(65534), Some(65534)).unwrap();
    for (name, args) in [
        (
            "read",
            json!({"path": other.join("private").display().to_string()}),
        ),
        (
            "grep",
            json!({"pattern": "NOBODY", "path": other.display().to_string()}),
        ),
    ] {
        let (text, _) = tool(&f, name, args);
        assert!(!text.contains("NOBODY-SECRET"), "{name}: {text}");
    }
    let (text, e) = tool(&f, "read", json!({"path": path}));
    assert!(!e && text.contains("original"), "{text}");
}

/// `sandbox.excludeTmp` takes the temp dir out of the writable places for
/// the file tools too (it stays readable: bash's full-output files are
/// there).
#[test]
fn exclude_tmp_binds_the_file_tools_too() {
    let f = fixture();
    std::fs::create_dir_all(f.ws.join(".pi")).unwrap();
    std::fs::write(
        f.ws.join(".pi/settings.json"),
        r#"{"sandbox": {"excludeTmp": true}}"#,
    )
    .unwrap();
    let target = f.base.join("tmp/written-by-tool");
    let (text, e) = tool(
        &f,
        "write",
        json!({"path": target.display().to_string(), "content": "x"}),
    );
    assert!(e, "{text}");
    assert!(!target.exists());
    std::fs::write(f.base.join("tmp/readable"), "spill\n").unwrap();
    let (text, e) = tool(
        &f,
        "read",
        json!({"path": f.base.join("tmp/readable").display().to_string()}),
    );
    assert!(!e && text.contains("spill"), "{text}");
}

/// The agent directory (MCP tokens, every project's sessions, credentials)
/// is empty for commands and denied to the file tools.
#[test]
fn the_agent_directory_is_hidden_from_commands_and_tools() {
    let f = fixture();
    std::fs::write(f.base.join("agent/mcp-http-1.token"), "TOKEN-VALUE\n").unwrap();
    std::fs::create_dir_all(f.base.join("agent/sessions")).unwrap();
    let dir = f.base.join("agent").display().to_string();
    let text = bash(
        &f,
        &format!("ls -a {dir}; cat {dir}/mcp-http-1.token; echo end"),
    );
    assert!(
        !text.contains("TOKEN-VALUE") && !text.contains("sessions"),
        "{text}"
    );
    assert!(text.contains("end"), "{text}");
    let (text, e) = tool(
        &f,
        "read",
        json!({"path": format!("{dir}/mcp-http-1.token")}),
    );
    assert!(e && !text.contains("TOKEN-VALUE"), "{text}");
    // Pi's default directory too, when CODING_AGENT_DIR names another.
    std::fs::create_dir_all(f.base.join("home/.pi/agent")).unwrap();
    std::fs::write(f.base.join("home/.pi/agent/auth.json"), "PI-AUTH\n").unwrap();
    let text = bash(&f, "cat ~/.pi/agent/auth.json; echo end");
    assert!(!text.contains("PI-AUTH") && text.contains("end"), "{text}");
}

/// `~/.ssh` kept as a link into a dotfiles directory is hidden all the same.
#[test]
fn a_linked_ssh_directory_is_hidden_too() {
    let f = fixture();
    let dotfiles = f.base.join("dotfiles/ssh");
    std::fs::create_dir_all(&dotfiles).unwrap();
    std::fs::write(dotfiles.join("id_ed25519"), "LINKED-PRIVATE-KEY\n").unwrap();
    std::fs::remove_dir_all(f.base.join("home/.ssh")).unwrap();
    std::os::unix::fs::symlink(&dotfiles, f.base.join("home/.ssh")).unwrap();
    let text = bash(
        &f,
        "cat ~/.ssh/id_ed25519; cat $(readlink -f ~/.ssh)/id_ed25519; echo end",
    );
    assert!(
        !text.contains("LINKED-PRIVATE-KEY") && text.contains("end"),
        "{text}"
    );
    let (text, _) = tool(
        &f,
        "read",
        json!({"path": dotfiles.join("id_ed25519").display().to_string()}),
    );
    assert!(!text.contains("LINKED-PRIVATE-KEY"), "{text}");
}

/// Placeholders are made only where a command could write: a missing agent
/// directory outside the workspace is not created, even for a moment.
#[test]
fn no_placeholder_outside_the_writable_places() {
    let f = fixture();
    let missing = f.base.join("not-yet/agent");
    let dir = missing.display().to_string();
    let text = bash_with(
        &f,
        "workspace-write",
        &[("CODING_AGENT_DIR", dir.as_str())],
        &format!("ls -d {dir} 2>&1; echo end"),
    );
    assert!(text.contains("No such file"), "{text}");
    assert!(!f.base.join("not-yet").exists());
}
