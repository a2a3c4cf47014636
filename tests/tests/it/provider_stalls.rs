//! Model servers that stall, answer with the wrong thing, or stream a huge
//! answer in tiny pieces: the providers report a clear error in bounded time
//! and stay linear in the size of the answer.

use std::time::{Duration, Instant};

use agent_ai::providers::RetryPolicy;
use agent_ai::providers::anthropic::AnthropicClient;
use agent_ai::providers::openai::OpenAiClient;
use agent_ai::{Context, Message, Model, ModelClient, StopReason, StreamOptions, complete};
use futures::StreamExt;
use serde_json::json;
use test_support::http_server::{Reply, serve};

fn one_retry() -> RetryPolicy {
    RetryPolicy {
        max_retries: 1,
        initial_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(10),
        ..RetryPolicy::default()
    }
}

fn ctx() -> Context {
    Context {
        system_prompt: None,
        messages: vec![Message::user("hi")],
        tools: vec![],
    }
}

fn chunk(delta: serde_json::Value, finish: Option<&str>) -> String {
    json!({"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":delta,"finish_reason":finish}]}).to_string()
}

#[tokio::test]
async fn a_server_that_goes_silent_after_the_headers_times_out() {
    let server = serve(vec![
        Reply::sse(&[
            &chunk(json!({"content":"partial"}), None),
            &chunk(json!({"content":" never"}), Some("stop")),
        ])
        .delay_each(Duration::from_secs(30)),
    ])
    .await;
    let client = OpenAiClient::new(format!("{}/v1", server.base), None)
        .with_retry(one_retry())
        .with_idle_timeout(Some(Duration::from_millis(300)));
    let started = Instant::now();
    let msg = complete(
        &client,
        &Model::new("openai", "m"),
        &ctx(),
        StreamOptions::default(),
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(5)); // hang guard
    assert_eq!(msg.stop_reason, StopReason::Error);
    let err = msg.error_message.unwrap();
    assert!(err.contains("idle timeout"), "{err}");
    assert!(err.contains("retried"), "{err}");
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_after_retries() {
    // Accepts connections and reads, but never writes a byte.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            held.push(socket);
        }
    });
    let client = AnthropicClient::new(format!("http://{addr}"), Some("k".into()))
        .with_retry(one_retry())
        .with_idle_timeout(Some(Duration::from_millis(200)));
    let started = Instant::now();
    let msg = complete(
        &client,
        &Model::new("anthropic", "m"),
        &ctx(),
        StreamOptions::default(),
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(5)); // hang guard
    assert_eq!(msg.stop_reason, StopReason::Error);
    let err = msg.error_message.unwrap();
    assert!(err.contains("idle timeout"), "{err}");
    assert_eq!(
        accepted.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "one retry"
    );
}

#[tokio::test]
async fn an_html_page_is_reported_as_what_it_is() {
    let server = serve(vec![Reply {
        status: 200,
        headers: vec![("content-type".into(), "text/html; charset=utf-8".into())],
        chunks: vec![(
            Duration::ZERO,
            b"<html><body>Please sign in to the proxy</body></html>".to_vec(),
        )],
    }])
    .await;
    let client = OpenAiClient::new(format!("{}/v1", server.base), None);
    let msg = complete(
        &client,
        &Model::new("openai", "m"),
        &ctx(),
        StreamOptions::default(),
    )
    .await;
    assert_eq!(msg.stop_reason, StopReason::Error);
    let err = msg.error_message.unwrap();
    assert!(err.contains("text/html"), "{err}");
    assert!(err.contains("Please sign in"), "{err}");
    assert!(!err.contains("Connection lost"), "{err}");
}

#[tokio::test]
async fn a_long_answer_in_tiny_deltas_arrives_whole_and_in_few_snapshots() {
    // 256 KiB in 4-byte deltas: 65,536 SSE events in a handful of TCP writes.
    let piece = "abcd";
    let n = 64 * 1024;
    let mut body = String::new();
    for _ in 0..n {
        body.push_str(&format!(
            "data: {}\n\n",
            chunk(json!({"content": piece}), None)
        ));
    }
    body.push_str(&format!(
        "data: {}\n\ndata: [DONE]\n\n",
        chunk(json!({}), Some("stop"))
    ));
    let server = serve(vec![Reply {
        status: 200,
        headers: vec![("content-type".into(), "text/event-stream".into())],
        chunks: body
            .into_bytes()
            .chunks(1 << 20)
            .map(|c| (Duration::ZERO, c.to_vec()))
            .collect(),
    }])
    .await;
    let client = OpenAiClient::new(format!("{}/v1", server.base), None);
    let mut stream = client.stream(&Model::new("openai", "m"), &ctx(), StreamOptions::default());
    let mut deltas = 0usize;
    let mut text = String::new();
    let mut last = None;
    while let Some(event) = stream.next().await {
        if let agent_ai::AssistantMessageEvent::TextDelta { delta, partial, .. } = &event {
            deltas += 1;
            text.push_str(delta);
            // Every snapshot is the text so far.
            assert_eq!(partial.text().len(), text.len());
        }
        last = Some(event);
    }
    let last = last.unwrap();
    assert!(last.is_final());
    assert_eq!(last.message().stop_reason, StopReason::Stop);
    assert_eq!(text.len(), 4 * n);
    assert_eq!(last.message().text(), text);
    // Deltas that arrive together are merged into one event.
    assert!(deltas < n, "{deltas} events for {n} deltas");
}
