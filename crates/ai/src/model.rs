//! A model and where it is served.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::message::{Cost, Usage};

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
    /// Prices in dollars per million tokens (all zero when unknown).
    #[serde(default)]
    pub cost: ModelCost,
    /// Extra HTTP headers sent with every request to this model (values
    /// already resolved: no environment variable names or commands here).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// How the server departs from its API's reference behaviour.
    #[serde(default, skip_serializing_if = "ModelCompat::is_default")]
    pub compat: ModelCompat,
}

/// A model's prices in dollars per million tokens, Pi's `cost` of a model.
///
/// ```
/// use agent_ai::{ModelCost, Usage};
/// let prices = ModelCost { input: 3.0, output: 15.0, cache_read: 0.3, cache_write: 3.75 };
/// let usage = Usage { input: 1_000_000, output: 100_000, cache_read: 2_000_000, ..Default::default() };
/// let cost = prices.cost_of(&usage);
/// assert_eq!((cost.input, cost.output, cost.cache_read), (3.0, 1.5, 0.6));
/// assert!((cost.total - 5.1).abs() < 1e-12);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCost {
    /// Input tokens not served from cache.
    #[serde(default)]
    pub input: f64,
    /// Output tokens (reasoning included).
    #[serde(default)]
    pub output: f64,
    /// Input tokens read from the prompt cache.
    #[serde(default)]
    pub cache_read: f64,
    /// Input tokens written to the prompt cache.
    #[serde(default)]
    pub cache_write: f64,
}

impl ModelCost {
    /// Whether every price is zero (a local model, or prices unknown).
    pub fn is_free(&self) -> bool {
        *self == ModelCost::default()
    }

    /// What `usage` costs at these prices: each bucket is price / 10^6 ×
    /// tokens, and `total` their sum.
    pub fn cost_of(&self, usage: &Usage) -> Cost {
        let per = |price: f64, tokens: u64| price * tokens as f64 / 1_000_000.0;
        let input = per(self.input, usage.input);
        let output = per(self.output, usage.output);
        let cache_read = per(self.cache_read, usage.cache_read);
        let cache_write = per(self.cache_write, usage.cache_write);
        Cost {
            input,
            output,
            cache_read,
            cache_write,
            total: input + output + cache_read + cache_write,
        }
    }
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
    /// Whether a Chat Completions server takes `reasoning_effort` (Pi's
    /// `supportsReasoningEffort`; absent: yes for a reasoning model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supports_reasoning_effort: Option<bool>,
    /// Whether the model takes the `xhigh` thinking level; others are
    /// clamped to `high`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub supports_xhigh: bool,
    /// Anthropic: the model thinks adaptively (`thinking: {type:
    /// "adaptive"}` with `output_config.effort`) instead of by a token
    /// budget.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub adaptive_thinking: bool,
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
            cost: ModelCost::default(),
            headers: BTreeMap::new(),
            compat: ModelCompat::default(),
        }
    }

    /// The model's extra headers as `(name, value)` pairs, as the HTTP
    /// providers add them after their own.
    pub fn header_pairs(&self) -> impl Iterator<Item = (String, String)> + '_ {
        self.headers.iter().map(|(k, v)| (k.clone(), v.clone()))
    }

    /// Whether the model accepts image input.
    pub fn supports_images(&self) -> bool {
        self.input.iter().any(|i| i == "image")
    }
}
