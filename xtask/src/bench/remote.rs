//! The remote rows: our tools over `ssh://` to a loopback OpenSSH server
//! beside the raw transport (`ssh host cat`, `ssh host true`) and beside our
//! own local tools.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use test_support::sshd::LoopbackSshd;

use super::{Bench, median};

/// sshd on 127.0.0.1 logging in root by key (the bench reads root's cargo
/// registry), or `None` with a note where it cannot run.
fn start_sshd(dir: &Path) -> Result<Option<LoopbackSshd>> {
    if !test_support::sshd::installed() {
        println!(
            "(remote rows skipped: no OpenSSH; {})",
            test_support::sshd::INSTALL
        );
        return Ok(None);
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    #[allow(unsafe_code)]
    let euid = unsafe { libc::geteuid() };
    if euid != 0 {
        println!("(remote rows skipped: starting sshd needs root)");
        return Ok(None);
    }
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    Ok(Some(LoopbackSshd::start(dir, "root")?))
}

/// A `coding-agent tool --batch -` process fed one case at a time, so each
/// call is timed on a warm session.
struct BatchSession {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl BatchSession {
    fn start(bin: &Path, extra: &[String]) -> Result<BatchSession> {
        let mut child = Command::new(bin)
            .args(["tool", "--batch", "-"])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdin = child.stdin.take().context("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("no stdout")?);
        Ok(BatchSession {
            child,
            stdin,
            stdout,
        })
    }

    fn call(&mut self, case: &Value) -> Result<(f64, Value)> {
        let started = Instant::now();
        writeln!(self.stdin, "{case}")?;
        self.stdin.flush()?;
        let mut line = String::new();
        if self.stdout.read_line(&mut line)? == 0 {
            bail!("the batch ended early");
        }
        let secs = started.elapsed().as_secs_f64();
        let v: Value = serde_json::from_str(&line)?;
        if v["isError"] == true {
            bail!("the call failed: {v}");
        }
        Ok((secs, v))
    }
}

impl Drop for BatchSession {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn timed(mut cmd: Command) -> Result<f64> {
    cmd.stdout(Stdio::null())
        .stderr(Stdio::null())
        .stdin(Stdio::null());
    let started = Instant::now();
    let status = cmd.status()?;
    if !status.success() {
        bail!("{cmd:?} failed: {status}");
    }
    Ok(started.elapsed().as_secs_f64())
}

impl Bench {
    /// The four rows of the remote issue.
    pub(super) fn remote_rows(
        &mut self,
        bench_dir: &Path,
        registry: Option<&Path>,
        quick: bool,
    ) -> Result<()> {
        if !self.wants("remote") {
            return Ok(());
        }
        let Some(server) = start_sshd(&bench_dir.join("sshd"))? else {
            return Ok(());
        };
        let work = bench_dir.join("remote-work");
        std::fs::create_dir_all(&work)?;
        std::fs::write(work.join("small.txt"), "a small file\nof three\nlines\n")?;
        let calls = if quick { 100 } else { 500 };
        let mut remote_args = vec!["--remote".to_string(), server.uri(&work)];
        for o in server.client_options(false) {
            remote_args.extend(["--ssh-option".to_string(), o]);
        }

        // 1. read of a small file, per call, warm session vs `ssh cat` on a
        //    warm master.
        let mut session = BatchSession::start(&self.bin, &remote_args)?;
        let read = json!({"tool": "read", "args": {"path": "small.txt"}});
        for _ in 0..20 {
            session.call(&read)?;
        }
        let mut ours = Vec::new();
        for _ in 0..calls {
            ours.push(session.call(&read)?.0);
        }
        let logins_before = server.logins();
        let hundred: Vec<f64> = (0..100)
            .map(|_| session.call(&read).map(|r| r.0))
            .collect::<Result<_>>()?;
        let logins_during = server.logins() - logins_before;
        drop(session);
        // Warm the master, then time `cat` on it.
        timed({
            let mut c = server.ssh(true);
            c.arg("true");
            c
        })?;
        let mut cat = Vec::new();
        for _ in 0..calls.min(200) {
            let mut c = server.ssh(true);
            c.arg(format!("cat {}", work.join("small.txt").display()));
            cat.push(timed(c)?);
        }
        self.record(
            "remote read small file, per call (warm)",
            &ours,
            Some(("ssh host cat file (warm ControlMaster)".into(), cat)),
            "one request on the open channel vs a new channel per cat; target: at most 0.5x",
        );

        // 2. 100 sequential calls open exactly one SSH connection.
        self.record(
            "remote 100 sequential calls: SSH logins",
            &[logins_during as f64],
            None,
            &format!(
                "sshd's 'Accepted publickey' lines during 100 calls on one session (median {:.0}us per call); target: exactly 0 new (the session's one connection was opened before)",
                median(hundred) * 1e6
            ),
        );

        // 3. session start, helper check included, vs `ssh host true`.
        let mut start_ours = Vec::new();
        let mut start_ssh = Vec::new();
        for _ in 0..self.runs.max(5) {
            let mut c = Command::new(&self.bin);
            c.args(["tool", "ls"]).args(&remote_args);
            start_ours.push(timed(c)?);
            let mut c = server.ssh(false);
            c.arg("true");
            start_ssh.push(timed(c)?);
        }
        let extra_ms = (median(start_ours.clone()) - median(start_ssh.clone())) * 1000.0;
        self.record(
            "remote session start (tool ls, new connection)",
            &start_ours,
            Some(("ssh host true (new connection)".into(), start_ssh)),
            &format!("{extra_ms:.0} ms more than ssh host true, helper check and one call included; target: at most +150 ms"),
        );

        // 4. grep of a rare word over the cargo registry, remote vs local.
        if let Some(tree) = registry {
            let grep = json!({"tool": "grep", "cwd": tree, "args": {"pattern": test_support::corpus::RARE, "limit": 1_000_000}});
            let mut remote = BatchSession::start(&self.bin, &remote_args)?;
            let mut local = BatchSession::start(&self.bin, &[])?;
            // Warm the page cache for both.
            local.call(&grep)?;
            remote.call(&grep)?;
            let (mut r, mut l) = (Vec::new(), Vec::new());
            for _ in 0..self.runs {
                r.push(remote.call(&grep)?.0);
                l.push(local.call(&grep)?.0);
            }
            self.record(
                "remote grep rare word, cargo registry",
                &r,
                Some(("our local grep, same tree".into(), l)),
                &format!(
                    "{}; one request per search; target: at most 1.2x",
                    tree.display()
                ),
            );
        }
        Ok(())
    }
}
