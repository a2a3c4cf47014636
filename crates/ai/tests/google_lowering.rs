//! The legacy Gemini lowering (`lower_for("google-generative-ai", ..)`)
//! only widens: on generated argument sets, whatever the original schema
//! accepts, the lowered one accepts too.
//!
//! Method: both schemas are compiled with the `jsonschema` crate. The
//! lowered schema speaks Google's OpenAPI subset, whose one keyword
//! JSON Schema lacks is `nullable`; it is mapped back first
//! (`{..., nullable: true}` becomes `{anyOf: [{...}, {type: "null"}]}`,
//! reading `nullable` as "null is accepted as well", the OpenAPI 3.0
//! meaning). Every other key the lowering emits is JSON Schema with the
//! same meaning. The values are generated from each schema's own shape
//! (its property names, enum and const values, nested objects and
//! arrays, wrong types and nulls mixed in), so a good share of them are
//! accepted by the original and the implication is really exercised.

use agent_ai::providers::lowering::{GOOGLE_SCHEMA_KEYS, lower_for};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Schemas with what the legacy subset refuses: type arrays (schemars'
/// `Option`), `oneOf` of consts (doc-commented enums), `const`, `$ref`
/// into `$defs` (recursive too), `additionalProperties`, `propertyNames`,
/// `uniqueItems`, `$schema`, `allOf`, numeric enums.
fn schemas() -> Vec<Value> {
    vec![
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "limit": {"type": ["integer", "null"], "minimum": 0},
                "mode": {"oneOf": [{"const": "fast", "description": "quick"}, {"const": "slow"}]},
                "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
            },
            "required": ["path"],
            "additionalProperties": false,
        }),
        json!({
            "type": "object",
            "properties": {
                "node": {"$ref": "#/$defs/Node"},
                "kind": {"const": "tree"},
                "level": {"enum": [1, 2, 3]},
                "env": {"type": "object", "additionalProperties": {"type": "string"}, "propertyNames": {"pattern": "^[A-Z]+$"}},
            },
            "$defs": {
                "Node": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "child": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}},
                    "required": ["name"],
                },
            },
        }),
        json!({
            "type": "object",
            "properties": {
                "value": {"type": ["string", "number", "null"], "maxLength": 3},
                "either": {"anyOf": [{"type": "string"}, {"type": "integer", "multipleOf": 2}]},
                "both": {"allOf": [{"type": "object", "properties": {"a": {"type": "boolean"}}, "required": ["a"]}]},
                "nothing": {"type": "null"},
                "choice": {"enum": ["x", null]},
            },
        }),
    ]
}

/// `nullable: true` mapped back to JSON Schema, recursively.
fn to_json_schema(node: &Value) -> Value {
    match node {
        Value::Object(map) => {
            let mut out: Map<String, Value> = map
                .iter()
                .filter(|(k, _)| *k != "nullable")
                .map(|(k, v)| {
                    let v = match k.as_str() {
                        "properties" => Value::Object(
                            v.as_object()
                                .into_iter()
                                .flatten()
                                .map(|(p, s)| (p.clone(), to_json_schema(s)))
                                .collect(),
                        ),
                        "items" => to_json_schema(v),
                        "anyOf" => Value::Array(
                            v.as_array()
                                .into_iter()
                                .flatten()
                                .map(to_json_schema)
                                .collect(),
                        ),
                        _ => v.clone(),
                    };
                    (k.clone(), v)
                })
                .collect();
            if map.get("nullable") == Some(&Value::Bool(true)) {
                let inner = Value::Object(std::mem::take(&mut out));
                out.insert("anyOf".into(), json!([inner, {"type": "null"}]));
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

fn only_subset_keys(node: &Value, at: &str) {
    let Some(map) = node.as_object() else { return };
    for (k, v) in map {
        assert!(
            GOOGLE_SCHEMA_KEYS.contains(&k.as_str()),
            "{at}: {k} is not in the subset"
        );
        match k.as_str() {
            "properties" => {
                for (p, s) in v.as_object().into_iter().flatten() {
                    only_subset_keys(s, &format!("{at}/{p}"));
                }
            }
            "items" => only_subset_keys(v, &format!("{at}/items")),
            "anyOf" => {
                for s in v.as_array().into_iter().flatten() {
                    only_subset_keys(s, &format!("{at}/anyOf"));
                }
            }
            "type" => assert!(v.is_string(), "{at}: type {v} is not one name"),
            "enum" => assert!(
                v.as_array().unwrap().iter().all(Value::is_string),
                "{at}: enum {v}"
            ),
            _ => {}
        }
    }
}

/// Leaves: the schemas' own constants, wrong types and nulls.
fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..5).prop_map(|n| json!(n)),
        Just(json!(2.5)),
        prop::sample::select(vec![
            "fast", "slow", "tree", "x", "y", "abcd", "ab", "PATH", "lower"
        ])
        .prop_map(|s| json!(s)),
    ]
}

/// Values generated from `schema`'s own shape: an object gets a random
/// subset of its properties (each a value for its own schema, sometimes a
/// stray leaf) and sometimes a key it does not name; an array gets values
/// for its items; `$ref`s are followed a few levels deep; anything else is
/// one of the schema's constants or a [`leaf`].
fn value_for(schema: &Value, root: &Value, depth: u32) -> BoxedStrategy<Value> {
    if depth > 4 {
        return leaf().boxed();
    }
    if let Some(target) = schema["$ref"].as_str().and_then(|r| root.pointer(&r[1..])) {
        return value_for(target, root, depth + 1);
    }
    // (weight, strategy): a stray leaf now and then, mostly values of the
    // schema's own types and constants.
    let mut options: Vec<(u32, BoxedStrategy<Value>)> = vec![(1, leaf().boxed())];
    let types: Vec<&str> = match &schema["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    for t in types {
        let typed = match t {
            "string" => prop::sample::select(vec!["fast", "x", "abcd", "ab", "PATH"])
                .prop_map(|s| json!(s))
                .boxed(),
            "integer" => (-2i64..5).prop_map(|n| json!(n)).boxed(),
            "number" => prop_oneof![Just(json!(2.5)), (-2i64..5).prop_map(|n| json!(n))].boxed(),
            "boolean" => any::<bool>().prop_map(Value::Bool).boxed(),
            "null" => Just(Value::Null).boxed(),
            _ => continue,
        };
        options.push((3, typed));
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        for branch in schema[key].as_array().into_iter().flatten() {
            options.push((3, value_for(branch, root, depth + 1)));
        }
    }
    for constant in schema["enum"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(schema.get("const"))
    {
        options.push((3, Just(constant.clone()).boxed()));
    }
    if let Some(props) = schema["properties"].as_object() {
        let fields: Vec<BoxedStrategy<Option<(String, Value)>>> = props
            .iter()
            .map(|(k, s)| {
                let k = k.clone();
                prop::option::weighted(
                    0.8,
                    prop_oneof![4 => value_for(s, root, depth + 1), 1 => leaf()],
                )
                .prop_map(move |v| v.map(|v| (k.clone(), v)))
                .boxed()
            })
            .collect();
        let extra = prop::option::weighted(
            0.1,
            (prop::sample::select(vec!["extra", "HOME", "lower"]), leaf()),
        );
        let object = (fields, extra)
            .prop_map(|(fields, extra)| {
                let mut map: Map<String, Value> = fields.into_iter().flatten().collect();
                if let Some((k, v)) = extra {
                    map.insert(k.to_string(), v);
                }
                Value::Object(map)
            })
            .boxed();
        options.push((6, object));
    }
    if let Some(extra) = schema.get("additionalProperties").filter(|a| a.is_object()) {
        let map = prop::collection::btree_map(
            prop::sample::select(vec!["HOME", "PATH", "lower"]),
            value_for(extra, root, depth + 1),
            0..3,
        )
        .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()));
        options.push((3, map.boxed()));
    }
    if let Some(items) = schema.get("items") {
        let array =
            prop::collection::vec(value_for(items, root, depth + 1), 0..4).prop_map(Value::Array);
        options.push((3, array.boxed()));
    }
    prop::strategy::Union::new_weighted(options).boxed()
}

/// A schema and a value generated for it.
fn case() -> impl Strategy<Value = (usize, Value)> {
    let all = schemas();
    (0..all.len()).prop_flat_map(move |i| {
        let schema = all[i].clone();
        (Just(i), value_for(&schema, &schema, 0))
    })
}

#[test]
fn the_lowered_schemas_hold_only_the_subset() {
    for schema in schemas() {
        let lowered = lower_for("google-generative-ai", &schema);
        only_subset_keys(&lowered, "#");
        jsonschema::validator_for(&to_json_schema(&lowered)).expect("a valid JSON Schema");
    }
}

#[test]
fn each_schema_accepts_some_generated_values() {
    // The property below is only as strong as the share of accepted values.
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    for schema in schemas() {
        let original = jsonschema::validator_for(&schema).unwrap();
        let accepted = (0..2000)
            .filter(|_| {
                let v = value_for(&schema, &schema, 0)
                    .new_tree(&mut runner)
                    .unwrap()
                    .current();
                original.is_valid(&v)
            })
            .count();
        assert!(
            accepted >= 20,
            "only {accepted} of 2000 accepted by {schema}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn nothing_the_original_accepts_is_refused((which, v) in case()) {
        let schema = &schemas()[which];
        let original = jsonschema::validator_for(schema).unwrap();
        let lowered = to_json_schema(&lower_for("google-generative-ai", schema));
        let lowered = jsonschema::validator_for(&lowered).unwrap();
        if original.is_valid(&v) {
            prop_assert!(lowered.is_valid(&v), "{v} accepted by {schema} but refused by {lowered:?}");
        }
    }
}
