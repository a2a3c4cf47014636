//! The `streamGenerateContent` request as we send it.
//!
//! Fields are declared in the order they go on the wire; optional ones are
//! left out when unset. A `Value` here is vendor-opaque: a tool's JSON
//! Schema and a function call's arguments are passed through as they are.

use serde::Serialize;
use serde_json::Value;

/// `streamGenerateContent`'s body, as far as we send it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RequestBody {
    pub contents: Vec<Content>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_instruction: Option<Content>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolGroup>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation_config: Option<GenerationConfig>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ToolGroup {
    pub function_declarations: Vec<FunctionDeclaration>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct FunctionDeclaration {
    pub name: String,
    pub description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// Opaque: the tool's JSON Schema as given.
    pub parameters_json_schema: Option<Value>,
    /// Opaque: the schema lowered to the legacy OpenAPI subset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct GenerationConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_config: Option<ThinkingConfig>,
}

impl GenerationConfig {
    pub(super) fn is_empty(&self) -> bool {
        self.max_output_tokens.is_none()
            && self.temperature.is_none()
            && self.thinking_config.is_none()
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ThinkingConfig {
    pub include_thoughts: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_budget: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<&'static str>,
}

#[derive(Debug, Serialize)]
pub(super) struct Content {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<&'static str>,
    pub parts: Vec<Part>,
}

/// One part: exactly one of its data fields is set (`thought` and
/// `thoughtSignature` ride along).
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Part {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thought: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inline_data: Option<Blob>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function_call: Option<FunctionCall>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function_response: Option<FunctionResponse>,
}

impl Part {
    pub(super) fn text(text: String) -> Self {
        Part {
            text: Some(text),
            ..Part::default()
        }
    }

    pub(super) fn image(mime_type: &str, data: &str) -> Self {
        Part {
            inline_data: Some(Blob {
                mime_type: mime_type.to_string(),
                data: data.to_string(),
            }),
            ..Part::default()
        }
    }

    pub(super) fn is_function_response(&self) -> bool {
        self.function_response.is_some()
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Blob {
    pub mime_type: String,
    pub data: String,
}

#[derive(Debug, Serialize)]
pub(super) struct FunctionCall {
    pub name: String,
    /// Opaque: the arguments the model wrote.
    pub args: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

#[derive(Debug, Serialize)]
pub(super) struct FunctionResponse {
    pub name: String,
    pub response: FunctionOutput,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// A function response's `response`: `{"output": text}`, or
/// `{"error": text}` for a failed call.
#[derive(Debug, Serialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum FunctionOutput {
    Output(String),
    Error(String),
}
