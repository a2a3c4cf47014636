//! Commands in the sandbox: where they may write, their network, environment, processes and end.

use super::*;

#[test]
fn secrets_leave_the_environment_unless_passed() {
    let f = fixture();
    std::fs::write(
        f.base.join("agent/settings.json"),
        r#"{"sandbox": {"passEnv": ["KEEP_TOKEN"]}}"#,
    )
    .unwrap();
    let mut c = agent(&f);
    let out = c
        .env("OPENAI_API_KEY", "sk-1")
        .env("GITHUB_TOKEN", "gh-1")
        .env("DB_PASSWORD", "pw")
        .env("KEEP_TOKEN", "kept")
        .env("PLAIN", "plain")
        .args(["tool", "bash", "--sandbox", "workspace-write", "--cwd"])
        .arg(&f.ws)
        .arg("--args")
        .arg(json!({"command": "echo [$OPENAI_API_KEY][$GITHUB_TOKEN][$DB_PASSWORD][$KEEP_TOKEN][$PLAIN]"}).to_string())
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["content"][0]["text"], "[][][][kept][plain]\n");
}

#[test]
fn bash_fails_closed_naming_what_is_missing() {
    let f = fixture();
    // No bubblewrap; a bubblewrap the kernel refuses namespaces to.
    let refusing = f.base.join("bwrap-no-userns");
    std::fs::write(
        &refusing,
        "#!/bin/sh\necho 'bwrap: No permissions to create a new namespace, likely because the kernel does not allow non-privileged user namespaces.' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(
        &refusing,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    for (bwrap, expected) in [
        (f.base.join("missing/bwrap"), "names no file"),
        (refusing, "user namespaces"),
    ] {
        let out = agent(&f)
            .env("CODING_AGENT_BWRAP", &bwrap)
            .args(["tool", "bash", "--sandbox", "workspace-write", "--cwd"])
            .arg(&f.ws)
            .arg("--args")
            .arg(json!({"command": "touch ran"}).to_string())
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let text = v["content"][0]["text"].as_str().unwrap();
        assert_eq!(v["isError"], true);
        assert!(
            text.contains(expected) && text.contains("--sandbox off"),
            "{text}"
        );
        assert!(!text.contains("Landlock"), "{text}");
        assert!(!f.ws.join("ran").exists());
    }
    // Out of descriptors: the refusal says so and blames no kernel feature.
    let bin = crate::bin();
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -n 15; exec '{}' tool bash --sandbox workspace-write --cwd '{}' --args '{{\"command\":\"touch ran\"}}'",
            bin.display(),
            f.ws.display()
        ))
        .env("TMPDIR", f.base.join("tmp"))
        .env("HOME", f.base.join("home"))
        .env("CODING_AGENT_DIR", f.base.join("agent"))
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !all.contains("Landlock") && !all.contains("kernel"),
        "{all}"
    );
    assert!(
        !f.ws.join("ran").exists() || all.contains("\"isError\":false"),
        "{all}"
    );
}

#[test]
fn bash_results_say_which_protections_were_active() {
    let f = fixture();
    let out = agent(&f)
        .args(["tool", "bash", "--sandbox", "workspace-write", "--cwd"])
        .arg(&f.ws)
        .args(["--args", r#"{"command":"echo hi"}"#])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let report = &v["details"]["sandbox"];
    assert_eq!(report["mode"], "workspace-write", "{v}");
    assert_eq!(report["enforcedBy"], "bubblewrap namespaces + seccomp");
    assert!(
        report["network"].as_str().unwrap().starts_with("blocked"),
        "{report}"
    );
    // Off: Pi's plain result, no report.
    let out = agent(&f)
        .args(["tool", "bash", "--cwd"])
        .arg(&f.ws)
        .args(["--args", r#"{"command":"echo hi"}"#])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["details"].is_null(), "{v}");
}

/// Every command escape the review found, each row a command that must
/// leave `outside` (and the protected paths) exactly as they were.
#[test]
fn escape_table_of_commands() {
    let f = fixture();
    let out = f.outside.display().to_string();
    std::fs::create_dir_all(f.ws.join(".git/hooks")).unwrap();
    std::fs::write(f.ws.join(".git/config"), "[core]\n").unwrap();
    std::fs::create_dir_all(f.ws.join(".pi")).unwrap();
    std::fs::write(f.ws.join(".pi/settings.json"), "{}\n").unwrap();
    let rows = [
        (
            "git hook planted",
            "printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > .git/hooks/pre-commit".to_string(),
        ),
        (
            "git config fsmonitor",
            "git config core.fsmonitor 'touch /tmp/pwned'".to_string(),
        ),
        (
            "git config appended",
            "echo '[core] fsmonitor = x' >> .git/config".to_string(),
        ),
        (
            "git dir replaced",
            "mv .git .git-old && mkdir .git".to_string(),
        ),
        (
            "project settings",
            "echo '{\"shellCommandPrefix\":\"touch /tmp/pwned\"}' > .pi/settings.json".to_string(),
        ),
        ("project settings removed", "rm -rf .pi".to_string()),
        ("block device", "mknod disk b 8 0".to_string()),
        ("char device", "mknod mem c 1 1".to_string()),
        (
            "device via python",
            "python3 -c 'import os,stat; os.mknod(\"d2\", stat.S_IFBLK|0o600, os.makedev(8,0))'"
                .to_string(),
        ),
        ("inherited descriptor", "echo leaked >&7".to_string()),
        (
            "agent dir",
            format!(
                "echo '{{}}' > {}/trusted-projects.json",
                f.base.join("agent").display()
            ),
        ),
    ];
    let (r, w) = (f.outside.join("fd7"), f.outside.join("fd7"));
    std::fs::write(&r, "").unwrap();
    for (what, command) in rows {
        // fd 7 open for appending to a file outside, inherited by the agent.
        let text = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "exec 7>>'{}'; exec '{}' tool bash --sandbox workspace-write --cwd '{}' --args \"$1\"",
                w.display(),
                crate::bin().display(),
                f.ws.display()
            ))
            .arg("sh")
            .arg(json!({"command": format!("{command}; echo rc=$?")}).to_string())
            .env("TMPDIR", f.base.join("tmp"))
            .env("HOME", f.base.join("home"))
            .env("CODING_AGENT_DIR", f.base.join("agent"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&text.stdout).to_string();
        assert!(!text.contains("rc=0"), "{what} succeeded: {text}");
        assert_eq!(std::fs::read_to_string(&r).unwrap(), "", "{what}");
        assert_eq!(
            std::fs::read_to_string(f.ws.join(".git/config")).unwrap(),
            "[core]\n",
            "{what}"
        );
        assert!(!f.ws.join(".git/hooks/pre-commit").exists(), "{what}");
        assert_eq!(
            std::fs::read_to_string(f.ws.join(".pi/settings.json")).unwrap(),
            "{}\n",
            "{what}"
        );
        for node in ["disk", "mem", "d2"] {
            assert!(!f.ws.join(node).exists(), "{what}: {node} made");
        }
        assert!(
            !f.base.join("agent/trusted-projects.json").exists(),
            "{what}"
        );
    }
    // A FIFO is not a device: still allowed, as ordinary work needs it.
    assert!(bash(&f, "mkfifo pipe && echo made").contains("made"));
    // The file tools keep the same paths read-only.
    for (name, args) in [
        (
            "write",
            json!({"path": ".git/hooks/post-checkout", "content": "#!/bin/sh\n"}),
        ),
        (
            "write",
            json!({"path": ".pi/settings.json", "content": "{\"shellPath\":\"/x\"}"}),
        ),
        (
            "edit",
            json!({"path": ".git/config", "edits": [{"oldText": "[core]", "newText": "[core]\nfsmonitor = x"}]}),
        ),
        ("write", json!({"path": "sub/.git/config", "content": "x"})),
    ] {
        let (text, e) = tool(&f, name, args.clone());
        assert!(e && text.contains("protected"), "{args}: {text}");
    }
    let _ = out;
}

#[test]
fn commands_see_neither_the_agent_nor_its_secrets() {
    let f = fixture();
    let script = f.base.join("script.jsonl");
    std::fs::write(
        &script,
        format!(
            "{}\n{}\n",
            json!({"content": [{"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command":
                "cat /proc/$PPID/cmdline /proc/$PPID/environ /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null | tr '\\0' ' '; env; kill -0 1 2>/dev/null; ps -e -o pid= | wc -l"}}]}),
            json!({"content": [{"type": "text", "text": "done"}]})
        ),
    )
    .unwrap();
    let out = agent(&f)
        .env("OPENAI_API_KEY", "sk-env-secret")
        .env("AWS_SECRET_ACCESS_KEY", "aws-secret")
        .env("STRIPE_SECRET_KEY", "stripe-secret")
        .env("openai_api_key", "lower-secret")
        .env("SERVICE_PASSWD", "pw-secret")
        .env("MYSQL_PWD", "mysql-secret")
        .env("OPENAITOKEN", "glued-secret")
        .env("DATABASE_URL", "postgres://app:url-secret@db/main")
        .env("HTTPS_PROXY", "http://me:proxy-secret@proxy:3128")
        .args(["--api-key", "sk-flag-secret", "--script"])
        .arg(&script)
        .args(["--sandbox", "workspace-write", "--mode", "json", "--cwd"])
        .arg(&f.ws)
        .arg("go")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let result = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "tool_execution_end")
        .unwrap_or_else(|| panic!("no tool result: {stdout}"));
    let text = result["result"]["content"][0]["text"].as_str().unwrap();
    for secret in [
        "sk-env-secret",
        "aws-secret",
        "stripe-secret",
        "lower-secret",
        "pw-secret",
        "sk-flag-secret",
        "mysql-secret",
        "glued-secret",
        "url-secret",
        "proxy-secret",
    ] {
        assert!(!text.contains(secret), "{secret} seen: {text}");
    }
    assert!(text.contains("PATH="), "{text}");
    // passEnv lets one back in.
    std::fs::write(
        f.base.join("agent/settings.json"),
        r#"{"sandbox": {"passEnv": ["STRIPE_SECRET_KEY"]}}"#,
    )
    .unwrap();
    let text = bash_with(
        &f,
        "workspace-write",
        &[
            ("STRIPE_SECRET_KEY", "stripe-secret"),
            ("AWS_SECRET_ACCESS_KEY", "aws"),
        ],
        "echo [$STRIPE_SECRET_KEY][$AWS_SECRET_ACCESS_KEY]",
    );
    assert_eq!(text, "[stripe-secret][]\n");
}

#[test]
fn exclude_tmp_gives_commands_a_private_temp_dir() {
    let f = fixture();
    let tmp = f.base.join("tmp");
    std::fs::write(tmp.join("other-project.txt"), "keep\n").unwrap();
    // Shared by default: the report says so.
    bash(&f, "touch $TMPDIR/shared");
    assert!(tmp.join("shared").exists());
    std::fs::write(
        f.base.join("agent/settings.json"),
        r#"{"sandbox": {"excludeTmp": true}}"#,
    )
    .unwrap();
    let text = bash(
        &f,
        "ls $TMPDIR; echo x > $TMPDIR/private && cat $TMPDIR/private; rm -f $TMPDIR/../tmp/other-project.txt; echo done",
    );
    assert!(text.contains("x\n") && text.contains("done"), "{text}");
    assert!(!text.contains("other-project"), "{text}");
    assert!(!tmp.join("private").exists());
    assert_eq!(
        std::fs::read_to_string(tmp.join("other-project.txt")).unwrap(),
        "keep\n"
    );
}

/// The same confinement as an unprivileged user and inside a user
/// namespace (what a rootless container gives).
#[test]
fn confinement_holds_unprivileged_and_in_a_container() {
    let f = fixture();
    let uid = 41031;
    let out_dir = f.outside.display().to_string();
    let command = json!({"command": format!(
        "touch made-inside; touch {out_dir}/x 2>&1; python3 -c 'import socket; socket.socket(socket.AF_UNIX)' 2>&1 | tail -1; cat /proc/1/cmdline | tr '\\0' ' '; echo; echo end"
    )})
    .to_string();
    let bin = crate::bin();
    for how in ["user namespace", "unprivileged"] {
        let mut c = if how == "unprivileged" {
            let mut c = Command::new("setpriv");
            c.arg(format!("--reuid={uid}"))
                .arg(format!("--regid={uid}"))
                .arg("--clear-groups")
                .arg(bin);
            c
        } else {
            let mut c = Command::new("unshare");
            // As a container runtime does: its own /proc.
            c.args([
                "--user",
                "--map-root-user",
                "--mount",
                "--pid",
                "--fork",
                "--mount-proc",
            ])
            .arg(bin);
            c
        };
        if how == "unprivileged" {
            for dir in [&f.ws, &f.base.join("tmp"), &f.base.join("agent")] {
                Command::new("chown")
                    .arg("-R")
                    .arg(format!("{uid}:{uid}"))
                    .arg(dir)
                    .status()
                    .unwrap();
            }
            // The test tree's parents must be reachable by the user.
            let mut p = f.base.clone();
            while let Some(parent) = p.parent() {
                let _ = Command::new("chmod").arg("o+x").arg(&p).status();
                p = parent.to_path_buf();
            }
        }
        let out = c
            .args(["tool", "bash", "--sandbox", "workspace-write", "--cwd"])
            .arg(&f.ws)
            .arg("--args")
            .arg(&command)
            .env("TMPDIR", f.base.join("tmp"))
            .env("HOME", f.base.join("home"))
            .env("CODING_AGENT_DIR", f.base.join("agent"))
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
            panic!(
                "{how}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        let text = v["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("end"), "{how}: {text}");
        assert!(
            text.contains("Permission denied") || text.contains("Read-only"),
            "{how}: {text}"
        );
        assert!(!f.outside.join("x").exists(), "{how}");
        assert!(f.ws.join("made-inside").exists(), "{how}: {text}");
        assert!(
            text.contains("PermissionError"),
            "{how}: unix socket made: {text}"
        );
        assert!(
            !text.contains("coding-agent"),
            "{how}: the agent is visible: {text}"
        );
        assert!(
            v["details"]["sandbox"]["namespaces"]
                .as_str()
                .unwrap()
                .starts_with("kept"),
            "{how}: {v}"
        );
        std::fs::remove_file(f.ws.join("made-inside")).unwrap();
    }
}

/// As root, the namespace's root is the host's: no set-id file and no file
/// capability may be made inside, however it is attempted.
#[test]
fn no_set_id_files_or_file_capabilities_are_made() {
    let f = fixture();
    for (what, command) in [
        ("chmod", "cp /bin/true s1 && chmod 4755 s1"),
        ("chmod g+s", "cp /bin/true s2 && chmod g+s s2"),
        ("install -m", "install -m 4755 /bin/true s3"),
        (
            "created set-id",
            "python3 -c 'import os; os.close(os.open(\"s4\", os.O_CREAT|os.O_WRONLY, 0o4755))'",
        ),
        (
            "mknod regular",
            "python3 -c 'import os,stat; os.mknod(\"s5\", stat.S_IFREG|0o4755)'",
        ),
        ("setcap", "cp /bin/true s6 && setcap cap_setuid+ep s6"),
    ] {
        let text = bash(&f, &format!("{command}; echo rc=$?"));
        assert!(!text.contains("rc=0"), "{what}: {text}");
    }
    for name in ["s1", "s2", "s3", "s4", "s5", "s6"] {
        if let Ok(m) = std::fs::metadata(f.ws.join(name)) {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(m.permissions().mode() & 0o6000, 0, "{name} is set-id");
        }
    }
    let caps = Command::new("getcap").arg(f.ws.join("s6")).output();
    if let Ok(caps) = caps {
        assert!(
            String::from_utf8_lossy(&caps.stdout).trim().is_empty(),
            "s6 has capabilities"
        );
    }
    // Ordinary modes still work.
    let text = bash(&f, "cp /bin/true x && chmod 755 x && ./x && echo rc=$?");
    assert!(text.contains("rc=0"), "{text}");
}

/// Commands of one session join namespaces kept between them (a message
/// queue made by one is seen by the next), yet each ends whole: nothing it
/// started outlives it, not even after trying to kill its supervisor, and
/// none sees another's processes. A command that replaced a protected path
/// gets the next command new namespaces, since the old mounts stand on
/// what was moved.
#[test]
fn commands_share_kept_namespaces_and_each_ends_whole() {
    let f = fixture();
    let texts = bash_batch(
        &f,
        &[
            "ipcmk -Q >/dev/null; kill -9 1; (sleep 600 &) ; setsid sleep 600 & echo started",
            "ipcs -q | grep -c '^0x'; ps -eo comm | grep -c '^sleep$'; ps -eo pid= | wc -l",
            "mkdir -p objects refs && printf 'ref: refs/heads/x\\n' > HEAD",
            "ipcs -q | grep -c '^0x' || true",
        ],
    );
    assert_eq!(texts.len(), 4, "{texts:?}");
    assert!(texts[0].contains("started"), "{texts:?}");
    let counts: Vec<&str> = texts[1].lines().map(str::trim).collect();
    assert_eq!(counts.first(), Some(&"1"), "not kept: {texts:?}");
    assert_eq!(
        counts.get(1),
        Some(&"0"),
        "a background process outlived its command: {texts:?}"
    );
    // The supervisor, the shell, ps and wc: nothing else.
    assert_eq!(counts.get(2), Some(&"4"), "{texts:?}");
    assert!(
        texts[2].contains("made the workspace a git repository"),
        "{texts:?}"
    );
    assert_eq!(texts[3].trim(), "0", "kept after a replacement: {texts:?}");
    // Nothing of the sandbox is left in the workspace or the process table.
    assert!(!f.ws.join(".git").exists() && !f.ws.join(".pi").exists());
    // The kill is sent before the agent exits, but the kernel may take a
    // moment to tear a namespace's processes down (long on a loaded
    // machine): they must be gone within a bounded wait, not at once.
    let left = wait_for_no_process_with("sleep 600", std::time::Duration::from_secs(30));
    assert!(
        left.is_empty(),
        "a command's process outlived the agent (30 s after it exited): {left:?}"
    );
}

/// As root, the sandbox's root is the host's, and the kernel lets the
/// host's root write `kernel.core_pattern` (a program run as root outside
/// on the next crash) or `sysrq-trigger` without any capability: both stay
/// read-only, in both modes, for the first command and later ones.
/// (Checked with `test -w`, never by writing.)
#[test]
fn host_wide_proc_settings_stay_read_only() {
    let f = fixture();
    let check = "for p in /proc/sys/kernel/core_pattern /proc/sys/vm/drop_caches /proc/sysrq-trigger /proc/irq/default_smp_affinity; do [ -e $p ] && [ -w $p ] && echo WRITABLE $p; done; echo checked";
    for mode in ["workspace-write", "read-only"] {
        let text = bash_with(&f, mode, &[], check);
        assert!(
            text.contains("checked") && !text.contains("WRITABLE"),
            "{mode}: {text}"
        );
    }
    for text in bash_batch(&f, &[check, check]) {
        assert!(
            text.contains("checked") && !text.contains("WRITABLE"),
            "{text}"
        );
    }
}

/// An agent killed outright (SIGKILL: the OOM killer, `kill -9`) takes
/// its running command with it: nothing keeps writing to the workspace
/// with no one left to check afterwards.
#[test]
fn a_killed_agent_takes_its_command_with_it() {
    let f = fixture();
    let mut child = agent(&f)
        .args(["tool", "bash", "--sandbox", "workspace-write", "--cwd"])
        .arg(&f.ws)
        .arg("--args")
        .arg(json!({"command": "touch started; sleep 2; touch survived"}).to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once the command runs.
    let started = f.ws.join("started");
    for _ in 0..200 {
        if started.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(started.exists(), "the command never started");
    child.kill().unwrap();
    child.wait().unwrap();
    std::thread::sleep(std::time::Duration::from_secs(3));
    assert!(
        !f.ws.join("survived").exists(),
        "the command outlived the agent"
    );
}
