//! `cargo xtask tidy`: the invariants ARCHITECTURE.md names, checked from
//! `cargo metadata` and the source, the way rust-analyzer's tidy checks
//! its own.
//!
//! 1. The crate graph has only the allowed arrows ([`ALLOWED`]).
//! 2. The loop names no tool: no built-in tool name appears as a string in
//!    agent-core.
//! 3. The product layer names no concrete tool: in coding-agent a built-in
//!    tool name appears only where listed in [`PRODUCT_EXCEPTIONS`], in
//!    agent-permissions only where listed in [`PERMISSIONS_EXCEPTIONS`],
//!    in agent-rpc only where listed in [`RPC_EXCEPTIONS`], each with the
//!    reason; agent-tui, agent-export and agent-commands name none at all.
//! 4. Every file access of a tool goes through the operations: the tool
//!    modules of tools-builtin touch no file system or process API directly
//!    (except [`OPS_EXCEPTIONS`]), named outright or brought in by a `use`
//!    (`use std::fs; fs::read(..)`, `use std::{fs as f}`).
//! 5. Dev-dependencies have arrows of their own ([`DEV_ALLOWED`]).
//! 6. Every repository path the documentation names (ARCHITECTURE.md,
//!    README.md, docs/) exists, from the root or from a crate's directory.
//! 7. No Rust file is longer than 700 lines, tests included, but for the
//!    listed ones (`tidy/lengths.rs`), each held at its length with its reason.
//! 8. Every crate the workspace depends on directly has a row in the
//!    README's dependency notes (licence, purpose), and every row a crate
//!    (`tidy/dependencies.rs`).
//! 9. ARCHITECTURE.md's source lines per crate are within 10% of the
//!    truth, and a crate with a line budget stays within it
//!    (`tidy/source_lines.rs`: coding-agent, 4,500 lines of non-test
//!    source).
//! 10. No test asserts elapsed time but a hang guard marked as one
//!     (`tidy/test_rules.rs`).
//! 11. One integration-test binary per package (`tidy/test_rules.rs`).
//! 12. No `json!` builds what providers, RPC or session files send
//!     (`tidy/wire.rs`).
//!
//! Test modules (from `#[cfg(test)]` on) and comments are not checked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

mod dependencies;
mod docs;
mod lengths;
mod source_lines;
mod test_rules;
#[cfg(test)]
mod tests;
mod wire;

use docs::documented_paths_exist;
use lengths::{LONG_FILES, MAX_LINES, file_lengths};
use serde_json::Value;

/// Each library crate and the workspace crates it may depend on (normal
/// dependencies). The binary, the integration tests and xtask may use any.
const ALLOWED: &[(&str, &[&str])] = &[
    ("agent-ai", &[]),
    ("agent-core", &["agent-ai"]),
    ("agent-tool", &["agent-ai", "agent-core"]),
    // The operations on this machine: agent-tool's traits, implemented.
    ("agent-local-ops", &["agent-tool"]),
    ("agent-sandbox", &["agent-tool", "agent-local-ops"]),
    ("tools-builtin", &["agent-tool", "agent-local-ops"]),
    (
        "agent-remote",
        &["agent-tool", "agent-local-ops", "agent-sandbox"],
    ),
    // Skills and prompt templates: files in, text out; no agent types.
    ("agent-skills", &[]),
    // Permission rules: tools known by their declarations, the loop by its
    // hook; no settings files, sessions or front ends.
    ("agent-permissions", &["agent-core", "agent-tool"]),
    // Session files: messages in, JSONL out; no tools, settings or loop.
    ("agent-sessions", &["agent-ai"]),
    // Project trust: the records and the pins of held-back values; paths
    // and regular-file reads from agent-tool, the project's skill and
    // template files from agent-skills; no settings, loop or model.
    ("agent-trust", &["agent-tool", "agent-skills"]),
    (
        "coding-agent",
        &[
            "agent-ai",
            "agent-core",
            "agent-tool",
            "agent-skills",
            "agent-permissions",
            "agent-sessions",
            "agent-trust",
        ],
    ),
    (
        "agent-mcp",
        &[
            "agent-ai",
            "agent-core",
            "agent-tool",
            "agent-permissions",
            "coding-agent",
            "agent-trust",
        ],
    ),
    // Pi's RPC mode: a front end driving a session with JSON lines;
    // nothing but the binary uses it.
    (
        "agent-rpc",
        &[
            "agent-ai",
            "agent-core",
            "agent-permissions",
            "coding-agent",
            "agent-sessions",
        ],
    ),
    // The terminal UI drives a session; nothing but the binary uses it.
    (
        "agent-tui",
        &[
            "agent-ai",
            "agent-core",
            "agent-tool",
            "agent-permissions",
            "coding-agent",
            "agent-sessions",
        ],
    ),
    // A session as a page: reads session files, draws tools through the
    // session's registry; nothing but the binary uses it.
    (
        "agent-export",
        &[
            "agent-ai",
            "agent-core",
            "agent-tool",
            "coding-agent",
            "agent-sessions",
        ],
    ),
    // The built-in slash commands over a session, for every front end.
    (
        "agent-commands",
        &[
            "agent-ai",
            "agent-core",
            "agent-tool",
            "coding-agent",
            "agent-sessions",
            "agent-export",
            "agent-trust",
        ],
    ),
    // Codemode: scripts whose tool calls go through the loop's nested-call
    // handle; it knows no concrete tool and no product type.
    ("agent-codemode", &["agent-core", "agent-tool"]),
    // Test helpers: used only as a dev-dependency (and by xtask), so they
    // may reach any layer they help test.
    (
        "test-support",
        &["agent-ai", "agent-core", "agent-tool", "tools-builtin"],
    ),
];

/// Crates outside the layering: they assemble the others.
const ASSEMBLERS: &[&str] = &["coding-agent-cli", "integration-tests", "xtask"];

/// Where coding-agent may spell a built-in tool's name, and why.
const PRODUCT_EXCEPTIONS: &[(&str, &str, &str)] = &[(
    "system_prompt.rs",
    "has(\"bash\")",
    "Pi's prompt advises bash for exploration only when bash is active and grep, find and ls are not",
)];

/// Where agent-rpc may spell a built-in tool's name, and why.
const RPC_EXCEPTIONS: &[(&str, &str, &str)] = &[(
    "server.rs",
    "\"bash\"",
    "the names of Pi's RPC commands (`bash`), not of tools",
)];

/// Where agent-permissions may spell a built-in tool's name, and why: the
/// words of the rule grammar and the model of bash.
const PERMISSIONS_EXCEPTIONS: &[(&str, &str, &str)] = &[
    (
        "shell/knowledge.rs",
        "",
        "shell programs and builtins (`ls`, `grep`, `find`, `read`, `bash`) in the model of the bash language, not tools",
    ),
    (
        "shell/judge.rs",
        "",
        "shell programs (`bash`, `find -exec`) in the model of the bash language, not tools",
    ),
    (
        "shell/differential.rs",
        "",
        "tests: the programs real bash runs the cases with, and the built-in bash tool's shape the rules judge",
    ),
    (
        "shell/unknown_words.rs",
        "",
        "tests: the built-in bash tool's shape the rules judge, and programs in the cases",
    ),
    (
        "deleters.rs",
        "",
        "shell programs that delete files (`find -delete`) in the model of the bash language, not tools",
    ),
    (
        "rule.rs",
        "=> RuleKind::",
        "the words of the rule grammar (`Read(...)`, `Edit(...)`, `Bash(...)`)",
    ),
    (
        "paths.rs",
        "eq_ignore_ascii_case(\"read\")",
        "the `Read` rule kind of the rule grammar",
    ),
];

/// Each crate and the workspace crates its tests, examples and benchmarks
/// may use beyond its normal dependencies (crates not listed use none).
/// Tests reach up to assemble what they test; nothing here becomes an
/// arrow of the library itself.
const DEV_ALLOWED: &[(&str, &[&str])] = &[
    // The remote backend's tests run the seven tools over it.
    ("agent-remote", &["tools-builtin"]),
    // The tools' tests and benchmark run them in a loop (a scripted model).
    ("tools-builtin", &["agent-ai", "agent-core", "test-support"]),
    // Messages of the model API in its tests.
    ("coding-agent", &["agent-ai"]),
    // The benchmarks' harness.
    ("agent-sessions", &["test-support"]),
    // The MCP server's tests serve the seven tools; the sign-in tests talk
    // to a loopback authorization server.
    ("agent-mcp", &["test-support", "tools-builtin"]),
    ("agent-tui", &["agent-ai"]),
    // Scripts in a loop (scripted model), and reads for the benchmark.
    (
        "agent-codemode",
        &["agent-ai", "test-support", "tools-builtin"],
    ),
    ("coding-agent-cli", &["test-support"]),
    (
        "integration-tests",
        &[
            "agent-ai",
            "agent-core",
            "agent-tool",
            "coding-agent",
            "agent-sessions",
            "test-support",
            "tools-builtin",
        ],
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
    names_no_tool(
        &root.join("crates/permissions/src"),
        &names,
        PERMISSIONS_EXCEPTIONS,
        &mut problems,
    )?;
    names_no_tool(
        &root.join("crates/rpc/src"),
        &names,
        RPC_EXCEPTIONS,
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
    documented_paths_exist(root, &mut problems)?;
    file_lengths(root, LONG_FILES, &mut problems)?;
    let sources = test_rules::read_rust_files(root, &["crates", "tests", "xtask/src"])?;
    // The checker's own cases spell the pattern they plant.
    let sources: Vec<_> = sources
        .into_iter()
        .filter(|(path, _)| !path.starts_with("xtask/src/tidy"))
        .collect();
    test_rules::elapsed_assertions(&sources, &mut problems);
    test_rules::one_test_binary(&test_targets(root)?, &mut problems);
    wire::typed_wire(root, wire::TYPED_WIRE, wire::WIRE_EXCEPTIONS, &mut problems)?;
    if !problems.is_empty() {
        bail!("tidy:\n  {}", problems.join("\n  "));
    }
    println!(
        "tidy: crate graph (normal and dev arrows), every dependency noted in the README, source lines per crate in ARCHITECTURE.md, no tool names in agent-core, coding-agent, agent-permissions, agent-rpc, agent-tui, agent-export or agent-commands, tools use the operations, documented paths exist, files within {MAX_LINES} lines, coding-agent within its line budget, no elapsed-time assertions but hang guards, one integration-test binary per package, no json! on the typed wire"
    );
    Ok(())
}

/// A workspace package: name, manifest directory, and its dependencies as
/// (package name, kind: `normal`, `dev` or `build`).
pub type Package = (String, PathBuf, Vec<(String, String)>);

/// `cargo metadata` of the workspace's own packages.
fn metadata(root: &Path) -> Result<Value> {
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
    Ok(serde_json::from_slice(&output.stdout)?)
}

/// Each workspace package with its integration-test targets' names.
fn test_targets(root: &Path) -> Result<Vec<(String, Vec<String>)>> {
    let metadata = metadata(root)?;
    let packages = metadata["packages"]
        .as_array()
        .context("cargo metadata without packages")?;
    Ok(packages
        .iter()
        .map(|p| {
            let tests = p["targets"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|t| {
                    t["kind"]
                        .as_array()
                        .is_some_and(|k| k.iter().any(|k| k == "test"))
                })
                .filter_map(|t| t["name"].as_str().map(str::to_string))
                .collect();
            (p["name"].as_str().unwrap_or_default().to_string(), tests)
        })
        .collect())
}

/// The workspace's packages, from `cargo metadata`.
pub fn workspace_packages(root: &Path) -> Result<Vec<Package>> {
    let metadata = metadata(root)?;
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
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap_or_default();
    dependencies::dependency_notes(&packages, &readme, problems);
    let architecture = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap_or_default();
    source_lines::check(&packages, &architecture, problems)?;
    source_lines::budgets(&packages, source_lines::BUDGETS, problems)?;
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
    dev_arrows(&packages, DEV_ALLOWED, problems);
    Ok(())
}

/// Dev-dependencies on workspace crates outside [`DEV_ALLOWED`] (a
/// crate's normal dependencies may be repeated there).
fn dev_arrows(packages: &[Package], table: &[(&str, &[&str])], problems: &mut Vec<String>) {
    let members: Vec<&str> = packages.iter().map(|(n, _, _)| n.as_str()).collect();
    let allowed: BTreeMap<&str, &[&str]> = table.iter().copied().collect();
    for (name, _, deps) in packages {
        let normal: Vec<&str> = deps
            .iter()
            .filter(|(_, k)| k == "normal")
            .map(|(d, _)| d.as_str())
            .collect();
        let may = allowed.get(name.as_str()).copied().unwrap_or(&[]);
        for (dep, kind) in deps {
            if kind == "dev"
                && members.contains(&dep.as_str())
                && !normal.contains(&dep.as_str())
                && !may.contains(&dep.as_str())
            {
                problems.push(format!(
                    "{name} has a dev-dependency on {dep}: not an allowed test arrow (DEV_ALLOWED in xtask/src/tidy.rs)"
                ));
            }
        }
    }
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

/// Whether `path` holds a module's unit tests in a file of their own
/// (`tests.rs`, `*_tests.rs`, declared under `#[cfg(test)]`): test code like
/// an inline test module.
pub(super) fn is_test_file(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n == "tests.rs" || n.ends_with("_tests.rs"))
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
            if path.extension().is_none_or(|x| x != "rs") || is_test_file(&path) {
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
    let lines = code_lines(dir)?;
    for (file, number, line) in &lines {
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
    // A `use` can bring the same modules in under other spellings
    // (`use std::fs;`, `use std::{fs, io}`, `use tokio::{process as p}`).
    for (file, number, statement) in use_statements(&lines) {
        if OPS_EXCEPTIONS.iter().any(|(f, _)| file == *f) {
            continue;
        }
        if let Some(module) = direct_module(&statement) {
            problems.push(format!(
                "{}/{file}:{number} brings in {module} with `use`: tools reach files and processes through FileOps and ProcessOps",
                dir.display()
            ));
        }
    }
    Ok(())
}

/// Each `use` statement (joined when it spans lines) with its file and
/// first line.
fn use_statements(lines: &[(String, usize, String)]) -> Vec<(String, usize, String)> {
    let mut out = Vec::new();
    let mut open: Option<(String, usize, String)> = None;
    for (file, number, line) in lines {
        let trimmed = line.trim();
        if let Some((f, n, mut text)) = open.take()
            && f == *file
        {
            text.push(' ');
            text.push_str(trimmed);
            if trimmed.contains(';') {
                out.push((f, n, text));
            } else {
                open = Some((f, n, text));
            }
            continue;
        }
        let statement = trimmed
            .strip_prefix("pub ")
            .or_else(|| trimmed.strip_prefix("pub(crate) "))
            .unwrap_or(trimmed);
        if statement.starts_with("use ") {
            if statement.contains(';') {
                out.push((file.clone(), *number, statement.to_string()));
            } else {
                open = Some((file.clone(), *number, statement.to_string()));
            }
        }
    }
    out
}

/// The file-system or process module a `use` statement brings in, if any.
fn direct_module(statement: &str) -> Option<&'static str> {
    let compact: String = statement.chars().filter(|c| !c.is_whitespace()).collect();
    let body = compact.strip_prefix("use")?;
    for root in ["std", "tokio", "::std", "::tokio"] {
        let Some(rest) = body.strip_prefix(&format!("{root}::")) else {
            continue;
        };
        let names: Vec<&str> = match rest.strip_prefix('{') {
            Some(group) => group
                .trim_end_matches(';')
                .trim_end_matches('}')
                .split(',')
                .collect(),
            None => vec![rest.trim_end_matches(';')],
        };
        for name in names {
            let head = name
                .split("::")
                .next()
                .unwrap_or("")
                .split("as")
                .next()
                .unwrap_or("");
            match head {
                "fs" => return Some("fs"),
                "process" => return Some("process"),
                "os" if name.contains("fs") => return Some("os::unix::fs"),
                _ => {}
            }
        }
    }
    None
}
