//! `write` and `edit` never damage what they write to: non-regular files are
//! refused, files whose identity a new inode would change are written in
//! place, symlinks are written through as the kernel resolves them (so its
//! protections apply), ACLs are kept exactly, long names work, and no file is
//! ever removed because of its name.

use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};

use serde_json::json;
use test_support::tool_call::*;
use test_support::write;

#[tokio::test]
async fn write_refuses_a_fifo_and_leaves_it_a_fifo() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    for (tool, args) in [
        ("write", json!({"path": "pipe", "content": "x"})),
        (
            "edit",
            json!({"path": "pipe", "edits": [{"oldText": "a", "newText": "b"}]}),
        ),
    ] {
        let out = call(tool, dir.path(), args).await;
        assert!(out.is_error, "{tool}: {}", out.text);
        assert!(
            out.text.contains("FIFO") || out.text.contains("regular file"),
            "{tool}: {}",
            out.text
        );
        let t = std::fs::symlink_metadata(&fifo).unwrap().file_type();
        assert!(t.is_fifo(), "{tool} replaced the FIFO");
    }
}

#[tokio::test]
async fn write_refuses_a_socket_and_a_device_node() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let out = call("write", dir.path(), json!({"path": "sock", "content": "x"})).await;
    assert!(out.is_error, "{}", out.text);
    assert!(out.text.contains("socket"), "{}", out.text);
    assert!(
        std::fs::symlink_metadata(&sock)
            .unwrap()
            .file_type()
            .is_socket()
    );

    // A private copy of /dev/null's device numbers, never the host's own node.
    let null = dir.path().join("null");
    let made = rustix::fs::mknodat(
        rustix::fs::CWD,
        &null,
        rustix::fs::FileType::CharacterDevice,
        rustix::fs::Mode::from_raw_mode(0o666),
        rustix::fs::makedev(1, 3),
    );
    match made {
        Ok(()) => {
            let out = call("write", dir.path(), json!({"path": "null", "content": "x"})).await;
            assert!(out.is_error, "{}", out.text);
            assert!(out.text.contains("character device"), "{}", out.text);
            assert!(
                std::fs::symlink_metadata(&null)
                    .unwrap()
                    .file_type()
                    .is_char_device()
            );
        }
        // Not root: the FIFO and socket cases cover the rule.
        Err(e) => eprintln!("skipping the device node case: {e}"),
    }
}

#[tokio::test]
async fn write_through_a_dangling_symlink_creates_its_target() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("real")).unwrap();
    std::os::unix::fs::symlink("real/new.txt", dir.path().join("link.txt")).unwrap();
    let out = call(
        "write",
        dir.path(),
        json!({"path": "link.txt", "content": "hello\n"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    let link = std::fs::symlink_metadata(dir.path().join("link.txt")).unwrap();
    assert!(link.file_type().is_symlink(), "the link was replaced");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("real/new.txt")).unwrap(),
        "hello\n"
    );
    assert_eq!(out.result.details["write"]["method"], "created");
}

#[tokio::test]
async fn hard_linked_files_are_edited_in_place() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.txt", "one\ntwo\n");
    std::fs::hard_link(dir.path().join("a.txt"), dir.path().join("b.txt")).unwrap();
    let ino = std::fs::metadata(dir.path().join("a.txt")).unwrap().ino();
    let out = call(
        "edit",
        dir.path(),
        json!({"path": "a.txt", "edits": [{"oldText": "two", "newText": "TWO"}]}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(out.result.details["write"]["method"], "inPlace");
    assert!(
        out.result.details["write"]["reason"]
            .as_str()
            .unwrap()
            .contains("hard links")
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("b.txt")).unwrap(),
        "one\nTWO\n"
    );
    assert_eq!(
        std::fs::metadata(dir.path().join("a.txt")).unwrap().ino(),
        ino
    );
    let out = call(
        "write",
        dir.path(),
        json!({"path": "b.txt", "content": "short\n"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "short\n"
    );
    // No backup file is left once the write is synced.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a.txt", "b.txt"]);
}

#[tokio::test]
async fn extended_attributes_survive_an_edit() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "x.txt", "alpha\n");
    let path = dir.path().join("x.txt");
    if let Err(e) = rustix::fs::setxattr(
        &path,
        "user.origin",
        b"kept",
        rustix::fs::XattrFlags::empty(),
    ) {
        eprintln!("skipping: no user xattrs here ({e})");
        return;
    }
    let out = call(
        "edit",
        dir.path(),
        json!({"path": "x.txt", "edits": [{"oldText": "alpha", "newText": "beta"}]}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "beta\n");
    let mut buf = [0u8; 16];
    let n = rustix::fs::getxattr(&path, "user.origin", &mut buf[..]).unwrap();
    assert_eq!(&buf[..n], b"kept");
}

#[tokio::test]
async fn files_named_like_temp_files_are_never_removed() {
    let dir = tempfile::tempdir().unwrap();
    // A user's file that looks like one of ours is written and stays.
    let out = call(
        "write",
        dir.path(),
        json!({"path": ".coding-agent-cache.tmp", "content": "cache\n"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(out.result.details["write"]["method"], "created");
    // Files nobody holds a lock on, whatever their names say.
    let held_name = dir.path().join(".coding-agent-999999-live.tmp");
    let held = std::fs::File::create(&held_name).unwrap();
    rustix::fs::flock(&held, rustix::fs::FlockOperation::LockExclusive).unwrap();
    let unheld = dir.path().join(".coding-agent-1-dead.tmp");
    std::fs::write(&unheld, "user data").unwrap();
    // Exactly the shape of our temporary names, but not marked as ours.
    let shaped = dir.path().join(".coding-agent-0123456789abcdef.tmp");
    std::fs::write(&shaped, "user data").unwrap();
    for (tool, args) in [
        ("write", json!({"path": "f.txt", "content": "x"})),
        ("write", json!({"path": "f.txt", "content": "y"})),
        (
            "edit",
            json!({"path": "f.txt", "edits": [{"oldText": "y", "newText": "z"}]}),
        ),
        (
            "edit",
            json!({"path": ".coding-agent-cache.tmp", "edits": [{"oldText": "cache", "newText": "kept"}]}),
        ),
    ] {
        let out = call(tool, dir.path(), args).await;
        assert!(!out.is_error, "{tool}: {}", out.text);
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".coding-agent-cache.tmp")).unwrap(),
        "kept\n"
    );
    assert_eq!(std::fs::read_to_string(&unheld).unwrap(), "user data");
    assert_eq!(std::fs::read_to_string(&shaped).unwrap(), "user data");
    assert!(held_name.exists());
    // Nothing of ours is left behind either.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            ".coding-agent-0123456789abcdef.tmp",
            ".coding-agent-1-dead.tmp",
            ".coding-agent-999999-live.tmp",
            ".coding-agent-cache.tmp",
            "f.txt"
        ]
    );
    drop(held);
}

#[tokio::test]
async fn only_temp_files_marked_as_ours_and_unlocked_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    let mark = |name: &str, dest: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, "partial").unwrap();
        rustix::fs::setxattr(
            &path,
            "user.coding-agent.temp",
            dest.as_bytes(),
            rustix::fs::XattrFlags::empty(),
        )
        .map(|()| path)
    };
    // A killed writer's leftover: marked for another name, nobody holds it.
    let dead = match mark(".coding-agent-00000000000000aa.tmp", "f.txt") {
        Ok(p) => p,
        Err(e) => {
            eprintln!("skipping: no user xattrs here ({e})");
            return;
        }
    };
    // A live writer's (another process, another container): locked.
    let live = mark(".coding-agent-00000000000000bb.tmp", "f.txt").unwrap();
    let held = std::fs::File::open(&live).unwrap();
    rustix::fs::flock(&held, rustix::fs::FlockOperation::LockExclusive).unwrap();
    // Renamed into place before its writer died: the mark names itself.
    let placed = mark(
        ".coding-agent-00000000000000cc.tmp",
        ".coding-agent-00000000000000cc.tmp",
    )
    .unwrap();
    // Marked but hard-linked elsewhere: not a temporary file.
    let linked = mark(".coding-agent-00000000000000dd.tmp", "f.txt").unwrap();
    std::fs::hard_link(&linked, dir.path().join("keep-link")).unwrap();
    let out = call(
        "write",
        dir.path(),
        json!({"path": "f.txt", "content": "x"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    assert!(!dead.exists(), "a dead writer's temp file was kept");
    assert!(live.exists(), "a live writer's temp file was removed");
    assert!(placed.exists(), "a file renamed into place was removed");
    assert!(linked.exists(), "a hard-linked file was removed");
    // Our own temp file's mark never stays on the written file.
    let mut buf = [0u8; 64];
    assert!(
        rustix::fs::getxattr(
            dir.path().join("f.txt"),
            "user.coding-agent.temp",
            &mut buf[..]
        )
        .is_err()
    );
    drop(held);
}

/// Sets `/proc/sys/fs/protected_symlinks` to 1 for the test's duration (the
/// distributions' default); `None` when it cannot be set (not root).
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

#[tokio::test]
async fn a_foreign_symlink_in_a_sticky_directory_is_refused_as_echo_refuses_it() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipping: needs root to plant another user's symlink");
        return;
    }
    let Some(_guard) = ProtectedSymlinks::enable() else {
        eprintln!("skipping: fs.protected_symlinks cannot be enabled here");
        return;
    };
    let base = tempfile::tempdir().unwrap();
    let sticky = base.path().join("shared");
    std::fs::create_dir(&sticky).unwrap();
    std::fs::set_permissions(&sticky, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let victim = base.path().join("victim.txt");
    std::fs::write(&victim, "root's data\n").unwrap();
    let planted = base.path().join("planted.txt");
    // Another user's links: one to an existing file, one dangling.
    let link = sticky.join("link.txt");
    let dangling = sticky.join("dangling.txt");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    std::os::unix::fs::symlink(&planted, &dangling).unwrap();
    std::os::unix::fs::lchown(&link, Some(41002), Some(41002)).unwrap();
    std::os::unix::fs::lchown(&dangling, Some(41002), Some(41002)).unwrap();

    for name in ["link.txt", "dangling.txt"] {
        let echo = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("echo shell > {name}"))
            .current_dir(&sticky)
            .output()
            .unwrap();
        assert!(
            !echo.status.success(),
            "the kernel followed {name} for echo"
        );
        let out = call(
            "write",
            &sticky,
            json!({"path": name, "content": "overwritten\n"}),
        )
        .await;
        assert!(out.is_error, "write followed {name}: {}", out.text);
        assert!(out.text.contains("Permission denied"), "{}", out.text);
        let out = call(
            "edit",
            &sticky,
            json!({"path": name, "edits": [{"oldText": "root", "newText": "evil"}]}),
        )
        .await;
        assert!(out.is_error, "edit followed {name}: {}", out.text);
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root's data\n");
    assert!(!planted.exists(), "the dangling link's target was created");
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );

    // Our own link in the same directory is followed, as echo follows it.
    let own = sticky.join("own.txt");
    std::os::unix::fs::symlink(&victim, &own).unwrap();
    let out = call(
        "write",
        &sticky,
        json!({"path": "own.txt", "content": "mine\n"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine\n");
}

/// A POSIX ACL in its extended-attribute form: `(tag, perm, id)` entries,
/// sorted by tag then id.
fn acl_xattr(entries: &[(u16, u16, u32)]) -> Vec<u8> {
    let mut out = 2u32.to_le_bytes().to_vec();
    for &(tag, perm, id) in entries {
        out.extend_from_slice(&tag.to_le_bytes());
        out.extend_from_slice(&perm.to_le_bytes());
        out.extend_from_slice(&id.to_le_bytes());
    }
    out
}

const ACL_UNDEFINED_ID: u32 = u32::MAX;

fn get_acl(path: &std::path::Path) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; 1024];
    match rustix::fs::getxattr(path, "system.posix_acl_access", &mut buf[..]) {
        Ok(n) => {
            buf.truncate(n);
            Some(buf)
        }
        Err(rustix::io::Errno::NODATA) => None,
        Err(e) => panic!("getxattr: {e}"),
    }
}

#[tokio::test]
async fn an_edit_keeps_exactly_the_original_acl() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "plain.txt", "mode = 0640\n");
    write(dir.path(), "acl.txt", "has an acl\n");
    let plain = dir.path().join("plain.txt");
    let with_acl = dir.path().join("acl.txt");
    std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o640)).unwrap();
    // The file's own ACL: user 41002 may read.
    let own = acl_xattr(&[
        (0x01, 6, ACL_UNDEFINED_ID),
        (0x02, 4, 41002),
        (0x04, 4, ACL_UNDEFINED_ID),
        (0x10, 4, ACL_UNDEFINED_ID),
        (0x20, 0, ACL_UNDEFINED_ID),
    ]);
    if let Err(e) = rustix::fs::setxattr(
        &with_acl,
        "system.posix_acl_access",
        &own,
        rustix::fs::XattrFlags::empty(),
    ) {
        eprintln!("skipping: no POSIX ACLs on this file system ({e})");
        return;
    }
    let own = get_acl(&with_acl).unwrap();
    let acl_mode = std::fs::metadata(&with_acl).unwrap().mode() & 0o7777;
    // The directory's default ACL (what `setfacl -d -m u:41001:rwx` adds).
    let default = acl_xattr(&[
        (0x01, 7, ACL_UNDEFINED_ID),
        (0x02, 7, 41001),
        (0x04, 5, ACL_UNDEFINED_ID),
        (0x10, 7, ACL_UNDEFINED_ID),
        (0x20, 5, ACL_UNDEFINED_ID),
    ]);
    rustix::fs::setxattr(
        dir.path(),
        "system.posix_acl_default",
        &default,
        rustix::fs::XattrFlags::empty(),
    )
    .unwrap();
    assert_eq!(get_acl(&plain), None);
    for (name, path) in [("plain.txt", &plain), ("acl.txt", &with_acl)] {
        let out = call(
            "edit",
            dir.path(),
            json!({"path": name, "edits": [{"oldText": "\n", "newText": " (edited)\n"}]}),
        )
        .await;
        assert!(!out.is_error, "{}", out.text);
        assert_eq!(out.result.details["write"]["method"], "replaced");
        assert!(
            std::fs::read_to_string(path)
                .unwrap()
                .ends_with("(edited)\n")
        );
    }
    assert_eq!(
        get_acl(&plain),
        None,
        "the directory's default ACL was added"
    );
    assert_eq!(std::fs::metadata(&plain).unwrap().mode() & 0o7777, 0o640);
    assert_eq!(get_acl(&with_acl), Some(own), "the file's own ACL changed");
    assert_eq!(
        std::fs::metadata(&with_acl).unwrap().mode() & 0o7777,
        acl_mode
    );
    // A new file gets what `echo >` would give it: the default ACL.
    let out = call(
        "write",
        dir.path(),
        json!({"path": "new.txt", "content": "n\n"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    assert!(get_acl(&dir.path().join("new.txt")).is_some());
}

/// A name of `len` bytes ending in `.txt`.
fn long_name(len: usize) -> String {
    format!("{}.txt", "n".repeat(len - 4))
}

#[tokio::test]
async fn files_with_long_names_are_edited_in_place_and_replaced() {
    let dir = tempfile::tempdir().unwrap();
    for len in [240, 255] {
        let name = long_name(len);
        let twin = format!("twin-{len}.txt");
        write(dir.path(), &name, "value = 1\n");
        std::fs::hard_link(dir.path().join(&name), dir.path().join(&twin)).unwrap();
        // In place (two links): the backup's name must fit too.
        let out = call(
            "edit",
            dir.path(),
            json!({"path": name, "edits": [{"oldText": "= 1", "newText": "= 2"}]}),
        )
        .await;
        assert!(!out.is_error, "{len}: {}", out.text);
        assert_eq!(out.result.details["write"]["method"], "inPlace");
        assert_eq!(
            std::fs::read_to_string(dir.path().join(&twin)).unwrap(),
            "value = 2\n"
        );
        // Atomic replace (one link).
        std::fs::remove_file(dir.path().join(&twin)).unwrap();
        let out = call(
            "write",
            dir.path(),
            json!({"path": name, "content": "value = 3\n"}),
        )
        .await;
        assert!(!out.is_error, "{len}: {}", out.text);
        assert_eq!(out.result.details["write"]["method"], "replaced");
    }
    let count = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(count, 2, "backups or temp files were left behind");
}

#[tokio::test]
async fn a_bind_mounted_file_is_edited_in_place() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "source.txt", "mounted = 1\n");
    write(dir.path(), "target.txt", "placeholder\n");
    let src = dir.path().join("source.txt");
    let dst = dir.path().join("target.txt");
    let mounted = std::process::Command::new("mount")
        .arg("--bind")
        .arg(&src)
        .arg(&dst)
        .status();
    if !matches!(mounted, Ok(s) if s.success()) {
        eprintln!("skipping: bind mounts are not permitted here");
        return;
    }
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let _guard = Unmount(dst.clone());
    let out = call(
        "edit",
        dir.path(),
        json!({"path": "target.txt", "edits": [{"oldText": "= 1", "newText": "= 2"}]}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(out.result.details["write"]["method"], "inPlace");
    assert_eq!(std::fs::read_to_string(&src).unwrap(), "mounted = 2\n");
}
