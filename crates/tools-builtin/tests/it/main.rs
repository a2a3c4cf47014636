//! tools-builtin's integration tests, one binary: each tool on real files
//! and processes (`read_tool`, `edit_write_tools`, `bash_tool`,
//! `search_tools`), the write guarantees (`write_safety`), generated
//! inputs (`properties`), and the seven tools on a backend of the test's own
//! (`other_backend`: the operations traits are the whole seam).

mod bash_tool;
mod edit_write_tools;
mod other_backend;
mod properties;
mod read_tool;
mod search_tools;
mod write_safety;
