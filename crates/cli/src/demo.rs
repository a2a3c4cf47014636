//! `coding-agent demo`: a scripted tour of all seven tools on a temporary
//! workspace. No API key, no network.

use std::path::Path;
use std::sync::Arc;

use agent_ai::Model;
use agent_ai::providers::scripted::{ScriptedClient, ScriptedTurn};
use coding_agent::{AgentSessionBuilder, Settings, ToolSelection};
use serde_json::{Value, json};

use crate::args::{DemoArgs, Mode};

const CALC: &str = "def add(a, b):
    return a - b  # TODO: wrong operator


def sub(a, b):
    return a + b  # TODO: wrong operator


def mul(a, b):
    return a * b
";

const CHECK: &str = "#!/bin/sh
# Checks the operators in src/calc.py (no Python needed).
fail=0
grep -A1 'def add' src/calc.py | grep -q 'a + b' || { echo 'FAIL: add should use +'; fail=1; }
grep -A1 'def sub' src/calc.py | grep -q 'a - b' || { echo 'FAIL: sub should use -'; fail=1; }
grep -A1 'def mul' src/calc.py | grep -q 'a \\* b' || { echo 'FAIL: mul should use *'; fail=1; }
[ $fail -eq 0 ] && echo 'all 3 checks passed'
exit $fail
";

/// The task given to the agent.
pub const DEMO_PROMPT: &str =
    "The checks in this project fail. Find out why, fix it, and note the fix in a changelog.";

/// The files the demo writes: the project, then what the scripted model
/// writes into it.
const DEMO_FILES: [&str; 6] = [
    "README.md",
    "src/calc.py",
    "check.sh",
    ".gitignore",
    "build/output.txt",
    "CHANGELOG.md",
];

/// Why `dir` cannot take the demo project, if it cannot: a directory that
/// holds anything is refused unless `allow_non_empty`, and even then no
/// file the demo writes may be there already. The demo never overwrites.
fn refusal(dir: &Path, allow_non_empty: bool) -> Option<String> {
    let mut entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => return Some(format!("cannot use {}: {e}", dir.display())),
    };
    // An empty directory takes the demo as a new one would.
    let empty = entries.next().is_none();
    if empty {
        return None;
    }
    if !allow_non_empty {
        return Some(format!(
            "{} is not empty; choose a new or empty directory (--allow-non-empty adds the demo files beside what is there, and never overwrites)",
            dir.display()
        ));
    }
    let taken: Vec<&str> = DEMO_FILES
        .into_iter()
        .filter(|f| std::fs::symlink_metadata(dir.join(f)).is_ok())
        .collect();
    (!taken.is_empty()).then(|| {
        format!(
            "{} already holds {}, which the demo would write; choose another directory",
            dir.display(),
            taken.join(", ")
        )
    })
}

fn write_project(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir.join("src"))?;
    std::fs::create_dir_all(dir.join("build"))?;
    let files = [
        (
            "README.md",
            "# calc\n\nA tiny calculator library. Run `sh check.sh` to check it.\n",
        ),
        ("src/calc.py", CALC),
        ("check.sh", CHECK),
        (".gitignore", "build/\n"),
        ("build/output.txt", "generated; ignored by grep and find\n"),
    ];
    for (name, content) in files {
        // `create_new`: whatever appeared since the check is never replaced.
        std::io::Write::write_all(
            &mut std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(dir.join(name))?,
            content.as_bytes(),
        )?;
    }
    Ok(())
}

fn call(id: &str, name: &str, args: Value) -> Value {
    json!({"type": "toolCall", "id": id, "name": name, "arguments": args})
}

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

/// The model's side of the tour.
pub fn demo_turns() -> Vec<ScriptedTurn> {
    let turns = vec![
        json!({"content": [text("Let me look at the project first."), call("call_ls", "ls", json!({}))]}),
        json!({"content": [
            text("I'll read the sources and find the scripts in one go."),
            call("call_readme", "read", json!({"path": "README.md"})),
            call("call_calc", "read", json!({"path": "src/calc.py"})),
            call("call_find", "find", json!({"pattern": "*.sh"})),
        ]}),
        json!({"content": [text("There are TODO markers; let me see all of them."), call("call_grep", "grep", json!({"pattern": "TODO", "context": 1}))]}),
        json!({"content": [text("Running the checks to confirm the failure."), call("call_check1", "bash", json!({"command": "sh check.sh"}))]}),
        json!({"content": [
            text("add and sub have their operators swapped. Fixing both in one edit."),
            call("call_edit", "edit", json!({"path": "src/calc.py", "edits": [
                {"oldText": "return a - b  # TODO: wrong operator", "newText": "return a + b"},
                {"oldText": "return a + b  # TODO: wrong operator", "newText": "return a - b"}
            ]})),
        ]}),
        json!({"content": [call("call_check2", "bash", json!({"command": "sh check.sh"}))]}),
        json!({"content": [
            text("The checks pass. Recording the fix."),
            call("call_write", "write", json!({"path": "CHANGELOG.md", "content": "# Changelog\n\n- Fix `add` and `sub` in src/calc.py, which had their operators swapped.\n"})),
        ]}),
        json!({"content": [text("Done. `add` and `sub` in src/calc.py had swapped operators; both are fixed, `sh check.sh` now passes, and CHANGELOG.md records the fix.")]}),
    ];
    turns
        .into_iter()
        .filter_map(|mut t| {
            t["delayMs"] = json!(60);
            serde_json::from_value(t).ok()
        })
        .collect()
}

/// Runs the demo; returns the exit code.
pub async fn run(args: DemoArgs) -> i32 {
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => match tempfile::Builder::new()
            .prefix("coding-agent-demo-")
            .tempdir()
        {
            Ok(t) => t.keep(),
            Err(e) => {
                eprintln!("coding-agent demo: cannot create a temporary directory: {e}");
                return 1;
            }
        },
    };
    if let Some(why) = refusal(&dir, args.allow_non_empty) {
        eprintln!("coding-agent demo: {why}");
        return 2;
    }
    if let Err(e) = write_project(&dir) {
        eprintln!(
            "coding-agent demo: cannot create the demo project in {}: {e}",
            dir.display()
        );
        return 1;
    }
    let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
    eprintln!("Demo workspace: {}", dir.display());
    let client = Arc::new(ScriptedClient::new(demo_turns()));
    let session = AgentSessionBuilder::new(Model::new("scripted", "demo"), client)
        .cwd(&dir)
        .builtin_tools(tools_builtin::all_tools(&dir))
        .settings(Settings::default())
        .context_files(false)
        .selection(ToolSelection {
            tools: Some(
                tools_builtin::BUILTIN_TOOL_NAMES
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
            ),
            ..Default::default()
        })
        .build()
        .expect("settings are given");
    crate::modes::attach_output(&session, args.mode, false, dir.clone());
    if args.mode == Mode::Text {
        crate::print_line(&format!("> {DEMO_PROMPT}\n"));
    }
    if let Err(e) = session.prompt(DEMO_PROMPT).await {
        eprintln!("coding-agent demo: {e}");
        return 1;
    }
    eprintln!(
        "\nDemo workspace: {} (inspect it, then delete it when done)",
        dir.display()
    );
    let failed = session
        .agent()
        .messages()
        .iter()
        .rev()
        .find_map(agent_ai::Message::as_assistant)
        .is_some_and(|a| {
            matches!(
                a.stop_reason,
                agent_ai::StopReason::Error | agent_ai::StopReason::Aborted
            )
        });
    i32::from(failed)
}
