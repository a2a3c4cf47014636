//! Lowering for Google's APIs: the legacy OpenAPI subset of tool
//! `parameters` (one type and `nullable`, `enum`s, `$ref`s inlined, unknown
//! keys dropped), which only ever widens.

use serde_json::{Map, Value};

use super::clean_schema;

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
