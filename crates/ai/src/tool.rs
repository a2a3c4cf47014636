//! A tool as the model sees it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool as the model sees it: name, description and a JSON Schema for its
/// arguments, and whether the provider should constrain the model's
/// arguments to that schema.
///
/// ```
/// use agent_ai::{ConstrainedSampling, Tool};
/// let tool = Tool::new("todo", "Adds a todo.", serde_json::json!({"type": "object"}))
///     .with_constrained_sampling(ConstrainedSampling::prefer());
/// assert!(tool.constrained_sampling.is_some());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// Name the model calls the tool by.
    pub name: String,
    /// What the tool does, written for the model.
    pub description: String,
    /// JSON Schema (an object schema) of the arguments.
    pub parameters: Value,
    /// Asks the provider to make the model's arguments match `parameters`
    /// (OpenAI's and Anthropic's `strict` tools); `None` sends the schema as
    /// a description only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constrained_sampling: Option<ConstrainedSampling>,
}

impl Tool {
    /// A tool sent without constrained sampling.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Tool {
            name: name.into(),
            description: description.into(),
            parameters,
            constrained_sampling: None,
        }
    }

    /// The same tool with this constrained-sampling request.
    pub fn with_constrained_sampling(mut self, constrained: ConstrainedSampling) -> Self {
        self.constrained_sampling = Some(constrained);
        self
    }
}

/// A request that the provider decode the model's tool arguments
/// constrained by the tool's JSON Schema, so they always parse and match
/// it. Pi's `constrainedSampling: {type: "json_schema", strict}`; Pi's
/// grammar variant has no counterpart here.
///
/// ```
/// use agent_ai::{ConstrainedSampling, StrictMode};
/// let wire = serde_json::to_value(ConstrainedSampling::require()).unwrap();
/// assert_eq!(wire, serde_json::json!({"type": "json_schema", "strict": "require"}));
/// let back: ConstrainedSampling = serde_json::from_value(wire).unwrap();
/// assert_eq!(back, ConstrainedSampling::JsonSchema { strict: StrictMode::Require });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ConstrainedSampling {
    /// Constrain to the tool's JSON Schema.
    JsonSchema {
        /// What to do when the schema uses something strict mode cannot
        /// express (see [`strict_incompatibility`](crate::providers::lowering::strict_incompatibility)).
        strict: StrictMode,
    },
}

impl ConstrainedSampling {
    /// Strict when the schema allows it, otherwise sent as usual.
    pub fn prefer() -> Self {
        ConstrainedSampling::JsonSchema {
            strict: StrictMode::Prefer,
        }
    }

    /// Strict, or the request fails before it is sent.
    pub fn require() -> Self {
        ConstrainedSampling::JsonSchema {
            strict: StrictMode::Require,
        }
    }

    /// The strictness asked for.
    pub fn strict(&self) -> StrictMode {
        match self {
            ConstrainedSampling::JsonSchema { strict } => *strict,
        }
    }
}

/// How firmly a tool asks for constrained sampling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StrictMode {
    /// Use strict mode when the schema can be sent strict; otherwise send
    /// the tool unconstrained.
    Prefer,
    /// Use strict mode; a schema that cannot be sent strict fails the
    /// request with an error naming the tool and the reason.
    Require,
}
