//! What each request carries: prices, thinking levels and cache marks.

use agent_ai::providers::anthropic::AnthropicClient;
use agent_ai::providers::openai::OpenAiClient;
use agent_ai::{AssistantMessage, ContentBlock, Context, Message, Model, StreamOptions, complete};
use serde_json::json;
use test_support::http_server::{Reply, serve};

use super::{anthropic_text_reply, chunk, ctx, ev, fast_retry, openai_text_reply};

/// Model prices: $3 in, $15 out, $0.30 cache read, $3.75 cache write per
/// million tokens.
fn priced(provider: &str, api: &str) -> Model {
    let mut m = Model::new(provider, "priced");
    m.api = api.into();
    m.cost = agent_ai::ModelCost {
        input: 3.0,
        output: 15.0,
        cache_read: 0.3,
        cache_write: 3.75,
    };
    m
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

#[tokio::test]
async fn every_message_is_priced_on_anthropic_and_chat_completions() {
    // Anthropic: 1 000 input, 200 000 cache read, 4 000 cache write, 2 000 output.
    let server = serve(vec![Reply::sse(&[
        &ev(json!({"type":"message_start","message":{"id":"m","usage":{"input_tokens":1000,
            "cache_read_input_tokens":200000,"cache_creation_input_tokens":4000,"output_tokens":1}}})),
        &ev(json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})),
        &ev(json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}})),
        &ev(json!({"type":"content_block_stop","index":0})),
        &ev(json!({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2000}})),
        &ev(json!({"type":"message_stop"})),
    ])])
    .await;
    let client = AnthropicClient::new(&server.base, Some("k".into())).with_retry(fast_retry());
    let msg = complete(
        &client,
        &priced("anthropic", "anthropic-messages"),
        &ctx(),
        StreamOptions::default(),
    )
    .await;
    let u = msg.usage;
    assert_eq!(
        (
            u.input,
            u.output,
            u.cache_read,
            u.cache_write,
            u.total_tokens
        ),
        (1000, 2000, 200_000, 4000, 207_000)
    );
    // 0.003 + 0.03 + 0.06 + 0.015 dollars.
    assert!(
        close(u.cost.input, 0.003) && close(u.cost.output, 0.03),
        "{:?}",
        u.cost
    );
    assert!(
        close(u.cost.cache_read, 0.06) && close(u.cost.cache_write, 0.015),
        "{:?}",
        u.cost
    );
    assert!(close(u.cost.total, 0.108), "{:?}", u.cost);

    // Chat Completions: 5 000 prompt tokens of which 4 000 cached, 300 completion.
    let server = serve(vec![Reply::sse(&[
        &chunk(json!({"role":"assistant","content":"ok"}), Some("stop")),
        &json!({"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":5000,
            "completion_tokens":300,"total_tokens":5300,"prompt_tokens_details":{"cached_tokens":4000}}}).to_string(),
        "[DONE]",
    ])])
    .await;
    let client = OpenAiClient::new(format!("{}/v1", server.base), None).with_retry(fast_retry());
    let msg = complete(
        &client,
        &priced("openai", "openai-completions"),
        &ctx(),
        StreamOptions::default(),
    )
    .await;
    let u = msg.usage;
    assert_eq!((u.input, u.cache_read, u.output), (1000, 4000, 300));
    // 0.003 + 0.0012 + 0.0045 dollars.
    assert!(close(u.cost.total, 0.0087), "{:?}", u.cost);
}

fn with_effort(effort: Option<agent_ai::ReasoningEffort>) -> StreamOptions {
    StreamOptions {
        reasoning: effort,
        temperature: Some(0.5),
        ..StreamOptions::default()
    }
}

#[tokio::test]
async fn thinking_levels_reach_each_api_in_its_own_field() {
    use agent_ai::ReasoningEffort::*;
    // Anthropic, budget model: budget per level, max_tokens grows, no temperature, beta header.
    let server = serve((0..5).map(|_| anthropic_text_reply()).collect()).await;
    let client = AnthropicClient::new(&server.base, Some("k".into())).with_retry(fast_retry());
    let mut budget = Model::new("anthropic", "claude-sonnet-4-5");
    budget.reasoning = true;
    budget.max_tokens = 64_000;
    let mut adaptive = budget.clone();
    adaptive.id = "claude-opus-4-6".into();
    adaptive.compat.adaptive_thinking = true;
    adaptive.compat.supports_xhigh = true;
    for (model, effort) in [
        (&budget, Some(Minimal)),
        (&budget, Some(High)),
        (&budget, None),
        (&adaptive, Some(Minimal)),
        (&adaptive, Some(Xhigh)),
    ] {
        complete(&client, model, &ctx(), with_effort(effort)).await;
    }
    let r = server.requests();
    assert_eq!(
        r[0].body["thinking"],
        json!({"type":"enabled","budget_tokens":1024})
    );
    assert_eq!(r[0].body["max_tokens"], 32_000 + 1024);
    assert!(r[0].body.get("temperature").is_none());
    let beta = |i: usize| {
        r[i].headers
            .iter()
            .find(|(k, _)| k == "anthropic-beta")
            .map(|(_, v)| v.clone())
    };
    assert_eq!(
        beta(0).as_deref(),
        Some(agent_ai::providers::anthropic::INTERLEAVED_THINKING_BETA)
    );
    assert_eq!(r[1].body["thinking"]["budget_tokens"], 16_384);
    assert!(r[2].body.get("thinking").is_none());
    assert_eq!(r[2].body["temperature"], 0.5);
    assert_eq!(beta(2), None);
    assert_eq!(r[3].body["thinking"], json!({"type":"adaptive"}));
    assert_eq!(r[3].body["output_config"], json!({"effort":"low"}));
    assert_eq!(r[4].body["output_config"], json!({"effort":"max"}));
    assert_eq!(beta(3), None);

    // Chat Completions: reasoning_effort, only for a reasoning model whose server takes it.
    let server = serve((0..4).map(|_| openai_text_reply()).collect()).await;
    let client = OpenAiClient::new(format!("{}/v1", server.base), None).with_retry(fast_retry());
    let mut reasoning = Model::new("openai", "o4-mini");
    reasoning.reasoning = true;
    let mut refuses = reasoning.clone();
    refuses.compat.supports_reasoning_effort = Some(false);
    for (model, effort) in [
        (&reasoning, Some(Medium)),
        (&reasoning, None),
        (&Model::new("openai", "gpt-4o"), Some(High)),
        (&refuses, Some(High)),
    ] {
        complete(&client, model, &ctx(), with_effort(effort)).await;
    }
    let r = server.requests();
    assert_eq!(r[0].body["reasoning_effort"], "medium");
    for (i, request) in r.iter().enumerate().skip(1) {
        let body = &request.body;
        assert!(body.get("reasoning_effort").is_none(), "{i}: {body}");
    }
}

/// Prompt caching on Anthropic: the system prompt and the last user block
/// carry `cache_control` by default; `none` sends none; a one-hour
/// lifetime is asked only of Anthropic's own endpoint.
#[test]
fn anthropic_marks_the_system_prompt_and_the_last_user_block_for_the_cache() {
    use agent_ai::CacheRetention;
    let context = Context {
        system_prompt: Some("be brief".into()),
        messages: vec![
            Message::user("first"),
            Message::Assistant({
                let mut a = AssistantMessage::empty("anthropic", "claude-test");
                a.content = vec![ContentBlock::text("answer")];
                a
            }),
            Message::user("second"),
        ],
        tools: vec![],
    };
    let model = Model::new("anthropic", "claude-test");
    let body = |base: &str, cache_retention| {
        AnthropicClient::new(base, None).request_body(
            &model,
            &context,
            &StreamOptions {
                cache_retention,
                ..StreamOptions::default()
            },
        )
    };
    let short = body("http://127.0.0.1:9", CacheRetention::Short);
    assert_eq!(
        short["system"],
        json!([{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}])
    );
    let messages = short["messages"].as_array().unwrap();
    assert_eq!(
        messages[2]["content"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert!(messages[0]["content"][0].get("cache_control").is_none());
    let none = body("http://127.0.0.1:9", CacheRetention::None);
    assert_eq!(none["system"], "be brief");
    assert!(!none.to_string().contains("cache_control"));
    let long_proxy = body("http://127.0.0.1:9", CacheRetention::Long);
    assert!(!long_proxy.to_string().contains("\"ttl\""));
    let long = body("https://api.anthropic.com", CacheRetention::Long);
    assert_eq!(long["system"][0]["cache_control"]["ttl"], "1h");
}
