//! Reading files a project (or anyone who can write to it) controls:
//! settings and context files. Only regular files are read, with a size bound,
//! so a FIFO cannot hang start-up and a link to `/dev/zero` cannot exhaust memory.

use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The largest settings or context file read (1 MiB).
pub const MAX_PROJECT_FILE_BYTES: u64 = 1024 * 1024;

/// Reads `path` as UTF-8 text if it is a regular file of at most `limit`
/// bytes; `Ok(None)` when it does not exist.
pub(crate) fn read_regular_file(path: &Path, limit: u64) -> io::Result<Option<String>> {
    // O_NONBLOCK: opening a FIFO must not wait for a writer.
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    if meta.len() > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {limit} bytes"),
        ));
    }
    let mut text = String::new();
    // The file may grow after the check.
    file.take(limit + 1).read_to_string(&mut text)?;
    if text.len() as u64 > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {limit} bytes"),
        ));
    }
    Ok(Some(text))
}
