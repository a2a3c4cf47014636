//! Provider-specific lowering of tool schemas and names.

use serde_json::{Map, Value};

use crate::tool::{StrictMode, Tool};

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

/// The API names whose legacy tool `parameters` take Google's OpenAPI
/// subset ([`lower_for`] lowers to it).
pub const GOOGLE_APIS: [&str; 3] = ["google-generative-ai", "google-vertex", "google-gemini-cli"];

/// How deep [`lower_for`] follows `$ref`s into `$defs` before it gives up
/// and lets the spot accept anything.
pub const MAX_REF_DEPTH: usize = 8;

/// `schema` lowered for the tool `parameters` of `api` (Pi's API names).
///
/// For Google's APIs ([`GOOGLE_APIS`]) that is the OpenAPI subset of the
/// legacy `parameters` field, which refuses most of JSON Schema with a
/// 400 ("Invalid JSON payload received. Unknown name ..."): type arrays
/// become one type and `nullable`, a `const` (or a `oneOf`/`anyOf` of
/// string constants) becomes an `enum`, `$ref`s are inlined from `$defs`
/// or `definitions` (at most [`MAX_REF_DEPTH`] deep; deeper, or dangling,
/// the spot accepts anything), `oneOf` becomes `anyOf`, and every key the
/// subset lacks is dropped (`additionalProperties`, `propertyNames`,
/// `$schema`, `uniqueItems`, `multipleOf`, `not`, ...). The lowering only
/// ever widens: whatever the original accepts, the lowered schema accepts
/// too; the tool's own validation still checks the original. Any other
/// API gets [`clean_schema`].
///
/// ```
/// use agent_ai::providers::lowering::lower_for;
/// use serde_json::json;
/// let schema = json!({
///     "type": "object",
///     "properties": {
///         "limit": {"type": ["integer", "null"]},
///         "mode": {"oneOf": [{"const": "fast"}, {"const": "slow"}]},
///     },
///     "additionalProperties": false,
/// });
/// assert_eq!(
///     lower_for("google-generative-ai", &schema),
///     json!({
///         "type": "object",
///         "properties": {
///             "limit": {"type": "integer", "nullable": true},
///             "mode": {"type": "string", "enum": ["fast", "slow"]},
///         },
///     })
/// );
/// ```
pub fn lower_for(api: &str, schema: &Value) -> Value {
    if GOOGLE_APIS.contains(&api) {
        let defs = Defs::of(schema);
        google_node(schema, &defs, 0)
    } else {
        clean_schema(schema)
    }
}

/// The keys of Google's legacy `Schema` (js-genai's `Schema` type): all a
/// schema lowered by [`lower_for`] for Google may hold.
pub const GOOGLE_SCHEMA_KEYS: [&str; 22] = [
    "anyOf",
    "default",
    "description",
    "enum",
    "example",
    "format",
    "items",
    "maximum",
    "maxItems",
    "maxLength",
    "maxProperties",
    "minimum",
    "minItems",
    "minLength",
    "minProperties",
    "nullable",
    "pattern",
    "properties",
    "propertyOrdering",
    "required",
    "title",
    "type",
];

/// The root's `$defs` and `definitions`, for inlining `$ref`s.
struct Defs<'a> {
    root: &'a Value,
}

impl<'a> Defs<'a> {
    fn of(root: &'a Value) -> Self {
        Defs { root }
    }

    /// The target of a local reference (`#`, `#/$defs/X`, `#/definitions/X`,
    /// any JSON pointer into the root).
    fn resolve(&self, reference: &str) -> Option<&'a Value> {
        let pointer = reference.strip_prefix('#')?;
        if pointer.is_empty() {
            return Some(self.root);
        }
        self.root.pointer(pointer)
    }
}

/// A schema that accepts anything.
fn anything() -> Value {
    Value::Object(Map::new())
}

fn google_node(node: &Value, defs: &Defs<'_>, depth: usize) -> Value {
    let Some(map) = node.as_object() else {
        // `true`, `false` or junk: accept anything (widening `false`).
        return anything();
    };
    if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
        let target = (depth < MAX_REF_DEPTH)
            .then(|| defs.resolve(reference))
            .flatten();
        let Some(target) = target else {
            return anything();
        };
        // Sibling keys (a description) are kept; the target's win.
        let mut merged = map.clone();
        merged.remove("$ref");
        let mut lowered = google_node(target, defs, depth + 1);
        if let (Some(out), Value::Object(siblings)) = (
            lowered.as_object_mut(),
            google_node(&Value::Object(merged), defs, depth),
        ) {
            for (k, v) in siblings {
                out.entry(k).or_insert(v);
            }
        }
        return lowered;
    }
    let mut out = Map::new();
    let mut nullable = map.get("nullable") == Some(&Value::Bool(true));
    // A one-element `allOf` is its element.
    if let Some([only]) = map
        .get("allOf")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        && let Value::Object(inner) = google_node(only, defs, depth)
    {
        out.extend(inner);
    }
    for (key, value) in map {
        match key.as_str() {
            "properties" => {
                let props: Map<String, Value> = value
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), google_node(v, defs, depth)))
                    .collect();
                out.insert(key.clone(), Value::Object(props));
            }
            "items" if value.is_object() || value.is_boolean() => {
                out.insert(key.clone(), google_node(value, defs, depth));
            }
            "format" => {
                if matches!(value.as_str(), Some("enum" | "date-time")) {
                    out.insert(key.clone(), value.clone());
                }
            }
            "enum" => {
                let values = value.as_array().cloned().unwrap_or_default();
                nullable |= values.contains(&Value::Null);
                let strings: Vec<Value> = values.into_iter().filter(|v| !v.is_null()).collect();
                // The subset's enum holds strings; other values are left
                // unchecked (wider, never narrower).
                if strings.iter().all(Value::is_string) && !strings.is_empty() {
                    out.insert(key.clone(), Value::Array(strings));
                    out.entry("type")
                        .or_insert_with(|| Value::String("string".into()));
                }
            }
            "const" => match value {
                Value::String(_) => {
                    out.insert("enum".into(), Value::Array(vec![value.clone()]));
                    out.insert("type".into(), Value::String("string".into()));
                }
                Value::Null => nullable = true,
                _ => {}
            },
            "type" => match value {
                Value::String(t) if t == "null" => nullable = true,
                Value::String(_) => {
                    out.insert(key.clone(), value.clone());
                }
                Value::Array(types) => {
                    nullable |= types.iter().any(|t| t == "null");
                    let rest: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
                    if let [one] = rest.as_slice() {
                        out.insert(key.clone(), (*one).clone());
                    } else if rest.len() > 1 {
                        // Several types: one branch per type, each with the
                        // node's other keys.
                        let mut branch = map.clone();
                        branch.remove("nullable");
                        let branches = rest
                            .iter()
                            .map(|t| {
                                branch.insert("type".into(), (*t).clone());
                                google_node(&Value::Object(branch.clone()), defs, depth)
                            })
                            .collect();
                        let mut any = Map::new();
                        any.insert("anyOf".into(), Value::Array(branches));
                        if nullable {
                            any.insert("nullable".into(), Value::Bool(true));
                        }
                        return Value::Object(any);
                    }
                }
                _ => {}
            },
            "anyOf" | "oneOf" => {
                let branches: Vec<&Value> = value.as_array().into_iter().flatten().collect();
                let null_branch = |b: &&Value| b.get("type") == Some(&Value::String("null".into()));
                nullable |= branches.iter().any(null_branch);
                let rest: Vec<&Value> = branches.into_iter().filter(|b| !null_branch(b)).collect();
                let constants: Option<Vec<Value>> = rest
                    .iter()
                    .map(|b| b.get("const").filter(|c| c.is_string()).cloned())
                    .collect();
                match constants {
                    Some(constants) if !constants.is_empty() => {
                        out.insert("type".into(), Value::String("string".into()));
                        out.insert("enum".into(), Value::Array(constants));
                    }
                    _ if rest.len() == 1 => {
                        if let Value::Object(inner) = google_node(rest[0], defs, depth) {
                            for (k, v) in inner {
                                out.entry(k).or_insert(v);
                            }
                        }
                    }
                    _ if !rest.is_empty() => {
                        let lowered = rest.iter().map(|b| google_node(b, defs, depth)).collect();
                        out.insert("anyOf".into(), Value::Array(lowered));
                    }
                    _ => {}
                }
            }
            k if GOOGLE_SCHEMA_KEYS.contains(&k) && k != "nullable" && k != "items" => {
                out.insert(key.clone(), value.clone());
            }
            _ => {}
        }
    }
    if nullable {
        out.insert("nullable".into(), Value::Bool(true));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
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
        let open_preferred = Tool::new("any", "", open.clone())
            .with_constrained_sampling(ConstrainedSampling::prefer());
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
}
