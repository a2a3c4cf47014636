//! `cargo xtask bench`: our tools against ripgrep, fd and coreutils, side by
//! side, repeated; a table on stdout and `target/bench/report.json`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use test_support::corpus;

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

fn which(names: &[&str]) -> Option<String> {
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

/// `cargo xtask bench [--quick] [--runs N]`.
pub fn run(args: &[String]) -> Result<()> {
    let quick = args.iter().any(|a| a == "--quick");
    let runs = args
        .iter()
        .position(|a| a == "--runs")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(if quick { 3 } else { 5 });
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("xtask has no parent directory")?
        .to_path_buf();
    let bench_dir = root.join("target").join("bench");
    std::fs::create_dir_all(&bench_dir)?;

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
        .current_dir(&root)
        .status()?;
    if !status.success() {
        bail!("release build failed");
    }
    let bin = root.join("target/release/coding-agent");

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

    let rg = which(&["rg"]);
    let fd = which(&["fdfind", "fd"]);
    // Debian's fd 8 predates --no-require-git; outside a git repository it then
    // skips .gitignore files, which only makes its job lighter.
    let fd_no_require_git = match &fd {
        Some(fd)
            if Command::new(fd)
                .arg("--help")
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("--no-require-git")) =>
        {
            " --no-require-git"
        }
        _ => "",
    };
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let mut b = Bench {
        runs,
        bin,
        rows: Vec::new(),
        only: only.clone(),
    };
    println!(
        "\n| {:<44} | {:<26} | {:<26} | {:>6} | {:>10} | note",
        "figure", "ours (median [min-max])", "reference", "ratio", "peak RSS"
    );
    println!("|{}|", "-".repeat(140));

    let mut trees: Vec<(String, PathBuf)> = vec![("generated".into(), corpus_dir.clone())];
    if !quick && let Some(home) = std::env::var_os("HOME") {
        let registry = PathBuf::from(home).join(".cargo/registry/src");
        if registry.is_dir() {
            trees.push(("cargo registry".into(), registry));
        }
    }
    for (label, tree) in &trees {
        let t = tree.clone();
        let ours_rare = tool_cmd(
            &b.bin,
            "grep",
            &t,
            json!({"pattern": corpus::RARE, "limit": 1_000_000}),
        );
        let reference = rg.as_ref().map(|rg| {
            (
                "rg -n".to_string(),
                sh(format!("{rg} -n {} {}", corpus::RARE, t.display())),
            )
        });
        b.compare(
            &format!("grep rare pattern ({label})"),
            ours_rare,
            reference,
            "both scan every file",
        )?;

        let ours_common = tool_cmd(
            &b.bin,
            "grep",
            &t,
            json!({"pattern": "return", "limit": 100}),
        );
        let reference = rg.as_ref().map(|rg| {
            (
                "rg -n --sort path | head -100".to_string(),
                sh(format!(
                    "{rg} -n --sort path return {} | head -n 100",
                    t.display()
                )),
            )
        });
        b.compare(
            &format!("grep common pattern, limit 100 ({label})"),
            ours_common,
            reference,
            "both: first 100 matches in path order, stopping early",
        )?;

        let ours_find = tool_cmd(
            &b.bin,
            "find",
            &t,
            json!({"pattern": "*.rs", "limit": 10_000_000}),
        );
        let reference = fd.as_ref().map(|fd| {
            (
                "fd --glob | sort".to_string(),
                sh(format!(
                    "{fd} --glob --hidden{fd_no_require_git} '*.rs' {} | sort",
                    t.display()
                )),
            )
        });
        b.compare(
            &format!("find *.rs ({label})"),
            ours_find,
            reference,
            "both sorted",
        )?;
        let ours_find = tool_cmd(
            &b.bin,
            "find",
            &t,
            json!({"pattern": "*.rs", "limit": 10_000_000}),
        );
        let reference = fd.as_ref().map(|fd| {
            (
                "fd --glob (unsorted)".to_string(),
                sh(format!(
                    "{fd} --glob --hidden{fd_no_require_git} '*.rs' {}",
                    t.display()
                )),
            )
        });
        b.compare(
            &format!("find *.rs vs unsorted fd ({label})"),
            ours_find,
            reference,
            "fd does not sort",
        )?;
    }

    let find_tree = trees
        .last()
        .map(|(_, t)| t.clone())
        .unwrap_or(corpus_dir.clone());
    b.mcp_rows(&bench_dir, &find_tree, quick)?;
    let registry = trees
        .iter()
        .find(|(label, _)| label == "cargo registry")
        .map(|(_, t)| t.clone());
    b.remote_rows(&bench_dir, registry.as_deref(), quick)?;

    let wide = bench_dir.join("wide-dir");
    if !wide.join("f9999").exists() {
        std::fs::create_dir_all(&wide)?;
        for i in 0..10_000 {
            std::fs::write(wide.join(format!("f{i}")), "")?;
        }
    }
    b.compare(
        "ls 10,000 entries",
        tool_cmd(&b.bin, "ls", &wide, json!({"limit": 100_000})),
        Some(("ls -1a".into(), sh(format!("ls -1a {}", wide.display())))),
        "",
    )?;

    let offset = big_lines - 1_000_000;
    let big_name = big
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    let read_args = json!({"path": big_name, "offset": offset, "limit": 2000});
    b.compare(
        &format!("read 2000 lines at offset {offset}"),
        tool_cmd(&b.bin, "read", &bench_dir, read_args.clone()),
        Some((
            "sed -n X,Yp".into(),
            sh(format!(
                "sed -n '{offset},{}p;{}q' {}",
                offset + 1999,
                offset + 2000,
                big.display()
            )),
        )),
        "file streamed, not loaded",
    )?;
    b.compare(
        &format!("read 2000 lines at offset {offset} vs tail|head"),
        tool_cmd(&b.bin, "read", &bench_dir, read_args),
        Some((
            "tail -n +X | head".into(),
            sh(format!(
                "tail -n +{offset} {} | head -n 2000",
                big.display()
            )),
        )),
        "",
    )?;

    // The head of a huge file: 2,000 lines (more than read sniffs for binary
    // content), then a 64 GiB hole (nothing on disk). Counting all its lines
    // would mean reading 64 GiB of zeros.
    let sparse = bench_dir.join("sparse-64g-v2.log");
    if std::fs::metadata(&sparse).map(|m| m.len()).unwrap_or(0) != 64 << 30 {
        let head: String = (1..=2000)
            .map(|i| format!("line {i} of a long log file, with some words to read\n"))
            .collect();
        std::fs::write(&sparse, head)?;
        std::fs::OpenOptions::new()
            .write(true)
            .open(&sparse)?
            .set_len(64 << 30)?;
    }
    b.compare(
        "read 2 lines at the head of a 64 GiB sparse file",
        tool_cmd(
            &b.bin,
            "read",
            &bench_dir,
            json!({"path": "sparse-64g-v2.log", "limit": 2}),
        ),
        Some((
            "head -n 2".into(),
            sh(format!("head -n 2 {}", sparse.display())),
        )),
        "the rest is counted up to 32 MB, then a lower bound is given",
    )?;

    // A model answering 1 MB in 4-byte deltas, from a loopback server in a
    // process of its own (a forked child would report this process's memory).
    let server = crate::stream_server::spawn(1 << 20, 4)?;
    let mut stream_agent = {
        let (bin, base, dir) = (b.bin.clone(), server.base_url(), bench_dir.clone());
        move || {
            let mut c = Command::new(&bin);
            c.args(["--provider", "openai", "--api-key", "bench", "--base-url"])
                .arg(&base)
                .args(["--model", "bench", "--no-tools", "--cwd"])
                .arg(&dir)
                .args(["-p", "write a long answer"])
                .env("CODING_AGENT_DIR", dir.join("no-agent-dir"));
            c
        }
    };
    b.compare(
        "agent -p: 1 MB answer in 4-byte deltas",
        &mut stream_agent,
        None,
        "262,144 SSE events over loopback, through the whole loop",
    )?;

    // The sandbox's cost per bash call: bubblewrap's namespaces and the
    // seccomp filter around every command. A whole process per call also
    // pays the one-time check that bubblewrap works here.
    let sandboxed = {
        let (bin, dir) = (b.bin.clone(), bench_dir.clone());
        move || {
            let mut c = Command::new(&bin);
            c.args(["tool", "bash", "--sandbox", "workspace-write", "--cwd"])
                .arg(&dir)
                .args(["--args", r#"{"command":"true"}"#]);
            c
        }
    };
    b.compare(
        "bash start-up, sandbox on",
        sandboxed,
        Some((
            "the same, --sandbox off".into(),
            Box::new(tool_cmd(
                &b.bin,
                "bash",
                &bench_dir,
                json!({"command": "true"}),
            )),
        )),
        "whole process per call, incl. the one-time bubblewrap check",
    )?;
    // Per call inside one process, as the agent runs them: 50 calls.
    let calls = 50;
    let batch = bench_dir.join("bash-true-50.jsonl");
    std::fs::write(
        &batch,
        (0..calls)
            .map(|_| format!("{}\n", json!({"tool": "bash", "args": {"command": "true"}})))
            .collect::<String>(),
    )?;
    let batch_of = |mode: &'static str| {
        let (bin, dir, batch) = (b.bin.clone(), bench_dir.clone(), batch.clone());
        move || {
            let mut c = Command::new(&bin);
            c.args(["tool", "--sandbox", mode, "--cwd"])
                .arg(&dir)
                .arg("--batch")
                .arg(&batch);
            c
        }
    };
    b.compare(
        "50 bash calls in one process, sandbox on",
        batch_of("workspace-write"),
        Some(("the same, --sandbox off".into(), Box::new(batch_of("off")))),
        "extra per call = (on - off) / 50; target: under 5 ms",
    )?;

    let bytes: u64 = if quick { 100_000_000 } else { 1_000_000_000 };
    let produce = format!("yes 'a line of output from a chatty command' | head -c {bytes}");
    b.compare(
        &format!("bash printing {} MB", bytes / 1_000_000),
        tool_cmd(
            &b.bin,
            "bash",
            &bench_dir,
            json!({"command": produce.clone(), "timeout": 0}),
        ),
        Some(("sh -c CMD > /dev/null".into(), sh(produce))),
        "ours also saves the full output to a temp file",
    )?;
    let spill = bench_dir.join("sh-output.log");
    b.compare(
        &format!("bash printing {} MB vs writing it to a file", bytes / 1_000_000),
        tool_cmd(&b.bin, "bash", &bench_dir, json!({"command": format!("yes 'a line of output from a chatty command' | head -c {bytes}"), "timeout": 0})),
        Some((
            "sh -c 'CMD > file'".into(),
            sh(format!("yes 'a line of output from a chatty command' | head -c {bytes} > {}", spill.display())),
        )),
        "both write every byte to a file",
    )?;
    let _ = std::fs::remove_file(&spill);
    // Remove the full-output files the bash runs left behind.
    if let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) {
        for e in entries.flatten() {
            if e.file_name()
                .to_string_lossy()
                .starts_with("coding-agent-bash-")
            {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }

    println!("\n==> in-process figures (cargo bench -p tools-builtin --bench tools)");
    let out = Command::new("cargo")
        .args([
            "bench",
            "-q",
            "-p",
            "tools-builtin",
            "--bench",
            "tools",
            "--",
            "--json",
            "--corpus",
        ])
        .args(only.iter().flat_map(|o| ["--only", o.as_str()]))
        .arg(&corpus_dir)
        .arg("--big-file")
        .arg(&big)
        .args(["--runs", &runs.to_string()])
        .args(quick.then_some("--quick"))
        .current_dir(&root)
        .stderr(Stdio::inherit())
        .output()?;
    if !out.status.success() {
        bail!("the in-process benchmark failed");
    }
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if let Ok(row) = serde_json::from_str::<Value>(line)
            && row.get("figure").is_some()
        {
            print_row(&row);
            b.rows.push(row);
        }
    }

    let report = json!({
        "runs": runs,
        "quick": quick,
        "machine": {"cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)},
        "rows": b.rows,
    });
    let path = bench_dir.join("report.json");
    std::fs::write(&path, serde_json::to_string_pretty(&report)?)?;
    println!("\nreport written to {}", path.display());
    Ok(())
}
