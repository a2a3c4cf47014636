//! coding-agent + tools-builtin as the README shows them: a closure tool
//! beside built-in read and grep, a decorated read, and a failing provider.

use std::io::{Read, Write};
use std::sync::Arc;

use agent_ai::providers::openai::OpenAiClient;
use agent_ai::{Model, providers::scripted::ScriptedClient};
use coding_agent::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct Params {
    /// Text whose words to count.
    text: String,
}

fn scripted(lines: &[&str]) -> Arc<ScriptedClient> {
    Arc::new(ScriptedClient::from_jsonl(&lines.join("\n")).expect("valid script"))
}

#[tokio::main]
async fn main() {
    let dir = std::env::temp_dir().join(format!("external-project-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), "alpha beta\n").unwrap();
    std::fs::write(dir.join(".env"), "SECRET=1\n").unwrap();

    // (b) a closure tool, registered, with built-in read and grep active.
    let word_count = tool("word_count")
        .description("Counts the words in a text.")
        .prompt_snippet("Count words in a text")
        .execute(|p: Params, _cx| async move {
            Ok(AgentToolResult::text(p.text.split_whitespace().count().to_string()))
        });
    let model = scripted(&[
        r#"{"content":[{"type":"toolCall","id":"c1","name":"word_count","arguments":{"text":"a b c"}},{"type":"toolCall","id":"c2","name":"grep","arguments":{"pattern":"beta"}}]}"#,
        r#"{"content":[{"type":"text","text":"done"}]}"#,
    ]);
    let session = AgentSessionBuilder::new(Model::new("scripted", "demo"), model)
        .cwd(&dir)
        .builtin_tools(tools_builtin::all_tools(&dir))
        .tool(word_count)
        .active_tools(["read", "grep", "word_count"])
        .settings(Settings::default())
        .build()
        .unwrap();
    session.prompt("go").await.unwrap();
    let results: Vec<String> = session
        .agent()
        .messages()
        .iter()
        .filter_map(|m| m.as_tool_result())
        .map(|r| r.text())
        .collect();
    assert_eq!(results, ["3", "notes.txt:1: alpha beta"]);
    println!("(b) closure tool and built-ins: {results:?}");

    // (c) a decorated read that refuses .env files and keeps the rest.
    let read = tools_builtin::tool_by_name("read", &dir).unwrap();
    let guarded = decorate(read.clone())
        .before(|args, _cx| match args["path"].as_str() {
            Some(p) if p.ends_with(".env") => Err(ToolError::new("no .env files")),
            _ => Ok(()),
        })
        .build();
    assert_eq!(guarded.prompt_snippet(), read.prompt_snippet());
    assert_eq!(guarded.prompt_guidelines(), read.prompt_guidelines());
    let model = scripted(&[
        r#"{"content":[{"type":"toolCall","id":"c1","name":"read","arguments":{"path":".env"}}]}"#,
        r#"{"content":[{"type":"text","text":"done"}]}"#,
    ]);
    let session = AgentSessionBuilder::new(Model::new("scripted", "demo"), model)
        .cwd(&dir)
        .builtin_tools(tools_builtin::all_tools(&dir))
        .tool(guarded)
        .settings(Settings::default())
        .build()
        .unwrap();
    session.prompt("go").await.unwrap();
    let refused = session.agent().messages()[2].as_tool_result().unwrap().text();
    assert_eq!(refused, "no .env files");
    assert!(session.system_prompt().contains("- read: "));
    println!("(c) decorated read: {refused}");

    // (d) a provider answering 401: prompt returns an error naming the status.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 65536];
            let mut request = Vec::new();
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let body = r#"{"error":{"message":"Incorrect API key provided"}}"#;
            let _ = write!(
                stream,
                "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let client = Arc::new(OpenAiClient::new(format!("http://127.0.0.1:{port}/v1"), Some("wrong".into())));
    let session = AgentSessionBuilder::new(Model::new("openai", "gpt-test"), client)
        .cwd(&dir)
        .settings(Settings::default())
        .build()
        .unwrap();
    let error = session.prompt("hello").await.unwrap_err();
    assert!(error.to_string().contains("401"), "{error}");
    println!("(d) failing provider: {error}");
    let _ = std::fs::remove_dir_all(&dir);
}
