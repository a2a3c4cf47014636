//! `cargo xtask tui-bench [--profile P] [--no-pi] [--lines N] [--messages N]`:
//! our terminal UI and Pi 1.6.0's, side by side, in one tmux harness
//! against one loopback model (Chat Completions, answers paced by the
//! server).
//!
//! Every time comes from one clock: `tui-exec` stamps the program's start,
//! `tui-stamp` each write the pane received, the model server its last
//! byte. What the screen showed when is found afterwards by replaying the
//! stamped writes on a vt100 screen, so polling the pane only sequences
//! the run and never limits a figure's precision.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::pi::{self, Pi};
use super::stamp::{self, Chunk};
use super::{Tmux, World};
use crate::stream_server;

const WIDTH: u16 = 100;
const HEIGHT: u16 = 30;

/// The server writes one line of the answer every this often.
const PACE: Duration = Duration::from_micros(500);

/// The last line of every answer, and of the resumed session.
const END: &str = "END-OF-ANSWER";
const LAST: &str = "LAST-OF-SESSION";

/// How many keystrokes the latency figure is taken over.
const KEYSTROKES: usize = 40;

/// One of the two programs measured.
struct Agent {
    name: &'static str,
    program: PathBuf,
    pi: Option<Pi>,
}

impl Agent {
    /// The program's arguments in `world` (a session file to resume, or a
    /// new session).
    fn args(&self, world: &World, base: &str, session: Option<&Path>) -> Result<Vec<String>> {
        let sessions = world.dir.join("sessions");
        if let Some(pi) = &self.pi {
            Pi::configure(&world.dir.join("agent"), base)?;
            return Ok(pi.args(&sessions, session));
        }
        let mut args: Vec<String> = [
            "--api",
            "openai-completions",
            "--base-url",
            base,
            "--api-key",
            "bench",
            "--model",
            "bench",
            "--no-tools",
            "--session-dir",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.push(sessions.display().to_string());
        if let Some(file) = session {
            args.extend(["--session".into(), file.display().to_string()]);
        }
        Ok(args)
    }

    /// Whether `screen` shows the empty editor, ready for a prompt.
    fn editor_ready(&self, screen: &[String]) -> bool {
        if self.pi.is_some() {
            // Pi's editor: an empty row between two rules.
            let rule =
                |r: &String| r.trim().chars().count() >= 20 && r.trim().chars().all(|c| c == '─');
            screen
                .windows(3)
                .any(|w| rule(&w[0]) && w[1].trim().is_empty() && rule(&w[2]))
        } else {
            screen.iter().any(|r| r.trim_end() == ">")
        }
    }
}

/// A running program in its pane, with its stamps.
struct Run {
    world: World,
    tmux: Tmux,
    pid: u32,
    start: u64,
}

impl Run {
    fn launch(agent: &Agent, dir: &Path, base: &str, session: Option<&Path>) -> Result<Self> {
        let env = match &agent.pi {
            Some(_) => Pi::env(&dir.join("agent")),
            // Ours times itself (frame builds, key to frame) when asked.
            None => vec![(
                "CODING_AGENT_TUI_STATS",
                stats_path(dir).display().to_string(),
            )],
        };
        Self::launch_program(dir, &agent.program, &env, |world| {
            agent.args(world, base, session)
        })
    }

    /// `program` with the arguments `args` gives for its world, started
    /// through `tui-exec` in a pane recorded by `tui-stamp`.
    fn launch_program(
        dir: &Path,
        program: &Path,
        env: &[(&str, String)],
        args: impl FnOnce(&World) -> Result<Vec<String>>,
    ) -> Result<Self> {
        let world = World::new(dir.parent().context("no parent")?, &leaf(dir), &[])?;
        let xtask = std::env::current_exe()?;
        let started = world.dir.join("started");
        let mut argv = vec![
            "tui-exec".to_string(),
            started.display().to_string(),
            program.display().to_string(),
        ];
        argv.extend(args(&world)?);
        let command = world.command(&xtask, &argv, env);
        let pipe = format!(
            "'{}' tui-stamp '{}'",
            xtask.display(),
            world.raw().display()
        );
        let tmux = Tmux::start_piped("tui-bench", (WIDTH, HEIGHT), &command, &pipe, &world.raw())?;
        let start = {
            let path = started.clone();
            tmux.wait_for("the program to start", |_| stamp::read_start(&path).ok())?
        };
        let pid = tmux.wait_for("the program's process", |_| tmux.child_pid().ok())?;
        Ok(Run {
            world,
            tmux,
            pid,
            start,
        })
    }

    fn chunks(&self) -> Result<Vec<Chunk>> {
        stamp::read(&self.world.raw())
    }

    /// Polls the pane until `agent`'s editor is on the screen.
    fn wait_ready(&self, agent: &Agent) -> Result<()> {
        self.tmux.wait_for("the editor", |_| {
            let screen = self.tmux.screen().ok()?;
            let rows: Vec<String> = screen.lines().map(str::to_string).collect();
            agent.editor_ready(&rows).then_some(())
        })
    }

    /// Time from `since` to the first stamped write after which the
    /// replayed screen satisfies `shown`, in ms.
    fn shown_after(&self, since: u64, shown: impl Fn(&[String]) -> bool) -> Result<f64> {
        let mut parser = vt100::Parser::new(nz(HEIGHT), nz(WIDTH), 0);
        for chunk in self.chunks()? {
            parser.process(&chunk.bytes);
            if chunk.at < since {
                continue;
            }
            let rows: Vec<String> = parser.screen().rows(0, WIDTH).collect();
            if shown(&rows) {
                return Ok(ms(chunk.at - since));
            }
        }
        bail!("the screen never showed what was waited for")
    }

    /// When the bytes first held `text` (the write that completed it).
    fn first_write_of(&self, text: &str) -> Result<Option<u64>> {
        let mut seen: Vec<u8> = Vec::new();
        for chunk in self.chunks()? {
            let from = seen.len().saturating_sub(text.len());
            seen.extend_from_slice(&chunk.bytes);
            if seen[from..]
                .windows(text.len())
                .any(|w| w == text.as_bytes())
            {
                return Ok(Some(chunk.at));
            }
        }
        Ok(None)
    }

    /// Bytes written at or after `since`, and the screen clears among them.
    fn bytes_since(&self, since: u64) -> Result<(usize, usize)> {
        let bytes: Vec<u8> = self
            .chunks()?
            .into_iter()
            .filter(|c| c.at >= since)
            .flat_map(|c| c.bytes)
            .collect();
        let clears =
            super::sanity::count(&bytes, b"\x1b[2J") + super::sanity::count(&bytes, b"\x1b[3J");
        Ok((bytes.len(), clears))
    }

    /// CPU use in % of one core over `span`.
    fn cpu_over(&self, span: Duration) -> Result<f64> {
        let ticks = |pid: u32| -> Result<u64> {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
            let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
            let fields: Vec<&str> = after.split_whitespace().collect();
            let field = |i: usize| {
                fields
                    .get(i)
                    .and_then(|f| f.parse::<u64>().ok())
                    .unwrap_or(0)
            };
            // utime and stime: fields 14 and 15, 12 and 13 after the name.
            Ok(field(11) + field(12))
        };
        let before = ticks(self.pid)?;
        std::thread::sleep(span);
        let after = ticks(self.pid)?;
        let hz = clock_ticks();
        Ok((after - before) as f64 / hz / span.as_secs_f64() * 100.0)
    }

    /// Peak resident memory (VmHWM) in MiB.
    fn peak_mib(&self) -> Result<f64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid))?;
        let kb: f64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .context("no VmHWM")?;
        Ok(kb / 1024.0)
    }

    /// Types `KEYSTROKES` letters one at a time; for each, the time from
    /// the key to the program's next write, in ms (sorted).
    fn keystrokes(&self) -> Result<Vec<f64>> {
        let mut out = Vec::new();
        for _ in 0..KEYSTROKES {
            let sent = stamp::now_ns();
            self.tmux.type_text("k")?;
            let at = self.tmux.wait_for("the key's echo", |_| {
                let chunks = self.chunks().ok()?;
                chunks.iter().find(|c| c.at > sent).map(|c| c.at)
            })?;
            out.push(ms(at - sent));
            // Let the frame finish before the next key.
            std::thread::sleep(Duration::from_millis(30));
        }
        out.sort_by(f64::total_cmp);
        Ok(out)
    }
}

impl Drop for Run {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        // SAFETY: kill has no memory effects; `pid` is the pane's program.
        unsafe { libc::kill(self.pid as libc::pid_t, libc::SIGKILL) };
    }
}

/// Where our program in the run at `dir` writes its own timing.
fn stats_path(dir: &Path) -> PathBuf {
    dir.with_extension("tui-stats.json")
}

/// Ends our program (`/exit`) and reads the timing it wrote.
fn own_timing(run: &Run, dir: &Path) -> Result<serde_json::Value> {
    let path = stats_path(dir);
    let _ = std::fs::remove_file(&path);
    // The editor may hold the keystrokes typed for the latency figure.
    run.tmux.key("C-u")?;
    run.tmux.type_text("/exit")?;
    run.tmux.wait_for_text("/exit")?;
    run.tmux.key("Enter")?;
    let text = run.tmux.wait_for("the program's own timing", |_| {
        std::fs::read_to_string(&path).ok()
    })?;
    serde_json::from_str(&text).context("the timing is not JSON")
}

/// `p50 / p99 / max` of one timing, in ms.
fn timing_ms(stats: &serde_json::Value, key: &str) -> String {
    let f = |p: &str| stats[key][p].as_f64().unwrap_or(f64::NAN) / 1000.0;
    format!("{:.2} / {:.2} / {:.2}", f("p50"), f("p99"), f("max"))
}

fn leaf(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn nz(n: u16) -> std::num::NonZeroU16 {
    std::num::NonZeroU16::new(n).unwrap_or(std::num::NonZeroU16::MIN)
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

#[allow(unsafe_code)]
fn clock_ticks() -> f64 {
    // SAFETY: sysconf only reads a constant.
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).max(1) as f64
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// The answer's lines, one server event each.
fn answer(lines: usize) -> Vec<String> {
    let mut out: Vec<String> = (1..=lines)
        .map(|i| format!("line {i:05}: the quick brown fox jumps over the lazy dog\n\n"))
        .collect();
    out.push(END.to_string());
    out
}

/// A Pi-format session file of `messages` messages, user and assistant
/// in turn, the last one ending in [`LAST`].
fn session_file(path: &Path, cwd: &Path, messages: usize) -> Result<()> {
    use std::fmt::Write as _;
    let mut text = json!({"type": "session", "version": 3,
        "id": "0b5e0b5e-0000-4000-8000-000000000000",
        "timestamp": "2026-01-01T00:00:00.000Z", "cwd": cwd})
    .to_string();
    text.push('\n');
    let mut parent = Value::Null;
    for i in 0..messages {
        let id = format!("{i:08x}");
        let words = if i + 1 == messages {
            format!("message {i}: {LAST}")
        } else {
            format!("message {i}: some words of an ordinary conversation, a sentence or two long.")
        };
        let message = if i % 2 == 0 {
            json!({"role": "user", "content": [{"type": "text", "text": words}], "timestamp": 1_767_225_600_000u64 + i as u64})
        } else {
            json!({"role": "assistant", "content": [{"type": "text", "text": words}],
                "api": "openai-completions", "provider": "bench", "model": "bench",
                "usage": {"input": 10, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 20,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                "stopReason": "stop", "timestamp": 1_767_225_600_000u64 + i as u64})
        };
        let entry = json!({"type": "message", "id": id, "parentId": parent,
            "timestamp": "2026-01-01T00:00:00.000Z", "message": message});
        let _ = writeln!(text, "{entry}");
        parent = Value::String(id);
    }
    std::fs::write(path, text)?;
    Ok(())
}

/// `cargo xtask tui-bench`.
pub fn run(root: &Path, args: &[String]) -> Result<()> {
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let profile = flag("--profile").unwrap_or_else(|| "release".into());
    let lines: usize = flag("--lines").map_or(Ok(10_000), |v| v.parse())?;
    let messages: usize = flag("--messages").map_or(Ok(5_000), |v| v.parse())?;
    if !super::has_tmux() {
        bail!(
            "tmux is missing (install it with `{}`)",
            super::TMUX_INSTALL
        );
    }
    let status = std::process::Command::new("cargo")
        .current_dir(root)
        .args([
            "build",
            "--profile",
            &profile,
            "-p",
            "coding-agent-cli",
            "--bin",
            "coding-agent",
        ])
        .status()?;
    if !status.success() {
        bail!("cargo build --profile {profile} failed");
    }
    let target = super::target_dir(root);
    let dir_name = if profile == "dev" {
        "debug"
    } else {
        profile.as_str()
    };
    let mut agents = vec![Agent {
        name: "ours",
        program: target.join(dir_name).join("coding-agent"),
        pi: None,
    }];
    let mut pi_missing = None;
    if args.iter().any(|a| a == "--no-pi") {
        pi_missing = Some("--no-pi".to_string());
    } else {
        match pi::install(root, &target) {
            Ok(pi) => agents.push(Agent {
                name: "Pi 1.6.0",
                program: pi.node.clone(),
                pi: Some(pi),
            }),
            Err(e) => pi_missing = Some(format!("{e:#}")),
        }
    }
    let work = target.join("tui-bench");
    let mut columns = Vec::new();
    for agent in &agents {
        println!("tui-bench: measuring {} ...", agent.name);
        let column = measure(
            agent,
            &work.join(agent.name.replace(' ', "-")),
            lines,
            messages,
        )
        .with_context(|| format!("measuring {}", agent.name))?;
        columns.push((agent.name, column));
    }
    print_table(&columns, pi_missing.as_deref(), &profile, lines, messages);
    // What tmux itself adds to a keystroke: the terminal driver's echo of
    // `cat`, the least any program can do.
    let floor = Run::launch_program(&work.join("floor"), Path::new("/bin/cat"), &[], |_| {
        Ok(Vec::new())
    })?
    .keystrokes()?;
    let floor = (percentile(&floor, 0.5), percentile(&floor, 0.99));
    println!(
        "\nThe harness's own keystroke latency (send-keys to the echo of `cat`): p50 {:.1} ms, p99 {:.1} ms",
        floor.0, floor.1
    );
    let report = json!({"profile": profile, "lines": lines, "messages": messages,
        "keystrokeFloorMs": {"p50": floor.0, "p99": floor.1},
        "piMissing": pi_missing,
        "columns": columns.iter().map(|(n, c)| json!({"name": n, "figures": c})).collect::<Vec<_>>()});
    std::fs::create_dir_all(&work)?;
    std::fs::write(
        work.join("report.json"),
        serde_json::to_string_pretty(&report)?,
    )?;
    println!(
        "tui-bench: report in {}",
        work.join("report.json").display()
    );
    Ok(())
}

/// Every figure of one agent, by row name.
fn measure(
    agent: &Agent,
    dir: &Path,
    lines: usize,
    messages: usize,
) -> Result<Vec<(String, String)>> {
    let mut figures = Vec::new();
    let text = answer(lines);
    let text_bytes: usize = text.iter().map(String::len).sum();
    let server = stream_server::serve_paced(&text, PACE, stamp::now_ns)?;

    // A new session: first paint, one long streamed answer, idle, memory.
    let run = Run::launch(agent, &dir.join("stream"), &server.base(), None)?;
    run.wait_ready(agent)?;
    let paint = run.shown_after(run.start, |s| agent.editor_ready(s))?;
    figures.push((
        "first paint (spawn to editor), ms".into(),
        format!("{paint:.0}"),
    ));
    run.tmux.type_text("write a long answer")?;
    run.tmux.wait_for_text("write a long answer")?;
    let enter = stamp::now_ns();
    run.tmux.key("Enter")?;
    run.tmux
        .wait_for("the end of the answer on the screen", |_| {
            let screen = run.tmux.screen().ok()?;
            (server.finished() != 0 && screen.contains(END)).then_some(())
        })?;
    let end_shown = run.shown_after(enter, |s| s.iter().any(|r| r.contains(END)))?;
    let stream_ms = ms(server.finished().saturating_sub(enter));
    figures.push((
        format!("{lines}-line answer: stream length, ms"),
        format!("{stream_ms:.0}"),
    ));
    figures.push((
        "screen behind the stream's end, ms".into(),
        format!("{:.0}", end_shown - stream_ms),
    ));
    // Along the stream: every 100th line, from the server's write of it to
    // the first write to the terminal holding it. A line that scrolled
    // past between two frames is never drawn (a fullscreen UI).
    let mut lags = Vec::new();
    let sampled: Vec<usize> = (100..=lines).step_by(100).collect();
    for i in &sampled {
        let token = format!("line {i:05}:");
        if let (Some(sent), Some(drawn)) = (server.written_at(&token), run.first_write_of(&token)?)
        {
            lags.push(ms(drawn.saturating_sub(sent)));
        }
    }
    lags.sort_by(f64::total_cmp);
    figures.push((
        "screen behind the stream, every 100th line: p50 / max ms (lines drawn)".into(),
        format!(
            "{:.0} / {:.0} ({} of {})",
            percentile(&lags, 0.5),
            lags.last().copied().unwrap_or(f64::NAN),
            lags.len(),
            sampled.len()
        ),
    ));
    // What follows the end (the status settling) belongs to the answer too.
    std::thread::sleep(Duration::from_secs(1));
    let (bytes, clears) = run.bytes_since(enter)?;
    figures.push((
        "bytes written / answer text".into(),
        format!("{:.2} ({bytes} B)", bytes as f64 / text_bytes as f64),
    ));
    figures.push((
        "screen clears (CSI 2J, 3J) in the answer".into(),
        clears.to_string(),
    ));
    let (_, all_clears) = run.bytes_since(0)?;
    figures.push((
        "screen clears in the whole run".into(),
        all_clears.to_string(),
    ));
    let history = run.tmux.history()?;
    let kept = (1..=lines)
        .filter(|i| history.contains(&format!("line {i:05}:")))
        .count();
    figures.push((
        "answer lines in the terminal's history".into(),
        format!("{kept} of {lines}"),
    ));
    let idle = run.cpu_over(Duration::from_secs(5))?;
    figures.push(("idle CPU over 5 s after it, %".into(), format!("{idle:.2}")));
    figures.push((
        "peak RSS after the answer, MiB".into(),
        format!("{:.1}", run.peak_mib()?),
    ));
    let row = "frame build while answering, in-process: p50 / p99 / max ms (frames)";
    if agent.pi.is_none() {
        let stats = own_timing(&run, &dir.join("stream"))?;
        let value = format!("{} ({})", timing_ms(&stats, "build_us"), stats["frames"]);
        figures.push((row.into(), value));
    } else {
        figures.push((row.into(), "not exposed".into()));
    }
    drop(run);

    // Resume a long session: paint, keystrokes, memory.
    let resume_dir = dir.join("resume");
    // The session's cwd is the project the program runs in.
    let file = dir.join("long-session.jsonl");
    session_file(&file, &resume_dir.join("project"), messages)?;
    let size_mib = std::fs::metadata(&file)?.len() as f64 / 1_048_576.0;
    let run = Run::launch(agent, &resume_dir, &server.base(), Some(&file))?;
    run.wait_ready(agent)?;
    run.tmux.wait_for_text(LAST)?;
    let resumed = run.shown_after(run.start, |s| {
        agent.editor_ready(s) && s.iter().any(|r| r.contains(LAST))
    })?;
    figures.push((
        format!("resume {messages} messages ({size_mib:.1} MiB) to editor, ms"),
        format!("{resumed:.0}"),
    ));
    let keys = run.keystrokes()?;
    figures.push((
        format!("keystroke to first byte at {messages} messages, p50 / p99 ms"),
        format!(
            "{:.1} / {:.1}",
            percentile(&keys, 0.5),
            percentile(&keys, 0.99)
        ),
    ));
    figures.push((
        format!("peak RSS at {messages} messages, MiB"),
        format!("{:.1}", run.peak_mib()?),
    ));
    let row = format!(
        "keystroke to frame written, in-process, at {messages} messages: p50 / p99 / max ms"
    );
    if agent.pi.is_none() {
        let stats = own_timing(&run, &resume_dir)?;
        figures.push((row, timing_ms(&stats, "key_to_frame_us")));
    } else {
        figures.push((row, "not exposed".into()));
    }
    Ok(figures)
}

fn print_table(
    columns: &[(&str, Vec<(String, String)>)],
    pi_missing: Option<&str>,
    profile: &str,
    lines: usize,
    messages: usize,
) {
    println!(
        "\nTUI benchmark ({profile} build, {WIDTH}x{HEIGHT} tmux pane, {lines}-line answer, {messages}-message session)\n"
    );
    let mut header = "| figure |".to_string();
    for (name, _) in columns {
        header.push_str(&format!(" {name} |"));
    }
    println!("{header}");
    println!("|---|{}", "---|".repeat(columns.len()));
    if let Some((_, first)) = columns.first() {
        for (i, (row, _)) in first.iter().enumerate() {
            let mut line = format!("| {row} |");
            for (_, column) in columns {
                line.push_str(&format!(
                    " {} |",
                    column.get(i).map_or("", |(_, v)| v.as_str())
                ));
            }
            println!("{line}");
        }
    }
    if let Some(why) = pi_missing {
        println!("\nPi's column is missing: {why}");
    }
}
