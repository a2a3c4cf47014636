//! `write` and `edit` never damage what they write to: non-regular files are
//! refused, files whose identity a new inode would change are written in
//! place, symlinks are written through, and another writer's temporary file
//! is never removed.

mod common;

use std::os::unix::fs::{FileTypeExt, MetadataExt};

use common::*;
use serde_json::json;

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
async fn a_locked_temp_file_of_another_writer_is_never_removed() {
    let dir = tempfile::tempdir().unwrap();
    // A live writer in another container: its PID means nothing here (and is
    // not running in this namespace), but it holds the lock.
    let live = dir.path().join(".coding-agent-999999-live.tmp");
    let held = std::fs::File::create(&live).unwrap();
    rustix::fs::flock(&held, rustix::fs::FlockOperation::LockExclusive).unwrap();
    // A dead writer's leftover: nobody holds it, whatever PID it names.
    let dead = dir.path().join(".coding-agent-1-dead.tmp");
    std::fs::write(&dead, "partial").unwrap();
    let out = call(
        "write",
        dir.path(),
        json!({"path": "f.txt", "content": "x"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    assert!(live.exists(), "a live writer's temp file was removed");
    assert!(!dead.exists(), "a dead writer's temp file was kept");
    drop(held);
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
