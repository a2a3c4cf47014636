//! The local rows: each group of figures of our tools run as processes,
//! beside the programs that do the same job (ripgrep, fd, coreutils).

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Result, bail};
use serde_json::{Value, json};

use test_support::corpus;

use super::{Bench, Inputs, Options, print_row, sh, tool_cmd, which};

/// The reference programs installed here.
pub(super) struct References {
    rg: Option<String>,
    fd: Option<String>,
    /// `" --no-require-git"` where fd knows it, else empty.
    fd_no_require_git: &'static str,
}

impl References {
    pub(super) fn find() -> References {
        let rg = which(&["rg"]);
        let fd = which(&["fdfind", "fd"]);
        // Debian's fd 8 predates --no-require-git; outside a git repository it then
        // skips .gitignore files, which only makes its job lighter.
        let fd_no_require_git = match &fd {
            Some(fd)
                if Command::new(fd).arg("--help").output().is_ok_and(|o| {
                    String::from_utf8_lossy(&o.stdout).contains("--no-require-git")
                }) =>
            {
                " --no-require-git"
            }
            _ => "",
        };
        References {
            rg,
            fd,
            fd_no_require_git,
        }
    }
}

impl Bench {
    /// grep (rare and common pattern) and find (against sorted and
    /// unsorted fd) over one tree.
    pub(super) fn search_rows(
        &mut self,
        label: &str,
        tree: &Path,
        refs: &References,
    ) -> Result<()> {
        let t = tree.to_path_buf();
        let ours_rare = tool_cmd(
            &self.bin,
            "grep",
            &t,
            json!({"pattern": corpus::RARE, "limit": 1_000_000}),
        );
        let reference = refs.rg.as_ref().map(|rg| {
            (
                "rg -n".to_string(),
                sh(format!("{rg} -n {} {}", corpus::RARE, t.display())),
            )
        });
        self.compare(
            &format!("grep rare pattern ({label})"),
            ours_rare,
            reference,
            "both scan every file",
        )?;

        let ours_common = tool_cmd(
            &self.bin,
            "grep",
            &t,
            json!({"pattern": "return", "limit": 100}),
        );
        let reference = refs.rg.as_ref().map(|rg| {
            (
                "rg -n --sort path | head -100".to_string(),
                sh(format!(
                    "{rg} -n --sort path return {} | head -n 100",
                    t.display()
                )),
            )
        });
        self.compare(
            &format!("grep common pattern, limit 100 ({label})"),
            ours_common,
            reference,
            "both: first 100 matches in path order, stopping early",
        )?;

        let fd_no_require_git = refs.fd_no_require_git;
        for (reference_name, sort, figure, note) in [
            ("fd --glob | sort", " | sort", "find *.rs", "both sorted"),
            (
                "fd --glob (unsorted)",
                "",
                "find *.rs vs unsorted fd",
                "fd does not sort",
            ),
        ] {
            let ours_find = tool_cmd(
                &self.bin,
                "find",
                &t,
                json!({"pattern": "*.rs", "limit": 10_000_000}),
            );
            let reference = refs.fd.as_ref().map(|fd| {
                (
                    reference_name.to_string(),
                    sh(format!(
                        "{fd} --glob --hidden{fd_no_require_git} '*.rs' {}{sort}",
                        t.display()
                    )),
                )
            });
            self.compare(&format!("{figure} ({label})"), ours_find, reference, note)?;
        }
        Ok(())
    }

    /// ls of a directory of 10,000 entries.
    pub(super) fn ls_rows(&mut self, bench_dir: &Path) -> Result<()> {
        let wide = bench_dir.join("wide-dir");
        if !wide.join("f9999").exists() {
            std::fs::create_dir_all(&wide)?;
            for i in 0..10_000 {
                std::fs::write(wide.join(format!("f{i}")), "")?;
            }
        }
        self.compare(
            "ls 10,000 entries",
            tool_cmd(&self.bin, "ls", &wide, json!({"limit": 100_000})),
            Some(("ls -1a".into(), sh(format!("ls -1a {}", wide.display())))),
            "",
        )
    }

    /// read deep into the big file, and at the head of a sparse 64 GiB one.
    pub(super) fn read_rows(&mut self, inputs: &Inputs) -> Result<()> {
        let (bench_dir, big) = (&inputs.bench_dir, &inputs.big);
        let offset = inputs.big_lines - 1_000_000;
        let big_name = big
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        let read_args = json!({"path": big_name, "offset": offset, "limit": 2000});
        self.compare(
            &format!("read 2000 lines at offset {offset}"),
            tool_cmd(&self.bin, "read", bench_dir, read_args.clone()),
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
        self.compare(
            &format!("read 2000 lines at offset {offset} vs tail|head"),
            tool_cmd(&self.bin, "read", bench_dir, read_args),
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
        self.compare(
            "read 2 lines at the head of a 64 GiB sparse file",
            tool_cmd(
                &self.bin,
                "read",
                bench_dir,
                json!({"path": "sparse-64g-v2.log", "limit": 2}),
            ),
            Some((
                "head -n 2".into(),
                sh(format!("head -n 2 {}", sparse.display())),
            )),
            "the rest is counted up to 32 MB, then a lower bound is given",
        )
    }

    /// The sandbox's cost per bash call: bubblewrap's namespaces and the
    /// seccomp filter around every command, in a process per call (which
    /// also pays the one-time check that bubblewrap works here) and in one
    /// process, as the agent runs them.
    pub(super) fn sandbox_rows(&mut self, bench_dir: &Path) -> Result<()> {
        let sandboxed = {
            let (bin, dir) = (self.bin.clone(), bench_dir.to_path_buf());
            move || {
                let mut c = Command::new(&bin);
                c.args(["tool", "bash", "--sandbox", "workspace-write", "--cwd"])
                    .arg(&dir)
                    .args(["--args", r#"{"command":"true"}"#]);
                c
            }
        };
        self.compare(
            "bash start-up, sandbox on",
            sandboxed,
            Some((
                "the same, --sandbox off".into(),
                Box::new(tool_cmd(
                    &self.bin,
                    "bash",
                    bench_dir,
                    json!({"command": "true"}),
                )),
            )),
            "whole process per call, incl. the one-time bubblewrap check",
        )?;
        let calls = 50;
        let batch = bench_dir.join("bash-true-50.jsonl");
        std::fs::write(
            &batch,
            (0..calls)
                .map(|_| format!("{}\n", json!({"tool": "bash", "args": {"command": "true"}})))
                .collect::<String>(),
        )?;
        let batch_of = |mode: &'static str| {
            let (bin, dir, batch) = (self.bin.clone(), bench_dir.to_path_buf(), batch.clone());
            move || {
                let mut c = Command::new(&bin);
                c.args(["tool", "--sandbox", mode, "--cwd"])
                    .arg(&dir)
                    .arg("--batch")
                    .arg(&batch);
                c
            }
        };
        self.compare(
            "50 bash calls in one process, sandbox on",
            batch_of("workspace-write"),
            Some(("the same, --sandbox off".into(), Box::new(batch_of("off")))),
            "extra per call = (on - off) / 50; target: under 5 ms",
        )
    }

    /// bash printing a lot (100 MB quick, else 1 GB), against sh sending it
    /// to /dev/null and to a file; then the full-output files are removed.
    pub(super) fn bash_output_rows(&mut self, bench_dir: &Path, quick: bool) -> Result<()> {
        let bytes: u64 = if quick { 100_000_000 } else { 1_000_000_000 };
        let produce = format!("yes 'a line of output from a chatty command' | head -c {bytes}");
        self.compare(
            &format!("bash printing {} MB", bytes / 1_000_000),
            tool_cmd(
                &self.bin,
                "bash",
                bench_dir,
                json!({"command": produce.clone(), "timeout": 0}),
            ),
            Some(("sh -c CMD > /dev/null".into(), sh(produce.clone()))),
            "ours also saves the full output to a temp file",
        )?;
        let spill = bench_dir.join("sh-output.log");
        self.compare(
            &format!(
                "bash printing {} MB vs writing it to a file",
                bytes / 1_000_000
            ),
            tool_cmd(
                &self.bin,
                "bash",
                bench_dir,
                json!({"command": produce.clone(), "timeout": 0}),
            ),
            Some((
                "sh -c 'CMD > file'".into(),
                sh(format!("{produce} > {}", spill.display())),
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
        Ok(())
    }

    /// The in-process figures of `cargo bench -p tools-builtin --bench
    /// tools`, over the same inputs, and of `cargo bench -p agent-sessions
    /// --bench sessions`, printed and kept with the others.
    pub(super) fn in_process_rows(
        &mut self,
        root: &Path,
        inputs: &Inputs,
        options: &Options,
    ) -> Result<()> {
        let tools = [
            "--corpus".as_ref(),
            inputs.corpus_dir.as_os_str(),
            "--big-file".as_ref(),
            inputs.big.as_os_str(),
        ];
        for (package, bench, inputs) in [
            ("tools-builtin", "tools", &tools[..]),
            ("agent-sessions", "sessions", &[][..]),
        ] {
            println!("\n==> in-process figures (cargo bench -p {package} --bench {bench})");
            let out = Command::new("cargo")
                .args([
                    "bench", "-q", "-p", package, "--bench", bench, "--", "--json",
                ])
                .args(options.only.iter().flat_map(|o| ["--only", o.as_str()]))
                .args(inputs)
                .args(["--runs", &options.runs.to_string()])
                .args(options.quick.then_some("--quick"))
                .current_dir(root)
                .stderr(Stdio::inherit())
                .output()?;
            if !out.status.success() {
                bail!("the in-process benchmark {package} {bench} failed");
            }
            for line in String::from_utf8_lossy(&out.stdout).lines() {
                if let Ok(row) = serde_json::from_str::<Value>(line)
                    && row.get("figure").is_some()
                {
                    print_row(&row);
                    self.rows.push(row);
                }
            }
        }
        Ok(())
    }
}
