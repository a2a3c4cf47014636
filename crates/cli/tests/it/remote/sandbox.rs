//! The sandbox on the remote: from the settings, kept when continuing, never widened by the remote.

use super::*;

/// Review finding: the full-output file was reopened by path for each
/// piece, outside the sandbox, so a sandboxed command could swap it for a
/// symlink and have the helper write any file of the remote user.
#[test]
fn a_sandboxed_command_cannot_redirect_its_output_file() {
    if !can_switch_users()
        || !test_support::prerequisite(
            Path::new("/usr/bin/bwrap").exists(),
            "bubblewrap",
            "apt-get install -y bubblewrap",
        )
    {
        return;
    }
    let p = place(OTHER);
    let tmp = p.home.parent().unwrap().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let victim = p.home.join(".bashrc");
    std::fs::write(&victim, "# mine\n").unwrap();
    chown(&victim, OTHER);
    let uri = format!(
        "exec:cd '{}' && exec env HOME='{}' TMPDIR='{}' setpriv --reuid {OTHER} --regid {OTHER} --clear-groups sh",
        p.ws.display(),
        p.home.display(),
        tmp.display()
    );
    let command = "seq 1 30000; sleep 1; f=$(ls -t $TMPDIR/coding-agent-bash-*.log | head -1); \
                   rm -f $f && ln -s $HOME/.bashrc $f && echo swapped; echo 'touch $HOME/PWNED'; seq 1 30000";
    let out = Command::new(bin())
        .args([
            "tool",
            "bash",
            "--sandbox",
            "workspace-write",
            "--remote",
            &uri,
            "--args",
        ])
        .arg(json!({ "command": command }).to_string())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("fullOutputPath"), "{stdout}");
    let now = std::fs::read_to_string(&victim).unwrap();
    assert!(
        now == "# mine\n",
        "the file behind the link was written ({} bytes)",
        now.len()
    );
}

/// Review finding: `sandbox.mode` in the settings (no flag) did not reach
/// the remote helper, so bash there ran unconfined and could plant a line
/// in the remote user's `.bashrc`.
#[test]
fn the_settings_sandbox_confines_bash_on_the_remote() {
    if !can_switch_users() || !have_bwrap() {
        return;
    }
    let p = place(OTHER);
    let (victim, case) = bashrc_victim(&p);
    let local = local_with(json!({"sandbox": {"mode": "workspace-write"}}));
    let (results, _) = batch_with(&local, &remote_uri(&p, ""), &[case]);
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "# mine\n",
        "the remote .bashrc was written: {results:?}"
    );
    // Confined, not broken: the workspace is writable, and the result
    // says which sandbox ran the command.
    assert_eq!(
        std::fs::read_to_string(p.ws.join("made-here.txt")).unwrap(),
        "in-workspace\n"
    );
    let result = &results[0];
    assert!(text(result).contains("ran"), "{result}");
    assert!(
        text(result).contains(".bashrc"),
        "the write was refused: {result}"
    );
    assert_eq!(
        result["details"]["sandbox"]["mode"], "workspace-write",
        "{result}"
    );
}

/// Review finding: the user's `sandbox.denyRead` globs were lost on the
/// remote, even with `--sandbox`.
#[test]
fn the_settings_deny_globs_hold_on_the_remote() {
    if !can_switch_users() || !have_bwrap() {
        return;
    }
    let p = place(OTHER);
    std::fs::create_dir(p.ws.join("private")).unwrap();
    std::fs::write(p.ws.join("private/key.txt"), "ws-secret-7781\n").unwrap();
    std::fs::write(p.home.join("vault.txt"), "home-secret-4410\n").unwrap();
    for f in [
        p.ws.join("private"),
        p.ws.join("private/key.txt"),
        p.home.join("vault.txt"),
    ] {
        chown(&f, OTHER);
    }
    let uri = remote_uri(&p, "");
    let cases = [
        json!({"id": "read-ws", "tool": "read", "args": {"path": "private/key.txt"}}),
        json!({"id": "read-home", "tool": "read", "args": {"path": "~/vault.txt"}}),
        json!({"id": "cat", "tool": "bash", "args": {"command": "cat private/key.txt \"$HOME/vault.txt\"; echo done"}}),
        json!({"id": "grep", "tool": "grep", "args": {"pattern": "secret-"}}),
        json!({"id": "control", "tool": "read", "args": {"path": "notes.txt"}}),
    ];
    // Relative globs mean the remote workspace, `~` the remote user's
    // home; the mode from the settings, or from the flag.
    let deny = json!(["private/**", "~/vault.txt"]);
    for (settings, flags) in [
        (
            json!({"sandbox": {"mode": "workspace-write", "denyRead": deny}}),
            &[][..],
        ),
        (
            json!({"sandbox": {"denyRead": deny}}),
            &["--sandbox", "read-only"][..],
        ),
    ] {
        let local = local_with(settings);
        let (results, _) = batch_flags(&local, &uri, &cases, flags);
        let all = serde_json::to_string(&results).unwrap();
        assert!(
            !all.contains("ws-secret-7781") && !all.contains("home-secret-4410"),
            "{flags:?}: a denied file was read: {all}"
        );
        for id in ["read-ws", "read-home"] {
            let r = results.iter().find(|r| r["id"] == id).unwrap();
            assert_eq!(r["isError"], true, "{r}");
            assert!(text(r).to_lowercase().contains("sandbox"), "{r}");
        }
        let cat = results.iter().find(|r| r["id"] == "cat").unwrap();
        assert!(text(cat).contains("done"), "{cat}");
        let control = results.iter().find(|r| r["id"] == "control").unwrap();
        assert!(text(control).starts_with("alpha"), "{control}");
    }
}

/// Review finding: `-c` reconnected to the session's remote without the
/// sandbox of the settings.
#[test]
fn continuing_a_remote_session_keeps_the_sandbox() {
    if !can_switch_users() || !have_bwrap() {
        return;
    }
    let p = place(OTHER);
    let (victim, _) = bashrc_victim(&p);
    let local = local_with(json!({"sandbox": {"mode": "workspace-write"}}));
    let uri = remote_uri(&p, "");
    let run = |name: &str, marker: &str, extra: &[&str]| {
        let script = local.cwd.parent().unwrap().join(name);
        let command = format!("echo {marker} >> \"$HOME/.bashrc\"; echo tried");
        std::fs::write(
            &script,
            format!(
                "{}\n{}\n",
                json!({"content": [{"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": command}}]}),
                json!({"content": [{"type": "text", "text": "done"}]})
            ),
        )
        .unwrap();
        agent_run(&local.agent_dir, &local.cwd, &script, extra)
            .into_iter()
            .next()
            .unwrap()
    };
    let first = run("first.jsonl", "first-run", &["--remote", &uri]);
    assert!(first["result"].to_string().contains("tried"), "{first}");
    // `-c` finds the remote in the session, and confines it the same way.
    let second = run("second.jsonl", "continued", &["-c"]);
    assert!(second["result"].to_string().contains("tried"), "{second}");
    assert_eq!(
        second["result"]["details"]["sandbox"]["mode"], "workspace-write",
        "{second}"
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "# mine\n");
}

/// The remote's own settings only tighten: a settings file there that
/// switches the sandbox off and adds the home as a root changes nothing.
#[test]
fn the_remote_settings_cannot_widen_the_sandbox() {
    if !can_switch_users() || !have_bwrap() {
        return;
    }
    let p = place(OTHER);
    let (victim, case) = bashrc_victim(&p);
    let remote_agent = p.home.join(".pi/agent");
    std::fs::create_dir_all(&remote_agent).unwrap();
    std::fs::write(
        remote_agent.join("settings.json"),
        json!({"sandbox": {"mode": "off", "additionalDirectories": [p.home], "roots": ["."],
                           "network": true, "excludeTmp": false}})
        .to_string(),
    )
    .unwrap();
    for d in [
        p.home.join(".pi"),
        remote_agent.clone(),
        remote_agent.join("settings.json"),
    ] {
        chown(&d, OTHER);
    }
    let local = local_with(json!({"sandbox": {"mode": "workspace-write"}}));
    let (results, _) = batch_with(&local, &remote_uri(&p, ""), &[case]);
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "# mine\n",
        "{results:?}"
    );
    assert_eq!(results[0]["details"]["sandbox"]["mode"], "workspace-write");
    assert_eq!(
        results[0]["details"]["sandbox"]["writableRoots"],
        json!([std::fs::canonicalize(&p.ws).unwrap()]),
        "{}",
        results[0]
    );
    // It may tighten: read-only there makes the workspace read-only too.
    std::fs::write(
        remote_agent.join("settings.json"),
        json!({"sandbox": {"mode": "read-only"}}).to_string(),
    )
    .unwrap();
    let (results, _) = batch_with(
        &local,
        &remote_uri(&p, ""),
        &[json!({"id": "w", "tool": "write", "args": {"path": "tightened.txt", "content": "x"}})],
    );
    assert_eq!(results[0]["isError"], true, "{}", results[0]);
    assert!(!p.ws.join("tightened.txt").exists());
}

/// Where the remote cannot enforce the sandbox the settings ask for
/// (no bubblewrap there), the run stops with the reason instead of
/// running the tools unconfined.
#[test]
fn a_remote_that_cannot_enforce_the_sandbox_is_refused() {
    if !can_switch_users() {
        return;
    }
    let p = place(OTHER);
    let (victim, case) = bashrc_victim(&p);
    // The helper runs in a mount namespace where no bubblewrap is
    // installed: every system copy is covered with /dev/null.
    let hide = "unshare -m sh -c 'for b in /usr/bin/bwrap /usr/local/bin/bwrap /bin/bwrap /usr/sbin/bwrap; do if [ -f $b ]; then mount --bind /dev/null $b || exit 1; fi; done; exec env -u CODING_AGENT_BWRAP sh -c \"$0\"' '";
    let inner = remote_uri(&p, "");
    let uri = format!("{hide}{}'", inner.trim_start_matches("exec:"));
    let uri = format!("exec:{uri}");
    let local = local_with(json!({"sandbox": {"mode": "workspace-write"}}));
    let out = run_batch(local_batch(&local, &uri, &[]), &[case]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("refused to start")
            && stderr.contains("workspace-write sandbox cannot be enforced")
            && stderr.contains("bubblewrap (bwrap) is not installed"),
        "{stderr}"
    );
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "# mine\n");
    assert!(!p.ws.join("made-here.txt").exists());
}
