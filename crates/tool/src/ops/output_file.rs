//! [`OutputFile`]: where bash keeps the full output of a command too long to
//! show, on the machine the command ran on, so the model can read it back
//! with the same backend's `read`.

use std::io::Write;
use std::path::Path;

/// A file receiving a command's full output as it arrives.
pub trait OutputFile: Write + Send {
    /// Where it is, as the backend's file operations name it (shown to the
    /// model in the truncation notice).
    fn path(&self) -> &Path;
    /// The command ended after `size` bytes were written. Default: flush.
    fn finish(&mut self, size: u64) {
        let _ = size;
        let _ = self.flush();
    }
}
