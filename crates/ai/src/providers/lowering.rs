//! Provider-specific lowering of tool schemas and names.

use serde_json::{Map, Value};

use crate::tool::Tool;

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

/// A tool in OpenAI Chat Completions shape.
pub fn openai_tool(tool: &Tool, strict: bool) -> Value {
    let parameters = if strict {
        strict_schema(&tool.parameters)
    } else {
        clean_schema(&tool.parameters)
    };
    let mut function = serde_json::json!({
        "name": tool.name,
        "description": tool.description,
        "parameters": parameters,
    });
    if strict {
        function["strict"] = Value::Bool(true);
    }
    serde_json::json!({"type": "function", "function": function})
}

/// A tool in Anthropic Messages shape.
pub fn anthropic_tool(tool: &Tool) -> Value {
    serde_json::json!({
        "name": tool.name,
        "description": tool.description,
        "input_schema": clean_schema(&tool.parameters),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool() -> Tool {
        Tool {
            name: "read".into(),
            description: "Read a file".into(),
            parameters: json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "title": "ReadParams",
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path"},
                    "limit": {"type": "integer", "format": "uint32", "minimum": 0}
                },
                "required": ["path"]
            }),
        }
    }

    #[test]
    fn openai_golden() {
        assert_eq!(
            openai_tool(&tool(), false),
            json!({"type":"function","function":{"name":"read","description":"Read a file","parameters":{
                "type":"object",
                "properties":{"path":{"type":"string","description":"Path"},"limit":{"type":"integer","minimum":0}},
                "required":["path"]}}})
        );
    }

    #[test]
    fn openai_strict_golden() {
        assert_eq!(
            openai_tool(&tool(), true)["function"],
            json!({"name":"read","description":"Read a file","strict":true,"parameters":{
                "type":"object",
                "properties":{"path":{"type":"string","description":"Path"},"limit":{"type":["integer","null"],"minimum":0}},
                "required":["path","limit"],
                "additionalProperties":false}})
        );
    }

    #[test]
    fn anthropic_golden() {
        assert_eq!(
            anthropic_tool(&tool()),
            json!({"name":"read","description":"Read a file","input_schema":{
                "type":"object",
                "properties":{"path":{"type":"string","description":"Path"},"limit":{"type":"integer","minimum":0}},
                "required":["path"]}})
        );
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
}
