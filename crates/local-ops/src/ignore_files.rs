//! The ignore files of a walk, read by us rather than by the walker.
//!
//! The `ignore` crate opens every `.gitignore` it meets with a plain
//! blocking `open`. A repository is written by someone else, and a sandboxed
//! command can `mkfifo` anywhere in the workspace: a FIFO named `.gitignore`
//! would hang that open (and every grep and find) until cancelled, and a
//! link to `/dev/zero` would never end. So the walker reads no ignore file
//! itself; [`IgnoreRules`] reads them, each opened without blocking and
//! without following a link (as git has done since 2.32), accepted only if
//! the opened file is a regular one of at most [`MAX_IGNORE_FILE_BYTES`],
//! and only while the walk has read less than [`MAX_IGNORE_BYTES_PER_WALK`]
//! of ignore files in all (a planted tree of many large ones would cost
//! every search minutes of pattern parsing). Anything else is skipped with a
//! debug line, and the directory is still walked: a skipped ignore file
//! shows more files, never fewer.
//!
//! The precedence is the `ignore` crate's, so results do not change:
//! `.rgignore`, then `.ignore`, then `.gitignore`, then the repository's
//! `.git/info/exclude`, then the global git excludes; within one kind, the
//! deepest directory with an opinion decides, and `.gitignore` files above
//! the nearest directory holding `.git` do not apply.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use ignore::Match;

use agent_tool::regular_file::Links;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// Ignore files larger than this are skipped. Git allows 100 MiB, but every
/// grep and find parses the ignore files it meets into globs again, and a
/// planted file of that size would cost each call minutes; real ones are a
/// few KiB.
pub(crate) const MAX_IGNORE_FILE_BYTES: u64 = 64 * 1024;

/// What one walk reads of ignore files in all.
pub(crate) const MAX_IGNORE_BYTES_PER_WALK: u64 = 512 * 1024;

/// The rules one directory contributes.
#[derive(Default)]
struct Level {
    /// `.rgignore`.
    custom: Option<Gitignore>,
    /// `.ignore`.
    ignore: Option<Gitignore>,
    /// `.gitignore`.
    git: Option<Gitignore>,
    /// `.git/info/exclude`, for a directory holding a `.git` directory.
    exclude: Option<Gitignore>,
    /// The directory holds `.git`: `.gitignore` files above it do not apply.
    has_git: bool,
}

impl Level {
    /// Reads the ignore files of `dir`; `None` when it has none and is no
    /// repository root (most directories: nothing to keep).
    fn read(dir: &Path, budget: &AtomicU64) -> Option<Arc<Level>> {
        let has_git = std::fs::symlink_metadata(dir.join(".git")).is_ok();
        let level = Level {
            custom: matcher(dir, &[dir.join(".rgignore")], budget),
            ignore: matcher(dir, &[dir.join(".ignore")], budget),
            git: matcher(dir, &[dir.join(".gitignore")], budget),
            exclude: if has_git {
                matcher(
                    dir,
                    &[dir.join(".git").join("info").join("exclude")],
                    budget,
                )
            } else {
                None
            },
            has_git,
        };
        let empty = level.custom.is_none()
            && level.ignore.is_none()
            && level.git.is_none()
            && level.exclude.is_none()
            && !has_git;
        (!empty).then(|| Arc::new(level))
    }

    /// A directory above the walk's root, inside its repository: its
    /// ignore files count as one `.gitignore` (the walk never read them
    /// separately), and the repository root's excludes keep their own rank.
    fn read_above(dir: &Path, exclude: Option<PathBuf>, budget: &AtomicU64) -> Option<Arc<Level>> {
        let files = [
            dir.join(".gitignore"),
            dir.join(".ignore"),
            dir.join(".rgignore"),
        ];
        let level = Level {
            git: matcher(dir, &files, budget),
            exclude: exclude.and_then(|file| matcher(dir, &[file], budget)),
            ..Level::default()
        };
        (level.git.is_some() || level.exclude.is_some()).then(|| Arc::new(level))
    }
}

/// A matcher rooted at `root` over the readable, regular `files`; `None`
/// when they hold no pattern.
fn matcher(root: &Path, files: &[PathBuf], budget: &AtomicU64) -> Option<Gitignore> {
    let mut builder = GitignoreBuilder::new(root);
    let mut any = false;
    for file in files {
        any |= add_file(&mut builder, file, budget);
    }
    if !any {
        return None;
    }
    builder.build().ok().filter(|m| !m.is_empty())
}

/// Adds the patterns of `file` to `builder`, as `GitignoreBuilder::add`
/// would (a leading BOM dropped, lines that are not UTF-8 skipped), but only
/// if `file` is a regular file, opened without blocking or following a
/// link. Whether anything was added.
fn add_file(builder: &mut GitignoreBuilder, file: &Path, budget: &AtomicU64) -> bool {
    let Some(bytes) = read_ignore_file(file) else {
        return false;
    };
    let len = bytes.len() as u64;
    // Taken whole or not at all.
    if budget
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
            left.checked_sub(len)
        })
        .is_err()
    {
        tracing::debug!(path = %file.display(), "ignore file skipped: the walk read its share of ignore files");
        return false;
    }
    let mut added = false;
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Ok(mut line) = std::str::from_utf8(line) else {
            continue;
        };
        if i == 0 {
            line = line.strip_prefix('\u{feff}').unwrap_or(line);
        }
        // A malformed pattern is skipped, as the walker skipped it.
        added |= builder.add_line(Some(file.to_path_buf()), line).is_ok();
    }
    added
}

/// The content of the ignore file at `path`, or `None` when there is none
/// or it is not one we read (see the module docs).
pub(crate) fn read_ignore_file(path: &Path) -> Option<Vec<u8>> {
    let file = match agent_tool::regular_file::open_regular(path, Links::Refuse) {
        Ok(file) => file?,
        Err(e) => {
            tracing::debug!(path = %path.display(), error = %e, "ignore file skipped");
            return None;
        }
    };
    let size = file.metadata().ok()?.len();
    if size > MAX_IGNORE_FILE_BYTES {
        tracing::debug!(path = %path.display(), size, "ignore file skipped: over 64 KiB");
        return None;
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    // The file may grow after the check: never read past the limit.
    file.take(MAX_IGNORE_FILE_BYTES)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(bytes)
}

/// Whether a walked path is ignored, by the rules of the module docs.
pub(crate) struct IgnoreRules {
    /// The walk's root, as its entries' paths start.
    root: PathBuf,
    /// The root's canonical form, for the rules from above it.
    absolute: PathBuf,
    /// The directories from the root's parent up to the repository root,
    /// deepest first (none outside a repository).
    above: Vec<Arc<Level>>,
    /// The global git excludes.
    global: Option<Gitignore>,
    /// Each directory of the walk that has rules, read once.
    levels: RwLock<HashMap<PathBuf, Option<Arc<Level>>>>,
    /// What is left of [`MAX_IGNORE_BYTES_PER_WALK`].
    budget: AtomicU64,
}

impl IgnoreRules {
    /// The rules for a walk of `root`, with the user's global git excludes.
    pub(crate) fn new(root: &Path) -> Self {
        let budget = AtomicU64::new(MAX_IGNORE_FILE_BYTES);
        let global = ignore::gitignore::gitconfig_excludes_path()
            .and_then(|file| matcher(Path::new(""), &[file], &budget));
        Self::with_global(root, global)
    }

    /// The rules for a walk of `root` with `global` as the global excludes.
    fn with_global(root: &Path, global: Option<Gitignore>) -> Self {
        let budget = AtomicU64::new(MAX_IGNORE_BYTES_PER_WALK);
        let absolute = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        // Inside a repository the ignore files between its root and the
        // walk's root apply too; outside one, none above the walk's root.
        let above = absolute
            .ancestors()
            .position(|dir| std::fs::symlink_metadata(dir.join(".git")).is_ok())
            .map(|depth| repository_levels(&absolute, depth, &budget))
            .unwrap_or_default();
        IgnoreRules {
            root: root.to_path_buf(),
            absolute,
            above,
            global,
            levels: RwLock::new(HashMap::new()),
            budget,
        }
    }

    /// The rules of the walked directory `dir`, read on first use.
    fn level(&self, dir: &Path) -> Option<Arc<Level>> {
        if let Ok(levels) = self.levels.read()
            && let Some(level) = levels.get(dir)
        {
            return level.clone();
        }
        let level = Level::read(dir, &self.budget);
        if let Ok(mut levels) = self.levels.write() {
            levels.insert(dir.to_path_buf(), level.clone());
        }
        level
    }

    /// Whether the entry at `path`, `depth` levels below the root, is
    /// ignored.
    pub(crate) fn is_ignored(&self, path: &Path, depth: usize, is_dir: bool) -> bool {
        let inside: Vec<Arc<Level>> = path
            .ancestors()
            .skip(1)
            .take(depth)
            .filter_map(|dir| self.level(dir))
            .collect();
        // The rules from above the root see the path from the canonical root.
        let from_above = || match path.strip_prefix(&self.root) {
            Ok(relative) => self.absolute.join(relative),
            Err(_) => path.to_path_buf(),
        };
        let above_path = (!self.above.is_empty()).then(from_above);
        let levels = inside.iter().map(|l| (l, path)).chain(
            self.above
                .iter()
                .map(|l| (l, above_path.as_deref().unwrap_or(path))),
        );
        let mut found = [Match::None, Match::None, Match::None, Match::None];
        let mut saw_git = false;
        for (level, path) in levels {
            let kinds = [&level.custom, &level.ignore, &level.git, &level.exclude];
            for (kind, (slot, rules)) in found.iter_mut().zip(kinds).enumerate() {
                // `.gitignore` and the excludes stop at the nearest repository.
                if kind >= 2 && saw_git {
                    continue;
                }
                if slot.is_none()
                    && let Some(rules) = rules
                {
                    *slot = match rules.matched(path, is_dir) {
                        Match::None => Match::None,
                        Match::Ignore(_) => Match::Ignore(()),
                        Match::Whitelist(_) => Match::Whitelist(()),
                    };
                }
            }
            saw_git |= level.has_git;
        }
        let global = match &self.global {
            Some(rules) => match rules.matched(path, is_dir) {
                Match::None => Match::None,
                Match::Ignore(_) => Match::Ignore(()),
                Match::Whitelist(_) => Match::Whitelist(()),
            },
            None => Match::None,
        };
        let [custom, ignore, git, exclude] = found;
        custom.or(ignore).or(git).or(exclude).or(global).is_ignore()
    }
}

/// The rules of the directories from `root`'s parent up to the repository
/// root (`depth` levels above `root`), deepest first; the repository's
/// `.git/info/exclude` counts with its root.
fn repository_levels(root: &Path, depth: usize, budget: &AtomicU64) -> Vec<Arc<Level>> {
    let mut levels = Vec::new();
    for (i, dir) in root.ancestors().skip(1).take(depth).enumerate() {
        let exclude = (i + 1 == depth).then(|| dir.join(".git").join("info").join("exclude"));
        if let Some(level) = Level::read_above(dir, exclude, budget) {
            levels.push(level);
        }
    }
    levels
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join(".gitignore");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        // Would block forever with a blocking open.
        assert_eq!(read_ignore_file(&fifo), None);
        let link = dir.path().join(".ignore");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        assert_eq!(read_ignore_file(&link), None);
        std::fs::write(dir.path().join(".rgignore"), "\u{feff}a\r\nb\n").unwrap();
        assert_eq!(
            read_ignore_file(&dir.path().join(".rgignore")).as_deref(),
            Some("\u{feff}a\r\nb\n".as_bytes())
        );
    }

    #[test]
    fn large_ignore_files_are_skipped_within_a_walks_budget() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let big = format!("x*y*z\n#{}\n", "-".repeat(MAX_IGNORE_FILE_BYTES as usize));
        std::fs::write(root.join(".ignore"), big).unwrap();
        std::fs::write(root.join(".gitignore"), "*.log\n").unwrap();
        let rules = IgnoreRules::with_global(root, None);
        assert!(rules.is_ignored(&root.join("a.log"), 1, false));
        assert!(
            !rules.is_ignored(&root.join("xayaz"), 1, false),
            "the large file is skipped"
        );
        // Many files under the size limit share one budget.
        // One pattern, the rest a comment: the bytes count, not the patterns.
        let piece = format!(
            "p*q\n#{}\n",
            "-".repeat((MAX_IGNORE_FILE_BYTES - 16) as usize)
        );
        let count = (MAX_IGNORE_BYTES_PER_WALK / piece.len() as u64) + 2;
        for i in 0..count {
            std::fs::create_dir(root.join(format!("d{i}"))).unwrap();
            std::fs::write(root.join(format!("d{i}/.gitignore")), &piece).unwrap();
        }
        let rules = IgnoreRules::with_global(root, None);
        let read = (0..count)
            .filter(|i| rules.is_ignored(&root.join(format!("d{i}/pq")), 2, false))
            .count() as u64;
        assert!(read < count && read > 0, "{read} of {count}");
    }

    #[test]
    fn precedence_is_the_walkers() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join(".gitignore"), "*.log\nkeep.txt\n").unwrap();
        std::fs::write(root.join(".ignore"), "!keep.txt\n").unwrap();
        std::fs::write(root.join("sub/.gitignore"), "!important.log\n").unwrap();
        // Without the global excludes of whoever runs the test.
        let rules = IgnoreRules::with_global(root, None);
        assert!(rules.is_ignored(&root.join("a.log"), 1, false));
        assert!(
            !rules.is_ignored(&root.join("keep.txt"), 1, false),
            ".ignore beats .gitignore"
        );
        assert!(
            !rules.is_ignored(&root.join("sub/important.log"), 2, false),
            "deeper decides"
        );
        assert!(rules.is_ignored(&root.join("sub/other.log"), 2, false));
        // A nested repository does not see the outer .gitignore.
        std::fs::create_dir_all(root.join("sub/inner/.git")).unwrap();
        assert!(!rules.is_ignored(&root.join("sub/inner/x.log"), 3, false));
    }
}
