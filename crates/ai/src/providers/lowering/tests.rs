//! The lowering's cases: tool names, what strict mode cannot express,
//! when a tool is sent strict, and undoing strict mode's nullables.

use super::*;
use serde_json::json;

fn tool() -> Tool {
    Tool::new(
        "read",
        "Read a file",
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "ReadParams",
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path"},
                "limit": {"type": "integer", "format": "uint32", "minimum": 0}
            },
            "required": ["path"]
        }),
    )
}

#[test]
fn names_are_checked() {
    assert!(check_tool_name("read_file-2").is_ok());
    assert_eq!(
        check_tool_name("bad name").unwrap_err().to_string(),
        "Tool name \"bad name\" is not accepted by the provider: use 1 to 64 characters from a-z, A-Z, 0-9, '_' and '-'"
    );
    assert!(check_tool_name(&"x".repeat(65)).is_err());
    assert!(check_tool_name("").is_err());
}

use crate::tool::ConstrainedSampling;

#[test]
fn schemas_strict_mode_cannot_express_are_named() {
    let cases = [
        (
            json!({"type": "string"}),
            Some("the schema's root is not an object"),
        ),
        (
            json!({"type": "object"}),
            Some("the root takes properties of its own choosing"),
        ),
        (json!({"type": "object", "properties": {}}), None),
        (
            json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "object"}}}}),
            Some("/properties/a/items takes properties of its own choosing"),
        ),
        (
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}}),
            Some("/properties/a uses $ref"),
        ),
        (
            json!({"type": "object", "patternProperties": {"^x": {}}, "additionalProperties": false}),
            Some("the root uses patternProperties"),
        ),
        (
            json!({"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "object", "additionalProperties": true}]}}}),
            Some("/properties/a/anyOf/1 takes properties of its own choosing"),
        ),
        (
            json!({"type": "object", "additionalProperties": false}),
            None,
        ),
    ];
    for (schema, expected) in cases {
        assert_eq!(
            strict_incompatibility(&schema).as_deref(),
            expected,
            "{schema}"
        );
    }
}

#[test]
fn strictness_follows_the_tool_and_its_schema() {
    let open = json!({"type": "object"});
    let plain = tool();
    assert_eq!(sends_strict(&plain, false), Ok(false));
    assert_eq!(sends_strict(&plain, true), Ok(true));
    let preferred = tool().with_constrained_sampling(ConstrainedSampling::prefer());
    assert_eq!(sends_strict(&preferred, false), Ok(true));
    let open_preferred =
        Tool::new("any", "", open.clone()).with_constrained_sampling(ConstrainedSampling::prefer());
    assert_eq!(sends_strict(&open_preferred, false), Ok(false));
    assert_eq!(
        sends_strict(&Tool::new("any", "", open.clone()), true),
        Ok(false)
    );
    let open_required =
        Tool::new("any", "", open).with_constrained_sampling(ConstrainedSampling::require());
    let refused = sends_strict(&open_required, false).unwrap_err();
    assert_eq!(refused.tool, "any");
    assert_eq!(
        refused.to_string(),
        "Tool \"any\" requires constrained sampling, but its schema cannot be sent strict: the root takes properties of its own choosing"
    );
}

#[test]
fn nulls_for_left_out_optionals_are_removed_where_null_is_not_allowed() {
    let schema = json!({"type": "object", "properties": {
        "path": {"type": "string"},
        "limit": {"type": "integer"},
        "note": {"type": ["string", "null"]},
        "mode": {"enum": ["a", null]},
        "must": {"type": "integer"},
        "edits": {"type": "array", "items": {"type": "object", "properties": {
            "old": {"type": "string"}, "all": {"type": "boolean"}}, "required": ["old"]}}
    }, "required": ["path", "must"]});
    let args = json!({"path": "a", "limit": null, "note": null, "mode": null, "must": null,
        "edits": [{"old": "x", "all": null}], "extra": null});
    assert_eq!(
        relax_strict_arguments(&schema, args),
        // `note` and `mode` allow null, `must` is required, `extra` is
        // not in the schema: those stay as sent.
        json!({"path": "a", "note": null, "mode": null, "must": null,
            "edits": [{"old": "x"}], "extra": null})
    );
}
