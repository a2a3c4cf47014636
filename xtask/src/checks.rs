//! Checks of `cargo xtask test-all` that are not a cargo command: no unused
//! dependencies, and the crates used from a project outside the workspace
//! the way a new user would use them.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// Whether `ident` appears in `text` as a whole word.
fn names(text: &str, ident: &str) -> bool {
    text.match_indices(ident).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + ident.len()..].chars().next();
        let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !word(before) && !word(after)
    })
}

/// The texts a Rust file pulls in with `include_str!("...")`: Markdown
/// whose Rust blocks run as doctests use crates too.
fn included_texts(file: &Path, text: &str) -> Vec<String> {
    text.split("include_str!(\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .filter_map(|relative| std::fs::read_to_string(file.parent()?.join(relative)).ok())
        .collect()
}

fn mentions(dirs: &[PathBuf], ident: &str) -> bool {
    dirs.iter().any(|dir| {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return false;
        };
        entries.flatten().any(|e| {
            let path = e.path();
            if path.is_dir() {
                return mentions(&[path], ident);
            }
            if path.extension().is_none_or(|x| x != "rs") {
                return false;
            }
            std::fs::read_to_string(&path).is_ok_and(|text| {
                names(&text, ident)
                    || included_texts(&path, &text)
                        .iter()
                        .any(|doc| names(doc, ident))
            })
        })
    })
}

/// Fails when a crate declares a dependency its code never names (what
/// `cargo machete` checks, without installing it).
pub fn unused_dependencies(root: &Path) -> Result<()> {
    let mut unused = Vec::new();
    for (package, dir, deps) in crate::tidy::workspace_packages(root)? {
        for (name, kind) in deps {
            let (section, dirs) = match kind.as_str() {
                "normal" => ("dependencies", vec!["src", "examples", "benches"]),
                "dev" => (
                    "dev-dependencies",
                    vec!["src", "tests", "examples", "benches"],
                ),
                _ => ("build-dependencies", vec!["build.rs"]),
            };
            let dirs: Vec<PathBuf> = dirs.into_iter().map(|d| dir.join(d)).collect();
            if !mentions(&dirs, &name.replace('-', "_")) {
                unused.push(format!("{package} [{section}] {name}"));
            }
        }
    }
    if !unused.is_empty() {
        bail!("unused dependencies:\n  {}", unused.join("\n  "));
    }
    println!("no unused dependencies");
    Ok(())
}

/// A project outside the workspace depending on the crates by path: the
/// model layer and the loop alone must not pull in an HTTP stack, and the
/// README's way of building a tool and an agent must compile and run.
pub fn external_project(root: &Path) -> Result<()> {
    let base = root.join("target").join("external-project");
    let _ = std::fs::remove_dir_all(&base);
    let target = root.join("target");
    let crates = root.join("crates");
    let lock = std::fs::read(root.join("Cargo.lock"))?;
    let fixtures = root.join("xtask").join("external");

    let (readme_deps, readme_main) = readme_example(root)?;
    for (name, deps) in [
        ("readme-example", readme_deps),
        (
            "loop-only",
            format!(
                r#"agent-ai = {{ path = "{c}/ai", default-features = false }}
agent-core = {{ path = "{c}/agent-core" }}
futures = "0.3"
serde_json = "1"
tokio = {{ version = "1", features = ["rt-multi-thread", "macros"] }}
"#,
                c = crates.display()
            ),
        ),
        (
            "tools-and-agent",
            format!(
                r#"agent-ai = {{ path = "{c}/ai" }}
coding-agent = {{ path = "{c}/coding-agent" }}
tools-builtin = {{ path = "{c}/tools-builtin" }}
schemars = "1"
serde = {{ version = "1", features = ["derive"] }}
serde_json = "1"
tokio = {{ version = "1", features = ["rt-multi-thread", "macros"] }}
"#,
                c = crates.display()
            ),
        ),
    ] {
        let dir = base.join(name);
        std::fs::create_dir_all(dir.join("src"))?;
        std::fs::write(
            dir.join("Cargo.toml"),
            format!(
                "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\npublish = false\n\n[workspace]\n\n[dependencies]\n{deps}"
            ),
        )?;
        // The workspace's lock pins the same versions, so built artifacts are reused.
        std::fs::write(dir.join("Cargo.lock"), &lock)?;
        if name == "readme-example" {
            std::fs::write(dir.join("src").join("main.rs"), &readme_main)?;
        } else {
            std::fs::copy(
                fixtures.join(format!("{name}.rs")),
                dir.join("src").join("main.rs"),
            )?;
        }
        let manifest = dir.join("Cargo.toml");
        if name == "loop-only" {
            let tree = Command::new("cargo")
                .args(["tree", "--offline", "-e", "normal", "--manifest-path"])
                .arg(&manifest)
                .env("CARGO_TARGET_DIR", &target)
                .output()?;
            if !tree.status.success() {
                bail!(
                    "cargo tree failed: {}",
                    String::from_utf8_lossy(&tree.stderr)
                );
            }
            let tree = String::from_utf8_lossy(&tree.stdout);
            for heavy in ["reqwest", "hyper", "rustls", "aws-lc"] {
                if tree.contains(heavy) {
                    bail!(
                        "agent-ai without default features + agent-core pull in {heavy}:\n{tree}"
                    );
                }
            }
            println!(
                "{name}: {} crates in the normal dependency tree, no HTTP or TLS crate",
                tree.lines().count()
            );
        }
        let status = Command::new("cargo")
            .args(["run", "--offline", "--quiet", "--manifest-path"])
            .arg(&manifest)
            .env("CARGO_TARGET_DIR", &target)
            .status()?;
        if !status.success() {
            bail!("the external project `{name}` failed ({status})");
        }
    }
    Ok(())
}

/// The README's "Writing a tool" example as a user pastes it: the
/// `[dependencies]` it shows (our crates pointed at the workspace by path,
/// the rest as written) and its Rust block.
fn readme_example(root: &Path) -> Result<(String, String)> {
    let readme = std::fs::read_to_string(root.join("README.md"))?;
    let section = readme
        .split("## Writing a tool")
        .nth(1)
        .context("README has no `## Writing a tool` section")?;
    let block = |fence: &str| -> Result<String> {
        let start = section
            .find(fence)
            .with_context(|| format!("no {fence} block under `## Writing a tool`"))?;
        let rest = &section[start + fence.len()..];
        let end = rest.find("\n```").context("unclosed code block")?;
        Ok(rest[..end].trim_start_matches('\n').to_string())
    };
    let toml = block("```toml")?;
    let main = block("```rust")?;
    let crates = root.join("crates");
    let ours = [
        ("agent-ai", "ai"),
        ("agent-core", "agent-core"),
        ("agent-tool", "tool"),
        ("agent-sandbox", "sandbox"),
        ("coding-agent", "coding-agent"),
        ("tools-builtin", "tools-builtin"),
        ("agent-mcp", "mcp"),
    ];
    let mut deps = String::new();
    for line in toml
        .lines()
        .filter(|l| !l.starts_with('[') && !l.trim().is_empty())
    {
        let name = line.split('=').next().unwrap_or_default().trim();
        match ours.iter().find(|(crate_name, _)| *crate_name == name) {
            Some((crate_name, dir)) => deps.push_str(&format!(
                "{crate_name} = {{ path = \"{}\" }}\n",
                crates.join(dir).display()
            )),
            None => {
                deps.push_str(line);
                deps.push('\n');
            }
        }
    }
    Ok((deps, main))
}
