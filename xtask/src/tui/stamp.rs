//! Time stamps shared by the benchmark's processes: every one of them
//! reads the same clock (`CLOCK_MONOTONIC`), so the moment a program was
//! started, the moment the model server wrote its last byte and the
//! moment each of the program's writes reached tmux compare directly.
//!
//! - `xtask tui-stamp FILE` (tmux's `pipe-pane` target) records what the
//!   pane's program writes as `(nanoseconds, length, bytes)` records.
//! - `xtask tui-exec FILE PROGRAM ARGS...` writes the time to FILE and
//!   becomes PROGRAM (`exec`), so the start is the program's own.

use std::io::{Read, Write};
use std::path::Path;

use anyhow::{Context, Result, bail};

/// Now, in nanoseconds of `CLOCK_MONOTONIC`.
#[allow(unsafe_code)]
pub fn now_ns() -> u64 {
    // SAFETY: an all-zero timespec is valid; clock_gettime writes it.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: the pointer is valid for the call.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `xtask tui-stamp FILE`: stdin to FILE, each read stamped.
pub fn record(args: &[String]) -> Result<()> {
    let path = args.first().context("usage: xtask tui-stamp FILE")?;
    let mut out = std::fs::File::create(path).with_context(|| format!("cannot create {path}"))?;
    let mut input = std::io::stdin().lock();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        let mut record = Vec::with_capacity(n + 12);
        record.extend_from_slice(&now_ns().to_le_bytes());
        record.extend_from_slice(&(n as u32).to_le_bytes());
        record.extend_from_slice(&buf[..n]);
        out.write_all(&record)?;
    }
}

/// `xtask tui-exec FILE PROGRAM ARGS...`: stamps FILE, then runs PROGRAM
/// in this process.
pub fn exec(args: &[String]) -> Result<()> {
    use std::os::unix::process::CommandExt;
    let [file, program, rest @ ..] = args else {
        bail!("usage: xtask tui-exec FILE PROGRAM ARGS...");
    };
    std::fs::write(file, now_ns().to_string())?;
    let error = std::process::Command::new(program).args(rest).exec();
    bail!("cannot run {program}: {error}")
}

/// One write of the program, as tmux read it.
pub struct Chunk {
    /// When it arrived (`CLOCK_MONOTONIC` nanoseconds).
    pub at: u64,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// The records `tui-stamp` wrote to `path`.
pub fn read(path: &Path) -> Result<Vec<Chunk>> {
    let data = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut chunks = Vec::new();
    let mut rest = data.as_slice();
    while rest.len() >= 12 {
        let at = u64::from_le_bytes(rest[..8].try_into()?);
        let len = u32::from_le_bytes(rest[8..12].try_into()?) as usize;
        let Some(bytes) = rest.get(12..12 + len) else {
            break;
        };
        chunks.push(Chunk {
            at,
            bytes: bytes.to_vec(),
        });
        rest = &rest[12 + len..];
    }
    Ok(chunks)
}

/// The time stamp `tui-exec` wrote.
pub fn read_start(path: &Path) -> Result<u64> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(text.trim().parse()?)
}
