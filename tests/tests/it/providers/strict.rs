//! Constrained sampling: strict mode sent only for the tools that ask, and
//! refused before sending where the schema cannot have it.

use agent_ai::providers::anthropic::AnthropicClient;
use agent_ai::providers::openai::OpenAiClient;
use agent_ai::{Context, Model, ModelClient, StopReason, StreamOptions, Tool, complete};
use serde_json::json;
use test_support::http_server::serve;

use super::{anthropic_text_reply, ctx, fast_retry, openai_text_reply};

/// Tools for the constrained-sampling tests: `todo` asks for strict mode,
/// `read` does not, `env` requires it with a schema strict mode cannot
/// express (a free-form map).
fn strict_tools(with_env: bool) -> Context {
    let todo = Tool::new(
        "todo",
        "Adds a todo",
        json!({"type":"object","properties":{"item":{"type":"string"},"due":{"type":"string"}},"required":["item"]}),
    )
    .with_constrained_sampling(agent_ai::ConstrainedSampling::prefer());
    let mut context = ctx();
    context.tools.push(todo);
    if with_env {
        context.tools.push(
            Tool::new("env", "Sets variables", json!({"type":"object","properties":{"vars":{"type":"object","additionalProperties":{"type":"string"}}}}))
                .with_constrained_sampling(agent_ai::ConstrainedSampling::require()),
        );
    }
    context
}

#[tokio::test]
async fn openai_sends_strict_only_for_the_tool_that_asks() {
    let server = serve(vec![openai_text_reply()]).await;
    let client = OpenAiClient::new(format!("{}/v1", server.base), None).with_retry(fast_retry());
    let msg = complete(
        &client,
        &Model::new("openai", "gpt-test"),
        &strict_tools(false),
        StreamOptions::default(),
    )
    .await;
    assert_eq!(msg.stop_reason, StopReason::Stop, "{:?}", msg.error_message);
    let tools = server.requests()[0].body["tools"].clone();
    let read = &tools[0]["function"];
    assert_eq!(read["name"], "read");
    assert!(read.get("strict").is_none(), "{read}");
    assert!(read["parameters"].get("additionalProperties").is_none());
    let todo = &tools[1]["function"];
    assert_eq!(todo["strict"], true);
    // Strict-lowered: all required, the optional one nullable, closed.
    assert_eq!(
        todo["parameters"],
        json!({"type":"object","properties":{"item":{"type":"string"},"due":{"type":["string","null"]}},
            "required":["item","due"],"additionalProperties":false})
    );
}

#[tokio::test]
async fn anthropic_sends_strict_only_for_the_tool_that_asks_with_the_beta_header() {
    let server = serve(vec![anthropic_text_reply(), anthropic_text_reply()]).await;
    let client =
        AnthropicClient::new(&server.base, Some("ak-test".into())).with_retry(fast_retry());
    let model = Model::new("anthropic", "claude-test");
    let msg = complete(
        &client,
        &model,
        &strict_tools(false),
        StreamOptions::default(),
    )
    .await;
    assert_eq!(msg.stop_reason, StopReason::Stop, "{:?}", msg.error_message);
    complete(&client, &model, &ctx(), StreamOptions::default()).await;
    let requests = server.requests();
    let beta = |i: usize| {
        requests[i]
            .headers
            .iter()
            .find(|(k, _)| k == "anthropic-beta")
            .map(|(_, v)| v.clone())
    };
    let tools = &requests[0].body["tools"];
    assert!(tools[0].get("strict").is_none(), "{}", tools[0]);
    assert_eq!(tools[1]["strict"], true);
    assert_eq!(tools[1]["input_schema"]["additionalProperties"], false);
    assert_eq!(tools[1]["input_schema"]["required"], json!(["item"]));
    assert_eq!(
        beta(0).as_deref(),
        Some(agent_ai::providers::anthropic::STRICT_TOOLS_BETA)
    );
    // No strict tool, no beta header.
    assert_eq!(beta(1), None);
}

#[tokio::test]
async fn a_tool_requiring_strict_mode_its_schema_cannot_have_fails_before_sending() {
    let server = serve(vec![openai_text_reply(), anthropic_text_reply()]).await;
    let openai = OpenAiClient::new(format!("{}/v1", server.base), None).with_retry(fast_retry());
    let anthropic = AnthropicClient::new(&server.base, None).with_retry(fast_retry());
    for (client, model) in [
        (
            &openai as &dyn ModelClient,
            Model::new("openai", "gpt-test"),
        ),
        (
            &anthropic as &dyn ModelClient,
            Model::new("anthropic", "claude-test"),
        ),
    ] {
        let msg = complete(
            client,
            &model,
            &strict_tools(true),
            StreamOptions::default(),
        )
        .await;
        assert_eq!(msg.stop_reason, StopReason::Error);
        assert_eq!(
            msg.error_message.as_deref(),
            Some(
                "Tool \"env\" requires constrained sampling, but its schema cannot be sent strict: /properties/vars takes properties of its own choosing"
            )
        );
    }
    assert!(server.requests().is_empty());
}
