//! Reading files a project (or anyone who can write to it) controls:
//! settings and context files. Only regular files are read, with a size bound,
//! so a FIFO cannot hang start-up and a link to `/dev/zero` cannot exhaust memory
//! (see [`agent_tool::regular_file`], shared with the sandbox's `.git` reads).

/// The largest settings or context file read (1 MiB).
pub const MAX_PROJECT_FILE_BYTES: u64 = 1024 * 1024;

pub(crate) use agent_tool::regular_file::read_regular_file;
