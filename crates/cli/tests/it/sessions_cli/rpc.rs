//! Pi's RPC mode driven by a client: a conversation, permission questions, abort, back-pressure, models, export.

use super::*;

#[test]
fn an_rpc_client_drives_a_whole_conversation() {
    let d = dirs(json!({"compaction": {"keepRecentTokens": 10}}));
    let s = script(
        &d,
        "s.jsonl",
        &[
            json!({"content": [{"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "sleep 1; echo slow"}}]}),
            json!({"content": [{"type": "text", "text": "steered"}]}),
            json!({"content": [{"type": "toolCall", "id": "c2", "name": "bash", "arguments": {"command": "sleep 30"}}]}),
            // Summary for compact.
            json!({"content": [{"type": "text", "text": "## Goal\nTalk."}]}),
        ],
    );
    let mut rpc = Rpc::start(&d, &s);
    rpc.send(r#"{"id":1,"type":"get_state"}"#);
    let state = rpc.response(1);
    assert_eq!(state["data"]["isStreaming"], false);
    assert!(
        state["data"]["sessionFile"]
            .as_str()
            .unwrap()
            .ends_with(".jsonl")
    );

    rpc.send(r#"{"id":2,"type":"prompt","message":"first"}"#);
    assert_eq!(rpc.response(2)["success"], true);
    rpc.wait("tool start", |v| {
        v["type"] == "tool_execution_start" && v["toolCallId"] == "c1"
    });
    // Mid-run: a plain prompt is refused, a steer is queued.
    rpc.send(r#"{"id":3,"type":"prompt","message":"plain"}"#);
    assert_eq!(rpc.response(3)["success"], false);
    rpc.send(
        r#"{"id":4,"type":"prompt","message":"go the other way","streamingBehavior":"steer"}"#,
    );
    assert_eq!(rpc.response(4)["success"], true);
    rpc.wait("end of run", |v| v["type"] == "agent_end");
    rpc.send(r#"{"id":5,"type":"get_last_assistant_text"}"#);
    assert_eq!(rpc.response(5)["data"]["text"], "steered");
    let steer_seen = rpc.seen.iter().any(|v| {
        v["type"] == "message_end" && v["message"]["content"][0]["text"] == "go the other way"
    });
    assert!(steer_seen, "the steering message was delivered");

    // A long tool, aborted.
    rpc.send(r#"{"id":6,"type":"prompt","message":"second"}"#);
    rpc.wait("second tool", |v| {
        v["type"] == "tool_execution_start" && v["toolCallId"] == "c2"
    });
    rpc.send(r#"{"id":7,"type":"abort"}"#);
    assert_eq!(rpc.response(7)["success"], true);
    let end = rpc.wait("aborted tool", |v| {
        v["type"] == "tool_execution_end" && v["toolCallId"] == "c2"
    });
    assert_eq!(end["isError"], true);
    rpc.wait("second run end", |v| {
        v["type"] == "agent_end" && v["messages"].as_array().is_some_and(|m| m.len() > 2)
    });

    rpc.send(r#"{"id":8,"type":"compact"}"#);
    let compacted = rpc.response(8);
    assert_eq!(compacted["success"], true, "{compacted}");
    assert!(
        compacted["data"]["summary"]
            .as_str()
            .unwrap()
            .contains("Talk.")
    );
    rpc.send(r#"{"id":9,"type":"get_state"}"#);
    let state = rpc.response(9);
    assert_eq!(state["data"]["isStreaming"], false);
    assert!(state["data"]["messageCount"].as_u64().unwrap() >= 1);

    // Closing stdin ends the process cleanly.
    drop(rpc.stdin.take());
    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(status) = rpc.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "still running after stdin closed"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success());
}

#[test]
fn rpc_asks_the_client_for_permission() {
    let d = dirs(json!({"permissions": {"ask": ["Bash(touch:*)"]}}));
    let s = script(
        &d,
        "s.jsonl",
        &[
            json!({"content": [{"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "touch allowed"}}]}),
            json!({"content": [{"type": "toolCall", "id": "c2", "name": "bash", "arguments": {"command": "touch denied"}}]}),
            json!({"content": [{"type": "text", "text": "done"}]}),
        ],
    );
    let mut rpc = Rpc::start(&d, &s);
    rpc.send(r#"{"id":1,"type":"prompt","message":"make files"}"#);
    let ask = rpc.wait("first question", |v| v["type"] == "extension_ui_request");
    assert!(
        ask["title"].as_str().unwrap().contains("touch allowed"),
        "{ask}"
    );
    rpc.send(
        &json!({"type": "extension_ui_response", "id": ask["id"], "value": "Allow"}).to_string(),
    );
    let ask2 = rpc.wait("second question", |v| {
        v["type"] == "extension_ui_request" && v["id"] != ask["id"]
    });
    rpc.send(
        &json!({"type": "extension_ui_response", "id": ask2["id"], "value": "Deny"}).to_string(),
    );
    let end = rpc.wait("the refusal", |v| {
        v["type"] == "tool_execution_end" && v["toolCallId"] == "c2"
    });
    assert!(
        end["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("refused by the user"),
        "{end}"
    );
    rpc.wait("end of run", |v| v["type"] == "agent_end");
    assert!(d.ws.join("allowed").exists());
    assert!(!d.ws.join("denied").exists());
    drop(rpc.stdin.take());
    assert!(rpc.child.wait().unwrap().success());
}

#[test]
fn rpc_abort_answers_when_idle_and_answers_every_call() {
    // Two calls; the first waits on a permission question when the client
    // aborts. Every call must still get a result, and a prompt sent right
    // after the abort's answer must be accepted.
    let d = dirs(json!({"permissions": {"ask": ["Bash(touch:*)"]}}));
    let s = script(
        &d,
        "s.jsonl",
        &[
            json!({"content": [
                {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "touch one"}},
                {"type": "toolCall", "id": "c2", "name": "bash", "arguments": {"command": "touch two"}}]}),
            json!({"content": [{"type": "text", "text": "after the abort"}]}),
        ],
    );
    let log = d.root.join("log.jsonl");
    let mut rpc = Rpc::start_with(&d, &s, &["--script-log".as_ref(), log.as_os_str()]);
    rpc.send(r#"{"id":1,"type":"prompt","message":"make files"}"#);
    assert_eq!(rpc.response(1)["success"], true);
    rpc.wait("the question", |v| v["type"] == "extension_ui_request");
    rpc.send(r#"{"id":2,"type":"abort"}"#);
    assert_eq!(rpc.response(2)["success"], true);
    // Idle when answered: the run's end came first, and a prompt is taken.
    let end_at = rpc
        .seen
        .iter()
        .position(|v| v["type"] == "agent_end")
        .expect("agent_end before the abort's answer");
    let answer_at = rpc
        .seen
        .iter()
        .position(|v| v["type"] == "response" && v["id"] == 2)
        .unwrap();
    assert!(end_at < answer_at);
    rpc.send(r#"{"id":3,"type":"prompt","message":"again"}"#);
    let accepted = rpc.response(3);
    assert_eq!(accepted["success"], true, "{accepted}");
    rpc.wait("the second run's end", |v| {
        v["type"] == "agent_end" && v["messages"][1]["content"][0]["text"] == "after the abort"
    });
    for id in ["c1", "c2"] {
        let started = rpc
            .seen
            .iter()
            .any(|v| v["type"] == "tool_execution_start" && v["toolCallId"] == id);
        assert!(started, "no start for {id}");
        let end = rpc.wait(id, |v| {
            v["type"] == "tool_execution_end" && v["toolCallId"] == id
        });
        assert_eq!(end["isError"], true);
        assert_eq!(
            end["result"]["content"][0]["text"], "Operation aborted",
            "{end}"
        );
    }
    assert!(!d.ws.join("one").exists() && !d.ws.join("two").exists());
    let sent = requests(&log);
    let last = sent.last().expect("the second request");
    assert_valid_for_providers(last);
    assert_eq!(
        last.iter().filter(|m| m["role"] == "toolResult").count(),
        2,
        "{last:?}"
    );
    drop(rpc.stdin.take());
    assert!(rpc.child.wait().unwrap().success());
}

#[test]
fn rpc_output_stays_bounded_when_the_client_stops_reading() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    const REQUESTS: usize = 1000;
    let d = dirs(json!({}));
    // A conversation of about 300 KB: each get_messages answer carries it.
    let session = d.root.join("big.jsonl");
    let big = "x".repeat(300 * 1024);
    hand_session(&session, "big", &d.ws, &[hand_user("a0000001", None, &big)]);
    let s = script(&d, "s.jsonl", &[]);
    let mut child = agent(&d)
        .args(["--mode", "rpc", "--script"])
        .arg(&s)
        .arg("--session")
        .arg(&session)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    // The client writes its commands (padded, so they do not all fit in the
    // pipe) and reads nothing until the agent stops taking them or all are
    // sent.
    let sent = Arc::new(AtomicUsize::new(0));
    let counter = sent.clone();
    let writer = std::thread::spawn(move || {
        let pad = "p".repeat(4096);
        for i in 0..REQUESTS {
            let line = format!("{{\"id\":{i},\"type\":\"get_messages\",\"pad\":\"{pad}\"}}\n");
            if stdin.write_all(line.as_bytes()).is_err() {
                break;
            }
            counter.fetch_add(1, Ordering::SeqCst);
        }
        stdin
    });
    let mut last = (0, Instant::now());
    let give_up = Instant::now() + Duration::from_secs(120);
    while !writer.is_finished() && Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(100));
        let now = sent.load(Ordering::SeqCst);
        if now != last.0 {
            last = (now, Instant::now());
        } else if last.1.elapsed() > Duration::from_secs(2) {
            break; // the agent stopped reading: back-pressure reached the client
        }
    }
    // Now read everything; every command gets its answer.
    let reader = std::thread::spawn(move || {
        let mut answers = 0;
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.starts_with("{\"id\":") || line.contains("\"type\":\"response\"") {
                answers += 1;
            }
            if answers == REQUESTS {
                break;
            }
        }
        answers
    });
    let stdin = writer.join().unwrap();
    assert_eq!(reader.join().unwrap(), REQUESTS);
    let peak_mib = peak_rss_kib(pid) / 1024;
    eprintln!("peak resident set of the agent: {peak_mib} MiB");
    drop(stdin);
    assert!(child.wait().unwrap().success());
    assert!(
        peak_mib < 200,
        "the agent's peak resident set grew to {peak_mib} MiB"
    );
}

/// RPC `set_model` crosses providers and APIs through the registry: a
/// `models.json` with a Chat Completions provider and an Anthropic one,
/// each a fake on loopback. The conversation goes on at the other model
/// (with the first model's answer fitted to it), `get_available_models`
/// lists both, `cycle_model` goes back, and the switches are recorded.
#[test]
fn rpc_switches_models_across_providers_and_apis() {
    use test_support::anthropic::AnthropicScript;
    use test_support::chat_completions::ChatScript;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (alpha, beta) = rt.block_on(async {
        (
            test_support::http_server::serve(vec![
                ChatScript::new().content("from alpha").finish("stop"),
                ChatScript::new().content("alpha again").finish("stop"),
            ])
            .await,
            test_support::http_server::serve(vec![
                AnthropicScript::new().text("from beta").stop("end_turn"),
            ])
            .await,
        )
    });
    let d = dirs(json!({}));
    std::fs::write(
        d.agent.join("models.json"),
        json!({"providers": {
            "alpha": {"baseUrl": format!("{}/v1", alpha.base), "api": "openai-completions",
                      "apiKey": "alpha-key", "models": [{"id": "a1"}]},
            "beta": {"baseUrl": beta.base, "api": "anthropic-messages",
                     "apiKey": "beta-key", "models": [{"id": "b1", "contextWindow": 1000000}]}
        }})
        .to_string(),
    )
    .unwrap();
    let mut rpc = Rpc::spawn(&d, &["--model".as_ref(), "alpha/a1".as_ref()]);
    rpc.send(r#"{"id":1,"type":"prompt","message":"one"}"#);
    rpc.wait("alpha's answer", |v| {
        v["type"] == "agent_end" && v.to_string().contains("from alpha")
    });
    rpc.send(r#"{"id":2,"type":"get_available_models"}"#);
    let listed: Vec<String> = rpc.response(2)["data"]["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            format!(
                "{}/{}",
                m["provider"].as_str().unwrap(),
                m["id"].as_str().unwrap()
            )
        })
        .collect();
    assert!(
        listed.contains(&"alpha/a1".to_string()) && listed.contains(&"beta/b1".to_string()),
        "{listed:?}"
    );
    rpc.send(r#"{"id":3,"type":"set_model","provider":"beta","modelId":"b1"}"#);
    let set = rpc.response(3);
    assert_eq!(set["success"], true, "{set}");
    assert_eq!(set["data"]["api"], "anthropic-messages");
    assert_eq!(set["data"]["contextWindow"], 1_000_000);
    rpc.send(r#"{"id":4,"type":"prompt","message":"two"}"#);
    rpc.wait("beta's answer", |v| {
        v["type"] == "agent_end" && v.to_string().contains("from beta")
    });
    let to_beta = &beta.requests()[0];
    assert_eq!(to_beta.path, "/v1/messages");
    assert!(
        to_beta
            .headers
            .iter()
            .any(|(k, v)| k == "x-api-key" && v == "beta-key")
    );
    test_support::anthropic::check_request(&to_beta.body, &[]).unwrap();
    assert!(to_beta.body.to_string().contains("from alpha"));
    rpc.send(r#"{"id":5,"type":"cycle_model"}"#);
    let cycled = rpc.response(5);
    assert_eq!(cycled["data"]["model"]["provider"], "alpha", "{cycled}");
    rpc.send(r#"{"id":6,"type":"prompt","message":"three"}"#);
    rpc.wait("alpha's second answer", |v| {
        v["type"] == "agent_end" && v.to_string().contains("alpha again")
    });
    assert_eq!(alpha.requests().len(), 2);
    rpc.send(r#"{"id":7,"type":"set_model","provider":"gamma","modelId":"x"}"#);
    let unknown = rpc.response(7);
    assert_eq!(unknown["success"], false);
    assert!(
        unknown["error"].as_str().unwrap().contains("gamma"),
        "{unknown}"
    );
    drop(rpc);
    let files = session_files(&d);
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let changes: Vec<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "model_change")
        .map(|e| {
            format!(
                "{}/{}",
                e["provider"].as_str().unwrap(),
                e["modelId"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(changes, ["beta/b1", "alpha/a1"]);
}

#[test]
fn rpc_export_html_and_clone() {
    let d = dirs(json!({}));
    let s = script(
        &d,
        "s.jsonl",
        &[json!({"content": [{"type": "text", "text": "an <b>answer</b>"}]})],
    );
    let mut rpc = Rpc::start(&d, &s);
    rpc.send(r#"{"id":1,"type":"prompt","message":"question"}"#);
    rpc.wait("the run's end", |v| v["type"] == "agent_end");
    let page = d.root.join("page.html");
    rpc.send(&json!({"id": 2, "type": "export_html", "outputPath": page}).to_string());
    let answer = rpc.response(2);
    assert_eq!(answer["success"], true, "{answer}");
    assert_eq!(answer["data"]["path"], json!(page));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("an &lt;b&gt;answer&lt;/b&gt;")
            || html.contains("an <span class=\"raw-html\">"),
        "escaped"
    );
    assert!(html.contains("Content-Security-Policy"));

    rpc.send(r#"{"id":3,"type":"get_state"}"#);
    let before = rpc.response(3)["data"]["sessionFile"].clone();
    rpc.send(r#"{"id":4,"type":"clone"}"#);
    assert_eq!(rpc.response(4)["data"], json!({"cancelled": false}));
    rpc.send(r#"{"id":5,"type":"get_state"}"#);
    let state = rpc.response(5);
    assert_ne!(state["data"]["sessionFile"], before, "{state}");
    assert_eq!(state["data"]["messageCount"], 2, "{state}");
    assert_eq!(session_files(&d).len(), 2);
}
