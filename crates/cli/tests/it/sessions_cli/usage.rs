//! Token usage and cost over a session, with models.json prices.

use super::*;

/// 20 scripted turns priced as anthropic/claude-sonnet-4-5 ($3 in, $15 out,
/// $0.30 cache read, $3.75 cache write per million tokens): turn i uses
/// 1000·i input, 100·i output, 10 000 cache-read and 500 cache-write
/// tokens. By hand: 210 000 input = $0.63, 21 000 output = $0.315,
/// 200 000 cache read = $0.06, 10 000 cache write = $0.0375; $1.0425 in all.
#[test]
fn a_twenty_turn_session_costs_what_the_prices_say_and_thinking_is_driven_over_rpc() {
    let d = dirs(json!({"defaultThinkingLevel": "low"}));
    let turns: Vec<Value> = (1..=20u64)
        .map(|i| {
            json!({"content": [{"type": "text", "text": format!("turn {i}")}],
                   "usage": {"input": 1000 * i, "output": 100 * i, "cacheRead": 10000, "cacheWrite": 500}})
        })
        .collect();
    let s = script(&d, "twenty.jsonl", &turns);
    let model: &std::ffi::OsStr = "anthropic/claude-sonnet-4-5".as_ref();
    let mut rpc = Rpc::start_with(&d, &s, &["--model".as_ref(), model]);
    rpc.send(r#"{"id":1,"type":"get_state"}"#);
    let state = rpc.response(1);
    assert_eq!(state["data"]["thinkingLevel"], "low", "{state}");
    assert_eq!(state["data"]["model"]["contextWindow"], 200_000);
    for i in 1..=20u64 {
        rpc.send(&format!(
            r#"{{"id":{},"type":"prompt","message":"go {i}"}}"#,
            100 + i
        ));
        let text = format!("turn {i}");
        rpc.wait(&text, |v| {
            v["type"] == "agent_end" && v.to_string().contains(&text)
        });
    }
    rpc.send(r#"{"id":2,"type":"get_session_stats"}"#);
    let stats = rpc.response(2)["data"].clone();
    assert_eq!(stats["tokens"]["input"], 210_000, "{stats}");
    assert_eq!(stats["tokens"]["output"], 21_000);
    let cost = stats["cost"].as_f64().unwrap();
    assert!((cost - 1.0425).abs() < 1e-9, "{cost}");
    let parts = &stats["costBreakdown"];
    assert!(
        (parts["cacheWrite"].as_f64().unwrap() - 0.0375).abs() < 1e-9,
        "{parts}"
    );

    // xhigh is beyond Sonnet 4.5: clamped to high, and get_state says so.
    rpc.send(r#"{"id":3,"type":"set_thinking_level","level":"xhigh"}"#);
    let set = rpc.response(3);
    assert_eq!(
        set["data"],
        json!({"level": "high", "requested": "xhigh", "clamped": true})
    );
    rpc.send(r#"{"id":4,"type":"get_state"}"#);
    assert_eq!(rpc.response(4)["data"]["thinkingLevel"], "high");
    // After the highest level comes off, then minimal.
    rpc.send(r#"{"id":5,"type":"cycle_thinking_level"}"#);
    assert_eq!(rpc.response(5)["data"]["level"], "off");
    rpc.send(r#"{"id":6,"type":"cycle_thinking_level"}"#);
    assert_eq!(rpc.response(6)["data"]["level"], "minimal");
    rpc.send(r#"{"id":7,"type":"get_state"}"#);
    assert_eq!(rpc.response(7)["data"]["thinkingLevel"], "minimal");
    rpc.send(r#"{"id":8,"type":"set_thinking_level","level":"loud"}"#);
    assert_eq!(rpc.response(8)["success"], false);
}

#[test]
fn json_mode_ends_with_the_session_usage_and_models_json_prices_apply() {
    let d = dirs(json!({}));
    std::fs::write(
        d.agent.join("models.json"),
        json!({"providers": {"local": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions",
            "models": [{"id": "tiny", "cost": {"input": 1, "output": 2}}]}}})
        .to_string(),
    )
    .unwrap();
    let s = script(
        &d,
        "one.jsonl",
        &[
            json!({"content": [{"type": "text", "text": "ok"}], "usage": {"input": 500000, "output": 250000}}),
        ],
    );
    let out = agent(&d)
        .args([
            "--mode",
            "json",
            "--no-session",
            "--model",
            "local/tiny",
            "--script",
        ])
        .arg(&s)
        .arg("hi")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "session_usage", "{last}");
    assert_eq!(last["usage"]["cost"]["total"], 1.0, "{last}");

    // A wrong value in models.json names the file and the key.
    std::fs::write(
        d.agent.join("models.json"),
        r#"{"providers": {"local": {"api": "openai-completions"}}}"#,
    )
    .unwrap();
    let out = agent(&d)
        .args(["--model", "local/tiny", "--script"])
        .arg(&s)
        .arg("hi")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("models.json") && err.contains("providers.local.baseUrl"),
        "{err}"
    );
}
