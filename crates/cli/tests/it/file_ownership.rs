//! Permission and ownership cases of `write` and `edit`, run as unprivileged
//! users through `setpriv` (the tests run as root in CI; root would bypass
//! every check under test). Each case needs root to set the scene; without
//! root (a developer's machine) they are reported and skipped.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

const OWNER: u32 = 41001;
const OTHER: u32 = 41002;
const SHARED_GROUP: u32 = 41500;

/// A world-readable scene: the binary copied beside the files so any uid can
/// run it, a settings dir, and a work dir.
struct Scene {
    _root: tempfile::TempDir,
    bin: PathBuf,
    agent_dir: PathBuf,
    work: PathBuf,
}

fn scene() -> Option<Scene> {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipping: these cases need root to create files for other users");
        return None;
    }
    let root = tempfile::tempdir().unwrap();
    std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = root.path().join("coding-agent");
    std::fs::copy(crate::bin(), &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let agent_dir = root.path().join("agent");
    std::fs::create_dir(&agent_dir).unwrap();
    std::fs::set_permissions(&agent_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let work = root.path().join("work");
    std::fs::create_dir(&work).unwrap();
    Some(Scene {
        _root: root,
        bin,
        agent_dir,
        work,
    })
}

fn chown(path: &Path, uid: u32, gid: u32) {
    std::os::unix::fs::chown(path, Some(uid), Some(gid)).unwrap();
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Runs one tool call as `uid` (primary group `uid`, plus `groups`).
fn run_as(scene: &Scene, uid: u32, groups: &[u32], tool: &str, args: Value) -> Value {
    let mut cmd = Command::new("setpriv");
    cmd.arg(format!("--reuid={uid}"))
        .arg(format!("--regid={uid}"));
    if groups.is_empty() {
        cmd.arg("--clear-groups");
    } else {
        let list: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
        cmd.arg(format!("--groups={}", list.join(",")));
    }
    let out = cmd
        .arg(&scene.bin)
        .args(["tool", tool, "--cwd"])
        .arg(&scene.work)
        .args(["--args", &args.to_string()])
        .env("CODING_AGENT_DIR", &scene.agent_dir)
        .env("HOME", &scene.agent_dir)
        .output()
        .expect("setpriv runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "not a JSON result ({e}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or("")
}

#[test]
fn a_read_only_file_is_not_replaced_by_write_or_edit() {
    let Some(s) = scene() else { return };
    chown(&s.work, OWNER, OWNER);
    chmod(&s.work, 0o755);
    let file = s.work.join("locked.txt");
    std::fs::write(&file, "keep me\n").unwrap();
    chown(&file, OWNER, OWNER);
    chmod(&file, 0o444);
    let r = run_as(
        &s,
        OWNER,
        &[],
        "write",
        json!({"path": "locked.txt", "content": "gone\n"}),
    );
    assert_eq!(r["isError"], true, "{r}");
    assert!(text(&r).contains("Permission denied"), "{r}");
    let r = run_as(
        &s,
        OWNER,
        &[],
        "edit",
        json!({"path": "locked.txt", "edits": [{"oldText": "keep", "newText": "lose"}]}),
    );
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me\n");
    assert_eq!(std::fs::metadata(&file).unwrap().mode() & 0o777, 0o444);
}

#[test]
fn a_group_shared_file_keeps_its_owner_and_group() {
    let Some(s) = scene() else { return };
    chown(&s.work, OWNER, SHARED_GROUP);
    chmod(&s.work, 0o2775);
    let file = s.work.join("shared.txt");
    std::fs::write(&file, "value = 1\n").unwrap();
    chown(&file, OWNER, SHARED_GROUP);
    chmod(&file, 0o660);
    let r = run_as(
        &s,
        OTHER,
        &[SHARED_GROUP],
        "edit",
        json!({"path": "shared.txt", "edits": [{"oldText": "= 1", "newText": "= 2"}]}),
    );
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(r["details"]["write"]["method"], "inPlace", "{r}");
    let m = std::fs::metadata(&file).unwrap();
    assert_eq!(
        (m.uid(), m.gid(), m.mode() & 0o777),
        (OWNER, SHARED_GROUP, 0o660)
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "value = 2\n");
    // write too
    let r = run_as(
        &s,
        OTHER,
        &[SHARED_GROUP],
        "write",
        json!({"path": "shared.txt", "content": "value = 3\n"}),
    );
    assert_eq!(r["isError"], false, "{r}");
    let m = std::fs::metadata(&file).unwrap();
    assert_eq!((m.uid(), m.gid()), (OWNER, SHARED_GROUP));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "value = 3\n");
}

#[test]
fn another_users_file_in_a_sticky_directory_is_edited_in_place() {
    let Some(s) = scene() else { return };
    chmod(&s.work, 0o1777);
    let file = s.work.join("open.txt");
    std::fs::write(&file, "shared note\n").unwrap();
    chown(&file, OWNER, OWNER);
    chmod(&file, 0o666);
    let r = run_as(
        &s,
        OTHER,
        &[],
        "edit",
        json!({"path": "open.txt", "edits": [{"oldText": "shared", "newText": "edited"}]}),
    );
    if protected_regular() {
        // The kernel refuses `echo > open.txt` here, and so the edit.
        assert_eq!(r["isError"], true, "{r}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "shared note\n");
        return;
    }
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(r["details"]["write"]["method"], "inPlace", "{r}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "edited note\n");
    assert_eq!(std::fs::metadata(&file).unwrap().uid(), OWNER);
}

/// Whether `fs.protected_regular` forbids opening another user's file in a
/// world-writable sticky directory with `O_CREAT` (as `echo >` does).
fn protected_regular() -> bool {
    std::fs::read_to_string("/proc/sys/fs/protected_regular").is_ok_and(|v| v.trim() != "0")
}

/// Sets `/proc/sys/fs/protected_symlinks` to 1 while alive (restoring the
/// old value); `None` when that is impossible.
struct ProtectedSymlinks(Option<String>);

const PROTECTED_SYMLINKS: &str = "/proc/sys/fs/protected_symlinks";

impl ProtectedSymlinks {
    fn enable() -> Option<Self> {
        let old = std::fs::read_to_string(PROTECTED_SYMLINKS).ok()?;
        if old.trim() == "1" {
            return Some(ProtectedSymlinks(None));
        }
        std::fs::write(PROTECTED_SYMLINKS, "1").ok()?;
        Some(ProtectedSymlinks(Some(old)))
    }
}

impl Drop for ProtectedSymlinks {
    fn drop(&mut self) {
        if let Some(old) = &self.0 {
            let _ = std::fs::write(PROTECTED_SYMLINKS, old.trim());
        }
    }
}

#[test]
fn another_users_symlink_in_a_sticky_directory_is_not_followed() {
    let Some(s) = scene() else { return };
    let Some(_guard) = ProtectedSymlinks::enable() else {
        eprintln!("skipping: fs.protected_symlinks cannot be enabled here");
        return;
    };
    chmod(&s.work, 0o1777);
    // OTHER's own file, which OTHER may write; OWNER plants links to it.
    let mine = s.agent_dir.join("other-notes.txt");
    std::fs::write(&mine, "other's notes\n").unwrap();
    chown(&mine, OTHER, OTHER);
    chmod(&mine, 0o644);
    let missing = s.agent_dir.join("planted.txt");
    chmod(&s.agent_dir, 0o777);
    let link = s.work.join("notes.txt");
    let dangling = s.work.join("new.txt");
    std::os::unix::fs::symlink(&mine, &link).unwrap();
    std::os::unix::fs::symlink(&missing, &dangling).unwrap();
    std::os::unix::fs::lchown(&link, Some(OWNER), Some(OWNER)).unwrap();
    std::os::unix::fs::lchown(&dangling, Some(OWNER), Some(OWNER)).unwrap();
    for name in ["notes.txt", "new.txt"] {
        let echo = Command::new("setpriv")
            .args([
                &format!("--reuid={OTHER}"),
                &format!("--regid={OTHER}"),
                "--clear-groups",
                "sh",
                "-c",
                &format!("echo shell > {name}"),
            ])
            .current_dir(&s.work)
            .output()
            .unwrap();
        assert!(!echo.status.success(), "the kernel let echo follow {name}");
        let r = run_as(
            &s,
            OTHER,
            &[],
            "write",
            json!({"path": name, "content": "followed\n"}),
        );
        assert_eq!(r["isError"], true, "{name}: {r}");
        assert!(text(&r).contains("Permission denied"), "{r}");
    }
    let r = run_as(
        &s,
        OTHER,
        &[],
        "edit",
        json!({"path": "notes.txt", "edits": [{"oldText": "notes", "newText": "gone"}]}),
    );
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "other's notes\n");
    assert!(!missing.exists(), "the dangling link's target was created");
}

#[test]
fn a_writable_file_in_a_read_only_directory_is_edited_in_place() {
    let Some(s) = scene() else { return };
    let file = s.work.join("config.txt");
    std::fs::write(&file, "debug = false\n").unwrap();
    chown(&file, OTHER, OTHER);
    chmod(&file, 0o644);
    chown(&s.work, OWNER, OWNER);
    chmod(&s.work, 0o755);
    let r = run_as(
        &s,
        OTHER,
        &[],
        "edit",
        json!({"path": "config.txt", "edits": [{"oldText": "false", "newText": "true"}]}),
    );
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(r["details"]["write"]["method"], "inPlace", "{r}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "debug = true\n");
    // The backup went to the temp dir and is gone again.
    let names: Vec<_> = std::fs::read_dir(&s.work).unwrap().collect();
    assert_eq!(names.len(), 1);
}

/// Unmounts on drop.
struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_write_only_hard_linked_file_on_a_full_disk_is_refused_not_damaged() {
    let Some(s) = scene() else { return };
    // A 64 KiB tmpfs as the work directory, then filled up.
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k,mode=0755", "tmpfs"])
        .arg(&s.work)
        .status()
        .map(|st| st.success())
        .unwrap_or(false);
    if !mounted {
        eprintln!("skipping: cannot mount a tmpfs here");
        return;
    }
    let _unmount = Unmount(s.work.clone());
    chown(&s.work, OWNER, OWNER);
    let file = s.work.join("wo.txt");
    let old = "precious old content\n".repeat(100);
    std::fs::write(&file, &old).unwrap();
    std::fs::hard_link(&file, s.work.join("wo-link.txt")).unwrap();
    chown(&file, OWNER, OWNER);
    chmod(&file, 0o200);
    // Fill the rest of the disk (root's file, so the owner cannot free it).
    {
        use std::io::Write;
        let mut filler = std::fs::File::create(s.work.join("filler")).unwrap();
        let block = vec![0u8; 4096];
        while filler.write_all(&block).is_ok() {}
    }
    let r = run_as(
        &s,
        OWNER,
        &[],
        "write",
        json!({"path": "wo.txt", "content": "new content\n".repeat(2000)}),
    );
    assert_eq!(r["isError"], true, "{r}");
    assert!(
        std::fs::read_to_string(&file).unwrap() == old,
        "the old content was lost: {r}"
    );
    assert!(text(&r).contains("backup"), "{r}");
    // The same file with room to spare: still no backup, still refused.
    std::fs::remove_file(s.work.join("filler")).unwrap();
    let r = run_as(
        &s,
        OWNER,
        &[],
        "write",
        json!({"path": "wo.txt", "content": "short\n"}),
    );
    assert_eq!(r["isError"], true, "{r}");
    assert!(text(&r).contains("backup"), "{r}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), old);
    let mut names: Vec<_> = std::fs::read_dir(&s.work)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["wo-link.txt", "wo.txt"]);
}
