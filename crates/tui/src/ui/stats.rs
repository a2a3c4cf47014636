//! The UI task's side of [`crate::frame_stats`]: keys and frames noted
//! when timing was asked for, the summary written when the UI ends.

use std::time::{Duration, Instant};

use super::Ui;

impl Ui {
    /// A key was just read.
    pub(super) fn key_read(&mut self) {
        if let Some((stats, _)) = &mut self.stats {
            stats.key(Instant::now());
        }
    }

    /// A frame built in `built` was just written.
    pub(super) fn frame_written(&mut self, built: Duration) {
        if let Some((stats, _)) = &mut self.stats {
            stats.frame(built, Instant::now());
        }
    }

    /// Writes the summary to the stats file (a failure is logged: timing
    /// is never worth an error at exit).
    pub(super) fn write_stats(&self) {
        let Some((stats, path)) = &self.stats else {
            return;
        };
        let json = stats.summary().to_json().to_string();
        if let Err(e) = std::fs::write(path, json) {
            tracing::warn!(path = %path.display(), error = %e, "cannot write the UI's timing");
        }
    }
}
