//! The wire shape of every response, pinned as the exact line written
//! (field names and order are Pi's; clients match on them).

use super::*;

fn line(id: Option<Value>, command: &str, data: RpcData) -> String {
    serde_json::to_string(&RpcResponse::success(id, command, Some(data))).unwrap()
}

/// `{"id":7,"type":"response","command":COMMAND,"success":true,"data":DATA}`.
fn expected(command: &str, data: &str) -> String {
    format!(r#"{{"id":7,"type":"response","command":"{command}","success":true,"data":{data}}}"#)
}

fn model() -> Model {
    Model::new("scripted", "m1")
}

fn model_json() -> String {
    serde_json::to_string(&model()).unwrap()
}

#[test]
fn success_without_data_and_failure() {
    let ok = RpcResponse::success(Some("a".into()), "prompt", None);
    assert_eq!(
        serde_json::to_string(&ok).unwrap(),
        r#"{"id":"a","type":"response","command":"prompt","success":true}"#
    );
    let no_id = RpcResponse::success(None, "abort", None);
    assert_eq!(
        serde_json::to_string(&no_id).unwrap(),
        r#"{"type":"response","command":"abort","success":true}"#
    );
    let failed = RpcResponse::from_result(Some(7.into()), "fork", Err("no entry x".into()));
    assert_eq!(
        serde_json::to_string(&failed).unwrap(),
        r#"{"id":7,"type":"response","command":"fork","success":false,"error":"no entry x"}"#
    );
    let parse = RpcResponse::failure(None, "parse", "Failed to parse command: no \"type\"");
    assert_eq!(
        serde_json::to_string(&parse).unwrap(),
        r#"{"type":"response","command":"parse","success":false,"error":"Failed to parse command: no \"type\""}"#
    );
}

#[test]
fn state() {
    let mut state = RpcSessionState {
        model: model(),
        thinking_level: ThinkingLevel::Medium,
        is_streaming: false,
        is_compacting: false,
        steering_mode: QueueMode::OneAtATime,
        follow_up_mode: QueueMode::All,
        session_file: None,
        session_id: Some("s1".into()),
        auto_compaction_enabled: true,
        message_count: 2,
        pending_message_count: 0,
        session_name: None,
    };
    let fields = format!(
        r#"{{"model":{},"thinkingLevel":"medium","isStreaming":false,"isCompacting":false,"steeringMode":"one-at-a-time","followUpMode":"all","sessionFile":null,"sessionId":"s1","autoCompactionEnabled":true,"messageCount":2,"pendingMessageCount":0"#,
        model_json()
    );
    assert_eq!(
        line(
            Some(7.into()),
            "get_state",
            RpcData::State(Box::new(state.clone()))
        ),
        expected("get_state", &format!("{fields}}}"))
    );
    state.session_name = Some("named".into());
    assert_eq!(
        line(Some(7.into()), "get_state", RpcData::State(Box::new(state))),
        expected("get_state", &format!(r#"{fields},"sessionName":"named"}}"#))
    );
}

#[test]
fn messages_and_models() {
    let message = Message::user("hi");
    assert_eq!(
        line(
            Some(7.into()),
            "get_messages",
            RpcData::Messages {
                messages: vec![message.clone()]
            }
        ),
        expected(
            "get_messages",
            &format!(
                r#"{{"messages":[{}]}}"#,
                serde_json::to_string(&message).unwrap()
            )
        )
    );
    assert_eq!(
        line(
            Some(7.into()),
            "set_model",
            RpcData::Model(Box::new(model()))
        ),
        expected("set_model", &model_json())
    );
    assert_eq!(
        line(
            Some(7.into()),
            "get_available_models",
            RpcData::Models {
                models: vec![model()]
            }
        ),
        expected(
            "get_available_models",
            &format!(r#"{{"models":[{}]}}"#, model_json())
        )
    );
    assert_eq!(
        line(
            Some(7.into()),
            "cycle_model",
            RpcData::CycledModel {
                model: Box::new(model()),
                thinking_level: ThinkingLevel::Off,
                is_scoped: false,
            }
        ),
        expected(
            "cycle_model",
            &format!(
                r#"{{"model":{},"thinkingLevel":"off","isScoped":false}}"#,
                model_json()
            )
        )
    );
}

#[test]
fn thinking_levels() {
    assert_eq!(
        line(
            Some(7.into()),
            "set_thinking_level",
            RpcData::ThinkingLevelSet {
                level: ThinkingLevel::High,
                requested: ThinkingLevel::Xhigh,
                clamped: true,
            }
        ),
        expected(
            "set_thinking_level",
            r#"{"level":"high","requested":"xhigh","clamped":true}"#
        )
    );
    assert_eq!(
        line(
            Some(7.into()),
            "cycle_thinking_level",
            RpcData::ThinkingLevel {
                level: ThinkingLevel::Low
            }
        ),
        expected("cycle_thinking_level", r#"{"level":"low"}"#)
    );
}

#[test]
fn compaction_and_bash() {
    let summary = serde_json::json!({"summary": "s", "firstKeptEntryId": "e1", "tokensBefore": 10, "details": null});
    assert_eq!(
        line(Some(7.into()), "compact", RpcData::Compaction(summary)),
        expected(
            "compact",
            r#"{"summary":"s","firstKeptEntryId":"e1","tokensBefore":10,"details":null}"#
        )
    );
    let mut ran = RpcBashResult {
        output: "x\n".into(),
        exit_code: Some(0),
        cancelled: false,
        truncated: false,
        full_output_path: None,
    };
    assert_eq!(
        line(Some(7.into()), "bash", RpcData::Bash(ran.clone())),
        expected(
            "bash",
            r#"{"output":"x\n","exitCode":0,"cancelled":false,"truncated":false}"#
        )
    );
    ran.exit_code = None;
    ran.truncated = true;
    ran.full_output_path = Some("/tmp/out".into());
    assert_eq!(
        line(Some(7.into()), "bash", RpcData::Bash(ran)),
        expected(
            "bash",
            r#"{"output":"x\n","exitCode":null,"cancelled":false,"truncated":true,"fullOutputPath":"/tmp/out"}"#
        )
    );
}

#[test]
fn stats() {
    let stats = RpcSessionStats {
        session_file: Some("/s.jsonl".into()),
        session_id: Some("s1".into()),
        user_messages: 1,
        assistant_messages: 1,
        tool_calls: 2,
        tool_results: 2,
        total_messages: 4,
        tokens: RpcTokens {
            input: 1,
            output: 2,
            cache_read: 3,
            cache_write: 4,
            total: 10,
        },
        cost: 0.5,
        cost_breakdown: Cost::default(),
    };
    assert_eq!(
        line(
            Some(7.into()),
            "get_session_stats",
            RpcData::Stats(Box::new(stats))
        ),
        expected(
            "get_session_stats",
            &format!(
                r#"{{"sessionFile":"/s.jsonl","sessionId":"s1","userMessages":1,"assistantMessages":1,"toolCalls":2,"toolResults":2,"totalMessages":4,"tokens":{{"input":1,"output":2,"cacheRead":3,"cacheWrite":4,"total":10}},"cost":0.5,"costBreakdown":{}}}"#,
                serde_json::to_string(&Cost::default()).unwrap()
            )
        )
    );
}

#[test]
fn sessions_and_forks() {
    assert_eq!(
        line(
            Some(7.into()),
            "switch_session",
            RpcData::Cancelled { cancelled: false }
        ),
        expected("switch_session", r#"{"cancelled":false}"#)
    );
    assert_eq!(
        line(
            Some(7.into()),
            "fork",
            RpcData::Forked {
                text: "again".into(),
                cancelled: false
            }
        ),
        expected("fork", r#"{"text":"again","cancelled":false}"#)
    );
    assert_eq!(
        line(
            Some(7.into()),
            "get_fork_messages",
            RpcData::ForkMessages {
                messages: vec![RpcForkMessage {
                    entry_id: "e1".into(),
                    text: "hi".into()
                }]
            }
        ),
        expected(
            "get_fork_messages",
            r#"{"messages":[{"entryId":"e1","text":"hi"}]}"#
        )
    );
    assert_eq!(
        line(
            Some(7.into()),
            "get_last_assistant_text",
            RpcData::LastAssistantText {
                text: "done".into()
            }
        ),
        expected("get_last_assistant_text", r#"{"text":"done"}"#)
    );
}

#[test]
fn commands_and_export() {
    let commands = vec![
        RpcCommandInfo {
            name: "model".into(),
            description: "switch".into(),
            source: "builtin".into(),
            file: None,
        },
        RpcCommandInfo {
            name: "review".into(),
            description: "review it".into(),
            source: "prompt".into(),
            file: Some(RpcCommandFile {
                argument_hint: None,
                source_info: RpcSourceInfo {
                    path: "/p/review.md".into(),
                    scope: "project".into(),
                },
            }),
        },
    ];
    assert_eq!(
        line(
            Some(7.into()),
            "get_commands",
            RpcData::Commands { commands }
        ),
        expected(
            "get_commands",
            r#"{"commands":[{"name":"model","description":"switch","source":"builtin"},{"name":"review","description":"review it","source":"prompt","argumentHint":null,"sourceInfo":{"path":"/p/review.md","scope":"project"}}]}"#
        )
    );
    assert_eq!(
        line(
            Some(7.into()),
            "export_html",
            RpcData::ExportPath {
                path: "/tmp/s.html".into()
            }
        ),
        expected("export_html", r#"{"path":"/tmp/s.html"}"#)
    );
}
