//! The UI's own timing: how long each frame took to build, and how long a
//! key waited until the frame that answered it was written. Off unless
//! asked for ([`crate::TuiOptions::stats_file`]); a benchmark reads the
//! summary the UI writes when it ends.
//!
//! These are the figures no outside observer can take: a harness driving
//! a terminal sees the terminal's own latency on top.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use agent_tui::frame_stats::FrameStats;
//!
//! let mut stats = FrameStats::default();
//! let pressed = Instant::now();
//! stats.key(pressed);
//! stats.frame(Duration::from_micros(300), pressed + Duration::from_micros(900));
//! stats.frame(Duration::from_micros(500), pressed + Duration::from_millis(20));
//! let summary = stats.summary();
//! assert_eq!(summary.frames, 2);
//! assert_eq!(summary.build_us.max, 500);
//! // One key, answered by the first frame after it.
//! assert_eq!(summary.keys, 1);
//! assert_eq!(summary.key_to_frame_us.p99, 900);
//! ```

use std::time::{Duration, Instant};

/// At most this many samples of each kind are kept (4 MiB each); later
/// frames are counted but not timed.
pub const MAX_SAMPLES: usize = 1 << 20;

/// Frame build times and key-to-frame latencies, in microseconds.
#[derive(Debug, Default, Clone)]
pub struct FrameStats {
    build_us: Vec<u32>,
    key_us: Vec<u32>,
    frames: u64,
    keys: u64,
    /// The earliest key not yet answered by a frame.
    waiting_key: Option<Instant>,
}

/// Percentiles of one kind of sample, in microseconds (0 when there is
/// none).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Percentiles {
    /// The median.
    pub p50: u32,
    /// The 99th percentile.
    pub p99: u32,
    /// The largest.
    pub max: u32,
}

/// What [`FrameStats`] found, as written to the stats file.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct FrameSummary {
    /// Frames written.
    pub frames: u64,
    /// How long building a frame's bytes took.
    pub build_us: Percentiles,
    /// Keys that a frame answered.
    pub keys: u64,
    /// From reading a key to the end of writing the frame after it (keys
    /// that arrived together count once, from the first).
    pub key_to_frame_us: Percentiles,
}

impl FrameStats {
    /// A key was read at `at`.
    pub fn key(&mut self, at: Instant) {
        self.waiting_key.get_or_insert(at);
    }

    /// A frame that took `built` to build was written, ending at
    /// `written`.
    pub fn frame(&mut self, built: Duration, written: Instant) {
        self.frames += 1;
        push(&mut self.build_us, built);
        if let Some(at) = self.waiting_key.take() {
            self.keys += 1;
            push(&mut self.key_us, written.saturating_duration_since(at));
        }
    }

    /// The percentiles so far.
    pub fn summary(&self) -> FrameSummary {
        FrameSummary {
            frames: self.frames,
            build_us: percentiles(&self.build_us),
            keys: self.keys,
            key_to_frame_us: percentiles(&self.key_us),
        }
    }
}

impl Percentiles {
    fn to_json(self) -> serde_json::Value {
        serde_json::json!({"p50": self.p50, "p99": self.p99, "max": self.max})
    }
}

impl FrameSummary {
    /// As written to the stats file: `{"frames", "build_us": {"p50",
    /// "p99", "max"}, "keys", "key_to_frame_us": {...}}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "frames": self.frames,
            "build_us": self.build_us.to_json(),
            "keys": self.keys,
            "key_to_frame_us": self.key_to_frame_us.to_json(),
        })
    }
}

fn push(samples: &mut Vec<u32>, d: Duration) {
    if samples.len() < MAX_SAMPLES {
        samples.push(u32::try_from(d.as_micros()).unwrap_or(u32::MAX));
    }
}

fn percentiles(samples: &[u32]) -> Percentiles {
    if samples.is_empty() {
        return Percentiles::default();
    }
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    // Nearest rank: the smallest sample with at least p% at or below it.
    let rank = |p: usize| sorted[(sorted.len() * p).div_ceil(100).max(1) - 1];
    Percentiles {
        p50: rank(50),
        p99: rank(99),
        max: sorted[sorted.len() - 1],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let samples: Vec<u32> = (1..=100).collect();
        assert_eq!(
            percentiles(&samples),
            Percentiles {
                p50: 50,
                p99: 99,
                max: 100
            }
        );
        assert_eq!(percentiles(&[7]).p99, 7);
        assert_eq!(percentiles(&[]), Percentiles::default());
    }

    #[test]
    fn keys_between_two_frames_count_once_from_the_first() {
        let mut stats = FrameStats::default();
        let t0 = Instant::now();
        stats.key(t0);
        stats.key(t0 + Duration::from_millis(5));
        stats.frame(Duration::from_micros(10), t0 + Duration::from_millis(6));
        // A frame with no key waiting adds no latency.
        stats.frame(Duration::from_micros(10), t0 + Duration::from_millis(60));
        let s = stats.summary();
        assert_eq!((s.frames, s.keys), (2, 1));
        assert_eq!(s.key_to_frame_us.max, 6000);
    }
}
