//! Thinking levels: how hard a reasoning model should think, by Pi's
//! names, the token budgets of budget-based APIs, and which levels a model
//! can do.

use serde::{Deserialize, Serialize};

use crate::model::Model;
use crate::stream::ReasoningEffort;

/// A thinking level: `off`, or a [`ReasoningEffort`].
///
/// ```
/// use agent_ai::ThinkingLevel;
/// let l: ThinkingLevel = "medium".parse().unwrap();
/// assert_eq!(l, ThinkingLevel::Medium);
/// assert_eq!(l.as_str(), "medium");
/// assert!("maximal".parse::<ThinkingLevel>().is_err());
/// ```
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    /// No thinking is asked for.
    #[default]
    Off,
    /// The least reasoning the model can do.
    Minimal,
    /// Little reasoning.
    Low,
    /// The usual default of reasoning models.
    Medium,
    /// Much reasoning.
    High,
    /// The most; only some models take it.
    Xhigh,
}

/// Every level, in increasing order.
pub const THINKING_LEVELS: [ThinkingLevel; 6] = [
    ThinkingLevel::Off,
    ThinkingLevel::Minimal,
    ThinkingLevel::Low,
    ThinkingLevel::Medium,
    ThinkingLevel::High,
    ThinkingLevel::Xhigh,
];

impl ThinkingLevel {
    /// The level's name (`off` ... `xhigh`).
    pub fn as_str(self) -> &'static str {
        match self.effort() {
            None => "off",
            Some(effort) => effort.as_str(),
        }
    }

    /// The effort a request asks for; `None` for `off`.
    pub fn effort(self) -> Option<ReasoningEffort> {
        match self {
            ThinkingLevel::Off => None,
            ThinkingLevel::Minimal => Some(ReasoningEffort::Minimal),
            ThinkingLevel::Low => Some(ReasoningEffort::Low),
            ThinkingLevel::Medium => Some(ReasoningEffort::Medium),
            ThinkingLevel::High => Some(ReasoningEffort::High),
            ThinkingLevel::Xhigh => Some(ReasoningEffort::Xhigh),
        }
    }
}

impl From<Option<ReasoningEffort>> for ThinkingLevel {
    fn from(effort: Option<ReasoningEffort>) -> Self {
        match effort {
            None => ThinkingLevel::Off,
            Some(ReasoningEffort::Minimal) => ThinkingLevel::Minimal,
            Some(ReasoningEffort::Low) => ThinkingLevel::Low,
            Some(ReasoningEffort::Medium) => ThinkingLevel::Medium,
            Some(ReasoningEffort::High) => ThinkingLevel::High,
            Some(ReasoningEffort::Xhigh) => ThinkingLevel::Xhigh,
        }
    }
}

impl std::fmt::Display for ThinkingLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not a thinking level.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown thinking level {0:?} (expected off, minimal, low, medium, high or xhigh)")]
pub struct UnknownThinkingLevel(pub String);

impl std::str::FromStr for ThinkingLevel {
    type Err = UnknownThinkingLevel;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        THINKING_LEVELS
            .into_iter()
            .find(|l| l.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownThinkingLevel(s.to_string()))
    }
}

/// Thinking token budgets per level, for APIs that take a budget
/// (Anthropic's `budget_tokens`); Pi's `thinkingBudgets` setting. `xhigh`
/// uses the `high` budget.
///
/// ```
/// use agent_ai::{ReasoningEffort, ThinkingBudgets};
/// let b = ThinkingBudgets::default();
/// assert_eq!(b.tokens(ReasoningEffort::Medium), 8192);
/// assert_eq!(b.tokens(ReasoningEffort::Xhigh), b.tokens(ReasoningEffort::High));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ThinkingBudgets {
    /// Tokens for `minimal`.
    pub minimal: u64,
    /// Tokens for `low`.
    pub low: u64,
    /// Tokens for `medium`.
    pub medium: u64,
    /// Tokens for `high` (and `xhigh`).
    pub high: u64,
}

impl Default for ThinkingBudgets {
    fn default() -> Self {
        ThinkingBudgets {
            minimal: 1024,
            low: 2048,
            medium: 8192,
            high: 16384,
        }
    }
}

impl ThinkingBudgets {
    /// The budget of an effort.
    pub fn tokens(&self, effort: ReasoningEffort) -> u64 {
        match effort {
            ReasoningEffort::Minimal => self.minimal,
            ReasoningEffort::Low => self.low,
            ReasoningEffort::Medium => self.medium,
            ReasoningEffort::High | ReasoningEffort::Xhigh => self.high,
        }
    }
}

impl Model {
    /// The levels this model can do: only `off` for a model without
    /// reasoning; `xhigh` only when its compat says so.
    ///
    /// ```
    /// use agent_ai::{Model, ThinkingLevel};
    /// let mut m = Model::new("openai", "gpt-4o-mini");
    /// assert_eq!(m.thinking_levels(), vec![ThinkingLevel::Off]);
    /// m.reasoning = true;
    /// assert_eq!(m.thinking_levels().last(), Some(&ThinkingLevel::High));
    /// ```
    pub fn thinking_levels(&self) -> Vec<ThinkingLevel> {
        THINKING_LEVELS
            .into_iter()
            .filter(|l| self.clamp_thinking(*l) == *l)
            .collect()
    }

    /// The nearest level this model can do: `off` without reasoning,
    /// `high` for `xhigh` unless the model takes it.
    pub fn clamp_thinking(&self, level: ThinkingLevel) -> ThinkingLevel {
        match level {
            _ if !self.reasoning => ThinkingLevel::Off,
            ThinkingLevel::Xhigh if !self.compat.supports_xhigh => ThinkingLevel::High,
            other => other,
        }
    }
}

/// The output limit a Claude request sends when the caller sets none and
/// the model's own is higher (Pi's default).
#[cfg_attr(not(any(feature = "anthropic", feature = "bedrock")), allow(dead_code))]
const CLAUDE_DEFAULT_MAX_TOKENS: u64 = 32_000;

/// Output tokens kept for the answer when a thinking budget would take
/// the whole `max_tokens`.
#[cfg_attr(not(any(feature = "anthropic", feature = "bedrock")), allow(dead_code))]
const MIN_ANSWER_TOKENS: u64 = 1024;

/// The `anthropic-beta` value that lets a budget-thinking Claude model
/// think between tool calls (a header on the Messages API, an
/// `anthropic_beta` field on Bedrock).
#[cfg_attr(not(any(feature = "anthropic", feature = "bedrock")), allow(dead_code))]
pub(crate) const INTERLEAVED_THINKING_BETA: &str = "interleaved-thinking-2025-05-14";

/// How a request asks a Claude model (on the Messages API or on Bedrock)
/// to think.
#[cfg_attr(not(any(feature = "anthropic", feature = "bedrock")), allow(dead_code))]
pub(crate) enum ClaudeThinking {
    /// `thinking: {type: "adaptive"}` with an effort (`output_config.effort`).
    Adaptive(&'static str),
    /// `thinking: {type: "enabled", budget_tokens}`.
    Budget(u64),
}

#[cfg_attr(not(any(feature = "anthropic", feature = "bedrock")), allow(dead_code))]
impl ClaudeThinking {
    /// The thinking a request asks for: none unless the model reasons and
    /// a level is set. Adaptive models map minimal and low to `low`, and
    /// `xhigh` to `max` where the model takes it.
    pub(crate) fn of(model: &Model, options: &crate::stream::StreamOptions) -> Option<Self> {
        let effort = options.reasoning.filter(|_| model.reasoning)?;
        Some(if model.compat.adaptive_thinking {
            ClaudeThinking::Adaptive(match effort {
                ReasoningEffort::Minimal | ReasoningEffort::Low => "low",
                ReasoningEffort::Medium => "medium",
                ReasoningEffort::High => "high",
                ReasoningEffort::Xhigh if model.compat.supports_xhigh => "max",
                ReasoningEffort::Xhigh => "high",
            })
        } else {
            ClaudeThinking::Budget(options.thinking_budgets.tokens(effort))
        })
    }

    /// A Claude request's `max_tokens` and what it asks to think, as Pi
    /// sends them: the caller's limit, else the model's (at most 32 000);
    /// with a budget, room for the budget and the answer within the
    /// model's limit. The thinking is `{type: "enabled", budget_tokens}`
    /// or `{type: "adaptive"}` with an effort the caller puts where its API
    /// wants it.
    pub(crate) fn request(
        model: &Model,
        options: &crate::stream::StreamOptions,
    ) -> ClaudeRequestThinking {
        let mut max_tokens = options.max_tokens.unwrap_or(if model.max_tokens > 0 {
            model.max_tokens.min(CLAUDE_DEFAULT_MAX_TOKENS)
        } else {
            8192
        });
        let mut effort = None;
        let thinking = match Self::of(model, options) {
            None => None,
            Some(ClaudeThinking::Adaptive(level)) => {
                effort = Some(level);
                Some(ClaudeThinkingParam::Adaptive)
            }
            Some(ClaudeThinking::Budget(budget)) => {
                let limit = if model.max_tokens > 0 {
                    model.max_tokens
                } else {
                    u64::MAX
                };
                max_tokens = max_tokens.saturating_add(budget).min(limit);
                let budget = if max_tokens <= budget {
                    max_tokens.saturating_sub(MIN_ANSWER_TOKENS)
                } else {
                    budget
                };
                Some(ClaudeThinkingParam::Enabled {
                    budget_tokens: budget,
                })
            }
        };
        ClaudeRequestThinking {
            max_tokens,
            thinking,
            effort,
        }
    }
}

/// What a Claude request sends for its output limit and thinking
/// ([`ClaudeThinking::request`]).
#[cfg_attr(not(any(feature = "anthropic", feature = "bedrock")), allow(dead_code))]
pub(crate) struct ClaudeRequestThinking {
    /// `max_tokens`.
    pub(crate) max_tokens: u64,
    /// `thinking`, when the request asks for it.
    pub(crate) thinking: Option<ClaudeThinkingParam>,
    /// Adaptive thinking's effort: the Messages API and Bedrock take it as
    /// `output_config.effort`.
    pub(crate) effort: Option<&'static str>,
}

/// Claude's `thinking` request field, on the Messages API and in
/// Bedrock's `additionalModelRequestFields` alike.
#[derive(Debug, serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[cfg_attr(not(any(feature = "anthropic", feature = "bedrock")), allow(dead_code))]
pub(crate) enum ClaudeThinkingParam {
    /// `{type: "adaptive"}`: the model decides how much to think.
    Adaptive,
    /// `{type: "enabled", budget_tokens}`.
    Enabled {
        /// The most tokens the model may think.
        budget_tokens: u64,
    },
}
