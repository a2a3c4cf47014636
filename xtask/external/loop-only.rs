//! agent-ai (no HTTP providers) + agent-core with a model client of our own.

use std::sync::Arc;

use agent_ai::{
    AssistantEventStream, AssistantMessage, AssistantMessageEvent, ContentBlock, Context, Model,
    ModelClient, StopReason, StreamOptions,
};
use agent_core::{Agent, AgentOptions};

/// Answers every request with the number of messages it was sent.
struct Counter;

impl ModelClient for Counter {
    fn stream(&self, model: &Model, context: &Context, _: StreamOptions) -> AssistantEventStream {
        let mut message = AssistantMessage::empty(&model.provider, &model.id);
        message.content.push(ContentBlock::text(format!("{} message(s)", context.messages.len())));
        message.stop_reason = StopReason::Stop;
        Box::pin(futures::stream::iter([
            AssistantMessageEvent::Start { partial: std::sync::Arc::new(AssistantMessage::empty(&model.provider, &model.id)) },
            AssistantMessageEvent::Done { reason: StopReason::Stop, message },
        ]))
    }
}

#[tokio::main]
async fn main() {
    let agent = Agent::new(AgentOptions::new(Model::new("local", "counter"), Arc::new(Counter)));
    let outcome = agent.prompt("hello").await.expect("the run succeeds");
    assert_eq!(outcome.final_text, "1 message(s)");
    println!("loop-only: {}", outcome.final_text);
}
