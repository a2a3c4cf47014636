//! `cargo xtask bench`: our tools against ripgrep, fd and coreutils, side by
//! side, repeated; a table on stdout and `target/bench/report.json`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use test_support::corpus;

mod local;
mod providers;
mod remote;

/// One measured run of a process.
#[derive(Clone, Copy, Debug)]
struct Sample {
    secs: f64,
    rss_kb: u64,
}

/// Runs `cmd` (output discarded) and returns its wall time and peak RSS.
#[allow(unsafe_code)]
fn measure(cmd: &mut Command) -> Result<Sample> {
    cmd.stdout(Stdio::null())
        .stderr(Stdio::null())
        .stdin(Stdio::null());
    let started = Instant::now();
    let child = cmd
        .spawn()
        .with_context(|| format!("cannot start {cmd:?}"))?;
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value; wait4 writes into it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child, not yet reaped; both pointers are valid.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let secs = started.elapsed().as_secs_f64();
    if r < 0 {
        bail!("wait4 failed: {}", std::io::Error::last_os_error());
    }
    std::mem::forget(child);
    Ok(Sample {
        secs,
        rss_kb: usage.ru_maxrss as u64,
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn stats(v: &[f64]) -> Value {
    let min = v.iter().cloned().fold(f64::INFINITY, f64::min);
    let max = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    json!({"median": median(v.to_vec()), "min": min, "max": max, "runs": v})
}

pub(crate) fn which(names: &[&str]) -> Option<String> {
    names.iter().find_map(|n| {
        Command::new("sh")
            .args(["-c", &format!("command -v {n}")])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    })
}

struct Bench {
    runs: usize,
    bin: PathBuf,
    rows: Vec<Value>,
    /// `--only TEXT`: only the rows whose figure contains it.
    only: Option<String>,
}

impl Bench {
    fn wants(&self, figure: &str) -> bool {
        self.only.as_deref().is_none_or(|o| figure.contains(o))
    }
}

/// `coding-agent tool TOOL --cwd CWD --args ARGS` as a command factory.
fn tool_cmd(
    bin: &Path,
    tool: &'static str,
    cwd: &Path,
    args: Value,
) -> impl FnMut() -> Command + use<> {
    let (bin, cwd, args) = (bin.to_path_buf(), cwd.to_path_buf(), args.to_string());
    move || {
        let mut c = Command::new(&bin);
        c.args(["tool", tool, "--cwd"])
            .arg(&cwd)
            .arg("--args")
            .arg(&args);
        c
    }
}

impl Bench {
    /// Measures ours against a reference, alternating which runs first so
    /// machine drift cancels; ratios are taken pair by pair.
    fn compare(
        &mut self,
        name: &str,
        mut ours: impl FnMut() -> Command,
        reference: Option<(String, Box<dyn FnMut() -> Command>)>,
        note: &str,
    ) -> Result<()> {
        if !self.wants(name) {
            return Ok(());
        }
        let mut o = Vec::new();
        let mut o_rss = 0;
        let mut r_rss = 0;
        let mut r = Vec::new();
        let mut ratios = Vec::new();
        let (ref_name, mut ref_cmd) = match reference {
            Some((n, c)) => (Some(n), Some(c)),
            None => (None, None),
        };
        // One warm-up of each (page cache), not counted.
        measure(&mut ours())?;
        if let Some(c) = ref_cmd.as_mut() {
            measure(&mut c())?;
        }
        for i in 0..self.runs {
            let (so, sr) = if i % 2 == 0 {
                let so = measure(&mut ours())?;
                let sr = match ref_cmd.as_mut() {
                    Some(c) => Some(measure(&mut c())?),
                    None => None,
                };
                (so, sr)
            } else {
                let sr = match ref_cmd.as_mut() {
                    Some(c) => Some(measure(&mut c())?),
                    None => None,
                };
                (measure(&mut ours())?, sr)
            };
            o.push(so.secs);
            o_rss = o_rss.max(so.rss_kb);
            if let Some(sr) = sr {
                r_rss = r_rss.max(sr.rss_kb);
                r.push(sr.secs);
                ratios.push(so.secs / sr.secs);
            }
        }
        let row = json!({
            "figure": name,
            "ours": stats(&o),
            "oursPeakRssMb": o_rss as f64 / 1024.0,
            "reference": ref_name,
            "referenceTime": if r.is_empty() { Value::Null } else { stats(&r) },
            "referencePeakRssMb": if r.is_empty() { Value::Null } else { json!(r_rss as f64 / 1024.0) },
            "ratio": if ratios.is_empty() { Value::Null } else { stats(&ratios) },
            "note": note,
        });
        print_row(&row);
        self.rows.push(row);
        Ok(())
    }
}

impl Bench {
    /// A row from samples taken elsewhere (calls inside one running
    /// server); the ratio is of the medians.
    fn record(
        &mut self,
        name: &str,
        ours: &[f64],
        reference: Option<(String, Vec<f64>)>,
        note: &str,
    ) {
        let (ref_name, ref_stats, ratio) = match &reference {
            Some((n, r)) => {
                let ratio = median(ours.to_vec()) / median(r.clone());
                (
                    Value::from(n.clone()),
                    stats(r),
                    json!({"median": ratio, "min": ratio, "max": ratio}),
                )
            }
            None => (Value::Null, Value::Null, Value::Null),
        };
        let row = json!({
            "figure": name,
            "ours": stats(ours),
            "oursPeakRssMb": 0.0,
            "reference": ref_name,
            "referenceTime": ref_stats,
            "ratio": ratio,
            "note": note,
        });
        print_row(&row);
        self.rows.push(row);
    }

    /// Tool calls through `coding-agent mcp` on stdio, beside the reference
    /// filesystem MCP server and beside our direct tool command.
    fn mcp_rows(&mut self, bench_dir: &Path, find_tree: &Path, quick: bool) -> Result<()> {
        if !self.wants("MCP") && !self.wants("find **/*.toml through MCP") {
            return Ok(());
        }
        use crate::mcp_bench::{
            StdioPeer, filesystem_command, filesystem_server, our_command, time_calls,
        };
        let small = bench_dir.join("small.txt");
        std::fs::write(&small, "a small file\nof three\nlines\n")?;
        let calls = if quick { 300 } else { 2000 };
        let reference = filesystem_server(&bench_dir.join("npm"));

        let mut ours = StdioPeer::start(our_command(&self.bin, bench_dir))?;
        let read_ours = time_calls(&mut ours, "read", &json!({"path": "small.txt"}), 50, calls)?;
        let read_ref = match &reference {
            Some(script) => {
                let mut fs = StdioPeer::start(filesystem_command(script, bench_dir))?;
                let args = json!({"path": small.display().to_string()});
                Some((
                    "filesystem server read_text_file".to_string(),
                    time_calls(&mut fs, "read_text_file", &args, 50, calls)?,
                ))
            }
            None => None,
        };
        self.record(
            "MCP stdio round trip: read a small file",
            &read_ours,
            read_ref,
            &format!("median of {calls} sequential calls in one session; the round trip bounds our per-call overhead"),
        );
        drop(ours);

        // Every match, so both servers do the whole walk.
        let find_args = json!({"pattern": "**/*.toml", "limit": 100_000_000});
        let mut ours = StdioPeer::start(our_command(&self.bin, find_tree))?;
        let find_ours = time_calls(&mut ours, "find", &find_args, 1, self.runs)?;
        let mut direct = Vec::new();
        for _ in 0..self.runs {
            let mut c = tool_cmd(&self.bin, "find", find_tree, find_args.clone())();
            direct.push(measure(&mut c)?.secs);
        }
        self.record(
            "find **/*.toml through MCP",
            &find_ours,
            Some(("coding-agent tool find (direct)".into(), direct)),
            &format!(
                "{}; target: within 1.2x of the direct find",
                find_tree.display()
            ),
        );
        if let Some(script) = &reference {
            let mut fs = StdioPeer::start(filesystem_command(script, find_tree))?;
            let args = json!({"path": find_tree.display().to_string(), "pattern": "**/*.toml"});
            let runs = self.runs.min(3);
            let theirs = time_calls(&mut fs, "search_files", &args, 0, runs)?;
            self.record(
                "find **/*.toml through MCP vs filesystem server",
                &find_ours,
                Some(("filesystem server search_files".into(), theirs)),
                "the same walk by the reference MCP server",
            );
        } else {
            self.record(
                "find **/*.toml through MCP vs filesystem server",
                &find_ours,
                None,
                "npm could not install @modelcontextprotocol/server-filesystem",
            );
        }
        Ok(())
    }
}

fn print_row(row: &Value) {
    let fmt = |v: &Value| -> String {
        if v.is_null() {
            return "-".into();
        }
        let (med, min, max) = (
            v["median"].as_f64().unwrap_or(f64::NAN),
            v["min"].as_f64().unwrap_or(f64::NAN),
            v["max"].as_f64().unwrap_or(f64::NAN),
        );
        if med < 0.001 {
            format!("{:.1}us [{:.1}-{:.1}]", med * 1e6, min * 1e6, max * 1e6)
        } else {
            format!("{med:.3}s [{min:.3}-{max:.3}]")
        }
    };
    let ratio = if row["ratio"].is_null() {
        "-".to_string()
    } else {
        format!(
            "{:.2}x",
            row["ratio"]["median"].as_f64().unwrap_or(f64::NAN)
        )
    };
    println!(
        "| {:<44} | {:<26} | {:<26} | {:>6} | {:>7.1} MB | {}",
        row["figure"].as_str().unwrap_or(""),
        fmt(&row["ours"]),
        if row["reference"].is_null() {
            "(not installed)".to_string()
        } else {
            format!("{} {}", fmt(&row["referenceTime"]), "")
        },
        ratio,
        row["oursPeakRssMb"].as_f64().unwrap_or(0.0),
        row["note"].as_str().unwrap_or("")
    );
}

fn sh(cmd: String) -> Box<dyn FnMut() -> Command> {
    Box::new(move || {
        let mut c = Command::new("sh");
        c.args(["-c", &cmd]);
        c
    })
}

/// What `cargo xtask bench` was asked for.
struct Options {
    /// `--quick`: smaller inputs, fewer runs, no cargo-registry tree.
    quick: bool,
    /// `--runs N` (default 3 quick, else 5).
    runs: usize,
    /// `--only TEXT`.
    only: Option<String>,
}

impl Options {
    fn parse(args: &[String]) -> Options {
        let value_of = |flag: &str| {
            args.iter()
                .position(|a| a == flag)
                .and_then(|i| args.get(i + 1))
        };
        let quick = args.iter().any(|a| a == "--quick");
        Options {
            quick,
            runs: value_of("--runs")
                .and_then(|n| n.parse().ok())
                .unwrap_or(if quick { 3 } else { 5 }),
            only: value_of("--only").cloned(),
        }
    }
}

/// The generated inputs, under `target/bench`.
struct Inputs {
    bench_dir: PathBuf,
    /// A source tree of generated files.
    corpus_dir: PathBuf,
    /// A file of `big_lines` lines.
    big: PathBuf,
    big_lines: usize,
}

impl Inputs {
    fn generate(bench_dir: PathBuf, quick: bool) -> Result<Inputs> {
        let files = if quick { 5_000 } else { 50_000 };
        let big_lines = if quick { 1_100_000 } else { 11_000_000 };
        let corpus_dir = bench_dir.join(format!("corpus-{files}"));
        let big = bench_dir.join(format!("big-{big_lines}.txt"));
        println!(
            "==> corpus: {files} files in {} (seed 42)",
            corpus_dir.display()
        );
        corpus::generate_tree(&corpus_dir, files, 42)?;
        println!("==> big file: {big_lines} lines in {}", big.display());
        corpus::generate_big_file(&big, big_lines)?;
        Ok(Inputs {
            bench_dir,
            corpus_dir,
            big,
            big_lines,
        })
    }
}

/// Builds the release `coding-agent` and returns its path.
pub(crate) fn build_release(root: &Path) -> Result<PathBuf> {
    println!("==> building release binaries");
    let status = Command::new("cargo")
        .args([
            "build",
            "--release",
            "-p",
            "coding-agent-cli",
            "--bin",
            "coding-agent",
        ])
        .current_dir(root)
        .status()?;
    if !status.success() {
        bail!("release build failed");
    }
    Ok(root.join("target/release/coding-agent"))
}

fn print_header() {
    println!(
        "\n| {:<44} | {:<26} | {:<26} | {:>6} | {:>10} | note",
        "figure", "ours (median [min-max])", "reference", "ratio", "peak RSS"
    );
    println!("|{}|", "-".repeat(140));
}

/// The trees the search rows run over: the generated corpus, and (not
/// quick) the cargo registry, a real tree of sources.
fn search_trees(corpus_dir: &Path, quick: bool) -> Vec<(String, PathBuf)> {
    let mut trees: Vec<(String, PathBuf)> = vec![("generated".into(), corpus_dir.to_path_buf())];
    if !quick && let Some(home) = std::env::var_os("HOME") {
        let registry = PathBuf::from(home).join(".cargo/registry/src");
        if registry.is_dir() {
            trees.push(("cargo registry".into(), registry));
        }
    }
    trees
}

/// Writes `target/bench/report.json`.
fn write_report(bench_dir: &Path, options: &Options, rows: &[Value]) -> Result<()> {
    let report = json!({
        "runs": options.runs,
        "quick": options.quick,
        "machine": {"cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)},
        "rows": rows,
    });
    let path = bench_dir.join("report.json");
    std::fs::write(&path, serde_json::to_string_pretty(&report)?)?;
    println!("\nreport written to {}", path.display());
    Ok(())
}

/// `cargo xtask bench [--quick] [--runs N] [--only TEXT]`.
pub fn run(args: &[String]) -> Result<()> {
    let options = Options::parse(args);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("xtask has no parent directory")?
        .to_path_buf();
    let bench_dir = root.join("target").join("bench");
    std::fs::create_dir_all(&bench_dir)?;
    let bin = build_release(&root)?;
    let inputs = Inputs::generate(bench_dir, options.quick)?;
    let references = local::References::find();
    let mut b = Bench {
        runs: options.runs,
        bin,
        rows: Vec::new(),
        only: options.only.clone(),
    };
    print_header();

    let trees = search_trees(&inputs.corpus_dir, options.quick);
    for (label, tree) in &trees {
        b.search_rows(label, tree, &references)?;
    }
    let find_tree = trees
        .last()
        .map(|(_, t)| t.clone())
        .unwrap_or(inputs.corpus_dir.clone());
    b.mcp_rows(&inputs.bench_dir, &find_tree, options.quick)?;
    let registry = trees
        .iter()
        .find(|(label, _)| label == "cargo registry")
        .map(|(_, t)| t.clone());
    b.remote_rows(&inputs.bench_dir, registry.as_deref(), options.quick)?;
    b.ls_rows(&inputs.bench_dir)?;
    b.read_rows(&inputs)?;
    b.stream_rows(&inputs.bench_dir)?;
    b.sandbox_rows(&inputs.bench_dir)?;
    b.bash_output_rows(&inputs.bench_dir, options.quick)?;
    b.in_process_rows(&root, &inputs, &options)?;
    write_report(&inputs.bench_dir, &options, &b.rows)
}
