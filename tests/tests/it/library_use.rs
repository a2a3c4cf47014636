//! The crates as a user assembling an agent uses them: a closure tool next to
//! chosen built-ins, a decorated built-in, the active set, and what `prompt`
//! returns.

use coding_agent::prelude::*;
use serde_json::json;
use test_support::agent_loop::*;

#[derive(Deserialize, JsonSchema)]
struct WordCountParams {
    /// Text whose words to count.
    text: String,
}

#[tokio::test]
async fn a_closure_tool_runs_beside_chosen_builtins() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "alpha beta\n").unwrap();
    let client = scripted(vec![
        calls(&[
            ("c1", "word_count", json!({"text": "one two three"})),
            ("c2", "grep", json!({"pattern": "beta"})),
            ("c3", "find", json!({"pattern": "*.txt"})),
        ]),
        text("There are three words."),
    ]);
    let word_count = tool("word_count")
        .description("Counts the words in a text.")
        .prompt_snippet("Count words in a text")
        .execute(|p: WordCountParams, _cx| async move {
            Ok(AgentToolResult::text(
                p.text.split_whitespace().count().to_string(),
            ))
        });
    let session = AgentSessionBuilder::new(model(), client.clone())
        .cwd(dir.path())
        .builtin_tools(tools_builtin::read_only_tools(dir.path()))
        .tool(word_count)
        .active_tools(["read", "grep", "word_count"])
        .settings(Settings::default())
        .context_files(false)
        .build()
        .unwrap();
    assert_eq!(session.active_tool_names(), ["read", "grep", "word_count"]);
    let outcome = session.prompt("count").await.unwrap();
    assert_eq!(outcome.final_text, "There are three words.");
    let results: Vec<(String, String, bool)> = session
        .agent()
        .messages()
        .iter()
        .filter_map(|m| m.as_tool_result())
        .map(|r| (r.tool_call_id.clone(), r.text(), r.is_error))
        .collect();
    assert_eq!(results[0], ("c1".into(), "3".into(), false));
    assert_eq!(
        results[1],
        ("c2".into(), "notes.txt:1: alpha beta".into(), false)
    );
    // Registered but not active: the model is told exactly that.
    assert!(results[2].2);
    assert_eq!(
        results[2].1,
        "Tool find is registered but not active in this session. Active tools: read, grep, word_count"
    );
    assert!(
        session
            .system_prompt()
            .contains("- word_count: Count words in a text")
    );
}

#[tokio::test]
async fn a_decorated_builtin_keeps_everything_but_what_it_changes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(".env"), "SECRET=1\n").unwrap();
    std::fs::write(dir.path().join("a.txt"), "public\n").unwrap();
    let read = tools_builtin::tool_by_name("read", dir.path()).unwrap();
    let guarded = decorate(read.clone())
        .before(|args, _cx| match args["path"].as_str() {
            Some(p) if p.ends_with(".env") => {
                Err(ToolError::new("Reading .env files is not allowed"))
            }
            _ => Ok(()),
        })
        .build();
    assert_eq!(guarded.prompt_snippet(), read.prompt_snippet());
    assert_eq!(guarded.prompt_guidelines(), read.prompt_guidelines());
    assert_eq!(guarded.parameters(), read.parameters());
    let theme = coding_agent::Theme::default();
    let ctx = coding_agent::RenderContext {
        cwd: dir.path().into(),
        width: 80,
    };
    assert!(
        guarded
            .render_call(&json!({"path": "a.txt"}), &theme, &ctx)
            .is_some()
    );

    let client = scripted(vec![
        calls(&[
            ("c1", "read", json!({"path": ".env"})),
            ("c2", "read", json!({"path": "a.txt"})),
        ]),
        text("done"),
    ]);
    let session = AgentSessionBuilder::new(model(), client)
        .cwd(dir.path())
        .builtin_tools(tools_builtin::all_tools(dir.path()))
        .tool(guarded)
        .settings(Settings::default())
        .context_files(false)
        .build()
        .unwrap();
    session.prompt("read both").await.unwrap();
    let results: Vec<(String, bool)> = session
        .agent()
        .messages()
        .iter()
        .filter_map(|m| m.as_tool_result())
        .map(|r| (r.text(), r.is_error))
        .collect();
    assert_eq!(
        results[0],
        ("Reading .env files is not allowed".into(), true)
    );
    assert_eq!(results[1], ("public\n".into(), false));
    // The override keeps the built-in's prompt line.
    assert!(session.system_prompt().contains("- read: "));
}
