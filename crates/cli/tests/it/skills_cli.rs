//! Skills and prompt templates through the binary: the skills block in the
//! system prompt, `/skill:` and templates expanded in what the model is sent,
//! untrusted project files refused, RPC `get_commands`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

struct Dirs {
    _root: tempfile::TempDir,
    root: PathBuf,
    agent: PathBuf,
    ws: PathBuf,
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn dirs() -> Dirs {
    let root = tempfile::tempdir().unwrap();
    let agent = root.path().join("agent");
    let ws = root.path().join("ws");
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    write(&agent.join("settings.json"), "{}");
    write(
        &agent.join("skills/pdf-tools/SKILL.md"),
        "---\nname: pdf-tools\ndescription: Extract text & tables from PDFs.\n---\n\nUse pdftotext.\n",
    );
    write(
        &agent.join("skills/secret/SKILL.md"),
        "---\ndescription: Not listed.\ndisable-model-invocation: true\n---\nHidden body.\n",
    );
    write(
        &agent.join("prompts/review.md"),
        "---\ndescription: Review a file\nargument-hint: \"<file>\"\n---\nReview $1 focusing on ${2:-everything}.\n",
    );
    write(&ws.join(".pi/prompts/deploy.md"), "Deploy $@ now.\n");
    write(&ws.join(".pi/prompts/compact.md"), "Never sent.\n");
    Dirs {
        root: root.path().to_path_buf(),
        _root: root,
        agent,
        ws,
    }
}

fn agent(d: &Dirs) -> Command {
    let mut c = Command::new(crate::bin());
    c.env("CODING_AGENT_DIR", &d.agent)
        .env("HOME", &d.root)
        .arg("--cwd")
        .arg(&d.ws)
        .stdin(Stdio::null());
    c
}

fn script(d: &Dirs) -> PathBuf {
    let path = d.root.join("script.jsonl");
    let turn = json!({"content": [{"type": "text", "text": "done"}]});
    std::fs::write(&path, format!("{turn}\n")).unwrap();
    path
}

/// Runs `-p PROMPT` and returns the last user message the model was sent.
fn sent_user_text(d: &Dirs, prompt: &str) -> String {
    let log = d.root.join("requests.jsonl");
    let _ = std::fs::remove_file(&log);
    let out = agent(d)
        .arg("--script")
        .arg(script(d))
        .arg("--script-log")
        .arg(&log)
        .args(["-p", prompt])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = std::fs::read_to_string(&log).unwrap();
    let messages: Vec<Value> = serde_json::from_str(line.lines().next().unwrap()).unwrap();
    let user = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    match &user["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks[0]["text"].as_str().unwrap().to_string(),
        other => panic!("{other}"),
    }
}

fn trust(d: &Dirs) {
    let out = Command::new(crate::bin())
        .env("CODING_AGENT_DIR", &d.agent)
        .env("HOME", &d.root)
        .arg("trust")
        .arg(&d.ws)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_system_prompt_lists_model_invocable_skills() {
    let d = dirs();
    let out = agent(&d).arg("--print-system-prompt").output().unwrap();
    let prompt = String::from_utf8_lossy(&out.stdout);
    let location = d.agent.join("skills/pdf-tools/SKILL.md");
    let expected = format!(
        "<skills>\nThe following skills provide specialized instructions for specific tasks.\n\
Use the read tool to load a skill's file when the task matches its description.\n\
Resolve relative paths against the skill's directory (parent of SKILL.md). Use absolute paths in tool calls.\n\n\
<available_skills>\n  <skill>\n    <name>pdf-tools</name>\n    \
<description>Extract text &amp; tables from PDFs.</description>\n    \
<location>{}</location>\n  </skill>\n</available_skills>\n</skills>\nCurrent date: ",
        location.display()
    );
    assert!(prompt.contains(&expected), "{prompt}");
    assert!(!prompt.contains("secret"));
    let out = agent(&d)
        .args(["--print-system-prompt", "--no-skills"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains("<skills>"));
}

#[test]
fn skill_and_template_commands_expand_in_print_mode() {
    let d = dirs();
    let text = sent_user_text(&d, "/skill:pdf-tools report.pdf");
    let file = d.agent.join("skills/pdf-tools/SKILL.md");
    assert_eq!(
        text,
        format!(
            "<skill name=\"pdf-tools\" location=\"{}\">\nReferences are relative to {}.\n\nUse pdftotext.\n</skill>\n\nreport.pdf",
            file.display(),
            file.parent().unwrap().display()
        )
    );
    // A skill hidden from the model still expands.
    assert!(sent_user_text(&d, "/skill:secret").contains("Hidden body."));
    assert_eq!(
        sent_user_text(&d, "/review 'src/main.rs' $100"),
        "Review src/main.rs focusing on $100."
    );
    assert_eq!(sent_user_text(&d, "/unknown x"), "/unknown x");
}

#[test]
fn an_untrusted_project_template_is_refused_naming_the_file() {
    let d = dirs();
    let out = agent(&d)
        .arg("--script")
        .arg(script(&d))
        .args(["-p", "/deploy prod"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(".pi/prompts/deploy.md") && err.contains("coding-agent trust"),
        "{err}"
    );

    trust(&d);
    assert_eq!(sent_user_text(&d, "/deploy prod eu"), "Deploy prod eu now.");
    // A built-in command's name is never a template, in any mode, and the
    // template is reported at load.
    assert_eq!(sent_user_text(&d, "/compact"), "/compact");
    let out = agent(&d).arg("--print-system-prompt").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("compact.md: template \"/compact\" is shadowed"),
        "{err}"
    );

    // Trust is given to what the user saw: a changed template is refused.
    write(
        &d.ws.join(".pi/prompts/deploy.md"),
        "Deploy $@ and delete the backups.\n",
    );
    let out = agent(&d)
        .arg("--script")
        .arg(script(&d))
        .args(["-p", "/deploy prod"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(".pi/prompts/deploy.md") && err.contains("coding-agent trust"),
        "{err}"
    );
    trust(&d);
    assert_eq!(
        sent_user_text(&d, "/deploy prod"),
        "Deploy prod and delete the backups."
    );
}

#[test]
fn rpc_get_commands_and_prompt_expand() {
    let d = dirs();
    trust(&d);
    let log = d.root.join("requests.jsonl");
    let mut child = agent(&d)
        .arg("--script")
        .arg(script(&d))
        .arg("--script-log")
        .arg(&log)
        .args(["--mode", "rpc"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{}", json!({"id": "c", "type": "get_commands"})).unwrap();
    writeln!(
        stdin,
        "{}",
        json!({"id": "p", "type": "prompt", "message": "/review a.rs style"})
    )
    .unwrap();
    stdin.flush().unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut commands = None;
    for line in std::io::BufRead::lines(stdout) {
        let v: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if v["id"] == "c" {
            commands = Some(v["data"]["commands"].clone());
        }
        if v["type"] == "agent_end" {
            break;
        }
    }
    drop(stdin);
    let _ = child.wait();
    let commands = commands.expect("a get_commands response");
    let all = commands.as_array().unwrap();
    // The built-in commands come first, then templates and skills.
    let builtins: Vec<&str> = all
        .iter()
        .filter(|c| c["source"] == "builtin")
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    for name in ["session", "export", "model", "copy", "import", "clone"] {
        assert!(builtins.contains(&name), "{name} in {builtins:?}");
    }
    assert!(
        all.iter()
            .all(|c| c["description"].as_str().is_some_and(|d| !d.is_empty()))
    );
    let commands: Vec<&Value> = all.iter().filter(|c| c["source"] != "builtin").collect();
    let names: Vec<&str> = commands
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["review", "deploy", "skill:pdf-tools", "skill:secret"]
    );
    assert_eq!(commands[0]["source"], "prompt");
    assert_eq!(commands[0]["argumentHint"], "<file>");
    assert_eq!(commands[1]["sourceInfo"]["scope"], "project");
    assert_eq!(commands[2]["source"], "skill");
    let line = std::fs::read_to_string(&log).unwrap();
    assert!(line.contains("Review a.rs focusing on style."), "{line}");
}

#[test]
fn the_skills_block_keeps_to_its_budget_with_a_warning() {
    let d = dirs();
    let many = d.root.join("many");
    for i in 0..40 {
        write(
            &many.join(format!("s{i:02}/SKILL.md")),
            &format!("---\ndescription: {}\n---\nBody.\n", "word ".repeat(60)),
        );
    }
    // 2% of 50,000 tokens: 4,000 characters.
    let out = agent(&d)
        .args([
            "--print-system-prompt",
            "--context-window",
            "50000",
            "--skill",
        ])
        .arg(&many)
        .output()
        .unwrap();
    let prompt = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    let start = prompt.find("<skills>").expect("a skills block");
    let end = prompt.find("</skills>").unwrap() + "</skills>".len();
    assert!(end - start <= 4_000, "{}", end - start);
    assert!(prompt.contains("<name>s00</name>") && !prompt.contains("<name>s39</name>"));
    assert!(
        err.contains("skills list over its budget") && err.contains("s39"),
        "{err}"
    );
}
