//! Helpers shared by the workspace's tests and benchmarks, one home instead
//! of a `common` folder per test crate and `#[path]` includes across
//! crates. Not published; each module is behind the feature of its name
//! (`corpus` and [`write()`] always there).

#[cfg(feature = "agent-loop")]
pub mod agent_loop;
#[cfg(feature = "http-server")]
pub mod anthropic;
#[cfg(feature = "bedrock")]
pub mod bedrock;
#[cfg(feature = "bench")]
pub mod bench;
#[cfg(feature = "http-server")]
pub mod chat_completions;
#[cfg(feature = "cli")]
pub mod cli;
pub mod corpus;
#[cfg(feature = "http-server")]
pub mod gemini;
#[cfg(feature = "http-server")]
pub mod http_server;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "http-server")]
pub mod openai_responses;
#[cfg(feature = "process")]
pub mod process;
#[cfg(feature = "sshd")]
pub mod sshd;
#[cfg(feature = "tool-call")]
pub mod tool_call;

use std::path::Path;

/// Whether this is a CI run (`CI=true`, as `.ci/run` is started), where a
/// missing test prerequisite is a failure, not a skip.
pub fn on_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Whether a test can run, given whether `what` it needs is `available`:
/// on CI ([`on_ci`]) a missing prerequisite fails the test with how to
/// `prepare` it; elsewhere the test is skipped with a note on stderr. A
/// test calls it first and returns when it says `false`.
///
/// # Panics
/// On CI when `available` is false.
pub fn prerequisite(available: bool, what: &str, prepare: &str) -> bool {
    check_prerequisite(available, what, prepare, on_ci())
}

fn check_prerequisite(available: bool, what: &str, prepare: &str, ci: bool) -> bool {
    if available {
        return true;
    }
    assert!(
        !ci,
        "{what} is missing, and on CI that is a failure, not a skip: {prepare}"
    );
    eprintln!("skipping: {what} is missing ({prepare})");
    false
}

/// Whether python3 can import the `modules` (comma-separated, as in an
/// `import` statement) of a Python package a test needs (an official SDK to
/// test against), by [`prerequisite`]: skipped without it off CI, a
/// failure on CI. `package` names it in the message, with how to install it.
///
/// # Panics
/// On CI when the import fails.
pub fn python_package(modules: &str, package: &str) -> bool {
    let importable = std::process::Command::new("python3")
        .args(["-c", &format!("import {modules}")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    prerequisite(
        importable,
        &format!("the Python package {package} (`import {modules}` in python3)"),
        &format!(
            "install it with `python3 -m pip install {package}`, as .ci/run does before `cargo xtask test-all`"
        ),
    )
}

/// Runs a Python referee script (a vendor's SDK checking our fakes or our
/// requests) with `args`, and returns what it printed as JSON.
///
/// # Panics
/// When the script fails (its stderr and stdout are in the message) or
/// prints something that is not JSON: the check did not pass.
#[cfg(feature = "http-server")]
pub async fn python_referee(script: &Path, args: &[&str]) -> serde_json::Value {
    let out = tokio::process::Command::new("python3")
        .arg(script)
        .args(args)
        .output()
        .await
        .expect("run python3");
    assert!(
        out.status.success(),
        "the SDK check failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout).expect("the script prints JSON")
}

/// Writes `content` to `dir/rel`, creating parent directories.
///
/// # Panics
/// When the file cannot be written: a test cannot go on without it.
pub fn write(dir: &Path, rel: &str, content: impl AsRef<[u8]>) {
    let path = dir.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create parent");
    }
    std::fs::write(path, content).expect("write test file");
}

#[cfg(test)]
mod tests {
    use super::check_prerequisite;

    #[test]
    fn a_missing_prerequisite_skips_off_ci() {
        assert!(check_prerequisite(true, "x", "get x", false));
        assert!(check_prerequisite(true, "x", "get x", true));
        assert!(!check_prerequisite(false, "x", "get x", false));
    }

    #[test]
    #[should_panic(expected = "x is missing, and on CI that is a failure, not a skip: get x")]
    fn a_missing_prerequisite_fails_on_ci() {
        check_prerequisite(false, "x", "get x", true);
    }
}
