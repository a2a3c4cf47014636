//! Running the `coding-agent` binary in a test: a command that cannot pick
//! up the developer's own keys or agent directory, the scripted model's
//! turns written as a file, and the JSON the binary prints read back.
//!
//! The binary's path comes from the caller (`assert_cmd::cargo::cargo_bin!`
//! in the CLI's test binary): only a test target knows where Cargo put it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

/// Environment variables that would send a test's requests to a real
/// provider or read a real account: removed from every command
/// [`command`] makes.
pub const CREDENTIAL_VARIABLES: [&str; 10] = [
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
];

/// `bin` with no provider credentials ([`CREDENTIAL_VARIABLES`]), its
/// settings and sessions in `agent_dir` (`CODING_AGENT_DIR`) and standard
/// input closed, so a test never waits on a terminal or reads the
/// developer's setup.
pub fn command(bin: &Path, agent_dir: &Path) -> Command {
    let mut c = Command::new(bin);
    for var in CREDENTIAL_VARIABLES {
        c.env_remove(var);
    }
    c.env("CODING_AGENT_DIR", agent_dir).stdin(Stdio::null());
    c
}

/// The scripted model's turns, one JSON value a line, written to
/// `dir/script.jsonl` (what `--provider script --script FILE` reads).
///
/// # Panics
/// When the file cannot be written.
pub fn script(dir: &Path, turns: &[Value]) -> PathBuf {
    let path = dir.join("script.jsonl");
    write_lines(&path, turns);
    path
}

/// `values` as JSON lines in `path`.
///
/// # Panics
/// When the file cannot be written.
pub fn write_lines(path: &Path, values: &[Value]) {
    let text: String = values.iter().map(|v| format!("{v}\n")).collect();
    if let Err(e) = std::fs::write(path, text) {
        panic!("cannot write {}: {e}", path.display());
    }
}

/// The JSON values of `--mode json` output (or any JSON-lines stream), one
/// a line; lines that are not JSON are skipped.
pub fn json_lines(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The values of `events` whose `type` is `kind`.
pub fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// The text of a tool result's first content block (`content[0].text`),
/// or `""`.
pub fn first_text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_lines_read_back() {
        let dir = std::env::temp_dir().join(format!("ts-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let turns = [
            serde_json::json!({"type": "a"}),
            serde_json::json!({"n": 1}),
        ];
        let path = script(&dir, &turns);
        let back = json_lines(&std::fs::read(&path).unwrap());
        assert_eq!(back, turns);
        assert_eq!(of_type(&back, "a").len(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
