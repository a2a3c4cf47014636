//! Small schema helpers for hand-written or attribute-driven schemas.

use serde_json::{Value, json};

/// A plain string-enum schema: `{"type":"string","enum":[...]}`.
///
/// Providers handle this shape everywhere, unlike `oneOf` of `const`s.
///
/// ```
/// let s = agent_tool::string_enum(&["metric", "imperial"]);
/// assert_eq!(s, serde_json::json!({"type":"string","enum":["metric","imperial"]}));
/// ```
pub fn string_enum(values: &[&str]) -> Value {
    json!({ "type": "string", "enum": values })
}

/// [`string_enum`] with a description.
pub fn string_enum_with_description(values: &[&str], description: &str) -> Value {
    json!({ "type": "string", "enum": values, "description": description })
}

/// [`string_enum`] with the value an absent argument stands for (Pi's
/// `StringEnum(values, { default })`); the model then knows what leaving
/// it out means.
///
/// ```
/// let s = agent_tool::string_enum_with_default(&["metric", "imperial"], "metric");
/// assert_eq!(s["default"], "metric");
/// assert_eq!(s["enum"], serde_json::json!(["metric", "imperial"]));
/// ```
pub fn string_enum_with_default(values: &[&str], default: &str) -> Value {
    json!({ "type": "string", "enum": values, "default": default })
}

/// [`string_enum`] as a `schemars::Schema`, for `#[schemars(schema_with = ...)]`
/// functions on fields whose type is a plain `String`.
pub fn string_enum_schema(values: &[&str]) -> schemars::Schema {
    schemars::Schema::try_from(string_enum(values)).unwrap_or_default()
}
