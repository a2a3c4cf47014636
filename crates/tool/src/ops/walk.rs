//! What a directory walk reports ([`WalkEntry`]) and is asked for
//! ([`WalkOptions`]), for [`FileOps::walk`](super::FileOps::walk), and the
//! glob filter of the trait's default walk. The local walk, with its ignore
//! files, is `agent-local-ops`'s.

use std::path::{Path, PathBuf};

/// An entry found by [`FileOps::walk`](super::FileOps::walk).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalkEntry {
    /// Full path (the walk's root joined with the entry's relative path).
    pub path: PathBuf,
    /// A directory (symlinks not followed).
    pub is_dir: bool,
    /// A regular file (symlinks not followed).
    pub is_file: bool,
}

/// What [`FileOps::walk`](super::FileOps::walk) walks.
#[derive(Debug, Clone, Copy)]
pub struct WalkOptions<'a> {
    /// The directory to walk (not itself reported).
    pub root: &'a Path,
    /// Only files matching this glob are reported (directories are still
    /// walked); a pattern without `/` matches file names at any depth.
    pub glob: Option<&'a str>,
    /// Report entries one at a time in path order (directories depth first,
    /// names sorted). When `false` the visitor may be called from several
    /// threads at once, in any order.
    pub ordered: bool,
}

/// A [`FileOps::walk`](super::FileOps::walk) visitor; returns `false` to stop the walk.
pub type WalkVisitor<'a> = &'a (dyn Fn(WalkEntry) -> bool + Sync);

/// A glob that selects files, matched like an ignore-file pattern: with a
/// `/` against the path relative to the root, without one against the name.
pub(crate) struct GlobFilter {
    // A set of one: building a set reports a pattern too large to compile
    // as an error, where `compile_matcher` would panic.
    matcher: globset::GlobSet,
    full_path: bool,
}

impl GlobFilter {
    pub(crate) fn new(glob: &str) -> std::io::Result<Self> {
        let full_path = glob.contains('/');
        let pattern = glob.trim_start_matches('/');
        let invalid = |e: globset::Error| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("Invalid glob \"{glob}\": {e}"),
            )
        };
        let one = globset::GlobBuilder::new(pattern)
            .literal_separator(full_path)
            .build()
            .map_err(invalid)?;
        let matcher = globset::GlobSetBuilder::new()
            .add(one)
            .build()
            .map_err(invalid)?;
        Ok(GlobFilter { matcher, full_path })
    }

    pub(crate) fn matches(&self, root: &Path, path: &Path) -> bool {
        if self.full_path {
            path.strip_prefix(root)
                .is_ok_and(|rel| self.matcher.is_match(rel))
        } else {
            path.file_name().is_some_and(|n| self.matcher.is_match(n))
        }
    }
}
