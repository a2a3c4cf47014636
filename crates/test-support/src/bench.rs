//! The harness of the in-process benchmarks (`cargo bench -p tools-builtin
//! --bench tools`, `cargo bench -p coding-agent --bench sessions`): their
//! command line and their rows, which `cargo xtask bench` collects.

use std::path::PathBuf;

use serde_json::{Value, json};

/// The command line every in-process benchmark takes: `--json` (one JSON
/// row per figure), `--quick`, `--runs N`, `--corpus DIR`, `--big-file
/// PATH`, `--only TEXT`.
pub struct Args {
    /// One JSON row per figure instead of a table line.
    pub json: bool,
    /// A smaller corpus.
    pub quick: bool,
    /// Runs per figure (default 5).
    pub runs: usize,
    /// A corpus directory made beforehand.
    pub corpus: Option<PathBuf>,
    /// A big file made beforehand.
    pub big_file: Option<PathBuf>,
    /// Only figures whose name contains this (for profiling one figure).
    pub only: Option<String>,
}

impl Args {
    /// Whether `figure` is to be measured (`--only`).
    pub fn wants(&self, figure: &str) -> bool {
        self.only.as_deref().is_none_or(|o| figure.contains(o))
    }
}

/// This process's command line as [`Args`].
pub fn args() -> Args {
    let a: Vec<String> = std::env::args().collect();
    let value = |flag: &str| {
        a.iter()
            .position(|x| x == flag)
            .and_then(|i| a.get(i + 1))
            .cloned()
    };
    Args {
        json: a.iter().any(|x| x == "--json"),
        quick: a.iter().any(|x| x == "--quick"),
        runs: value("--runs").and_then(|v| v.parse().ok()).unwrap_or(5),
        corpus: value("--corpus").map(PathBuf::from),
        big_file: value("--big-file").map(PathBuf::from),
        only: value("--only"),
    }
}

/// Peak resident memory of this process so far, in MB (Linux).
pub fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

/// The median of `v`.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Prints one figure's row: its median, range and this process's peak
/// memory, as a table line or (`--json`) the JSON row `cargo xtask bench`
/// collects.
pub fn emit(args: &Args, figure: &str, secs: Vec<f64>, note: &str) {
    let min = secs.iter().cloned().fold(f64::INFINITY, f64::min);
    let max = secs.iter().cloned().fold(0.0, f64::max);
    let med = median(secs.clone());
    let row = json!({
        "figure": figure,
        "ours": {"median": med, "min": min, "max": max, "runs": secs},
        "oursPeakRssMb": peak_rss_mb(),
        "reference": Value::Null,
        "referenceTime": Value::Null,
        "ratio": Value::Null,
        "note": note,
    });
    if args.json {
        println!("{row}");
    } else {
        let unit = |v: f64| {
            if med < 0.001 {
                format!("{:.1}us", v * 1e6)
            } else {
                format!("{v:.4}s")
            }
        };
        println!(
            "{figure:<60} {:>10}  [{}-{}]  peak RSS {:.1} MB  {note}",
            unit(med),
            unit(min),
            unit(max),
            peak_rss_mb()
        );
    }
}
