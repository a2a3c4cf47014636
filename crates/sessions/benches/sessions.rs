//! In-process figures of sessions: resuming a long session file and
//! appending to it.
//!
//! `cargo bench -p agent-sessions --bench sessions` (`--json` for
//! machine-readable rows, `--runs N`, `--only TEXT`); `cargo xtask bench`
//! runs it with the tools' figures.

use std::time::Instant;

use test_support::bench::{Args, args, emit};

fn main() {
    sessions(&args());
}

/// Resuming a long session and appending to it: the file is read once and
/// only ever grows by the new line.
fn sessions(args: &Args) {
    use agent_sessions::SessionManager;
    let dir = tempfile::tempdir().expect("temp dir");
    let mut session =
        SessionManager::create(dir.path(), dir.path().to_path_buf()).expect("session");
    for i in 0..10_000 {
        let text = format!("message {i}: {}", "some words of a conversation ".repeat(6));
        let message = if i % 2 == 0 {
            agent_ai::Message::user(text)
        } else {
            let mut a = agent_ai::AssistantMessage::empty("openai", "gpt");
            a.content = vec![agent_ai::ContentBlock::text(text)];
            agent_ai::Message::Assistant(a)
        };
        session.append_message(&message).expect("append");
    }
    let file = session.session_file().expect("file").to_path_buf();
    drop(session);
    let figure = "session: resume a 10,000-entry file (open + context)";
    if args.wants(figure) {
        let mut secs = Vec::new();
        for _ in 0..args.runs {
            let started = Instant::now();
            let resumed = SessionManager::open(&file).expect("open");
            let messages = resumed.context().messages.len();
            secs.push(started.elapsed().as_secs_f64());
            assert_eq!(messages, 10_000);
        }
        let size = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
        emit(
            args,
            figure,
            secs,
            &format!("{:.1} MB file; target under 100 ms", size as f64 / 1e6),
        );
    }
    let figure = "session: append one entry";
    if args.wants(figure) {
        let mut session = SessionManager::open(&file).expect("open");
        let mut secs = Vec::new();
        let mut growth = Vec::new();
        for i in 0..args.runs.max(5) {
            let before = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
            let started = Instant::now();
            session
                .append_message(&agent_ai::Message::user(format!("one more {i}")))
                .expect("append");
            secs.push(started.elapsed().as_secs_f64());
            let after = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
            growth.push(after - before);
        }
        let last_line = std::fs::read_to_string(&file)
            .unwrap_or_default()
            .lines()
            .last()
            .map(|l| l.len() as u64 + 1)
            .unwrap_or(0);
        assert_eq!(
            growth.last().copied(),
            Some(last_line),
            "the file grows by the entry's line only"
        );
        emit(
            args,
            figure,
            secs,
            &format!(
                "file grew by {} bytes per entry (its own line), never rewritten",
                last_line
            ),
        );
    }
}
