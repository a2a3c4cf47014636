//! Tool-argument validation: scalar coercion the way Pi does it, then JSON Schema.
//!
//! Models often send `"5"` where a number is expected or `5` where a string is.
//! [`validate_tool_arguments`] first coerces such scalars in a copy of the arguments
//! (guided by the schema), then validates the copy and reports *every* problem at
//! once, so the model can fix them all in one retry.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Map, Number, Value};

use crate::tool::Tool;

/// Why arguments were rejected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ValidationError {
    /// The arguments do not satisfy the schema. The message lists every problem.
    #[error("{message}")]
    Invalid {
        /// Full, model-facing message in Pi's shape.
        message: String,
        /// One `(path, message)` pair per problem.
        errors: Vec<(String, String)>,
    },
    /// The tool's own schema is not a valid JSON Schema.
    #[error("Invalid parameter schema for tool \"{tool}\": {reason}")]
    BadSchema {
        /// Tool name.
        tool: String,
        /// What the schema compiler said.
        reason: String,
    },
}

/// A tool's schema compiled once, ready to coerce and validate many argument sets.
///
/// ```
/// use agent_ai::{ArgumentValidator, Tool};
/// use serde_json::json;
/// let tool = Tool::new("read", "", json!({"type":"object","properties":{"limit":{"type":"number"}}}));
/// let v = ArgumentValidator::new(&tool).unwrap();
/// assert_eq!(v.validate(&json!({"limit":"5"})).unwrap(), json!({"limit":5}));
/// ```
#[derive(Debug, Clone)]
pub struct ArgumentValidator {
    name: String,
    schema: Value,
    validator: Arc<jsonschema::Validator>,
}

impl ArgumentValidator {
    /// Compiles the tool's parameter schema.
    pub fn new(tool: &Tool) -> Result<Self, ValidationError> {
        let validator = jsonschema::validator_for(&tool.parameters).map_err(|e| {
            ValidationError::BadSchema {
                tool: tool.name.clone(),
                reason: e.to_string(),
            }
        })?;
        Ok(ArgumentValidator {
            name: tool.name.clone(),
            schema: tool.parameters.clone(),
            validator: Arc::new(validator),
        })
    }

    /// Coerces a copy of `args` and validates it; returns the coerced copy.
    pub fn validate(&self, args: &Value) -> Result<Value, ValidationError> {
        let coerced = coerce_to_schema(&self.schema, args.clone());
        if self.validator.is_valid(&coerced) {
            return Ok(coerced);
        }
        let errors: Vec<(String, String)> = self
            .validator
            .iter_errors(&coerced)
            .map(|e| (error_path(&e), e.to_string()))
            .collect();
        if errors.is_empty() {
            return Ok(coerced);
        }
        let mut message = format!("Validation failed for tool \"{}\":\n", self.name);
        for (path, msg) in &errors {
            message.push_str(&format!("  - {path}: {msg}\n"));
        }
        let received = serde_json::to_string_pretty(args).unwrap_or_else(|_| args.to_string());
        message.push_str("\nReceived arguments:\n");
        message.push_str(&received);
        Err(ValidationError::Invalid { message, errors })
    }
}

/// Coerces and validates `args` against `tool.parameters`, returning the coerced copy.
///
/// Compiled validators are cached per tool name (and recompiled when the schema
/// changes), so calling this per tool call is cheap.
///
/// The error message has Pi's shape:
///
/// ```text
/// Validation failed for tool "read":
///   - path: "path" is a required property
///
/// Received arguments:
/// {
///   "limit": 5
/// }
/// ```
pub fn validate_tool_arguments(tool: &Tool, args: &Value) -> Result<Value, ValidationError> {
    validate_arguments(&tool.name, &tool.parameters, args)
}

/// [`validate_tool_arguments`] for a tool given by name and schema (no [`Tool`]
/// needs to be built per call).
pub fn validate_arguments(
    name: &str,
    schema: &Value,
    args: &Value,
) -> Result<Value, ValidationError> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<ArgumentValidator>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let cached = {
        let guard = cache.lock().unwrap_or_else(|p| p.into_inner());
        guard.get(name).filter(|v| v.schema == *schema).cloned()
    };
    let validator = match cached {
        Some(v) => v,
        None => {
            let tool = Tool::new(name, "", schema.clone());
            let v = Arc::new(ArgumentValidator::new(&tool)?);
            let mut guard = cache.lock().unwrap_or_else(|p| p.into_inner());
            guard.insert(name.to_string(), v.clone());
            v
        }
    };
    validator.validate(args)
}

/// Pi's error path: dotted instance path, the missing property for `required`, or `root`.
fn error_path(error: &jsonschema::ValidationError<'_>) -> String {
    let mut parts: Vec<String> = error
        .instance_path()
        .as_str()
        .split('/')
        .skip(1)
        .map(|seg| seg.replace("~1", "/").replace("~0", "~"))
        .collect();
    if let jsonschema::error::ValidationErrorKind::Required { property } = error.kind() {
        match property {
            Value::String(s) => parts.push(s.clone()),
            other => parts.push(other.to_string()),
        }
    }
    if parts.is_empty() {
        "root".to_string()
    } else {
        parts.join(".")
    }
}

/// Applies Pi's scalar coercions to `value`, guided by `schema`.
///
/// Numbers from numeric strings, booleans and null; booleans from `"true"`/`"false"`,
/// `1`/`0` and null; strings from numbers, booleans and null; null from `""`, `0`
/// and `false`. Recurses into `properties`, `additionalProperties`, `items`,
/// `prefixItems` and `allOf`, and tries `anyOf`/`oneOf` branches in order. Values
/// that already fit, or cannot be coerced, are left alone for the validator to judge.
pub fn coerce_to_schema(schema: &Value, value: Value) -> Value {
    let Some(schema) = schema.as_object() else {
        return value;
    };
    let mut value = value;

    if let Some(Value::Array(all)) = schema.get("allOf") {
        for sub in all {
            value = coerce_to_schema(sub, value);
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = schema.get(key) {
            if !branches.iter().any(|b| type_matches(b, &value)) {
                for branch in branches {
                    let candidate = coerce_to_schema(branch, value.clone());
                    if type_matches(branch, &candidate) {
                        value = candidate;
                        break;
                    }
                }
            } else if let Some(branch) = branches.iter().find(|b| type_matches(b, &value)) {
                value = coerce_to_schema(branch, value);
            }
        }
    }

    let types = declared_types(schema);
    // `2.0` for an integer field becomes `2`, so typed code can read it as one.
    if types.contains(&"integer")
        && let Value::Number(n) = &value
        && !n.is_i64()
        && !n.is_u64()
        && let Some(v) = n.as_f64().and_then(|f| number_from_f64(f, true))
    {
        value = v;
    }
    if !types.is_empty() && !types.iter().any(|t| value_has_type(&value, t)) {
        for t in &types {
            if let Some(v) = coerce_scalar(&value, t) {
                value = v;
                break;
            }
        }
    }

    match &mut value {
        Value::Object(map) => coerce_object(schema, map),
        Value::Array(items) => coerce_array(schema, items),
        _ => {}
    }
    value
}

fn coerce_object(schema: &Map<String, Value>, map: &mut Map<String, Value>) {
    let props = schema.get("properties").and_then(Value::as_object);
    let additional = schema.get("additionalProperties").filter(|v| v.is_object());
    let keys: Vec<String> = map.keys().cloned().collect();
    for key in keys {
        let sub = props.and_then(|p| p.get(&key)).or(additional);
        if let Some(sub) = sub
            && let Some(v) = map.get_mut(&key)
        {
            let taken = std::mem::take(v);
            *v = coerce_to_schema(sub, taken);
        }
    }
}

fn coerce_array(schema: &Map<String, Value>, items: &mut [Value]) {
    let prefix = schema.get("prefixItems").and_then(Value::as_array);
    let rest = schema.get("items");
    for (i, item) in items.iter_mut().enumerate() {
        let sub = match (prefix.and_then(|p| p.get(i)), rest) {
            (Some(s), _) => Some(s),
            (None, Some(Value::Array(tuple))) => tuple.get(i),
            (None, Some(s)) if s.is_object() => Some(s),
            _ => None,
        };
        if let Some(sub) = sub {
            let taken = std::mem::take(item);
            *item = coerce_to_schema(sub, taken);
        }
    }
}

fn declared_types(schema: &Map<String, Value>) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn type_matches(schema: &Value, value: &Value) -> bool {
    match schema.as_object() {
        Some(s) => {
            let types = declared_types(s);
            types.is_empty() || types.iter().any(|t| value_has_type(value, t))
        }
        None => true,
    }
}

fn value_has_type(value: &Value, ty: &str) -> bool {
    match ty {
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => match value {
            Value::Number(n) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        },
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        _ => true,
    }
}

fn number_from_f64(f: f64, integer: bool) -> Option<Value> {
    if !f.is_finite() || (integer && f.fract() != 0.0) {
        return None;
    }
    if f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 {
        return Some(Value::Number(Number::from(f as i64)));
    }
    Number::from_f64(f).map(Value::Number)
}

fn coerce_scalar(value: &Value, ty: &str) -> Option<Value> {
    match ty {
        "number" | "integer" => {
            let integer = ty == "integer";
            match value {
                Value::String(s) if !s.trim().is_empty() => {
                    let f: f64 = s.trim().parse().ok()?;
                    number_from_f64(f, integer)
                }
                Value::Bool(b) => Some(Value::from(i64::from(*b))),
                Value::Null => Some(Value::from(0)),
                Value::Number(n) if integer => number_from_f64(n.as_f64()?, true),
                _ => None,
            }
        }
        "boolean" => match value {
            Value::String(s) if s == "true" => Some(Value::Bool(true)),
            Value::String(s) if s == "false" => Some(Value::Bool(false)),
            Value::Number(n) if n.as_f64() == Some(1.0) => Some(Value::Bool(true)),
            Value::Number(n) if n.as_f64() == Some(0.0) => Some(Value::Bool(false)),
            Value::Null => Some(Value::Bool(false)),
            _ => None,
        },
        "string" => match value {
            Value::Number(n) => Some(Value::String(n.to_string())),
            Value::Bool(b) => Some(Value::String(b.to_string())),
            Value::Null => Some(Value::String(String::new())),
            _ => None,
        },
        "null" => match value {
            Value::String(s) if s.is_empty() => Some(Value::Null),
            Value::Number(n) if n.as_f64() == Some(0.0) => Some(Value::Null),
            Value::Bool(false) => Some(Value::Null),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(params: Value) -> Tool {
        Tool::new("t", "", params)
    }

    #[test]
    fn coerces_scalars_recursively() {
        let schema = json!({
            "type": "object",
            "properties": {
                "n": {"type": "number"},
                "i": {"type": "integer"},
                "b": {"type": "boolean"},
                "s": {"type": "string"},
                "list": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "number"}}}},
                "map": {"type": "object", "additionalProperties": {"type": "boolean"}}
            }
        });
        let out = coerce_to_schema(
            &schema,
            json!({"n": "5", "i": "7", "b": "true", "s": 12, "list": [{"x": "1.5"}], "map": {"k": "false"}, "extra": "5"}),
        );
        assert_eq!(
            out,
            json!({"n": 5, "i": 7, "b": true, "s": "12", "list": [{"x": 1.5}], "map": {"k": false}, "extra": "5"})
        );
    }

    #[test]
    fn leaves_uncoercible_values_for_the_validator() {
        let t =
            tool(json!({"type":"object","properties":{"n":{"type":"number"}},"required":["n"]}));
        let err = validate_tool_arguments(&t, &json!({"n": "abc"})).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with("Validation failed for tool \"t\":\n  - n: "),
            "{msg}"
        );
        assert!(
            msg.ends_with("\n\nReceived arguments:\n{\n  \"n\": \"abc\"\n}"),
            "{msg}"
        );
    }

    #[test]
    fn reports_every_error_with_dotted_paths() {
        let t = tool(json!({
            "type":"object",
            "properties":{"edits":{"type":"array","items":{"type":"object","properties":{"oldText":{"type":"string"},"newText":{"type":"string"}},"required":["oldText","newText"]}}},
            "required":["path","edits"]
        }));
        let err = validate_tool_arguments(&t, &json!({"edits":[{"oldText":"a"}]})).unwrap_err();
        let ValidationError::Invalid { errors, .. } = err else {
            panic!("expected Invalid")
        };
        let paths: Vec<&str> = errors.iter().map(|(p, _)| p.as_str()).collect();
        assert!(paths.contains(&"path"), "{paths:?}");
        assert!(paths.contains(&"edits.0.newText"), "{paths:?}");
        assert_eq!(errors.len(), 2);
    }

    #[test]
    fn root_path_for_top_level_type_errors() {
        let t = tool(json!({"type":"object"}));
        let err = validate_tool_arguments(&t, &json!([1])).unwrap_err();
        assert!(err.to_string().contains("  - root: "), "{err}");
    }

    #[test]
    fn any_of_branches_tried_in_order() {
        let schema = json!({"anyOf":[{"type":"number"},{"type":"boolean"}]});
        assert_eq!(coerce_to_schema(&schema, json!("3")), json!(3));
        assert_eq!(coerce_to_schema(&schema, json!(true)), json!(true));
    }

    #[test]
    fn whole_floats_become_integers() {
        let schema =
            json!({"type":"object","properties":{"n":{"type":"integer"},"f":{"type":"number"}}});
        assert_eq!(
            coerce_to_schema(&schema, json!({"n": 2.0, "f": 2.5})),
            json!({"n": 2, "f": 2.5})
        );
    }

    #[test]
    fn null_and_booleans_coerce_like_pi() {
        assert_eq!(coerce_scalar(&json!(null), "number"), Some(json!(0)));
        assert_eq!(coerce_scalar(&json!(1), "boolean"), Some(json!(true)));
        assert_eq!(coerce_scalar(&json!(null), "string"), Some(json!("")));
        assert_eq!(coerce_scalar(&json!(""), "null"), Some(json!(null)));
        assert_eq!(coerce_scalar(&json!("1.5"), "integer"), None);
        assert_eq!(coerce_scalar(&json!(" "), "number"), None);
    }

    #[test]
    fn schema_change_recompiles_cached_validator() {
        let a = tool(json!({"type":"object","properties":{"x":{"type":"number"}}}));
        assert!(validate_tool_arguments(&a, &json!({"x": 1})).is_ok());
        let b =
            tool(json!({"type":"object","properties":{"x":{"type":"string"}},"required":["y"]}));
        assert!(validate_tool_arguments(&b, &json!({"x": 1})).is_err());
    }

    #[test]
    fn bad_schema_is_an_error_not_a_panic() {
        let t = tool(json!({"type": 12}));
        assert!(matches!(
            ArgumentValidator::new(&t),
            Err(ValidationError::BadSchema { .. })
        ));
    }
}
