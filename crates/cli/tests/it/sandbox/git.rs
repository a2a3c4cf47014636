//! Git metadata stays read-only: `.git`, submodules, separate git dirs.

use super::*;

/// A project cannot name a protected path as its root to make it writable.
#[test]
fn a_project_root_inside_git_is_refused() {
    let f = fixture();
    std::fs::create_dir_all(f.ws.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(f.ws.join(".pi")).unwrap();
    std::fs::write(
        f.ws.join(".pi/settings.json"),
        r#"{"sandbox": {"roots": [".git"]}}"#,
    )
    .unwrap();
    let out = agent(&f)
        .args(["tool", "bash", "--sandbox", "workspace-write", "--cwd"])
        .arg(&f.ws)
        .args([
            "--args",
            r#"{"command":"touch .git/hooks/pre-commit; echo rc=$?"}"#,
        ])
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{all}");
    assert!(all.contains("inside the protected path"), "{all}");
    assert!(!f.ws.join(".git/hooks/pre-commit").exists());
}

/// Two sandboxed commands in parallel (two agent processes on one
/// workspace): one keeps swapping the submodule's directory for a link to
/// a repository outside every root and back, the other runs short commands
/// whose after-command checks look at `sub/.git` meanwhile. No check may
/// move the outside repository's `.git` (as a rename by path through the
/// swapped link would), however the two interleave. Bounded by counts, not
/// by time.
#[test]
fn a_parallel_command_cannot_make_the_check_move_what_lies_outside() {
    let f = fixture();
    workspace_with_submodule(&f);
    let outrepo = f.base.join("outrepo");
    std::fs::create_dir_all(outrepo.join(".git/hooks")).unwrap();
    std::fs::write(outrepo.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    let swapper = agent(&f)
        .args(["tool", "bash", "--sandbox", "workspace-write", "--cwd"])
        .arg(&f.ws)
        .arg("--args")
        .arg(
            json!({"command": "touch started; i=0; while [ $i -lt 3000 ] && [ ! -e stop ]; do [ -d subreal ] || mv -T sub subreal; ln -s ../outrepo sub; rm -f sub; mv -T subreal sub; i=$((i+1)); done 2>/dev/null; echo swapped $i"})
                .to_string(),
        )
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Started once its marker shows (a bounded number of looks).
    for _ in 0..3000 {
        if f.ws.join("started").exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let checks: Vec<&str> = vec!["true"; 40];
    let _ = bash_batch(&f, &checks);
    std::fs::write(f.ws.join("stop"), "").unwrap();
    let out = swapper.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("swapped"), "{text}");
    let mut names: Vec<String> = std::fs::read_dir(&outrepo)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, [".git"], "the check moved what lies outside: {text}");
    assert_eq!(
        std::fs::read_to_string(outrepo.join(".git/HEAD")).unwrap(),
        "ref: refs/heads/main\n"
    );
}

/// A submodule's `.git` (a gitfile naming where its repository is) stays
/// read-only: rewritten, it would point the user's next `git status` in the
/// root at a config the command wrote (an fsmonitor run outside).
#[test]
fn submodule_gitfiles_stay_read_only() {
    let f = fixture();
    let git = |dir: &Path, args: &[&str]| git_in(&f, dir, args);
    workspace_with_submodule(&f);
    let src = f.base.join("subsrc");
    let before = std::fs::read_to_string(f.ws.join("sub/.git")).unwrap();
    assert!(before.starts_with("gitdir:"), "{before}");
    for command in [
        "cp -r .git/modules/sub evilgit && echo 'gitdir: ../evilgit' > sub/.git; echo rc=$?",
        // The list comes from the index, not from `.gitmodules` (which a
        // command may edit, and whose keys git reads in any case).
        "sed -i s/path/xpath/ .gitmodules && echo 'gitdir: ../evilgit' > sub/.git; echo rc=$?",
    ] {
        let text = bash(&f, command);
        assert!(!text.contains("rc=0"), "{command}: {text}");
        assert_eq!(
            std::fs::read_to_string(f.ws.join("sub/.git")).unwrap(),
            before
        );
    }
    // The way to it cannot be moved: `sub` is a mount point in the sandbox
    // (renaming it away would let a command built meanwhile leave the real
    // `sub/.git` writable wherever it went).
    let text = bash(
        &f,
        "mv sub subold; echo rc=$?; rm -rf sub; echo rm=$?; ln -sfn /tmp sub; echo ln=$?",
    );
    assert!(!text.contains("rc=0"), "{text}");
    assert!(!f.ws.join("subold").exists(), "{text}");
    assert_eq!(
        std::fs::read_to_string(f.ws.join("sub/.git")).unwrap(),
        before,
        "{text}"
    );
    assert!(
        std::fs::symlink_metadata(f.ws.join("sub"))
            .unwrap()
            .is_dir(),
        "{text}"
    );
    // `rm -rf sub` took the submodule's own files: put them back.
    git(&f.ws, &["submodule", "update", "-q", "--force"]);
    // A workspace turned into a bare repository (HEAD, objects, refs).
    let text = bash(
        &f,
        "mkdir -p pkg && cd pkg && true; cd ..; mkdir -p objects refs && printf 'ref: refs/heads/x\\n' > HEAD; echo rc=$?",
    );
    assert!(
        text.contains("made the workspace a git repository"),
        "{text}"
    );
    assert!(!f.ws.join("HEAD").exists());
    // A submodule not checked out has no `.git` yet: none can be made.
    git(
        &f.ws,
        &["submodule", "add", "-q", src.to_str().unwrap(), "other"],
    );
    git(&f.ws, &["submodule", "deinit", "-q", "-f", "other"]);
    assert!(!f.ws.join("other/.git").exists());
    let text = bash(&f, "echo 'gitdir: ../evilgit' > other/.git; echo rc=$?");
    assert!(!text.contains("rc=0"), "{text}");
    assert!(!f.ws.join("other/.git").exists());
    // The submodule's own files stay writable.
    let text = bash(&f, "echo x > sub/new.txt; echo rc=$?");
    assert!(text.contains("rc=0"), "{text}");
    // The submodule cannot be moved and linked back (its gitfile's
    // relative `gitdir:` would then lead to a `.git/modules` the command
    // wrote): its directory is a mount point.
    let text = bash(
        &f,
        "mkdir -p d/.git && cp -r .git/modules d/.git/ && mv sub d/sub && ln -s d/sub sub; echo rc=$?",
    );
    assert!(text.contains("busy") && !text.contains("rc=0"), "{text}");
    assert!(
        std::fs::symlink_metadata(f.ws.join("sub"))
            .unwrap()
            .is_dir(),
        "{text}"
    );
    // A root made a git directory out of plain files.
    let text = bash(
        &f,
        "printf 'ref: refs/heads/main\\n' > HEAD; touch objects refs; echo rc=$?",
    );
    assert!(
        text.contains("made the workspace a git repository"),
        "{text}"
    );
    assert!(!f.ws.join("HEAD").exists());
}

/// A `.git` file naming a repository inside the workspace (`git init
/// --separate-git-dir=./realgit`): that repository is protected as a
/// `.git` directory would be, for bash and the file tools.
#[test]
fn a_separate_git_dir_inside_the_workspace_stays_read_only() {
    let f = fixture();
    init_with_separate_git_dir(&f, "realgit");
    let text = bash(
        &f,
        "git config core.fsmonitor 'touch x; false' 2>&1; echo x >> realgit/config 2>&1; echo done",
    );
    assert!(text.contains("done"), "{text}");
    let config = std::fs::read_to_string(f.ws.join("realgit/config")).unwrap();
    assert!(
        !config.contains("fsmonitor") && !config.contains("\nx\n"),
        "{config}"
    );
    let (text, is_error) = tool(
        &f,
        "write",
        json!({"path": "realgit/hooks/pre-commit", "content": "#!/bin/sh\n"}),
    );
    assert!(is_error, "{text}");
}

/// A `.git` file whose `gitdir:` goes through a link in the workspace: a
/// command could point the link at a repository of its own, so bash
/// refuses, naming the link, rather than protect only today's target.
#[test]
fn a_git_dir_reached_through_a_workspace_link_refuses_bash() {
    let f = fixture();
    init_with_separate_git_dir(&f, "real/gd");
    std::os::unix::fs::symlink("real", f.ws.join("lnk")).unwrap();
    std::fs::write(f.ws.join(".git"), "gitdir: lnk/gd\n").unwrap();
    let text = bash(&f, "ln -sfn elsewhere lnk; echo ran");
    assert!(!text.contains("ran"), "{text}");
    assert!(
        text.contains("lnk") && text.contains("symbolic link"),
        "{text}"
    );
    assert_eq!(
        std::fs::read_link(f.ws.join("lnk")).unwrap(),
        Path::new("real")
    );
}
