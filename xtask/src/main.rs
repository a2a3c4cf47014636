//! Project automation, run as `cargo xtask <command>`.
//!
//! - `test-all [--slow]`: formatting, clippy, tests (nextest when installed, plus
//!   doc tests), rustdoc with warnings denied. Stops at the first failure.
//! - `tidy`: the invariants ARCHITECTURE.md names (crate graph, no tool
//!   names in the loop or the product layer, tools on the operations).
//! - `conformance`: the official MCP conformance suite against our client.
//! - `bench [--quick] [--runs N] [--only TEXT]`: speed and memory against ripgrep, fd and
//!   coreutils; a table and `target/bench/report.json`.
//! - `tui-e2e [--only TEXT]`: the terminal UI driven in tmux (keys, pastes,
//!   resizes, signals) with the scripted provider.
//! - `tui-bench`: our terminal UI beside Pi's in the same tmux harness.
//! - `link-order [--check]`: the functions start-up runs, recorded under
//!   callgrind into the CLI's symbol ordering file (`--check`: coverage only).

mod bench;
mod checks;
mod conformance;
mod features;
mod link_order;
mod mcp_bench;
mod pi_peer;
mod stream_server;
mod tidy;
mod tui;

use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("test-all") => test_all(args.iter().any(|a| a == "--slow")),
        Some("features") => features::run(&workspace_root()?),
        Some("bench") => bench::run(&args[1..]),
        Some("stream-server") => stream_server::serve_forever(&args[1..]),
        Some("tidy") => tidy::tidy(&workspace_root()?),
        Some("unused-deps") => checks::unused_dependencies(&workspace_root()?),
        Some("pi") => pi_peer::install(&workspace_root()?),
        Some("external-project") => checks::external_project(&workspace_root()?),
        Some("conformance") => conformance::run(&workspace_root()?),
        Some("tui-bench") => tui::bench::run(&workspace_root()?, &args[1..]),
        Some("tui-stamp") => tui::stamp::record(&args[1..]),
        Some("tui-exec") => tui::stamp::exec(&args[1..]),
        Some("tui-e2e") => tui::e2e::run(&workspace_root()?, &args[1..]),
        Some("link-order") => link_order::run(&workspace_root()?, &args[1..]),
        Some("conformance-cli-client") => conformance::cli_client(&args[1..]),
        Some("help") | Some("--help") | Some("-h") | None => {
            println!(
                "usage: cargo xtask <command>\n\ncommands:\n  test-all [--slow]   fmt, unused deps, clippy, tests, docs, external project (--slow adds the slow hardening tests)\n  bench [--quick] [--only TEXT]  speed and memory against rg, fd and coreutils (rows whose name contains TEXT)\n  features            each library crate with its default features off, and each feature alone (clippy -D warnings)\n  tidy                the architecture's invariants (crate graph, tool names, operations)\n  unused-deps         dependencies a crate declares but never names\n  pi                  install Pi 1.6.0 (pinned in xtask/pi) under target/pi, for the comparisons\n  external-project    the crates used by path from a fresh project\n  tui-e2e [--only TEXT]  the terminal UI end to end in tmux (scripted provider)\n  tui-bench [--profile P] [--no-pi]  our terminal UI beside Pi's, in tmux\n  conformance         the official MCP conformance suite against our MCP client (npm)\n  link-order [--check]  record the release binary's start-up functions into crates/cli/startup.order (valgrind)"
            );
            Ok(())
        }
        Some(other) => bail!("unknown xtask command `{other}` (try `cargo xtask help`)"),
    }
}

/// One step: a name and a command line, or a check run in this process.
struct Step {
    name: &'static str,
    program: &'static str,
    args: Vec<&'static str>,
    env: Vec<(&'static str, &'static str)>,
    check: Option<fn(&std::path::Path) -> Result<()>>,
}

fn step(name: &'static str, args: &[&'static str]) -> Step {
    Step {
        name,
        program: "cargo",
        args: args.to_vec(),
        env: Vec::new(),
        check: None,
    }
}

fn check(name: &'static str, run: fn(&std::path::Path) -> Result<()>) -> Step {
    Step {
        name,
        program: "xtask",
        args: Vec::new(),
        env: Vec::new(),
        check: Some(run),
    }
}

/// A program some test groups need, how to get it, and the nextest filter
/// that leaves those groups out.
struct SystemPart {
    program: &'static str,
    install: &'static str,
    groups: &'static str,
    filter: &'static str,
}

const SYSTEM_PARTS: [SystemPart; 2] = [
    SystemPart {
        program: "/usr/bin/bwrap",
        install: "apt-get install -y bubblewrap",
        groups: "the sandbox tests (crates/cli/tests/it/sandbox/, crates/sandbox/tests/it/sandbox.rs)",
        filter: "not test(/^sandbox::/)",
    },
    SystemPart {
        program: "/usr/sbin/sshd",
        install: "apt-get install -y openssh-server openssh-client",
        groups: "the SSH remote tests (crates/cli/tests/it/remote_ssh.rs)",
        filter: "not test(/^remote_ssh::/)",
    },
];

/// Reports missing system parts: under `CI=true` that is a failure; on a
/// developer's machine their groups are skipped, named with the install
/// command. Returns the nextest filter leaving the skipped groups out.
fn system_parts() -> Result<Option<String>> {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let mut filters: Vec<&str> = Vec::new();
    for part in &SYSTEM_PARTS {
        if std::path::Path::new(part.program).is_file() {
            continue;
        }
        if ci {
            bail!(
                "{} is missing, needed by {} (CI must install it: {})",
                part.program,
                part.groups,
                part.install
            );
        }
        println!(
            "==> SKIPPED group: {} ({} is missing; install it with `{}`)",
            part.groups, part.program, part.install
        );
        filters.push(part.filter);
    }
    Ok((!filters.is_empty()).then(|| filters.join(" and ")))
}

fn has_nextest() -> bool {
    Command::new("cargo")
        .args(["nextest", "--version"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn workspace_root() -> Result<std::path::PathBuf> {
    Ok(std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("xtask has no parent directory")?
        .to_path_buf())
}

fn test_all(slow: bool) -> Result<()> {
    let root = workspace_root()?;
    let mut steps = vec![
        step("fmt", &["fmt", "--all", "--", "--check"]),
        check("unused dependencies", checks::unused_dependencies),
        check("tidy (architecture invariants)", tidy::tidy),
        step(
            "clippy",
            &[
                "clippy",
                "--workspace",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ],
        ),
    ];
    steps.push(check(
        "features (each library crate's features alone, -D warnings)",
        features::run,
    ));
    steps.push(check(
        "Pi 1.6.0 for the comparisons (npm ci into target/pi)",
        pi_peer::install,
    ));
    // System parts the suite needs but cannot install itself.
    let skipped_filter = system_parts()?;
    if has_nextest() {
        let mut test = step(
            "test (nextest)",
            &["nextest", "run", "--workspace", "--no-fail-fast"],
        );
        if let Some(filter) = skipped_filter {
            // The step list lives for the whole run.
            test.args.extend(["-E", Box::leak(filter.into_boxed_str())]);
        }
        steps.push(test);
        steps.push(step("doc tests", &["test", "--workspace", "--doc"]));
    } else {
        steps.push(step("test", &["test", "--workspace", "--no-fail-fast"]));
    }
    let mut doc = step("doc", &["doc", "--workspace", "--no-deps"]);
    doc.env.push(("RUSTDOCFLAGS", "-Dwarnings"));
    steps.push(doc);
    steps.push(check(
        "external project (crates used by path)",
        checks::external_project,
    ));
    steps.push(check("tui end-to-end (tmux)", |root| {
        tui::e2e::run(root, &[])
    }));
    steps.push(check(
        "MCP conformance (client: request metadata, authorization)",
        conformance::run,
    ));

    let total = Instant::now();
    for s in &steps {
        println!("==> {}: {} {}", s.name, s.program, s.args.join(" "));
        let started = Instant::now();
        if let Some(run) = s.check {
            run(&root).with_context(|| format!("step `{}` failed", s.name))?;
            println!(
                "<== {} ok in {:.1}s",
                s.name,
                started.elapsed().as_secs_f64()
            );
            continue;
        }
        let mut cmd = Command::new(s.program);
        // From the workspace root, where nextest finds `.config/nextest.toml`
        // (its test groups and hang limit).
        cmd.current_dir(&root).args(&s.args);
        for (k, v) in &s.env {
            cmd.env(k, v);
        }
        if slow {
            cmd.env("CODING_AGENT_SLOW_TESTS", "1");
        }
        let status = cmd
            .status()
            .with_context(|| format!("could not start {}", s.program))?;
        let secs = started.elapsed().as_secs_f64();
        if !status.success() {
            println!("<== {} FAILED after {secs:.1}s", s.name);
            bail!("step `{}` failed ({status})", s.name);
        }
        println!("<== {} ok in {secs:.1}s", s.name);
    }
    println!(
        "test-all: all {} steps passed in {:.1}s",
        steps.len(),
        total.elapsed().as_secs_f64()
    );
    Ok(())
}
