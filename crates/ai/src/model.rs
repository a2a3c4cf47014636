//! A model and where it is served.

use serde::{Deserialize, Serialize};

/// A model and where it is served.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Model {
    /// Model id sent to the provider (e.g. `gpt-4o-mini`).
    pub id: String,
    /// Human-readable name.
    #[serde(default)]
    pub name: String,
    /// API family (e.g. `openai-completions`, `anthropic-messages`, `scripted`).
    /// Descriptive: it is recorded on the assistant messages and lets a
    /// program pick a client; the clients do not read it.
    #[serde(default)]
    pub api: String,
    /// Provider name (e.g. `openai`).
    #[serde(default)]
    pub provider: String,
    /// Base URL of the API. Descriptive, like `api`: an HTTP client talks to
    /// the URL it was built with (`OpenAiClient::new(base_url, key)`).
    #[serde(default)]
    pub base_url: String,
    /// Whether the model produces reasoning.
    #[serde(default)]
    pub reasoning: bool,
    /// Input kinds it accepts: `text`, `image`.
    #[serde(default = "default_input")]
    pub input: Vec<String>,
    /// Context window in tokens.
    #[serde(default)]
    pub context_window: u64,
    /// Default maximum output tokens.
    #[serde(default)]
    pub max_tokens: u64,
    /// How the server departs from its API's reference behaviour.
    #[serde(default, skip_serializing_if = "ModelCompat::is_default")]
    pub compat: ModelCompat,
}

/// Where a server departs from the reference behaviour of its API (Pi's
/// `compat` of a model in `models.json`). Defaults are what OpenAI itself
/// does.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCompat {
    /// The Chat Completions field that carries the output-token limit.
    #[serde(default)]
    pub max_tokens_field: MaxTokensField,
}

impl ModelCompat {
    /// Whether every setting is the default (then it is not serialized).
    pub fn is_default(&self) -> bool {
        *self == ModelCompat::default()
    }
}

/// The Chat Completions field for the output-token limit.
///
/// ```
/// let f: agent_ai::MaxTokensField = serde_json::from_str(r#""max_tokens""#).unwrap();
/// assert_eq!(f, agent_ai::MaxTokensField::MaxTokens);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum MaxTokensField {
    /// `max_completion_tokens`: what OpenAI wants (its reasoning models
    /// refuse `max_tokens`).
    #[default]
    #[serde(rename = "max_completion_tokens")]
    MaxCompletionTokens,
    /// `max_tokens`: the older name, for servers that know only it.
    #[serde(rename = "max_tokens")]
    MaxTokens,
}

impl MaxTokensField {
    /// The field's name in the request body.
    pub fn as_str(self) -> &'static str {
        match self {
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
            MaxTokensField::MaxTokens => "max_tokens",
        }
    }
}

fn default_input() -> Vec<String> {
    vec!["text".to_string()]
}

impl Model {
    /// A model description with the given provider and id and neutral defaults.
    ///
    /// ```
    /// let m = agent_ai::Model::new("scripted", "script");
    /// assert!(!m.supports_images());
    /// ```
    pub fn new(provider: impl Into<String>, id: impl Into<String>) -> Self {
        let id = id.into();
        let provider = provider.into();
        Model {
            name: id.clone(),
            api: provider.clone(),
            id,
            provider,
            base_url: String::new(),
            reasoning: false,
            input: default_input(),
            context_window: 128_000,
            max_tokens: 8_192,
            compat: ModelCompat::default(),
        }
    }

    /// Whether the model accepts image input.
    pub fn supports_images(&self) -> bool {
        self.input.iter().any(|i| i == "image")
    }
}
