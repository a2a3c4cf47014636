//! The commands on a real session with real session files: a scripted
//! conversation, then `/session`, `/name`, `/clone`, `/import`, `/export`,
//! `/thinking`, `/model`, `/copy`.

use std::path::Path;
use std::sync::Arc;

use agent_commands::{Clipboard, Commands};
use agent_sessions::SessionManager;
use coding_agent::agent_ai::providers::scripted::ScriptedClient;
use coding_agent::agent_ai::{Model, ThinkingLevel};
use coding_agent::{AgentSession, AgentSessionBuilder};

fn session(dir: &Path, answers: &[&str]) -> AgentSession {
    let script: String = answers
        .iter()
        .map(|a| format!("{{\"content\":[{{\"type\":\"text\",\"text\":{a:?}}}],\"usage\":{{\"input\":100,\"output\":10}}}}\n"))
        .collect();
    let client = ScriptedClient::from_jsonl(&script).expect("a script");
    let mut model = Model::new("scripted", "demo");
    model.reasoning = true;
    let manager = SessionManager::create(dir, dir.join("sessions")).expect("a session file");
    AgentSessionBuilder::new(model, Arc::new(client))
        .cwd(dir)
        .session_manager(manager)
        .context_files(false)
        .build()
        .expect("a session")
}

fn commands(dir: &Path) -> Commands {
    Commands {
        session_dir: Some(dir.join("sessions")),
        models: vec![
            Model::new("scripted", "demo"),
            Model::new("scripted", "other"),
        ],
        clipboard: Clipboard::Off,
        ..Commands::default()
    }
}

async fn ok(commands: &Commands, session: &AgentSession, line: &str) -> String {
    match commands.run(session, line).await {
        Some(Ok(text)) => text,
        other => panic!("{line}: {other:?}"),
    }
}

async fn err(commands: &Commands, session: &AgentSession, line: &str) -> String {
    match commands.run(session, line).await {
        Some(Err(text)) => text,
        other => panic!("{line}: expected an error, got {other:?}"),
    }
}

#[tokio::test]
async fn session_name_clone_and_export_work_on_the_recorded_file() {
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path(), &["first answer", "second answer"]);
    let commands = commands(dir.path());
    session.prompt("hello").await.unwrap();

    let info = ok(&commands, &session, "/session").await;
    assert!(info.contains("Messages:  2 (1 user, 1 assistant"), "{info}");
    assert!(info.contains("Tokens:    in 100 · out 10"), "{info}");
    assert!(info.contains("Model:     scripted/demo"), "{info}");
    assert!(info.contains(".jsonl"), "{info}");

    assert!(ok(&commands, &session, "/name").await.contains("no name"));
    ok(&commands, &session, "/name release notes").await;
    assert!(
        ok(&commands, &session, "/name")
            .await
            .contains("release notes")
    );

    let before = session
        .session_manager()
        .unwrap()
        .lock()
        .unwrap()
        .session_file()
        .unwrap()
        .to_path_buf();
    let cloned = ok(&commands, &session, "/clone").await;
    let after = session
        .session_manager()
        .unwrap()
        .lock()
        .unwrap()
        .session_file()
        .unwrap()
        .to_path_buf();
    assert_ne!(before, after, "{cloned}");
    assert_eq!(
        session.agent().messages().len(),
        2,
        "the clone holds the conversation"
    );
    session.prompt("again").await.unwrap();
    let original = SessionManager::open(&before).unwrap();
    assert_eq!(
        original.context().messages.len(),
        2,
        "the original file is untouched"
    );

    let exported = ok(&commands, &session, "/export \"my page.html\"").await;
    let page = std::fs::read_to_string(dir.path().join("my page.html")).expect(&exported);
    assert!(page.contains("second answer") && page.contains("Content-Security-Policy"));
    ok(&commands, &session, "/export branch.jsonl").await;
    let jsonl = std::fs::read_to_string(dir.path().join("branch.jsonl")).unwrap();
    assert!(
        jsonl
            .lines()
            .next()
            .unwrap()
            .contains("\"type\":\"session\"")
    );

    assert!(commands.run(&session, "not a command").await.is_none());
    assert!(
        commands.run(&session, "/skill:x").await.is_none(),
        "left to the session's expansion"
    );
}

#[tokio::test]
async fn import_checks_the_file_before_writing_anything() {
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path(), &["answer"]);
    let commands = commands(dir.path());
    let sessions = dir.path().join("sessions");
    let count = || std::fs::read_dir(&sessions).map(|d| d.count()).unwrap_or(0);
    let before = count();

    std::fs::write(dir.path().join("notes.jsonl"), "{\"hello\": 1}\nnot json\n").unwrap();
    let e = err(&commands, &session, "/import notes.jsonl").await;
    assert!(e.contains("notes.jsonl"), "{e}");
    let e = err(&commands, &session, "/import missing.jsonl").await;
    assert!(e.contains("missing.jsonl"), "{e}");
    let elsewhere = serde_json::json!({"type":"session","version":3,"id":"abc","timestamp":"2026-01-01T00:00:00Z","cwd":"/no/such/dir"});
    std::fs::write(dir.path().join("elsewhere.jsonl"), format!("{elsewhere}\n")).unwrap();
    let e = err(&commands, &session, "/import elsewhere.jsonl").await;
    assert!(e.contains("/no/such/dir"), "{e}");
    assert_eq!(count(), before, "nothing written for refused files");
    assert_eq!(
        err(&commands, &session, "/import").await,
        "usage: /import PATH.jsonl"
    );

    // A real session from elsewhere keeps its id and directory.
    let other = tempfile::tempdir().unwrap();
    let source = {
        let s = self::session(other.path(), &["from the other side"]);
        s.prompt("question there").await.unwrap();
        let store = s.session_manager().unwrap();
        let manager = store.lock().unwrap();
        manager.session_file().unwrap().to_path_buf()
    };
    let id = SessionManager::open(&source)
        .unwrap()
        .session_id()
        .to_string();
    let text = ok(
        &commands,
        &session,
        &format!("/import {}", source.display()),
    )
    .await;
    assert!(text.contains(&id), "{text}");
    assert_eq!(count(), before + 1);
    {
        let store = session.session_manager().unwrap();
        let manager = store.lock().unwrap();
        assert_eq!(manager.session_id(), id);
        assert_eq!(manager.cwd(), other.path());
    }
    assert_eq!(
        session.agent().messages().len(),
        2,
        "its conversation is the session's"
    );
    // Importing the same file twice takes a free name, never overwrites.
    ok(
        &commands,
        &session,
        &format!("/import {}", source.display()),
    )
    .await;
    assert_eq!(count(), before + 2);
}

#[tokio::test]
async fn thinking_model_and_copy() {
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path(), &["copy me"]);
    let commands = commands(dir.path());
    assert!(
        ok(&commands, &session, "/thinking")
            .await
            .starts_with("thinking: ")
    );
    assert_eq!(
        ok(&commands, &session, "/thinking high").await,
        "thinking: high"
    );
    assert_eq!(session.thinking_level(), ThinkingLevel::High);
    assert!(
        err(&commands, &session, "/thinking loud")
            .await
            .contains("unknown thinking level")
    );

    let list = ok(&commands, &session, "/model").await;
    assert!(
        list.contains("* scripted/demo") && list.contains("  scripted/other"),
        "{list}"
    );
    assert_eq!(
        ok(&commands, &session, "/model scripted/other").await,
        "model: scripted/other"
    );
    assert_eq!(session.agent().model().id, "other");
    assert_eq!(
        ok(&commands, &session, "/model demo").await,
        "model: scripted/demo"
    );
    assert!(
        err(&commands, &session, "/model nowhere/none")
            .await
            .contains("Model not found")
    );

    assert_eq!(
        err(&commands, &session, "/copy").await,
        "no answer to copy yet"
    );
    session.prompt("say it").await.unwrap();
    assert!(
        err(&commands, &session, "/copy")
            .await
            .contains("copying is turned off")
    );
}

#[tokio::test]
async fn a_program_adds_its_own_commands_and_builtins_win() {
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path(), &[]);
    let mut commands = commands(dir.path());
    let spec = |name: &'static str| agent_commands::CommandSpec {
        name,
        arguments: "[X]",
        description: "a program's own",
    };
    let echo: agent_commands::CommandHandler = Arc::new(|_, rest: &str| {
        let text = format!("echo {rest}");
        Box::pin(async move { Ok(text) })
    });
    commands.custom = vec![(spec("echo"), echo.clone()), (spec("session"), echo)];
    assert_eq!(
        ok(&commands, &session, "/echo hi there").await,
        "echo hi there"
    );
    assert!(
        ok(&commands, &session, "/session")
            .await
            .contains("Messages:"),
        "the built-in wins"
    );
    assert!(ok(&commands, &session, "/help").await.contains("/echo [X]"));
    let names: Vec<&str> = commands.specs().iter().map(|s| s.name).collect();
    assert_eq!(names.iter().filter(|n| **n == "session").count(), 1);
    assert!(names.contains(&"echo"));
}

/// What a front end's resume picker lists is what `/resume` lists, newest
/// first, and each id resumes with `/resume ID`.
#[tokio::test]
async fn sessions_are_what_resume_lists_and_their_ids_resume() {
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path(), &["one", "two"]);
    let commands = commands(dir.path());
    session.prompt("the first session").await.unwrap();
    let (first_id, first_file) = {
        let store = session.session_manager().unwrap();
        let manager = store.lock().unwrap();
        (
            manager.session_id().to_string(),
            manager.session_file().unwrap().to_path_buf(),
        )
    };
    ok(&commands, &session, "/new").await;
    session.prompt("the second session").await.unwrap();
    // Older by an hour, so the order does not hang on the clock's grain.
    let an_hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&first_file)
        .and_then(|f| f.set_modified(an_hour_ago))
        .unwrap();
    let listed = commands.sessions(&session);
    let firsts: Vec<&str> = listed.iter().map(|s| s.first_message.as_str()).collect();
    assert_eq!(firsts, ["the second session", "the first session"]);
    let text = ok(&commands, &session, "/resume").await;
    assert!(
        text.find("the second session") < text.find("the first session"),
        "{text}"
    );
    assert!(
        ok(&commands, &session, &format!("/resume {first_id}"))
            .await
            .starts_with("resumed ")
    );
    assert_eq!(session.agent().messages().len(), 2);
}
