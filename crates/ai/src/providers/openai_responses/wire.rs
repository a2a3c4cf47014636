//! The Responses API request as we send it (`POST /responses`).
//!
//! Fields are declared in the order they go on the wire; optional ones are
//! left out when unset. A `Value` here is vendor-opaque: a tool's JSON
//! Schema, an output text's annotations, and a stored reasoning item
//! replayed as the server produced it.

use serde::Serialize;
use serde_json::Value;

/// `POST /responses`, as far as we send it.
#[derive(Debug, Serialize)]
pub(super) struct RequestBody {
    pub model: String,
    pub input: Vec<InputItem>,
    pub stream: bool,
    pub store: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<FunctionTool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cache_retention: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ReasoningParam>,
}

#[derive(Debug, Serialize)]
pub(super) struct ReasoningParam {
    pub effort: &'static str,
    pub summary: &'static str,
}

#[derive(Debug, Serialize)]
pub(super) struct FunctionTool {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub name: String,
    pub description: String,
    /// Opaque: the tool's JSON Schema, lowered for OpenAI.
    pub parameters: Value,
    pub strict: bool,
}

/// One input item: one we build, or a reasoning item replayed as stored.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum InputItem {
    Built(Item),
    /// Opaque: the reasoning item as the server sent it.
    Stored(Value),
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Item {
    Message {
        role: &'static str,
        content: Vec<Part>,
        /// An assistant message's item id.
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        status: Option<&'static str>,
    },
    FunctionCall {
        /// The `fc_` item id; left out for another model's calls.
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        call_id: String,
        name: String,
        arguments: String,
    },
    FunctionCallOutput {
        call_id: String,
        output: String,
    },
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Part {
    InputText {
        text: String,
    },
    InputImage {
        image_url: String,
        detail: &'static str,
    },
    OutputText {
        text: String,
        /// Always empty: we send none back.
        annotations: Vec<Value>,
    },
}

/// An image as a `data:` URL.
pub(super) fn input_image(mime: &str, data: &str) -> Part {
    Part::InputImage {
        image_url: format!("data:{mime};base64,{data}"),
        detail: "auto",
    }
}

/// A message item without an item id or status.
pub(super) fn message(role: &'static str, content: Vec<Part>) -> InputItem {
    InputItem::Built(Item::Message {
        role,
        content,
        id: None,
        status: None,
    })
}
