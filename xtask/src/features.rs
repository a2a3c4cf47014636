//! `test-all`'s feature check: every library crate builds without warnings
//! (clippy, `-D warnings`) with its default features off, and with each of
//! its features alone, as a user who trims features builds it. The
//! workspace build only ever sees the default (unified) set, so a
//! feature-gated `use` or variable left unused elsewhere goes unseen there.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// Features not built alone here, and why.
const SKIPPED: [(&str, &str); 1] = [(
    "tls-aws-lc",
    "aws-lc-rs needs cmake and builds for minutes; tls-ring is the same code path",
)];

/// Crates that are not libraries for users (tests, tooling).
const NOT_LIBRARIES: [&str; 3] = ["test-support", "integration-tests", "xtask"];

/// Each library crate: `--no-default-features`, then each feature alone.
pub fn run(root: &Path) -> Result<()> {
    let output = Command::new("cargo")
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root)
        .output()
        .context("running cargo metadata")?;
    if !output.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let metadata: Value = serde_json::from_slice(&output.stdout)?;
    for package in metadata["packages"].as_array().into_iter().flatten() {
        let name = package["name"].as_str().unwrap_or_default();
        let is_lib = package["targets"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| {
                t["kind"]
                    .as_array()
                    .is_some_and(|k| k.iter().any(|k| k == "lib"))
            });
        let Some(features) = package["features"].as_object() else {
            continue;
        };
        if !is_lib || NOT_LIBRARIES.contains(&name) || features.is_empty() {
            continue;
        }
        let mut sets: Vec<Option<&str>> = vec![None];
        for feature in features.keys() {
            if feature == "default" {
                continue;
            }
            if let Some((_, why)) = SKIPPED.iter().find(|(f, _)| f == feature) {
                println!("    {name}: feature {feature} not built alone ({why})");
                continue;
            }
            sets.push(Some(feature));
        }
        for set in sets {
            let mut cmd = Command::new("cargo");
            cmd.current_dir(root)
                .args(["clippy", "-p", name, "--no-default-features", "--lib"]);
            if let Some(feature) = set {
                cmd.args(["--features", feature]);
            }
            cmd.args(["--", "-D", "warnings"]);
            let label = set.map_or("no default features".to_string(), |f| {
                format!("--features {f}")
            });
            println!("    {name}: {label}");
            let status = cmd.status().context("running cargo clippy")?;
            if !status.success() {
                bail!("{name} with {label} does not build cleanly");
            }
        }
    }
    Ok(())
}
