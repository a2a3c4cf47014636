//! Extensions at run time: executables speaking MCP on stdio, loaded with
//! `-e`, from `<agent dir>/extensions/` and from a trusted project, in
//! Python with the official SDK and in Rust with agent-mcp.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::bin;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Whether the official Python MCP SDK is importable.
fn python_sdk() -> bool {
    test_support::python_package("mcp.server.mcpserver", "mcp")
}

struct Env {
    root: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("agent")).unwrap();
        std::fs::create_dir_all(root.path().join("ws")).unwrap();
        Env { root }
    }

    fn agent_dir(&self) -> PathBuf {
        self.root.path().join("agent")
    }

    fn ws(&self) -> PathBuf {
        self.root.path().join("ws")
    }

    /// An executable script at `path`.
    fn script(&self, path: &Path, text: &str) -> PathBuf {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.to_path_buf()
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(bin())
            .env("CODING_AGENT_DIR", self.agent_dir())
            .arg("--cwd")
            .arg(self.ws())
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    fn list_tools(&self, args: &[&str]) -> (Vec<Value>, String) {
        let mut all = args.to_vec();
        all.push("--list-tools");
        let out = self.run(&all);
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "{stderr}");
        (serde_json::from_slice(&out.stdout).unwrap(), stderr)
    }

    /// A scripted run: each call in turn, then "done"; the
    /// `tool_execution_end` events.
    fn agent_run(&self, args: &[&str], calls: &[(&str, Value)]) -> (Vec<Value>, String) {
        let mut script = String::new();
        for (i, (name, arguments)) in calls.iter().enumerate() {
            script.push_str(&format!(
                "{}\n",
                json!({"content": [{"type": "toolCall", "id": format!("c{i}"), "name": name, "arguments": arguments}]})
            ));
        }
        script.push_str(&format!(
            "{}\n",
            json!({"content": [{"type": "text", "text": "done"}]})
        ));
        let path = self.root.path().join("script.jsonl");
        std::fs::write(&path, script).unwrap();
        let mut all = vec![
            "--script",
            path.to_str().unwrap(),
            "--mode",
            "json",
            "--no-session",
        ];
        all.extend_from_slice(args);
        all.push("go");
        let out = self.run(&all);
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "{stderr}");
        let ends = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["type"] == "tool_execution_end")
            .collect();
        (ends, stderr)
    }
}

fn tool<'a>(tools: &'a [Value], name: &str) -> Option<&'a Value> {
    tools.iter().find(|t| t["name"] == name)
}

fn text(end: &Value) -> String {
    end["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

#[test]
fn the_python_weather_extension_is_offered_prompted_and_called() {
    if !python_sdk() {
        return;
    }
    let env = Env::new();
    let weather = repo().join("examples/extensions/weather.py");
    let weather = weather.to_str().unwrap();
    let (tools, _) = env.list_tools(&["-e", weather]);
    let w = tool(&tools, "weather").expect("weather is registered under its own name");
    assert_eq!(w["active"], true);
    assert_eq!(w["promptSnippet"], "Get the current weather for a city");
    assert!(
        w["source"]["extension"]
            .as_str()
            .unwrap()
            .ends_with("weather.py")
    );
    assert_eq!(
        w["parameters"]["properties"]["unit"]["enum"],
        json!(["metric", "imperial"])
    );

    let prompt = env.run(&["-e", weather, "--print-system-prompt"]);
    let prompt = String::from_utf8_lossy(&prompt.stdout);
    assert!(
        prompt.contains("- weather: Get the current weather for a city"),
        "{prompt}"
    );
    assert!(prompt.contains("do not guess the weather"), "{prompt}");

    let (ends, _) = env.agent_run(
        &["-e", weather],
        &[
            ("weather", json!({"city": "Berlin"})),
            ("weather", json!({"city": "Tokyo", "unit": "imperial"})),
            ("weather", json!({"city": "Atlantis"})),
        ],
    );
    assert_eq!(text(&ends[0]), "Berlin: 12.5°C, wind 9.0 km/h");
    assert_eq!(text(&ends[1]), "Tokyo: 69.8°F, wind 8.7 mph");
    assert_eq!(ends[2]["isError"], true);
    assert!(
        text(&ends[2]).contains("Unknown city: Atlantis"),
        "{}",
        ends[2]
    );
}

#[test]
fn the_rust_weather_extension_works_the_same() {
    // Built here: examples of another package are not built for these tests.
    let built = Command::new(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "-p",
            "agent-mcp",
            "--example",
            "weather_extension",
        ])
        .current_dir(repo())
        .status()
        .unwrap();
    assert!(built.success());
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target"));
    let example = target.join("debug/examples/weather_extension");
    let example = example.to_str().unwrap();
    let env = Env::new();
    let (tools, _) = env.list_tools(&["-e", example]);
    let w = tool(&tools, "weather").expect("registered");
    assert_eq!(w["promptSnippet"], "Get the current weather for a city");
    let (ends, _) = env.agent_run(&["-e", example], &[("weather", json!({"city": "Berlin"}))]);
    assert_eq!(text(&ends[0]), "Berlin: 12.5°C, wind 9.0 km/h");
}

/// An extension with a `read` (overriding the built-in), a `shout`, and a
/// `crash` that kills its process.
const PY_EXTENSION: &str = r#"#!/usr/bin/env python3
import os
from mcp.server.mcpserver import MCPServer
server = MCPServer("t")

@server.tool(description="Reads nothing.")
def read(path: str) -> str:
    return f"overridden read of {path}"

@server.tool(description="Upper-cases text.", meta={"coding-agent/promptSnippet": "Shout text"})
def shout(text: str) -> str:
    return text.upper() + " from " + os.path.basename(__file__)

@server.tool(description="Exits.")
def crash() -> str:
    os._exit(3)

server.run()
"#;

#[test]
fn overrides_first_registration_crashes_and_bad_extensions() {
    if !python_sdk() {
        return;
    }
    let env = Env::new();
    let first = env.script(&env.root.path().join("x/first.py"), PY_EXTENSION);
    let second = env.script(&env.root.path().join("x/second.py"), PY_EXTENSION);
    let exits = env.script(&env.root.path().join("x/exits"), "#!/bin/sh\nexit 1\n");
    let hangs = env.script(&env.root.path().join("x/hangs"), "#!/bin/sh\n# Not `sleep 600`: the sandbox tests look for that one in ps.\nexec sleep 3600\n");
    // Long enough for the two Python extensions to import the MCP SDK on a
    // loaded machine (about 2 s each on an idle one; 3 s timed them out
    // beside the sandbox tests), short enough to bound the hanging one.
    std::fs::write(
        env.agent_dir().join("settings.json"),
        json!({"extensionStartupTimeoutSec": 20}).to_string(),
    )
    .unwrap();
    let args = [
        "-e",
        first.to_str().unwrap(),
        "-e",
        exits.to_str().unwrap(),
        "-e",
        hangs.to_str().unwrap(),
        "-e",
        second.to_str().unwrap(),
    ];
    let started = Instant::now();
    let (tools, stderr) = env.list_tools(&args);
    // A hanging extension holds start-up for its timeout, not longer (a
    // bound against hangs, generous for a loaded machine).
    assert!(started.elapsed() < Duration::from_secs(90)); // hang guard
    assert!(
        stderr.contains(&format!("extension {} is not loaded", exits.display())),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("extension {} is not loaded", hangs.display())),
        "{stderr}"
    );
    assert!(
        stderr.contains("startupTimeoutSec") || stderr.contains("did not start within"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "extension {}: tool shout is already registered by {}",
            second.display(),
            first.display()
        )),
        "{stderr}"
    );
    // The override takes the built-in's place, without its prompt snippet.
    let read = tool(&tools, "read").unwrap();
    assert_eq!(read["source"]["extension"], first.to_str().unwrap());
    assert!(read["promptSnippet"].is_null(), "{read}");
    assert_eq!(tools[0]["name"], "read", "the built-in's position");
    assert_eq!(tools.iter().filter(|t| t["name"] == "read").count(), 1);
    assert_eq!(
        tool(&tools, "shout").unwrap()["promptSnippet"],
        "Shout text"
    );

    let (ends, _) = env.agent_run(
        &args,
        &[
            ("read", json!({"path": "x.txt"})),
            ("shout", json!({"text": "hi"})),
            ("crash", json!({})),
            ("shout", json!({"text": "again"})),
        ],
    );
    assert_eq!(text(&ends[0]), "overridden read of x.txt");
    assert_eq!(
        text(&ends[1]),
        "HI from first.py",
        "the first registration wins"
    );
    assert_eq!(
        ends[2]["isError"], true,
        "a crash mid-call is an error result"
    );
    assert_eq!(
        text(&ends[3]),
        "AGAIN from first.py",
        "restarted after the crash"
    );
}

#[test]
fn directories_trust_and_no_extensions() {
    let env = Env::new();
    let user = env.script(
        &env.agent_dir().join("extensions/user-ext"),
        &format!(
            "#!/bin/sh\nexec {} mcp --tools ls --sandbox off\n",
            bin().display()
        ),
    );
    let _ = user;
    // Our own MCP server as an extension: its tools keep their prompt
    // snippets through `_meta`.
    let (tools, _) = env.list_tools(&[]);
    let ls = tool(&tools, "ls").unwrap();
    assert!(
        ls["source"]["extension"]
            .as_str()
            .unwrap()
            .ends_with("user-ext"),
        "{ls}"
    );
    assert_eq!(ls["promptSnippet"], "List the entries of a directory");
    let (tools, _) = env.list_tools(&["--no-extensions"]);
    assert_eq!(tool(&tools, "ls").unwrap()["source"], "builtin");

    // A file that cannot be an extension is named, not skipped in silence.
    std::fs::write(
        env.agent_dir().join("extensions/weather-tool.ts"),
        "export {}",
    )
    .unwrap();
    let (_, stderr) = env.list_tools(&[]);
    assert!(
        stderr.contains("weather-tool.ts is skipped: an extension is an executable"),
        "{stderr}"
    );

    // A project's extension waits for trust.
    env.script(
        &env.ws().join(".pi/extensions/project-ext"),
        &format!(
            "#!/bin/sh\nexec {} mcp --tools find --sandbox off\n",
            bin().display()
        ),
    );
    let (tools, stderr) = env.list_tools(&[]);
    assert_eq!(tool(&tools, "find").unwrap()["source"], "builtin");
    assert!(
        stderr.contains("extensions"),
        "the held-back key is named: {stderr}"
    );
    let trusted = Command::new(bin())
        .env("CODING_AGENT_DIR", env.agent_dir())
        .arg("trust")
        .arg(env.ws())
        .output()
        .unwrap();
    assert!(
        trusted.status.success(),
        "{}",
        String::from_utf8_lossy(&trusted.stderr)
    );
    let (tools, _) = env.list_tools(&[]);
    assert!(
        tool(&tools, "find").unwrap()["source"]["extension"]
            .as_str()
            .unwrap()
            .ends_with("project-ext")
    );
    // Changing the trusted extension asks again (held back until then).
    std::fs::write(
        env.ws().join(".pi/extensions/project-ext"),
        "#!/bin/sh\necho changed\n",
    )
    .unwrap();
    let (tools, stderr) = env.list_tools(&[]);
    assert_eq!(
        tool(&tools, "find").unwrap()["source"],
        "builtin",
        "{stderr}"
    );
}

/// An extension's answer is kept as every built-in tool's output is: the
/// first 2,000 lines or 50 KB with a notice, never a 200 KB answer whole
/// in the transcript.
#[test]
fn an_extensions_long_answer_is_cut_like_any_tools() {
    if !python_sdk() {
        return;
    }
    let env = Env::new();
    let big = env.script(
        &env.root.path().join("big.py"),
        "#!/usr/bin/env python3\n\
         from mcp.server.mcpserver import MCPServer\n\
         server = MCPServer('big')\n\
         @server.tool()\n\
         def big() -> str:\n\
         \x20   \"\"\"A long answer.\"\"\"\n\
         \x20   return '\\n'.join(f'line {i} ' + 'x' * 40 for i in range(3938))\n\
         server.run()\n",
    );
    let (ends, stderr) = env.agent_run(&["-e", big.to_str().unwrap()], &[("big", json!({}))]);
    let shown = text(&ends[0]);
    assert!(
        shown.len() <= 50 * 1024 + 300,
        "{} bytes: {stderr}",
        shown.len()
    );
    assert!(shown.starts_with("line 0 "), "{stderr}");
    assert!(!shown.contains("line 3937 "), "{stderr}");
    assert!(
        shown.contains("[Output truncated: "),
        "{}",
        &shown[shown.len() - 200..]
    );
    assert_eq!(
        ends[0]["result"]["details"]["truncation"]["totalLines"],
        3938
    );
}

/// The `tool_execution_update` events of a `--mode json` run's stdout.
fn updates(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "tool_execution_update")
        .collect()
}

/// An extension's progress notifications reach the agent loop as the
/// call's partial results, as a compiled-in tool's updates do.
#[test]
fn an_extensions_progress_arrives_as_the_calls_updates() {
    if !python_sdk() {
        return;
    }
    let env = Env::new();
    let ext = env.script(
        &env.root.path().join("steps.py"),
        "#!/usr/bin/env python3\n\
         from mcp.server.mcpserver import Context, MCPServer\n\
         server = MCPServer('steps')\n\
         @server.tool(description='Works in three steps.')\n\
         async def work(ctx: Context) -> str:\n\
         \x20   for i in range(1, 4):\n\
         \x20       await ctx.report_progress(i, 3, f'step {i} of 3')\n\
         \x20   return 'worked'\n\
         server.run()\n",
    );
    let script = env.root.path().join("script.jsonl");
    std::fs::write(
        &script,
        format!(
            "{}\n{}\n",
            json!({"content": [{"type": "toolCall", "id": "c0", "name": "work", "arguments": {}}]}),
            json!({"content": [{"type": "text", "text": "done"}]})
        ),
    )
    .unwrap();
    let out = env.run(&[
        "-e",
        ext.to_str().unwrap(),
        "--script",
        script.to_str().unwrap(),
        "--mode",
        "json",
        "--no-session",
        "go",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let updates = updates(&out.stdout);
    let texts: Vec<&str> = updates
        .iter()
        .map(|u| {
            u["partialResult"]["content"][0]["text"]
                .as_str()
                .unwrap_or("")
        })
        .collect();
    assert_eq!(
        texts,
        ["step 1 of 3", "step 2 of 3", "step 3 of 3"],
        "{stderr}"
    );
    assert_eq!(updates[2]["partialResult"]["details"]["total"], 3.0);
    assert!(updates.iter().all(|u| u["toolCallId"] == "c0"));
}

/// An extension's tool that declares a path argument in its `_meta` is
/// judged by `Read(...)` rules like the built-in read; our own MCP server
/// declares the built-ins' path arguments the same way.
#[test]
fn declared_path_arguments_bring_an_extension_under_the_rules() {
    if !python_sdk() {
        return;
    }
    let env = Env::new();
    std::fs::write(env.ws().join("secret.txt"), "the secret\n").unwrap();
    std::fs::write(env.ws().join("notes.txt"), "the notes\n").unwrap();
    std::fs::write(
        env.agent_dir().join("settings.json"),
        json!({"permissions": {"deny": ["Read(./secret.txt)"]}, "extensionStartupTimeoutSec": 20})
            .to_string(),
    )
    .unwrap();
    let peek = env.script(
        &env.root.path().join("peek.py"),
        "#!/usr/bin/env python3\n\
         from mcp.server.mcpserver import MCPServer\n\
         server = MCPServer('peek')\n\
         @server.tool(description='Names a file.', meta={'coding-agent/pathArguments': ['file']})\n\
         def peek(file: str) -> str:\n\
         \x20   return 'peeked ' + file\n\
         server.run()\n",
    );
    // Our server with settings of its own (no rule: only the agent's rules
    // can refuse), in the session's directory.
    let ours = env.script(
        &env.root.path().join("our-read"),
        &format!(
            "#!/bin/sh\nCODING_AGENT_DIR={} exec {} mcp --tools read --sandbox off --cwd \"$CODING_AGENT_CWD\"\n",
            env.root.path().join("server-agent").display(),
            bin().display()
        ),
    );
    let (ends, stderr) = env.agent_run(
        &["-e", peek.to_str().unwrap(), "-e", ours.to_str().unwrap()],
        &[
            ("peek", json!({"file": "secret.txt"})),
            ("peek", json!({"file": "notes.txt"})),
            ("read", json!({"path": "secret.txt"})),
            ("read", json!({"path": "notes.txt"})),
        ],
    );
    assert_eq!(ends[0]["isError"], true, "{stderr}");
    assert!(text(&ends[0]).contains("Read(./secret.txt)"), "{}", ends[0]);
    assert_eq!(text(&ends[1]), "peeked notes.txt");
    // The read served by our MCP server, mounted as an extension.
    assert_eq!(ends[2]["isError"], true, "{stderr}");
    assert!(text(&ends[2]).contains("Read(./secret.txt)"), "{}", ends[2]);
    assert!(text(&ends[3]).contains("the notes"), "{}", ends[3]);
}
