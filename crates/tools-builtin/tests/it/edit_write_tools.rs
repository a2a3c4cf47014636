//! `edit` and `write` on real files.

use std::os::unix::fs::PermissionsExt;

use serde_json::json;
use test_support::tool_call::*;
use test_support::write;

fn read(dir: &std::path::Path, rel: &str) -> String {
    std::fs::read_to_string(dir.join(rel)).unwrap()
}

#[tokio::test]
async fn edit_replaces_and_reports_diff_and_patch() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.txt", "Hello, world!");
    let out = call(
        "edit",
        dir.path(),
        json!({"path": "a.txt", "edits": [{"oldText": "world", "newText": "testing"}]}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(out.text, "Successfully replaced 1 block(s) in a.txt.");
    assert_eq!(read(dir.path(), "a.txt"), "Hello, testing!");
    assert_eq!(
        out.result.details["diff"],
        "-1 Hello, world!\n+1 Hello, testing!"
    );
    assert_eq!(out.result.details["firstChangedLine"], 1);
    let patch = out.result.details["patch"].as_str().unwrap();
    assert!(patch.starts_with("--- a.txt\n+++ a.txt\n"), "{patch}");
    assert!(patch.contains("\\ No newline at end of file"), "{patch}");
}

#[tokio::test]
async fn legacy_and_string_shapes_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.txt", "a b c\n");
    let out = call(
        "edit",
        dir.path(),
        json!({"path": "a.txt", "oldText": "a", "newText": "A"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    let out = call(
        "edit",
        dir.path(),
        json!({"path": "a.txt", "edits": "[{\"oldText\":\"b\",\"newText\":\"B\"}]", "oldText": "c", "newText": "C"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(out.text, "Successfully replaced 2 block(s) in a.txt.");
    assert_eq!(read(dir.path(), "a.txt"), "A B C\n");
}

#[tokio::test]
async fn edit_failures_leave_the_file_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let original = "one\ntwo\nthree\n";
    write(dir.path(), "a.txt", original);
    for (edits, expect) in [
        (
            json!([{"oldText": "one", "newText": "1"}, {"oldText": "nine", "newText": "9"}]),
            "Could not find edits[1] in a.txt.",
        ),
        (
            json!([{"oldText": "o", "newText": "0"}]),
            "Found 2 occurrences of the text in a.txt.",
        ),
        (
            json!([{"oldText": "one\ntwo", "newText": "x"}, {"oldText": "two\nthree", "newText": "y"}]),
            "edits[0] and edits[1] overlap in a.txt.",
        ),
        (
            json!([]),
            "Edit tool input is invalid. edits must contain at least one replacement.",
        ),
    ] {
        let out = call("edit", dir.path(), json!({"path": "a.txt", "edits": edits})).await;
        assert!(out.is_error);
        assert!(out.text.starts_with(expect), "{} / {}", out.text, expect);
        assert_eq!(read(dir.path(), "a.txt"), original);
    }
    let out = call(
        "edit",
        dir.path(),
        json!({"path": "missing.txt", "edits": [{"oldText": "a", "newText": "b"}]}),
    )
    .await;
    assert_eq!(
        out.text,
        "Could not edit file: missing.txt. Error code: ENOENT."
    );
    let out = call(
        "edit",
        dir.path(),
        json!({"path": ".", "edits": [{"oldText": "a", "newText": "b"}]}),
    )
    .await;
    assert_eq!(out.text, "Could not edit file: .. Path is a directory.");
}

#[tokio::test]
async fn edit_keeps_bom_line_endings_and_permissions() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "w.txt", "\u{FEFF}alpha\r\nbeta\r\ngamma\r\n");
    std::fs::set_permissions(
        dir.path().join("w.txt"),
        std::fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    let out = call(
        "edit",
        dir.path(),
        json!({"path": "w.txt", "edits": [{"oldText": "beta\ngamma", "newText": "BETA\nGAMMA"}]}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(
        read(dir.path(), "w.txt"),
        "\u{FEFF}alpha\r\nBETA\r\nGAMMA\r\n"
    );
    let mode = std::fs::metadata(dir.path().join("w.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o640);
    // No temp files left behind.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
}

#[tokio::test]
async fn fuzzy_edit_touches_only_the_span() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "q.txt",
        "let s = \u{201C}hi\u{201D}; // \u{2018}note\u{2019}   \nnext\n",
    );
    let out = call(
        "edit",
        dir.path(),
        json!({"path": "q.txt", "edits": [{"oldText": "\"hi\"", "newText": "\"bye\""}]}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(
        read(dir.path(), "q.txt"),
        "let s = \"bye\"; // \u{2018}note\u{2019}   \nnext\n"
    );
}

#[tokio::test]
async fn edit_through_a_symlink_changes_the_target() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "real.txt", "x = 1\n");
    std::os::unix::fs::symlink(dir.path().join("real.txt"), dir.path().join("link.txt")).unwrap();
    let out = call(
        "edit",
        dir.path(),
        json!({"path": "link.txt", "edits": [{"oldText": "1", "newText": "2"}]}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(read(dir.path(), "real.txt"), "x = 2\n");
    assert!(
        std::fs::symlink_metadata(dir.path().join("link.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[tokio::test]
async fn write_creates_parents_reports_bytes_and_keeps_links() {
    let dir = tempfile::tempdir().unwrap();
    let out = call(
        "write",
        dir.path(),
        json!({"path": "deep/er/f.txt", "content": "héllo 😀"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(out.text, "Successfully wrote 11 bytes to deep/er/f.txt");
    assert_eq!(out.result.details, json!({"write": {"method": "created"}}));
    assert_eq!(read(dir.path(), "deep/er/f.txt"), "héllo 😀");

    write(dir.path(), "target.txt", "old");
    std::fs::set_permissions(
        dir.path().join("target.txt"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    std::os::unix::fs::symlink(dir.path().join("target.txt"), dir.path().join("alias.txt"))
        .unwrap();
    let out = call(
        "write",
        dir.path(),
        json!({"path": "alias.txt", "content": "new"}),
    )
    .await;
    assert!(!out.is_error);
    assert_eq!(read(dir.path(), "target.txt"), "new");
    assert!(
        std::fs::symlink_metadata(dir.path().join("alias.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let mode = std::fs::metadata(dir.path().join("target.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    let out = call(
        "write",
        dir.path(),
        json!({"path": "target.txt/child", "content": "x"}),
    )
    .await;
    assert!(out.is_error, "{}", out.text);
    let out = call("write", dir.path(), json!({"path": "deep", "content": "x"})).await;
    assert!(out.is_error);
    assert!(
        out.text.contains("is a directory") || out.text.starts_with("Path is a directory"),
        "{}",
        out.text
    );
}

#[tokio::test]
async fn write_and_edit_on_a_full_disk_keep_the_old_file() {
    // A 64 KiB tmpfs; mounting needs privileges the test may not have.
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(&mnt)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !mounted {
        eprintln!("skipped: cannot mount a tmpfs here");
        return;
    }
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let _guard = Unmount(mnt.clone());
    write(&mnt, "keep.txt", "precious\n");
    let big = "x".repeat(200 * 1024);
    let out = call("write", &mnt, json!({"path": "keep.txt", "content": big})).await;
    assert!(out.is_error, "{}", out.text);
    assert!(out.text.to_lowercase().contains("space"), "{}", out.text);
    assert_eq!(read(&mnt, "keep.txt"), "precious\n");
    let out = call(
        "edit",
        &mnt,
        json!({"path": "keep.txt", "edits": [{"oldText": "precious", "newText": big}]}),
    )
    .await;
    assert!(out.is_error, "{}", out.text);
    assert_eq!(read(&mnt, "keep.txt"), "precious\n");
    let names: Vec<_> = std::fs::read_dir(&mnt)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "temp files left: {names:?}");
}

#[tokio::test]
async fn a_match_never_splits_a_combining_sequence() {
    let dir = tempfile::tempdir().unwrap();
    let original = "name = \"cafe\u{301}\"\nkey = \"cafe\"\n";
    write(dir.path(), "c.toml", original);
    let out = call(
        "edit",
        dir.path(),
        json!({"path": "c.toml", "edits": [{"oldText": "= \"cafe", "newText": "= \"tea"}]}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(
        read(dir.path(), "c.toml"),
        "name = \"cafe\u{301}\"\nkey = \"tea\"\n",
        "the accented line was touched"
    );
    // The same text twice at whole-character boundaries is ambiguous.
    write(dir.path(), "d.toml", "a = \"x\"\nb = \"x\"\n");
    let out = call(
        "edit",
        dir.path(),
        json!({"path": "d.toml", "edits": [{"oldText": "= \"x\"", "newText": "= \"y\""}]}),
    )
    .await;
    assert!(out.is_error);
    assert!(out.text.starts_with("Found 2 occurrences"), "{}", out.text);
}

#[tokio::test]
async fn a_match_never_splits_a_compatibility_expansion() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "l.txt", "a\u{FB01}b\n");
    let out = call(
        "edit",
        dir.path(),
        json!({"path": "l.txt", "edits": [{"oldText": "i", "newText": "I"}]}),
    )
    .await;
    assert!(out.is_error, "{}", out.text);
    assert!(out.text.starts_with("Could not find"), "{}", out.text);
    assert_eq!(read(dir.path(), "l.txt"), "a\u{FB01}b\n");
    // The whole ligature still matches its expansion.
    let out = call(
        "edit",
        dir.path(),
        json!({"path": "l.txt", "edits": [{"oldText": "afib", "newText": "done"}]}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(read(dir.path(), "l.txt"), "done\n");
}

#[tokio::test]
async fn lone_cr_files_keep_their_line_ending() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "mac.txt", "one\rtwo\rthree\r");
    let out = call(
        "edit",
        dir.path(),
        json!({"path": "mac.txt", "edits": [{"oldText": "two", "newText": "two\nand a half"}]}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(read(dir.path(), "mac.txt"), "one\rtwo\rand a half\rthree\r");
}

/// Edits per process in the two-process race.
const RACE_EDITS: usize = 100;

/// One side of [`two_processes_editing_one_file_lose_no_edit`]: runs only
/// when started by it (as a child process of this test binary).
#[tokio::test]
async fn edit_race_child() {
    let (Ok(dir), Ok(role)) = (
        std::env::var("EDIT_RACE_DIR"),
        std::env::var("EDIT_RACE_ROLE"),
    ) else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    // Start together: announce, then wait (bounded) for the other side.
    std::fs::write(dir.join(format!("ready-{role}")), "").unwrap();
    let other = if role == "a" { "ready-b" } else { "ready-a" };
    for _ in 0..10_000 {
        if dir.join(other).exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let (mut ok, mut failed) = (0, 0);
    for i in 0..RACE_EDITS {
        let out = call(
            "edit",
            &dir,
            json!({"path": "shared.txt", "edits": [{"oldText": format!("{role}{i} = 0\n"), "newText": format!("{role}{i} = 1\n")}]}),
        )
        .await;
        if out.is_error {
            failed += 1;
            println!("RACE-ERROR {}", out.text);
        } else {
            ok += 1;
        }
    }
    println!("RACE-RESULT {role} ok={ok} failed={failed}");
}

#[test]
fn two_processes_editing_one_file_lose_no_edit() {
    let dir = tempfile::tempdir().unwrap();
    let mut content = String::new();
    for i in 0..RACE_EDITS {
        content.push_str(&format!("a{i} = 0\nb{i} = 0\n"));
    }
    write(dir.path(), "shared.txt", &content);
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|role| {
            std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "edit_write_tools::edit_race_child",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("EDIT_RACE_DIR", dir.path())
                .env("EDIT_RACE_ROLE", role)
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let final_text = |dir: &std::path::Path| read(dir, "shared.txt");
    let mut reported_ok = 0;
    for (role, child) in ["a", "b"].into_iter().zip(children) {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}");
        // The harness may print its own text before ours on a line.
        let tag = format!("RACE-RESULT {role} ");
        let line = stdout
            .lines()
            .find_map(|l| l.find(&tag).map(|at| &l[at..]))
            .unwrap_or_else(|| panic!("no result from {role}: {stdout}"));
        let ok: usize = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("ok="))
            .unwrap()
            .parse()
            .unwrap();
        // An edit reported as failed must say why: a conflict, never silence.
        for err in stdout.lines().filter(|l| l.contains("RACE-ERROR")) {
            assert!(err.contains("changing on disk"), "{err}");
        }
        let text = final_text(dir.path());
        let present = (0..RACE_EDITS)
            .filter(|i| text.contains(&format!("{role}{i} = 1\n")))
            .count();
        assert_eq!(
            present, ok,
            "{role}: {ok} edits reported success, {present} are in the file"
        );
        reported_ok += ok;
    }
    // Each side's edits are retried after a conflict, so all of them land.
    assert_eq!(reported_ok, 2 * RACE_EDITS);
    assert_eq!(final_text(dir.path()).lines().count(), 2 * RACE_EDITS);
}

/// A huge file (here sparse: 2 GiB that take no room) is refused up front
/// instead of being loaded with its views into memory.
#[tokio::test]
async fn edit_refuses_files_too_large_to_hold() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sparse.txt");
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(2 << 30).unwrap();
    drop(file);
    let out = call(
        "edit",
        dir.path(),
        json!({"path": "sparse.txt", "edits": [{"oldText": "needle", "newText": "pin"}]}),
    )
    .await;
    assert!(out.is_error);
    assert!(out.text.contains("more than edit handles"), "{}", out.text);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 2 << 30);
}
