//! The directory walk grep and find share: hidden files included, `.git`
//! skipped, and ignore files (`.gitignore`, `.ignore`, `.rgignore`, the global
//! git excludes) honoured as follows:
//!
//! - Inside a git repository (the search root or one of its ancestors holds
//!   `.git`), as git does: the `.gitignore` files from the repository root
//!   down to the searched files apply, none above the repository root.
//! - Outside any repository, only the ignore files from the search root down
//!   apply: a `~/.gitignore` holding `*` (a common dotfiles setup) or any
//!   other ignore file above the search root hides nothing.

use std::path::Path;

use ignore::{WalkBuilder, WalkState};

use agent_tool::ops::{WalkEntry, WalkOptions, WalkVisitor};

use crate::ignore_files::IgnoreRules;

/// A walker over `root` with the workspace's ignore rules (see the module
/// docs). The ignore files are read by `ignore_files.rs`, never by the walker
/// itself: a FIFO or a link named `.gitignore` cannot hang or flood a walk.
pub(crate) fn walk_builder(root: &Path) -> WalkBuilder {
    let rules = IgnoreRules::new(root);
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(false)
        .ignore(false)
        .git_ignore(false)
        .git_global(false)
        .git_exclude(false)
        .parents(false)
        .follow_links(false);
    builder.filter_entry(move |entry| {
        if entry.file_name() == ".git" {
            return false;
        }
        if entry.depth() == 0 {
            return true;
        }
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        !rules.is_ignored(entry.path(), entry.depth(), is_dir)
    });
    builder
}

/// [`FileOps::walk`](agent_tool::ops::FileOps::walk) on the local disk: the
/// `ignore` crate with the rules of the module docs; a glob becomes an
/// override (files not matching are skipped, directories still walked).
pub fn walk_local(options: &WalkOptions<'_>, visit: WalkVisitor<'_>) -> std::io::Result<()> {
    let mut builder = walk_builder(options.root);
    if let Some(glob) = options.glob.filter(|g| !g.is_empty()) {
        let invalid = |e: ignore::Error| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("Invalid glob \"{glob}\": {e}"),
            )
        };
        let mut overrides = ignore::overrides::OverrideBuilder::new(options.root);
        overrides.add(glob).map_err(invalid)?;
        builder.overrides(overrides.build().map_err(invalid)?);
    }
    let entry_of = |entry: ignore::DirEntry| {
        let file_type = entry.file_type();
        WalkEntry {
            is_dir: file_type.is_some_and(|t| t.is_dir()),
            is_file: file_type.is_some_and(|t| t.is_file()),
            path: entry.into_path(),
        }
    };
    if options.ordered {
        builder.sort_by_file_name(|a, b| a.cmp(b));
        for entry in builder.build() {
            let Ok(entry) = entry else { continue };
            if entry.depth() == 0 {
                continue;
            }
            if !visit(entry_of(entry)) {
                break;
            }
        }
        return Ok(());
    }
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .min(8);
    builder.threads(threads).build_parallel().run(|| {
        Box::new(move |result| {
            let Ok(entry) = result else {
                return WalkState::Continue;
            };
            if entry.depth() == 0 {
                return WalkState::Continue;
            }
            if visit(entry_of(entry)) {
                WalkState::Continue
            } else {
                WalkState::Quit
            }
        })
    });
    Ok(())
}
