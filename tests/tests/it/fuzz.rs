//! Property-based fuzzing on stable Rust: argument coercion and validation,
//! the SSE parser, the edit engine. No panics; invariants hold.

use agent_ai::providers::sse::SseParser;
use agent_ai::{Tool, coerce_to_schema, validate_tool_arguments};
use proptest::prelude::*;
use serde_json::{Value, json};

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| serde_json::Number::from_f64(f)
            .map(Value::Number)
            .unwrap_or(Value::Null)),
        "\\PC{0,12}".prop_map(Value::String),
        "-?[0-9]{1,5}(\\.[0-9]{1,3})?".prop_map(Value::String),
        prop_oneof![Just("true"), Just("false")].prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(3, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,6}", inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "offset": {"type": "integer", "minimum": 0},
            "ratio": {"type": "number"},
            "flag": {"type": "boolean"},
            "mode": {"type": "string", "enum": ["a", "b"]},
            "maybe": {"anyOf": [{"type": "number"}, {"type": "null"}]},
            "edits": {"type": "array", "items": {"type": "object", "properties": {"oldText": {"type": "string"}}, "required": ["oldText"]}},
            "map": {"type": "object", "additionalProperties": {"type": "integer"}}
        },
        "required": ["path"]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn validation_never_panics_and_accepted_values_validate(args in json_value()) {
        let tool = Tool::new("fuzz", "", schema());
        match validate_tool_arguments(&tool, &args) {
            Ok(coerced) => {
                // Coercion is idempotent on accepted values.
                prop_assert_eq!(coerce_to_schema(&schema(), coerced.clone()), coerced.clone());
                prop_assert!(coerced.is_object());
            }
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(msg.starts_with("Validation failed for tool \"fuzz\":\n"));
                prop_assert!(msg.contains("\n\nReceived arguments:\n"));
            }
        }
    }

    #[test]
    fn sse_parsing_is_independent_of_chunking(
        events in prop::collection::vec(("[a-z_]{0,8}", "[^\r\n]{0,30}"), 0..10),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
        garbage in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let mut body = String::new();
        for (event, data) in &events {
            if !event.is_empty() {
                body.push_str(&format!("event: {event}\n"));
            }
            body.push_str(&format!("data: {data}\r\n\n"));
        }
        let bytes = body.as_bytes();
        let mut whole = SseParser::default();
        let mut expected = whole.push(bytes);
        expected.extend(whole.finish());
        let mut points: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
        points.sort_unstable();
        let mut chunked = SseParser::default();
        let mut got = Vec::new();
        let mut last = 0;
        for p in points {
            got.extend(chunked.push(&bytes[last..p]));
            last = p;
        }
        got.extend(chunked.push(&bytes[last..]));
        got.extend(chunked.finish());
        prop_assert_eq!(&got, &expected);
        prop_assert_eq!(expected.len(), events.len());
        // Arbitrary bytes never panic.
        let mut p = SseParser::default();
        let _ = p.push(&garbage);
        let _ = p.finish();
    }

    #[test]
    fn edit_engine_never_panics(
        content in "(\\PC|\n|\r\n){0,200}",
        old in "(\\PC|\n){0,20}",
        new in "(\\PC|\n){0,20}",
    ) {
        use tools_builtin::edit_core::{Edit, apply_edits};
        let edits = [Edit { old_text: old.clone(), new_text: new }];
        if let Ok(applied) = apply_edits(&content, &edits, "f") {
            prop_assert_ne!(applied.content, content);
        }
    }
}
