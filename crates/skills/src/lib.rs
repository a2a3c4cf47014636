//! Agent Skills and prompt templates, as the Pi coding agent has them.
//!
//! * **Skills** ([`Skill`]): directories with a `SKILL.md` (YAML frontmatter
//!   `name`, `description`, ...). [`load_resources`] finds them in Pi's
//!   locations under bounds; [`skills_prompt`] lists them for the system
//!   prompt within a budget; [`skill_message`] is the text `/skill:name args`
//!   becomes.
//! * **Prompt templates** ([`PromptTemplate`]): `*.md` files that become
//!   `/name` commands; [`parse_command_args`] and [`substitute_args`] follow
//!   Pi's argument splitting and one-pass substitution, capped at 1 MiB.
//! * **Commands** ([`expand_input`]): one precedence in every mode: built-in
//!   command, then extension command, then `/skill:`, then template.
//!
//! The crate reads files and nothing else: trust (whether project files may
//! be read at all) is the caller's decision, passed in [`ResourceOptions`].

mod args;
mod commands;
mod frontmatter;
mod prompt;
mod resources;
mod skills;
mod templates;

use std::path::{Path, PathBuf};

pub use args::{MAX_EXPANDED_BYTES, parse_command_args, substitute_args};
pub use commands::{CommandInfo, CommandSource, Expansion, expand_input, list_commands};
pub use frontmatter::{Frontmatter, MAX_FILE_BYTES, parse_frontmatter, read_bounded};
pub use prompt::{SkillReader, budget_chars, skills_prompt};
pub use resources::{ResourceOptions, Resources, load_resources, project_files};
pub use skills::{
    MAX_DEPTH, MAX_DIRS_PER_ROOT, Skill, load_skill_file, skill_block_of, skill_files,
    skill_message,
};
pub use templates::{PromptTemplate, load_template_file};

/// What went wrong reading or expanding one file.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be opened or read.
    #[error("cannot read: {0}")]
    Io(#[source] std::io::Error),
    /// Not a regular file (a FIFO, a device, a directory).
    #[error("not a regular file")]
    NotRegular,
    /// Larger than [`MAX_FILE_BYTES`].
    #[error("file is {0} bytes, more than the 256 KiB allowed")]
    TooLarge(u64),
    /// Not UTF-8.
    #[error("file is not UTF-8")]
    NotUtf8,
    /// Opens with `---` and never closes it.
    #[error("frontmatter opened with --- is never closed")]
    UnclosedFrontmatter,
    /// The frontmatter is not valid YAML, not a mapping, or over the alias budget.
    #[error("frontmatter is not valid YAML: {0}")]
    Yaml(String),
    /// A template expansion would exceed [`MAX_EXPANDED_BYTES`].
    #[error("the expanded text would exceed {0} bytes")]
    ExpansionTooLarge(usize),
    /// The command names a project template or skill, and the project is not
    /// trusted: its text is never sent.
    #[error(
        "{} is a project file, and the project is not trusted or its files changed since; run `coding-agent trust` in the project to use it",
        .0.display()
    )]
    UntrustedProjectFile(PathBuf),
}

/// Where a skill or template was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Origin {
    /// `--skill` / `--prompt-template` on the command line.
    Cli,
    /// The settings keys `skills` / `prompts`.
    Settings,
    /// The user's directories (`~/.pi/agent/...`, `~/.agents/skills`).
    User,
    /// The project's directories (only read once the project is trusted).
    Project,
}

impl Origin {
    /// A lower-case label: `cli`, `settings`, `user`, `project`.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Cli => "cli",
            Origin::Settings => "settings",
            Origin::User => "user",
            Origin::Project => "project",
        }
    }
}

/// A warning or error about one file, for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file (or directory) concerned.
    pub path: PathBuf,
    /// What happened.
    pub message: String,
    /// True for errors (a `--skill` path that does not exist), false for warnings.
    pub is_error: bool,
}

impl Diagnostic {
    pub(crate) fn warning(path: &Path, message: impl Into<String>) -> Self {
        Self {
            path: path.to_path_buf(),
            message: message.into(),
            is_error: false,
        }
    }

    pub(crate) fn error(path: &Path, message: impl Into<String>) -> Self {
        Self {
            path: path.to_path_buf(),
            message: message.into(),
            is_error: true,
        }
    }
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}
