//! Provider-specific lowering of tool schemas and names.

use serde_json::{Map, Value};

use crate::tool::{StrictMode, Tool};

mod google;
#[cfg(test)]
mod tests;

pub use google::{GOOGLE_APIS, GOOGLE_SCHEMA_KEYS, MAX_REF_DEPTH, lower_for};

/// A tool name the providers refuse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "Tool name \"{name}\" is not accepted by the provider: use 1 to 64 characters from a-z, A-Z, 0-9, '_' and '-'"
)]
pub struct ToolNameError {
    /// The name as given.
    pub name: String,
}

/// Tool names OpenAI and Anthropic accept: `^[a-zA-Z0-9_-]{1,64}$`.
///
/// # Errors
/// Any other name.
pub fn check_tool_name(name: &str) -> Result<(), ToolNameError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(ToolNameError {
            name: name.to_string(),
        })
    }
}

/// Removes from one schema node (not its subschemas) what no reader of a
/// tool schema needs: the meta-schema reference `$schema` and `format`
/// (providers refuse formats they do not know, and `schemars`' integer
/// formats such as `uint32` mean nothing to a model).
///
/// The one list of these keys: [`clean_schema`] uses it on every node, and
/// so does agent-tool's schemars transform behind `params_schema`.
///
/// ```
/// let mut node = serde_json::json!({"type": "integer", "format": "uint32", "$schema": "x"});
/// agent_ai::providers::lowering::strip_schema_noise(node.as_object_mut().unwrap());
/// assert_eq!(node, serde_json::json!({"type": "integer"}));
/// ```
pub fn strip_schema_noise(node: &mut Map<String, Value>) {
    node.remove("$schema");
    node.remove("format");
}

/// A schema without the keys providers reject or ignore (those of
/// [`strip_schema_noise`], and `$id`, `title`, `examples`), recursively
/// through subschemas.
pub fn clean_schema(schema: &Value) -> Value {
    let mut out = schema.clone();
    clean_node(&mut out);
    if let Some(obj) = out.as_object_mut() {
        if !obj.contains_key("type") {
            obj.insert("type".into(), Value::String("object".into()));
        }
        if obj.get("type").and_then(Value::as_str) == Some("object")
            && !obj.contains_key("properties")
        {
            obj.insert("properties".into(), Value::Object(Map::new()));
        }
    }
    out
}

fn clean_node(node: &mut Value) {
    let Some(obj) = node.as_object_mut() else {
        return;
    };
    strip_schema_noise(obj);
    for key in ["$id", "title", "examples"] {
        obj.remove(key);
    }
    for key in ["properties", "patternProperties", "$defs", "definitions"] {
        if let Some(Value::Object(map)) = obj.get_mut(key) {
            map.values_mut().for_each(clean_node);
        }
    }
    for key in ["items", "additionalProperties", "not", "contains"] {
        if let Some(sub) = obj.get_mut(key) {
            clean_node(sub);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(list)) = obj.get_mut(key) {
            list.iter_mut().for_each(clean_node);
        }
    }
}

/// OpenAI strict mode: every property required, optional ones nullable, no
/// additional properties, recursively.
pub fn strict_schema(schema: &Value) -> Value {
    let mut out = clean_schema(schema);
    make_strict(&mut out);
    out
}

fn make_strict(node: &mut Value) {
    let Some(obj) = node.as_object_mut() else {
        return;
    };
    if obj.get("type").and_then(Value::as_str) == Some("object") || obj.contains_key("properties") {
        let required: Vec<String> = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        if let Some(Value::Object(props)) = obj.get_mut("properties") {
            for (name, prop) in props.iter_mut() {
                make_strict(prop);
                if !required.contains(name) {
                    make_nullable(prop);
                }
            }
            let all: Vec<Value> = props.keys().cloned().map(Value::String).collect();
            obj.insert("required".into(), Value::Array(all));
        }
        obj.insert("additionalProperties".into(), Value::Bool(false));
    }
    if let Some(items) = obj.get_mut("items") {
        make_strict(items);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(list)) = obj.get_mut(key) {
            list.iter_mut().for_each(make_strict);
        }
    }
}

fn make_nullable(prop: &mut Value) {
    let Some(obj) = prop.as_object_mut() else {
        return;
    };
    match obj.get_mut("type") {
        Some(Value::String(t)) => {
            let t = t.clone();
            obj.insert(
                "type".into(),
                Value::Array(vec![Value::String(t), Value::String("null".into())]),
            );
        }
        Some(Value::Array(types)) if !types.iter().any(|t| t == "null") => {
            types.push(Value::String("null".into()));
        }
        _ => {}
    }
    if let Some(Value::Array(values)) = obj.get_mut("enum")
        && !values.iter().any(Value::is_null)
    {
        values.push(Value::Null);
    }
}

/// Why `schema` cannot be sent in strict mode without changing what it
/// accepts, or `None` when it can. Strict mode closes every object
/// (`additionalProperties: false`), so an object that takes properties of
/// the caller's choosing (no `properties`, an `additionalProperties`
/// schema, `patternProperties`) cannot be expressed; nor can a `$ref`,
/// whose target the lowering does not visit, or a root that is not an
/// object.
///
/// ```
/// use agent_ai::providers::lowering::strict_incompatibility;
/// use serde_json::json;
/// let closed = json!({"type": "object", "properties": {"item": {"type": "string"}}});
/// assert_eq!(strict_incompatibility(&closed), None);
/// let map = json!({"type": "object", "properties": {"env": {"type": "object", "additionalProperties": {"type": "string"}}}});
/// assert_eq!(
///     strict_incompatibility(&map).as_deref(),
///     Some("/properties/env takes properties of its own choosing")
/// );
/// ```
pub fn strict_incompatibility(schema: &Value) -> Option<String> {
    let is_object = schema.get("type").and_then(Value::as_str) == Some("object")
        || schema.get("properties").is_some();
    if !is_object {
        return Some("the schema's root is not an object".to_string());
    }
    incompatible_node(schema, String::new())
}

fn incompatible_node(node: &Value, path: String) -> Option<String> {
    let obj = node.as_object()?;
    let here = || {
        if path.is_empty() {
            "the root".to_string()
        } else {
            path.clone()
        }
    };
    if obj.contains_key("$ref") {
        return Some(format!("{} uses $ref", here()));
    }
    if obj.contains_key("patternProperties") {
        return Some(format!("{} uses patternProperties", here()));
    }
    let typed_object = match obj.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
        _ => false,
    };
    if typed_object || obj.contains_key("properties") {
        let open = match obj.get("additionalProperties") {
            None => !obj.contains_key("properties"),
            Some(Value::Bool(false)) => false,
            Some(_) => true,
        };
        if open {
            return Some(format!("{} takes properties of its own choosing", here()));
        }
    }
    if let Some(Value::Object(props)) = obj.get("properties") {
        for (name, prop) in props {
            if let Some(why) = incompatible_node(prop, format!("{path}/properties/{name}")) {
                return Some(why);
            }
        }
    }
    if let Some(items) = obj.get("items")
        && let Some(why) = incompatible_node(items, format!("{path}/items"))
    {
        return Some(why);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(list)) = obj.get(key) {
            for (i, sub) in list.iter().enumerate() {
                if let Some(why) = incompatible_node(sub, format!("{path}/{key}/{i}")) {
                    return Some(why);
                }
            }
        }
    }
    None
}

/// A tool that requires constrained sampling
/// ([`StrictMode::Require`]) has a schema strict mode cannot express.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "Tool \"{tool}\" requires constrained sampling, but its schema cannot be sent strict: {reason}"
)]
pub struct StrictSchemaError {
    /// The tool's name.
    pub tool: String,
    /// What in the schema strict mode refuses, with its JSON pointer.
    pub reason: String,
}

/// Whether `tool` is sent in strict mode: when it asks for constrained
/// sampling (or `strict_all`, a provider-wide request, asks for every
/// tool) and its schema allows it.
///
/// # Errors
/// The tool requires strict mode ([`StrictMode::Require`]) and its schema
/// cannot be sent strict: the message names the tool and the reason.
pub fn sends_strict(tool: &Tool, strict_all: bool) -> Result<bool, StrictSchemaError> {
    let mode = match tool.constrained_sampling {
        Some(c) => c.strict(),
        None if strict_all => StrictMode::Prefer,
        None => return Ok(false),
    };
    match (strict_incompatibility(&tool.parameters), mode) {
        (None, _) => Ok(true),
        (Some(_), StrictMode::Prefer) => Ok(false),
        (Some(reason), StrictMode::Require) => Err(StrictSchemaError {
            tool: tool.name.clone(),
            reason,
        }),
    }
}

/// Undoes what strict mode does to optional arguments: a model constrained
/// by a strict schema (where every property is required and the optional
/// ones are nullable) sends `null` for an optional argument it leaves out.
/// Such a `null` is removed where the tool's own schema does not allow
/// `null` there, so the tool sees the argument as absent (not coerced to
/// `0`, `""` or `false`). Objects in properties and array items are
/// visited too.
///
/// ```
/// use agent_ai::providers::lowering::relax_strict_arguments;
/// use serde_json::json;
/// let schema = json!({"type": "object", "properties": {
///     "path": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["path"]});
/// let args = json!({"path": "a.txt", "limit": null});
/// assert_eq!(relax_strict_arguments(&schema, args), json!({"path": "a.txt"}));
/// ```
pub fn relax_strict_arguments(schema: &Value, mut args: Value) -> Value {
    relax_node(schema, &mut args);
    args
}

fn relax_node(schema: &Value, value: &mut Value) {
    match value {
        Value::Object(map) => {
            let Some(Value::Object(props)) = schema.get("properties") else {
                return;
            };
            let required = |name: &str| {
                schema
                    .get("required")
                    .and_then(Value::as_array)
                    .is_some_and(|r| r.iter().any(|n| n == name))
            };
            map.retain(|name, v| {
                !(v.is_null()
                    && !required(name)
                    && props.get(name).is_some_and(|p| !allows_null(p)))
            });
            for (name, v) in map.iter_mut() {
                if let Some(prop) = props.get(name) {
                    relax_node(prop, v);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                items.iter_mut().for_each(|v| relax_node(item_schema, v));
            }
        }
        _ => {}
    }
}

fn allows_null(schema: &Value) -> bool {
    let Some(obj) = schema.as_object() else {
        // `true` (or a non-object) accepts anything.
        return true;
    };
    let typed_null = match obj.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "null"),
        None => !obj.contains_key("enum") && !obj.contains_key("const"),
        _ => false,
    };
    let in_enum = obj
        .get("enum")
        .and_then(Value::as_array)
        .is_some_and(|e| e.iter().any(Value::is_null));
    let in_branch = ["anyOf", "oneOf"].iter().any(|k| {
        obj.get(*k)
            .and_then(Value::as_array)
            .is_some_and(|l| l.iter().any(allows_null))
    });
    typed_null || in_enum || obj.get("const") == Some(&Value::Null) || in_branch
}

/// What an API whose tool results hold only text (OpenAI's two, Gemini
/// before 3) sends for `result`: its text, or a placeholder when it holds
/// only images, and the images, which the caller attaches in a user
/// message after it.
#[cfg_attr(
    not(any(feature = "openai", feature = "openai-responses", feature = "google")),
    allow(dead_code)
)]
pub(crate) fn tool_result_text_and_images(
    result: &crate::message::ToolResultMessage,
) -> (String, Vec<&crate::content::ImageContent>) {
    let images: Vec<_> = result
        .content
        .iter()
        .filter_map(|b| match b {
            crate::content::ContentBlock::Image(i) => Some(i),
            _ => None,
        })
        .collect();
    let text = result.text();
    if text.is_empty() && !images.is_empty() {
        ("(see attached image)".to_string(), images)
    } else {
        (text, images)
    }
}

/// A tool's parameters as OpenAI's APIs (Chat Completions, Responses)
/// take them: the [`strict_schema`] when sent strict, else the
/// [`clean_schema`].
pub fn openai_parameters(tool: &Tool, strict: bool) -> Value {
    if strict {
        strict_schema(&tool.parameters)
    } else {
        clean_schema(&tool.parameters)
    }
}

/// A tool's `input_schema` as Anthropic's Messages API takes it: the
/// [`clean_schema`]; `strict` (see [`sends_strict`]) closes every object
/// of it (`additionalProperties: false`, which Anthropic's strict mode
/// requires; optional properties stay optional).
pub fn anthropic_input_schema(tool: &Tool, strict: bool) -> Value {
    let mut input_schema = clean_schema(&tool.parameters);
    if strict {
        close_objects(&mut input_schema);
    }
    input_schema
}

fn close_objects(node: &mut Value) {
    let Some(obj) = node.as_object_mut() else {
        return;
    };
    if obj.get("type").and_then(Value::as_str) == Some("object") || obj.contains_key("properties") {
        obj.insert("additionalProperties".into(), Value::Bool(false));
    }
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        props.values_mut().for_each(close_objects);
    }
    if let Some(items) = obj.get_mut("items") {
        close_objects(items);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(list)) = obj.get_mut(key) {
            list.iter_mut().for_each(close_objects);
        }
    }
}
