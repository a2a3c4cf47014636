//! A custom typed tool run through the agent loop with the scripted provider.
//!
//! Run it with `cargo run -p agent-tool --example custom_tool`. It prints every
//! event of the run as one JSON line, the same stream the CLI's JSON mode emits.

use std::sync::Arc;

use agent_ai::providers::scripted::ScriptedClient;
use agent_ai::{Message, Model};
use agent_core::{
    AgentContext, AgentEvent, AgentLoopConfig, AgentToolResult, CancellationToken, EventSink,
    ToolCallContext, ToolError, run_agent_loop,
};
use agent_tool::{TypedTool, typed_tool};
use serde::Deserialize;

/// Arguments of the `word_count` tool. The doc comments become the schema's
/// descriptions, which is what the model reads.
#[derive(Deserialize, schemars::JsonSchema)]
struct WordCountParams {
    /// Text whose words to count.
    text: String,
    /// Count only words at least this long (default 1).
    min_length: Option<usize>,
}

struct WordCount;

impl TypedTool for WordCount {
    type Params = WordCountParams;

    fn name(&self) -> &str {
        "word_count"
    }

    fn description(&self) -> &str {
        "Counts the words in a text. Use it instead of counting by hand."
    }

    async fn execute(
        &self,
        params: WordCountParams,
        cx: ToolCallContext,
    ) -> Result<AgentToolResult, ToolError> {
        let (cancel, updates) = (cx.cancel, cx.updates);
        if cancel.is_cancelled() {
            return Err(ToolError::aborted());
        }
        updates.send(AgentToolResult::text("counting..."));
        let min = params.min_length.unwrap_or(1);
        let count = params
            .text
            .split_whitespace()
            .filter(|w| w.chars().count() >= min)
            .count();
        Ok(AgentToolResult::text(format!("{count} words"))
            .with_details(serde_json::json!({ "count": count, "minLength": min })))
    }
}

// The model's side of the conversation: first a tool call (note the numeric
// string, which validation coerces to a number), then an answer.
const SCRIPT: &str = r#"
{"content":[{"type":"text","text":"Let me count."},{"type":"toolCall","id":"call_1","name":"word_count","arguments":{"text":"the quick brown fox jumps","min_length":"4"}}]}
{"content":[{"type":"text","text":"There are 3 words of four letters or more."}]}
"#;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let client = Arc::new(ScriptedClient::from_jsonl(SCRIPT)?);
    let config = AgentLoopConfig::new(Model::new("scripted", "example"), client);
    let mut context = AgentContext {
        system_prompt: "You are a helpful assistant.".to_string(),
        messages: Vec::new(),
        tools: vec![typed_tool(WordCount)],
    };
    let print: EventSink = Arc::new(|event: &AgentEvent| {
        // Deltas are noisy; show them as their type only.
        if let AgentEvent::MessageUpdate { .. } = event {
            println!("{{\"type\":\"message_update\"}}");
            return;
        }
        match serde_json::to_string(&event) {
            Ok(line) => println!("{line}"),
            Err(e) => eprintln!("cannot serialize event: {e}"),
        }
    });
    run_agent_loop(
        vec![Message::user(
            "How many long words are in 'the quick brown fox jumps'?",
        )],
        &mut context,
        &config,
        CancellationToken::new(),
        &print,
    )
    .await;
    Ok(())
}
