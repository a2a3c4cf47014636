//! The submodules of a repository, read from its index.
//!
//! `git status` in a repository looks into each submodule through the
//! submodule's `.git` (usually a one-line file naming its repository). A
//! command that rewrote that file could point git at a configuration of its
//! own making, whose `core.fsmonitor` would then run outside the sandbox.
//! So each submodule's `.git` stays read-only, and the list of submodules
//! comes from the index (inside `.git`, itself read-only), never from
//! `.gitmodules`, which a command may edit.

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

/// The index entry mode of a submodule (a "gitlink").
const GITLINK: u32 = 0o160000;
/// Bounds against a hostile or huge index.
const MAX_INDEX_BYTES: u64 = 512 * 1024 * 1024;
const MAX_DEPTH: usize = 64;
const MAX_ENTRIES: usize = 4096;

/// Gitlink paths per index file, kept while the file is unchanged: a big
/// repository's index is megabytes, and every command would read it.
type Cache = HashMap<PathBuf, ((u64, SystemTime, u64), Vec<Vec<u8>>)>;
static CACHE: Mutex<Option<Cache>> = Mutex::new(None);

/// The `.git` entries of the submodules below `worktree`, nested ones
/// included, whether they exist yet or not.
///
/// # Errors
/// An index that cannot be read whole: what it lists cannot be protected,
/// so the caller refuses rather than run with some submodules writable.
pub(crate) fn submodule_git_entries(worktree: &Path) -> Result<Vec<PathBuf>, String> {
    let mut found = Vec::new();
    let mut pending = vec![(worktree.to_path_buf(), 0usize)];
    while let Some((tree, depth)) = pending.pop() {
        let Some(git_dir) = git_dir_of(&tree) else {
            continue;
        };
        // With `core.splitIndex` most entries live in a shared index file
        // next to `index`: read them all.
        let mut indexes = vec![git_dir.join("index")];
        if let Ok(read) = std::fs::read_dir(&git_dir) {
            indexes.extend(
                read.flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with("sharedindex."))
                    .map(|e| e.path()),
            );
        }
        let hash_len = hash_len(&git_dir);
        // Paths as git stores them: bytes, not necessarily UTF-8.
        let mut paths: Vec<Vec<u8>> = Vec::new();
        for index in &indexes {
            paths.extend(gitlinks(index, hash_len)?);
        }
        // Linked worktrees the repository knows of (`git worktree add`):
        // their `.git` files, wherever they are.
        if let Ok(read) = std::fs::read_dir(git_dir.join("worktrees")) {
            for entry in read.flatten().take(MAX_ENTRIES) {
                let Some(text) = crate::policy::read_small(&entry.path().join("gitdir")) else {
                    continue;
                };
                // Absolute, or (git 2.48's `--relative-paths`) relative to
                // the directory of this `gitdir` file.
                // Spelled out, not resolved: a link there is refused later
                // (a mount would follow it and leave the link replaceable).
                let named = agent_tool::path::normalize_path(&entry.path().join(text.trim()));
                if !found.contains(&named) {
                    found.push(named);
                }
            }
        }
        for path in paths {
            // Only what lies inside the worktree, spelled without `..`.
            if path
                .split(|&b| b == b'/')
                .any(|c| c.is_empty() || c == b"." || c == b"..")
            {
                continue;
            }
            let sub = tree.join(std::ffi::OsStr::from_bytes(&path));
            let entry = sub.join(".git");
            if found.contains(&entry) {
                continue;
            }
            found.push(entry);
            if found.len() >= MAX_ENTRIES {
                return Ok(found);
            }
            if depth + 1 < MAX_DEPTH {
                pending.push((sub, depth + 1));
            }
        }
    }
    Ok(found)
}

/// The length of an object id in the repository at `git_dir`: 32 bytes
/// when its configuration (or its common directory's) says
/// `extensions.objectFormat = sha256`, 20 (SHA-1) otherwise. The index
/// entries are laid out around it.
fn hash_len(git_dir: &Path) -> usize {
    let common = crate::policy::read_small(&git_dir.join("commondir"))
        .map(|c| git_dir.join(c.trim()))
        .unwrap_or_else(|| git_dir.to_path_buf());
    let Ok(Some(config)) =
        agent_tool::regular_file::read_regular_file(&common.join("config"), 1 << 20)
    else {
        return 20;
    };
    let mut section = String::new();
    for line in config.lines() {
        let line = line.trim();
        if let Some(name) = line.strip_prefix('[') {
            section = name.trim_end_matches(']').trim().to_ascii_lowercase();
            continue;
        }
        if section == "extensions"
            && let Some((key, value)) = line.split_once('=')
            && key.trim().eq_ignore_ascii_case("objectformat")
            && value
                .trim()
                .trim_matches('"')
                .eq_ignore_ascii_case("sha256")
        {
            return 32;
        }
    }
    20
}

/// The repository directory of a worktree: its `.git` directory, or the
/// one a `.git` file names (`gitdir: ../.git/modules/x`).
fn git_dir_of(worktree: &Path) -> Option<PathBuf> {
    let dot_git = worktree.join(".git");
    let meta = std::fs::symlink_metadata(&dot_git).ok()?;
    if meta.is_dir() {
        return Some(dot_git);
    }
    if !meta.is_file() || meta.len() > 4096 {
        return None;
    }
    let text = crate::policy::read_small(&dot_git)?;
    let named = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    Some(worktree.join(named))
}

/// The paths of the gitlinks in the index file `index` (none when there
/// is no index), whose object ids are `hash_len` bytes long.
fn gitlinks(index: &Path, hash_len: usize) -> Result<Vec<Vec<u8>>, String> {
    let Ok(meta) = std::fs::metadata(index) else {
        return Ok(Vec::new());
    };
    if !meta.is_file() || meta.len() > MAX_INDEX_BYTES {
        return Err(format!(
            "{} is not a git index of at most {} MB",
            index.display(),
            MAX_INDEX_BYTES >> 20
        ));
    }
    use std::os::unix::fs::MetadataExt;
    let key = (
        meta.ino(),
        meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        meta.len(),
    );
    let mut cache = CACHE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((k, links)) = cache.get_or_insert_with(HashMap::new).get(index)
        && *k == key
    {
        return Ok(links.clone());
    }
    let bytes = agent_tool::regular_file::read_regular_bytes(index, MAX_INDEX_BYTES)
        .map_err(|e| format!("{}: {e}", index.display()))?
        .unwrap_or_default();
    let links = parse_gitlinks(&bytes, hash_len).map_err(|why| {
        format!(
            "cannot read the submodules from the git index {} ({why})",
            index.display()
        )
    })?;
    cache
        .get_or_insert_with(HashMap::new)
        .insert(index.to_path_buf(), (key, links.clone()));
    Ok(links)
}

/// The gitlink paths of an index (format versions 2, 3 and 4, object ids
/// of `hash_len` bytes).
///
/// # Errors
/// Anything that is not a whole index of those versions, with what.
fn parse_gitlinks(bytes: &[u8], hash_len: usize) -> Result<Vec<Vec<u8>>, String> {
    let be32 = |at: usize| -> Option<u32> {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let mut out = Vec::new();
    let truncated = || "truncated".to_string();
    if bytes.get(..4) != Some(b"DIRC") {
        return Err("no index signature".into());
    }
    let (Some(version), Some(count)) = (be32(4), be32(8)) else {
        return Err(truncated());
    };
    if !(2..=4).contains(&version) {
        return Err(format!("index version {version}"));
    }
    let mut at = 12usize;
    let mut previous: Vec<u8> = Vec::new();
    for _ in 0..count {
        // ctime, mtime, dev, ino (24 bytes), then mode.
        let Some(mode) = be32(at + 24) else {
            return Err(truncated());
        };
        let flags_at = at + 40 + hash_len;
        let Some(flags) = bytes
            .get(flags_at..flags_at + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
        else {
            return Err(truncated());
        };
        let mut header = 42 + hash_len;
        if version >= 3 && flags & 0x4000 != 0 {
            header += 2;
        }
        let name_start = at + header;
        let path: Vec<u8>;
        let next;
        if version == 4 {
            // The number of bytes to drop from the previous path (git's
            // offset varint), then the rest, NUL-terminated; no padding.
            let mut i = name_start;
            let Some(&first) = bytes.get(i) else {
                return Err(truncated());
            };
            let mut strip = u64::from(first & 0x7f);
            let mut byte = first;
            while byte & 0x80 != 0 {
                i += 1;
                let Some(&b) = bytes.get(i) else {
                    return Err(truncated());
                };
                byte = b;
                strip = ((strip + 1) << 7) | u64::from(b & 0x7f);
            }
            i += 1;
            let Some(end) = bytes[i.min(bytes.len())..].iter().position(|&b| b == 0) else {
                return Err(truncated());
            };
            let Ok(strip) = usize::try_from(strip) else {
                return Err(truncated());
            };
            let Some(keep) = previous.len().checked_sub(strip) else {
                return Err(truncated());
            };
            let mut p = previous[..keep].to_vec();
            p.extend_from_slice(&bytes[i..i + end]);
            path = p;
            next = i + end + 1;
        } else {
            let Some(end) = bytes
                .get(name_start..)
                .and_then(|rest| rest.iter().position(|&b| b == 0))
            else {
                return Err(truncated());
            };
            path = bytes[name_start..name_start + end].to_vec();
            // Entries are padded with NULs to a multiple of 8 bytes.
            next = at + (header + end + 8) / 8 * 8;
        }
        if mode & 0o170000 == GITLINK {
            out.push(path.clone());
        }
        previous = path;
        at = next;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let ok = std::process::Command::new("git")
            .args([
                "-c",
                "user.email=a@b",
                "-c",
                "user.name=a",
                "-c",
                "protocol.file.allow=always",
            ])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(
            ok.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&ok.stderr)
        );
    }

    /// Every index version git writes, read by this parser, against git's
    /// own listing of the gitlinks.
    #[test]
    fn gitlinks_are_read_from_every_index_version() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::create_dir(&src).unwrap();
        git(&src, &["init", "-q", "."]);
        git(&src, &["commit", "-q", "--allow-empty", "-m", "i"]);
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q", "."]);
        for f in ["a.txt", "deep/dir/b.txt", "zz.txt"] {
            let p = repo.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        git(&repo, &["add", "."]);
        for sub in ["libs/one", "two"] {
            git(
                &repo,
                &["submodule", "add", "-q", src.to_str().unwrap(), sub],
            );
        }
        for version in ["2", "3", "4"] {
            git(&repo, &["update-index", "--index-version", version]);
            let links = gitlinks(&repo.join(".git/index"), 20).unwrap();
            assert_eq!(
                links,
                [b"libs/one".to_vec(), b"two".to_vec()],
                "index version {version}"
            );
        }
        // A split index keeps the entries in a shared file.
        git(
            &repo,
            &["update-index", "--index-version", "2", "--split-index"],
        );
        assert_eq!(
            submodule_git_entries(&repo).unwrap(),
            [repo.join("libs/one/.git"), repo.join("two/.git")]
        );
        git(&repo, &["update-index", "--no-split-index"]);
        // `.gitmodules` does not matter: the index does.
        std::fs::write(repo.join(".gitmodules"), "").unwrap();
        let entries = submodule_git_entries(&repo).unwrap();
        assert_eq!(entries, [repo.join("libs/one/.git"), repo.join("two/.git")]);
    }

    /// A repository cloned from a SHA-256 one is SHA-256 too: its index
    /// entries hold 32-byte ids.
    #[test]
    fn gitlinks_are_read_from_a_sha256_index() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::create_dir(&src).unwrap();
        git(&src, &["init", "-q", "--object-format=sha256", "."]);
        git(&src, &["commit", "-q", "--allow-empty", "-m", "i"]);
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q", "--object-format=sha256", "."]);
        std::fs::write(repo.join("a.txt"), "x").unwrap();
        git(&repo, &["add", "."]);
        git(
            &repo,
            &["submodule", "add", "-q", src.to_str().unwrap(), "sub"],
        );
        for version in ["2", "4"] {
            git(&repo, &["update-index", "--index-version", version]);
            assert_eq!(
                submodule_git_entries(&repo).unwrap(),
                [repo.join("sub/.git")],
                "index version {version}"
            );
        }
    }

    /// A gitlink whose name is not UTF-8 (`git update-index --cacheinfo
    /// 160000,ID,$'s\xff'`) is a submodule like any other.
    #[test]
    fn a_gitlink_named_in_any_bytes_is_listed() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q", "."]);
        git(&repo, &["commit", "-q", "--allow-empty", "-m", "i"]);
        let head = std::process::Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(&repo)
            .output()
            .unwrap();
        let id = String::from_utf8(head.stdout).unwrap();
        let name = std::ffi::OsStr::from_bytes(b"s\xff");
        let mut info = std::ffi::OsString::from(format!("160000,{},", id.trim()));
        info.push(name);
        let ok = std::process::Command::new("git")
            .args(["update-index", "--add", "--cacheinfo"])
            .arg(&info)
            .current_dir(&repo)
            .status()
            .unwrap();
        assert!(ok.success());
        assert_eq!(
            submodule_git_entries(&repo).unwrap(),
            [repo.join(name).join(".git")]
        );
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(parse_gitlinks(b"", 20).is_err());
        assert!(parse_gitlinks(b"DIRC\0\0\0\x02\xff\xff\xff\xff", 20).is_err());
        let mut long = b"DIRC\0\0\0\x04\0\0\0\x05".to_vec();
        long.extend(std::iter::repeat_n(0xffu8, 200));
        assert!(parse_gitlinks(&long, 20).is_err());
        // An empty index is an empty list.
        assert_eq!(
            parse_gitlinks(b"DIRC\0\0\0\x02\0\0\0\0", 20),
            Ok(Vec::new())
        );
    }
}
