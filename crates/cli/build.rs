//! Lays out the release binary's start-up code contiguously.
//!
//! A short command (`coding-agent tool ls`) runs a few thousand functions
//! spread over a 20 MB `.text`. The kernel maps code in 64 KB windows around
//! each page fault, so scattered functions cost far more resident memory than
//! their size: about 8 MB of mapped code for 2 MB executed. `startup.order`
//! lists the functions start-up runs (recorded by `cargo xtask link-order`);
//! the linker places them first, side by side, which roughly halves the
//! process's peak RSS and its page faults.
//!
//! Only LLD reads a symbol ordering file, so the flag is passed only where LLD
//! is the linker Rust itself picks: `x86_64-unknown-linux-gnu` (Rust 1.90 and
//! later) with no linker configured by the user. Everywhere else the binary
//! links as usual. `CODING_AGENT_NO_LINK_ORDER=1` turns it off. A stale file is
//! harmless: names it lists that no longer exist are skipped, and new
//! functions land after the listed ones.

use std::env;
use std::path::Path;

fn main() {
    println!("cargo::rerun-if-changed=startup.order");
    println!("cargo::rerun-if-env-changed=CODING_AGENT_NO_LINK_ORDER");
    let var = |name: &str| env::var(name).unwrap_or_default();
    let release = var("PROFILE") == "release" && var("OPT_LEVEL") != "0";
    let lld_by_default = var("TARGET") == "x86_64-unknown-linux-gnu";
    // A linker chosen in .cargo/config.toml or the environment reaches build
    // scripts as RUSTC_LINKER; one chosen by flags shows in the rustflags.
    let rustflags = var("CARGO_ENCODED_RUSTFLAGS");
    let linker_overridden = env::var_os("RUSTC_LINKER").is_some()
        || [
            "linker",
            "fuse-ld",
            "link-self-contained",
            "linker-features",
        ]
        .iter()
        .any(|flag| rustflags.contains(flag));
    let opted_out = !matches!(var("CODING_AGENT_NO_LINK_ORDER").as_str(), "" | "0");
    let order = Path::new(&var("CARGO_MANIFEST_DIR")).join("startup.order");
    let path = order.to_string_lossy();
    // `-Wl,` splits at commas, so such a path cannot be passed this way.
    if !release
        || !lld_by_default
        || linker_overridden
        || opted_out
        || !order.is_file()
        || path.contains(',')
    {
        return;
    }
    println!("cargo::rustc-link-arg-bin=coding-agent=-Wl,--symbol-ordering-file={path}");
    println!("cargo::rustc-link-arg-bin=coding-agent=-Wl,--no-warn-symbol-ordering");
}
