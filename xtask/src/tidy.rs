//! `cargo xtask tidy`: the invariants ARCHITECTURE.md names, checked from
//! `cargo metadata` and the source, the way rust-analyzer's tidy checks
//! its own.
//!
//! 1. The crate graph has only the allowed arrows ([`ALLOWED`]).
//! 2. The loop names no tool: no built-in tool name appears as a string in
//!    agent-core.
//! 3. The product layer names no concrete tool: in coding-agent a built-in
//!    tool name appears only where listed in [`PRODUCT_EXCEPTIONS`], each
//!    with the reason; agent-tui and agent-export name none at all.
//! 4. Every file access of a tool goes through the operations: the tool
//!    modules of tools-builtin touch no file system or process API directly
//!    (except [`OPS_EXCEPTIONS`]).
//!
//! Test modules (from `#[cfg(test)]` on) and comments are not checked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// Each library crate and the workspace crates it may depend on (normal
/// dependencies). The binary, the integration tests and xtask may use any.
const ALLOWED: &[(&str, &[&str])] = &[
    ("agent-ai", &[]),
    ("agent-core", &["agent-ai"]),
    ("agent-tool", &["agent-ai", "agent-core"]),
    ("agent-sandbox", &["agent-ai", "agent-core", "agent-tool"]),
    ("tools-builtin", &["agent-ai", "agent-tool"]),
    (
        "agent-remote",
        &["agent-ai", "agent-core", "agent-tool", "agent-sandbox"],
    ),
    // Skills and prompt templates: files in, text out; no agent types.
    ("agent-skills", &[]),
    (
        "coding-agent",
        &["agent-ai", "agent-core", "agent-tool", "agent-skills"],
    ),
    (
        "agent-mcp",
        &["agent-ai", "agent-core", "agent-tool", "coding-agent"],
    ),
    // The terminal UI drives a session; nothing but the binary uses it.
    (
        "agent-tui",
        &["agent-ai", "agent-core", "agent-tool", "coding-agent"],
    ),
    // A session as a page: reads session files, draws tools through the
    // session's registry; nothing but the binary uses it.
    (
        "agent-export",
        &["agent-ai", "agent-core", "agent-tool", "coding-agent"],
    ),
    // The built-in slash commands over a session, for every front end.
    (
        "agent-commands",
        &[
            "agent-ai",
            "agent-core",
            "agent-tool",
            "coding-agent",
            "agent-export",
        ],
    ),
    // Codemode: scripts whose tool calls go through the loop's nested-call
    // handle; it knows no concrete tool and no product type.
    ("agent-codemode", &["agent-core", "agent-tool"]),
    // Test helpers: used only as a dev-dependency (and by xtask), so they
    // may reach any layer they help test.
    (
        "test-support",
        &["agent-ai", "agent-core", "coding-agent", "tools-builtin"],
    ),
];

/// Crates outside the layering: they assemble the others.
const ASSEMBLERS: &[&str] = &["coding-agent-cli", "integration-tests", "xtask"];

/// Where coding-agent may spell a built-in tool's name, and why.
const PRODUCT_EXCEPTIONS: &[(&str, &str, &str)] = &[
    (
        "permissions/shell.rs",
        "",
        "shell programs and builtins (`ls`, `grep`, `find`, `read`, `bash`) in the model of the bash language, not tools",
    ),
    (
        "permissions/deleters.rs",
        "",
        "shell programs that delete files (`find -delete`) in the model of the bash language, not tools",
    ),
    (
        "trust/pins.rs",
        "\"zsh\"",
        "shell programs (`bash`) whose arguments are command lines, in what trust pins, not tools",
    ),
    (
        "permissions/rule.rs",
        "=> RuleKind::",
        "the words of the rule grammar (`Read(...)`, `Edit(...)`, `Bash(...)`)",
    ),
    (
        "permissions/paths.rs",
        "eq_ignore_ascii_case(\"read\")",
        "the `Read` rule kind of the rule grammar",
    ),
    (
        "rpc/server.rs",
        "\"bash\"",
        "the names of Pi's RPC commands (`bash`), not of tools",
    ),
    (
        "system_prompt.rs",
        "has(\"bash\")",
        "Pi's prompt advises bash for exploration only when bash is active and grep, find and ls are not",
    ),
];

/// Files of tools-builtin that may touch the local machine directly, and why.
const OPS_EXCEPTIONS: &[(&str, &str)] = &[];

/// Runs every check; fails naming each violation.
pub fn tidy(root: &Path) -> Result<()> {
    let mut problems = Vec::new();
    crate_graph(root, &mut problems)?;
    let names = builtin_tool_names(root)?;
    names_no_tool(
        &root.join("crates/agent-core/src"),
        &names,
        &[],
        &mut problems,
    )?;
    names_no_tool(
        &root.join("crates/coding-agent/src"),
        &names,
        PRODUCT_EXCEPTIONS,
        &mut problems,
    )?;
    // The UI draws tools through their renderers only.
    names_no_tool(&root.join("crates/tui/src"), &names, &[], &mut problems)?;
    names_no_tool(&root.join("crates/export/src"), &names, &[], &mut problems)?;
    names_no_tool(
        &root.join("crates/commands/src"),
        &names,
        &[],
        &mut problems,
    )?;
    operations_only(&root.join("crates/tools-builtin/src"), &mut problems)?;
    if !problems.is_empty() {
        bail!("tidy:\n  {}", problems.join("\n  "));
    }
    println!(
        "tidy: crate graph, no tool names in agent-core, coding-agent, agent-tui or agent-export, tools use the operations"
    );
    Ok(())
}

/// A workspace package: name, manifest directory, and its dependencies as
/// (package name, kind: `normal`, `dev` or `build`).
pub type Package = (String, PathBuf, Vec<(String, String)>);

/// The workspace's packages, from `cargo metadata`.
pub fn workspace_packages(root: &Path) -> Result<Vec<Package>> {
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
    let packages = metadata["packages"]
        .as_array()
        .context("cargo metadata without packages")?;
    let mut out = Vec::new();
    for package in packages {
        let name = package["name"].as_str().unwrap_or_default().to_string();
        let dir = PathBuf::from(package["manifest_path"].as_str().unwrap_or_default())
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let deps = package["dependencies"]
            .as_array()
            .map(|deps| {
                deps.iter()
                    .map(|d| {
                        let kind = d["kind"].as_str().unwrap_or("normal").to_string();
                        (d["name"].as_str().unwrap_or_default().to_string(), kind)
                    })
                    .collect()
            })
            .unwrap_or_default();
        out.push((name, dir, deps));
    }
    Ok(out)
}

fn crate_graph(root: &Path, problems: &mut Vec<String>) -> Result<()> {
    let packages = workspace_packages(root)?;
    let members: Vec<&str> = packages.iter().map(|(n, _, _)| n.as_str()).collect();
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    for (name, _, deps) in &packages {
        if ASSEMBLERS.contains(&name.as_str()) {
            continue;
        }
        let Some(may) = allowed.get(name.as_str()) else {
            problems.push(format!(
                "crate {name} is not in tidy's crate graph: add it to ALLOWED (xtask/src/tidy.rs) and to ARCHITECTURE.md"
            ));
            continue;
        };
        for (dep, kind) in deps {
            if kind == "normal" && members.contains(&dep.as_str()) && !may.contains(&dep.as_str()) {
                problems.push(format!(
                    "{name} depends on {dep}: not an allowed arrow (see ARCHITECTURE.md)"
                ));
            }
        }
    }
    Ok(())
}

/// The names in tools-builtin's `BUILTIN_TOOL_NAMES`.
fn builtin_tool_names(root: &Path) -> Result<Vec<String>> {
    let lib = std::fs::read_to_string(root.join("crates/tools-builtin/src/lib.rs"))?;
    let line = lib
        .lines()
        .find(|l| l.contains("pub const BUILTIN_TOOL_NAMES"))
        .context("BUILTIN_TOOL_NAMES not found in tools-builtin")?;
    let list = line.split('[').nth(2).context("BUILTIN_TOOL_NAMES shape")?;
    Ok(list
        .split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect())
}

/// The non-test, non-comment lines of every `.rs` file under `dir`, with
/// their path relative to `dir` and their line number.
fn code_lines(dir: &Path) -> Result<Vec<(String, usize, String)>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            // A module's unit tests in a file of their own (`mod tests;`
            // under `#[cfg(test)]`) are test code like an inline one.
            if path.extension().is_none_or(|x| x != "rs")
                || path.file_name().is_some_and(|n| n == "tests.rs")
            {
                continue;
            }
            let text = std::fs::read_to_string(&path)?;
            let relative = path
                .strip_prefix(dir)
                .unwrap_or(&path)
                .to_string_lossy()
                .into_owned();
            for (i, line) in text.lines().enumerate() {
                let trimmed = line.trim_start();
                if trimmed.starts_with("#[cfg(test)]") {
                    break;
                }
                if trimmed.starts_with("//") {
                    continue;
                }
                out.push((relative.clone(), i + 1, line.to_string()));
            }
        }
    }
    out.sort();
    Ok(out)
}

fn names_no_tool(
    dir: &Path,
    names: &[String],
    exceptions: &[(&str, &str, &str)],
    problems: &mut Vec<String>,
) -> Result<()> {
    for (file, number, line) in code_lines(dir)? {
        for name in names {
            if !line.contains(&format!("\"{name}\"")) {
                continue;
            }
            let excused = exceptions
                .iter()
                .any(|(f, marker, _)| file == *f && line.contains(marker));
            if !excused {
                problems.push(format!(
                    "{}/{file}:{number} names the tool \"{name}\": declare what the code needs on the tool (ToolDefinition) instead",
                    dir.display()
                ));
            }
        }
    }
    Ok(())
}

fn operations_only(dir: &Path, problems: &mut Vec<String>) -> Result<()> {
    const DIRECT: [&str; 8] = [
        "std::fs::",
        "tokio::fs",
        "File::open",
        "File::create",
        "OpenOptions",
        "process::Command",
        "tokio::process",
        "std::os::unix::fs",
    ];
    for (file, number, line) in code_lines(dir)? {
        if OPS_EXCEPTIONS.iter().any(|(f, _)| file == *f) {
            continue;
        }
        if let Some(api) = DIRECT.iter().find(|api| line.contains(*api)) {
            problems.push(format!(
                "{}/{file}:{number} uses {api}: tools reach files and processes through FileOps and ProcessOps",
                dir.display()
            ));
        }
    }
    Ok(())
}
