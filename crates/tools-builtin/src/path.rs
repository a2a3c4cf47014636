//! Path arguments as models write them: `@file` mentions, `~`, odd spaces,
//! `file://` URLs, relative paths.

use std::path::{Component, Path, PathBuf};

use unicode_normalization::UnicodeNormalization;

/// Unicode space characters models paste into paths, mapped to a plain space.
fn is_odd_space(c: char) -> bool {
    matches!(
        c,
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}'
    )
}

/// Removes `.` and resolves `..` without touching the file system.
pub fn normalize_path(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// Decodes `%XX` escapes of a `file://` URL path.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    let hex = |b: u8| (b as char).to_digit(16);
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Expands a path argument: odd spaces to spaces, one leading `@` removed, `~`
/// and `~/...` to the home directory, `file://` URLs to paths.
pub fn expand_path(raw: &str) -> String {
    let mut s: String = raw
        .chars()
        .map(|c| if is_odd_space(c) { ' ' } else { c })
        .collect();
    if let Some(rest) = s.strip_prefix('@') {
        s = rest.to_string();
    }
    if let Some(rest) = s.strip_prefix("file://") {
        // file:///abs/path or file://localhost/abs/path
        let rest = rest.strip_prefix("localhost").unwrap_or(rest);
        s = percent_decode(rest);
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
/// use tools_builtin::path::resolve_to_cwd;
/// assert_eq!(resolve_to_cwd("@src/../lib.rs", Path::new("/work")), Path::new("/work/lib.rs"));
/// assert_eq!(resolve_to_cwd("/etc/hosts", Path::new("/work")), Path::new("/etc/hosts"));
/// assert_eq!(resolve_to_cwd("file:///etc/hosts", Path::new("/work")), Path::new("/etc/hosts"));
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

/// [`resolve_read_path`] asking `exists` (e.g. a [`FileOps`](crate::ops::FileOps)
/// backend's) instead of the local disk.
pub fn resolve_read_path_with(raw: &str, cwd: &Path, exists: impl Fn(&Path) -> bool) -> PathBuf {
    let resolved = resolve_to_cwd(raw, cwd);
    if exists(&resolved) {
        return resolved;
    }
    let text = resolved.display().to_string();
    let screenshot = replace_am_pm(&text);
    let nfd: String = text.nfd().collect();
    let curly = text.replace('\'', "\u{2019}");
    let nfd_curly = nfd.replace('\'', "\u{2019}");
    for candidate in [screenshot, nfd, curly, nfd_curly] {
        let p = PathBuf::from(&candidate);
        if candidate != text && exists(&p) {
            return p;
        }
    }
    resolved
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansion_rules() {
        assert_eq!(expand_path("@a.txt"), "a.txt");
        assert_eq!(expand_path("@@a.txt"), "@a.txt");
        assert_eq!(expand_path("my\u{00A0}file.txt"), "my file.txt");
        assert_eq!(expand_path("file:///tmp/a%20b.txt"), "/tmp/a b.txt");
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
    }
}
