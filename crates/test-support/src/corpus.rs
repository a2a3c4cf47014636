//! Deterministic benchmark corpora: a source-like tree with nested
//! `.gitignore`s, and a large line-numbered text file.
//!
//! Shared by `cargo xtask bench` and `cargo bench -p tools-builtin`.

use std::io::{self, BufWriter, Write};
use std::path::Path;

/// Appears in exactly three searched files (and in ignored ones).
pub const RARE: &str = "zqxjvk_rare_needle";
/// Appears in most files, several times.
pub const COMMON: &str = "common_word";

const WORDS: &[&str] = &[
    "fn", "let", "match", "struct", "impl", "return", "value", "index", "buffer", "config",
    "parse", "render", "token", "stream", "error", "result", "option", "vector", "string",
    "handle", "worker", "queue", "cache", "layout", "widget", "client", "server", "request",
];

/// xorshift64*: small, fast, deterministic.
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed (zero is replaced).
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }
    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// A number below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// Writes a tree of `files` files under `root` (skipped when a marker says the
/// same tree is already there).
pub fn generate_tree(root: &Path, files: usize, seed: u64) -> io::Result<()> {
    let marker = root.join(".corpus-spec");
    let spec = format!("files={files} seed={seed} v1\n");
    if std::fs::read_to_string(&marker).ok().as_deref() == Some(spec.as_str()) {
        return Ok(());
    }
    if root.exists() {
        std::fs::remove_dir_all(root)?;
    }
    std::fs::create_dir_all(root)?;
    let mut rng = Rng::new(seed);
    let exts = ["rs", "ts", "md", "txt", "json", "py"];
    let per_dir = 25;
    for i in 0..files {
        let d = i / per_dir;
        let dir = root
            .join(format!("pkg{}", d % 40))
            .join(format!("mod{}", (d / 40) % 30))
            .join(format!("part{}", d / 1200));
        if i % per_dir == 0 {
            std::fs::create_dir_all(&dir)?;
            if d % 7 == 0 {
                std::fs::write(dir.join(".gitignore"), "*.log\nbuild/\n")?;
                let build = dir.join("build");
                std::fs::create_dir_all(&build)?;
                std::fs::write(build.join("out.txt"), format!("generated {RARE}\n"))?;
                std::fs::write(dir.join("debug.log"), format!("log {RARE}\n"))?;
            }
        }
        let ext = exts[(rng.below(exts.len() as u64)) as usize];
        let mut out = BufWriter::new(std::fs::File::create(dir.join(format!("f{i}.{ext}")))?);
        let lines = 10 + rng.below(60);
        for l in 0..lines {
            let words = 3 + rng.below(9);
            let mut line = String::new();
            for w in 0..words {
                if w > 0 {
                    line.push(' ');
                }
                line.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
            }
            if l % 9 == 3 {
                line.push(' ');
                line.push_str(COMMON);
            }
            if l == 5 && (i == files / 4 || i == files / 2 || i == files * 3 / 4) {
                line.push(' ');
                line.push_str(RARE);
            }
            writeln!(out, "{line}")?;
        }
        out.flush()?;
    }
    std::fs::write(marker, spec)
}

/// Length of every line [`generate_big_file`] writes, newline included.
pub const BIG_FILE_LINE_BYTES: u64 = 89;

/// Writes a file of `lines` numbered lines of [`BIG_FILE_LINE_BYTES`] bytes each.
pub fn generate_big_file(path: &Path, lines: usize) -> io::Result<()> {
    let marker = path.with_extension("spec");
    let spec = format!("lines={lines} v1\n");
    if path.exists() && std::fs::read_to_string(&marker).ok().as_deref() == Some(spec.as_str()) {
        return Ok(());
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    for i in 1..=lines {
        writeln!(
            out,
            "line {i:>10} the quick brown fox jumps over the lazy dog while the cat watches it all"
        )?;
    }
    out.flush()?;
    std::fs::write(marker, spec)
}
