//! Path arguments as models write them (`@file` mentions, `~`, odd spaces,
//! `file://` URLs, relative paths), resolved the one way every consumer
//! shares: the built-in tools open what [`resolve_to_cwd`] and
//! [`resolve_read_path`] return, and the permission rules judge those very
//! paths (plus [`real_path`], the file they lead to), so a spelling cannot
//! mean one file to a rule and another to a tool.
//!
//! Self-contained: only `std` and `unicode-normalization`.

use std::path::{Component, Path, PathBuf};

use unicode_normalization::UnicodeNormalization;

/// Unicode space characters models paste into paths, mapped to a plain space.
fn is_odd_space(c: char) -> bool {
    matches!(
        c,
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}'
    )
}

/// Removes `.` and resolves `..` without touching the file system (`..` at
/// the root stays at the root; leading `..` of a relative path are kept).
pub fn normalize_path(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(".."),
            },
            other => out.push(other),
        }
    }
    out
}

/// Expands a path argument: odd spaces to spaces, one leading `@` removed, `~`
/// and `~/...` to the home directory, `file://` URLs (`file:///abs` or
/// `file://localhost/abs`, `%XX` escapes decoded) to paths.
pub fn expand_path(raw: &str) -> String {
    let mut s: String = raw
        .chars()
        .map(|c| if is_odd_space(c) { ' ' } else { c })
        .collect();
    if let Some(rest) = s.strip_prefix('@') {
        s = rest.to_string();
    }
    if let Some(rest) = s.strip_prefix("file://") {
        let rest = match rest.strip_prefix("localhost") {
            Some(after) if after.is_empty() || after.starts_with('/') => after,
            _ => rest,
        };
        s = percent_encoding::percent_decode_str(rest)
            .decode_utf8_lossy()
            .into_owned();
    }
    if s == "~" {
        if let Some(home) = std::env::home_dir() {
            return home.display().to_string();
        }
    } else if let Some(rest) = s.strip_prefix("~/")
        && let Some(home) = std::env::home_dir()
    {
        return home.join(rest).display().to_string();
    }
    s
}

/// Resolves a path argument against `cwd` (after [`expand_path`]) and normalises it.
///
/// ```
/// use std::path::Path;
/// use agent_tool::path::resolve_to_cwd;
/// assert_eq!(resolve_to_cwd("@src/../lib.rs", Path::new("/work")), Path::new("/work/lib.rs"));
/// assert_eq!(resolve_to_cwd("/etc/hosts", Path::new("/work")), Path::new("/etc/hosts"));
/// assert_eq!(resolve_to_cwd("file:///etc/hosts", Path::new("/work")), Path::new("/etc/hosts"));
/// assert_eq!(resolve_to_cwd("file://localhost/w/%2Eenv", Path::new("/work")), Path::new("/w/.env"));
/// ```
pub fn resolve_to_cwd(raw: &str, cwd: &Path) -> PathBuf {
    let expanded = expand_path(raw);
    let path = Path::new(&expanded);
    if path.is_absolute() {
        normalize_path(path)
    } else {
        normalize_path(&cwd.join(path))
    }
}

/// [`resolve_to_cwd`], then, only when that path does not exist, the first
/// existing variant among: macOS screenshot names (narrow no-break space before
/// AM/PM), NFD form, curly apostrophe, NFD with curly apostrophe.
pub fn resolve_read_path(raw: &str, cwd: &Path) -> PathBuf {
    resolve_read_path_with(raw, cwd, |p| p.exists())
}

/// [`resolve_read_path`] asking `exists` (e.g. a file-operations backend's)
/// instead of the local disk.
pub fn resolve_read_path_with(raw: &str, cwd: &Path, exists: impl Fn(&Path) -> bool) -> PathBuf {
    let resolved = resolve_to_cwd(raw, cwd);
    if exists(&resolved) {
        return resolved;
    }
    for candidate in read_variants(&resolved) {
        if exists(&candidate) {
            return candidate;
        }
    }
    resolved
}

/// The other spellings [`resolve_read_path_with`] tries, in order, for a
/// path that does not exist (those differing from it).
fn read_variants(resolved: &Path) -> Vec<PathBuf> {
    let text = resolved.display().to_string();
    let screenshot = replace_am_pm(&text);
    let nfd: String = text.nfd().collect();
    let curly = text.replace('\'', "\u{2019}");
    let nfd_curly = nfd.replace('\'', "\u{2019}");
    [screenshot, nfd, curly, nfd_curly]
        .into_iter()
        .filter(|c| *c != text)
        .map(PathBuf::from)
        .collect()
}

/// ` AM.` / ` PM.` (any case) -> narrow no-break space + `AM.` / `PM.`.
fn replace_am_pm(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == ' '
            && i + 3 < chars.len()
            && matches!(chars[i + 1].to_ascii_uppercase(), 'A' | 'P')
            && chars[i + 2].eq_ignore_ascii_case(&'M')
            && chars[i + 3] == '.'
        {
            out.push('\u{202F}');
            i += 1;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

/// The most symlinks [`real_path`] follows (the kernel's own limit).
const MAX_LINKS: u32 = 40;

/// The file an absolute, normalised `path` leads to on the local disk:
/// every symlink followed, including a dangling last one (a write through it
/// creates its target); for a path that does not exist (yet), the real
/// path of its deepest existing ancestor with the rest appended.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let base = std::fs::canonicalize(dir.path()).unwrap();
/// std::os::unix::fs::symlink(".env", base.join("link")).unwrap();
/// std::os::unix::fs::symlink(".", base.join("self")).unwrap();
/// let real = |p: &str| agent_tool::path::real_path(&base.join(p));
/// assert_eq!(real("link"), base.join(".env")); // dangling: .env does not exist
/// assert_eq!(real("self/self/link"), base.join(".env"));
/// assert_eq!(real("self/new/dir/x"), base.join("new/dir/x"));
/// ```
pub fn real_path(path: &Path) -> PathBuf {
    let mut links = 0;
    real_path_counted(path, &mut links)
}

fn real_path_counted(path: &Path, links: &mut u32) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return path.to_path_buf();
    };
    let here = real_path_counted(parent, links).join(name);
    if *links < MAX_LINKS
        && let Ok(target) = std::fs::read_link(&here)
    {
        *links += 1;
        let base = here.parent().unwrap_or(Path::new("/"));
        return real_path_counted(&normalize_path(&base.join(target)), links);
    }
    here
}

/// Every path a tool may open for the path argument `raw` in `cwd`: the
/// resolution ([`resolve_to_cwd`]), the spelling variants
/// [`resolve_read_path`] may pick, and the [`real_path`] of each that exists
/// or could be created. Rules about paths hold if they hold for any of them.
pub fn candidate_paths(raw: &str, cwd: &Path) -> Vec<PathBuf> {
    let resolved = resolve_to_cwd(raw, cwd);
    let mut out = vec![resolved.clone()];
    out.extend(
        read_variants(&resolved)
            .into_iter()
            .filter(|v| std::fs::symlink_metadata(v).is_ok()),
    );
    let reals: Vec<PathBuf> = out.iter().map(|p| real_path(p)).collect();
    for real in reals {
        if !out.contains(&real) {
            out.push(real);
        }
    }
    out
}

/// A path for display: relative to `base` with `/` separators when inside it.
pub fn display_relative(path: &Path, base: &Path) -> String {
    match path.strip_prefix(base) {
        // On Unix the separator already is `/`.
        Ok(rel) if !rel.as_os_str().is_empty() => rel.to_string_lossy().into_owned(),
        _ => path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string()),
    }
}

/// `path` with `.`, `..` and symlinks resolved by the kernel; for a path
/// that does not exist yet, its deepest existing ancestor is resolved and
/// the rest appended, so a root is always named as the kernel will see it.
pub fn canonical(path: &Path) -> PathBuf {
    // The kernel's reading first: `link/..` is the link target's parent.
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            // `..` or `.` at the end, or nothing left: lexical from here.
            _ => return normalize_path(path),
        }
        if let Ok(real) = std::fs::canonicalize(existing) {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return normalize_path(&out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansion_rules() {
        assert_eq!(expand_path("@a.txt"), "a.txt");
        assert_eq!(expand_path("@@a.txt"), "@a.txt");
        assert_eq!(expand_path("my\u{00A0}file.txt"), "my file.txt");
        assert_eq!(expand_path("file:///tmp/a%20b.txt"), "/tmp/a b.txt");
        assert_eq!(expand_path("file://localhost/tmp/%2Eenv"), "/tmp/.env");
        assert_eq!(expand_path("file://localhostx/y"), "localhostx/y");
        assert_eq!(expand_path("~user/x"), "~user/x");
        if let Some(home) = std::env::home_dir() {
            assert_eq!(expand_path("~/x"), home.join("x").display().to_string());
        }
    }

    #[test]
    fn relative_and_absolute() {
        let cwd = Path::new("/w/p");
        assert_eq!(resolve_to_cwd("a/./b/../c", cwd), Path::new("/w/p/a/c"));
        assert_eq!(resolve_to_cwd("../x", cwd), Path::new("/w/x"));
        assert_eq!(resolve_to_cwd("/abs//y", cwd), Path::new("/abs/y"));
        assert_eq!(resolve_to_cwd("/../../etc", cwd), Path::new("/etc"));
        assert_eq!(normalize_path(Path::new("../../x")), Path::new("../../x"));
    }

    #[test]
    fn screenshot_names() {
        assert_eq!(
            replace_am_pm("Shot 10.00.00 AM.png"),
            "Shot 10.00.00\u{202F}AM.png"
        );
    }

    #[test]
    fn read_path_variants() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("it\u{2019}s.txt");
        std::fs::write(&real, "x").unwrap();
        assert_eq!(resolve_read_path("it's.txt", dir.path()), real);
        assert!(candidate_paths("it's.txt", dir.path()).contains(&real));
    }

    #[test]
    fn real_paths_follow_links_and_loops_end() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(base.join(".env"), "x").unwrap();
        std::os::unix::fs::symlink(base.join("b"), base.join("a")).unwrap();
        std::os::unix::fs::symlink(base.join("a"), base.join("b")).unwrap();
        std::os::unix::fs::symlink("../.env", base.join("up")).unwrap();
        // A loop ends (somewhere in it) instead of recursing forever.
        let looped = real_path(&base.join("a"));
        assert!(looped.starts_with(&base));
        // A relative target resolves against the link's directory.
        assert_eq!(
            real_path(&base.join("up")),
            base.parent().unwrap().join(".env")
        );
        let candidates = candidate_paths("up", &base);
        assert_eq!(candidates[0], base.join("up"));
        assert!(candidates.contains(&base.parent().unwrap().join(".env")));
    }
}
