//! The settings this agent reads, as one typed struct, and the check of a
//! settings file against it (wrong types are errors naming the key, unknown
//! keys are listed for a warning).
//!
//! The files are still merged as JSON (see the parent module): the merge
//! rule works on keys, including ones only extensions know, and the typed
//! view is read from the merged values.

use std::num::NonZeroU64;

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

/// The keys the agent knows, typed; camelCase in the files, as in
/// `docs/settings.md`, which documents each. Absent keys are `None` (or
/// the nested struct's defaults); [`Settings`](crate::Settings)' accessors
/// apply the defaults and clamps.
///
/// ```
/// use coding_agent::Settings;
/// use serde_json::json;
/// let s = Settings::from_value(json!({"defaultModel": "m", "compaction": {"enabled": false}, "theme": "dark"}));
/// assert_eq!(s.known().default_model.as_deref(), Some("m"));
/// assert_eq!(s.known().compaction.enabled, Some(false));
/// assert!(s.known().other.contains_key("theme"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct KnownSettings {
    /// `shellPath`: the shell bash runs commands with.
    #[serde(deserialize_with = "present")]
    pub shell_path: Option<String>,
    /// `shellCommandPrefix`: text prepended to every bash command.
    #[serde(deserialize_with = "present")]
    pub shell_command_prefix: Option<String>,
    /// `bashTimeoutSeconds`: default timeout of a bash call (0 disables it).
    #[serde(deserialize_with = "present")]
    pub bash_timeout_seconds: Option<Seconds>,
    /// `streamIdleTimeoutSeconds`: how long a model stream may stay silent.
    #[serde(deserialize_with = "present")]
    pub stream_idle_timeout_seconds: Option<Seconds>,
    /// `maxParallelTools`: tool calls executing at once.
    #[serde(deserialize_with = "present")]
    pub max_parallel_tools: Option<NonZeroU64>,
    /// `constrainedSampling`: strict tool schemas on or off for every tool.
    #[serde(deserialize_with = "present")]
    pub constrained_sampling: Option<bool>,
    /// `cacheRetention`: `none`, `short` or `long` prompt caching.
    #[serde(deserialize_with = "present")]
    pub cache_retention: Option<agent_ai::CacheRetention>,
    /// `images.*`.
    #[serde(deserialize_with = "present_or_default")]
    pub images: ImageSettings,
    /// `allowedTools`: the only tools ever offered or run.
    #[serde(deserialize_with = "present")]
    pub allowed_tools: Option<Vec<String>>,
    /// `steeringMode`: how queued steering messages are delivered.
    #[serde(deserialize_with = "present")]
    pub steering_mode: Option<agent_core::QueueMode>,
    /// `followUpMode`: how queued follow-up messages are delivered.
    #[serde(deserialize_with = "present")]
    pub follow_up_mode: Option<agent_core::QueueMode>,
    /// `tuiMode`: how the terminal UI starts drawing.
    #[serde(deserialize_with = "present")]
    pub tui_mode: Option<TuiModeSetting>,
    /// `defaultProvider`: the provider when `--provider` is not given.
    #[serde(deserialize_with = "present")]
    pub default_provider: Option<String>,
    /// `defaultThinkingLevel`: off, minimal, low, medium, high or xhigh.
    #[serde(deserialize_with = "present")]
    pub default_thinking_level: Option<agent_ai::ThinkingLevel>,
    /// `thinkingBudgets`: thinking tokens per level for budget APIs.
    #[serde(deserialize_with = "present")]
    pub thinking_budgets: Option<agent_ai::ThinkingBudgets>,
    /// `defaultModel`: the model when `--model` is not given.
    #[serde(deserialize_with = "present")]
    pub default_model: Option<String>,
    /// `enabledModels`: the model patterns Ctrl+P cycles through (Pi's
    /// scope: `provider/id`, an id, a fuzzy text or a glob, each with an
    /// optional `:level`); read by the terminal UI.
    #[serde(deserialize_with = "present")]
    pub enabled_models: Option<Vec<String>>,
    /// `provider`: an older name of `defaultProvider`, read after it.
    #[serde(deserialize_with = "present")]
    pub provider: Option<String>,
    /// `model`: an older name of `defaultModel`, read after it.
    #[serde(deserialize_with = "present")]
    pub model: Option<String>,
    /// `extensionStartupTimeoutSec`: seconds an extension has to start.
    pub extension_startup_timeout_sec: Option<f64>,
    /// `extensionToolTimeoutSec`: seconds one call of an extension's tool may take.
    pub extension_tool_timeout_sec: Option<f64>,
    /// `extensions`: a project's extensions (paths relative to the project).
    pub extensions: Option<Vec<String>>,
    /// `mcpServers`: by name; each entry is read by `agent-mcp`.
    #[serde(deserialize_with = "present")]
    pub mcp_servers: Option<Map<String, Value>>,
    /// `sandbox`: read by `agent-sandbox` (`SandboxSettings`).
    pub sandbox: Option<Value>,
    /// `permissions`: the rule lists, read by `agent-permissions`
    /// ([`Settings::permission_rules`](crate::Settings::permission_rules)
    /// adds the project's).
    #[serde(deserialize_with = "present")]
    pub permissions: Option<agent_permissions::PermissionConfig>,
    /// `compaction.*`.
    pub compaction: CompactionValues,
    /// `codemode.*`.
    #[serde(deserialize_with = "present_or_default")]
    pub codemode: CodemodeValues,
    /// `hooks`: Pi's; held back like every key that runs code.
    pub hooks: Option<Value>,
    /// `packages`: Pi's; held back like every key that runs code.
    pub packages: Option<Value>,
    /// Every other top-level key: not read here, kept for extensions.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `images.*`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct ImageSettings {
    /// `images.autoResize`: shrink large images (default true).
    #[serde(deserialize_with = "present")]
    pub auto_resize: Option<bool>,
    /// `images.blockImages`: replace every image by a note (default false).
    #[serde(deserialize_with = "present")]
    pub block_images: Option<bool>,
    /// Other keys under `images` (unknown).
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `compaction.*` as written; [`CompactionSettings`](crate::compaction::CompactionSettings)
/// applies the defaults.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct CompactionValues {
    /// `compaction.enabled`.
    pub enabled: Option<bool>,
    /// `compaction.reserveTokens`.
    pub reserve_tokens: Option<u64>,
    /// `compaction.keepRecentTokens`.
    pub keep_recent_tokens: Option<u64>,
    /// Other keys under `compaction` (unknown).
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `codemode.*`: the codemode tool's settings.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct CodemodeValues {
    /// `codemode.timeoutSeconds`: the deadline of a script that sets none
    /// (`0`: none; absent: the tool's default).
    #[serde(deserialize_with = "present")]
    pub timeout_seconds: Option<Seconds>,
    /// Other keys under `codemode` (unknown).
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `tuiMode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum TuiModeSetting {
    /// `"inline"` (Pi's `"regular"` too): the terminal's own scrollback.
    #[serde(rename = "inline", alias = "regular")]
    Inline,
    /// `"fullscreen"`: the alternate screen.
    #[serde(rename = "fullscreen")]
    Fullscreen,
}

/// A non-negative, finite number of seconds (`0` disables the timeout).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seconds(pub f64);

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Seconds;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a non-negative number of seconds (0 disables it)")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Seconds, E> {
                Ok(Seconds(v as f64))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Seconds, E> {
                match u64::try_from(v) {
                    Ok(v) => self.visit_u64(v),
                    Err(_) => Err(E::invalid_value(serde::de::Unexpected::Signed(v), &self)),
                }
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Seconds, E> {
                if v >= 0.0 && v.is_finite() {
                    Ok(Seconds(v))
                } else {
                    Err(E::invalid_value(serde::de::Unexpected::Float(v), &self))
                }
            }
        }
        d.deserialize_f64(Visitor)
    }
}

/// An optional field that, when written, must not be `null`: `null` is a
/// wrong type there, not "absent" (settings do not fail open).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// [`present`] for a nested struct whose absence is its default.
fn present_or_default<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<T, D::Error> {
    T::deserialize(d)
}

/// Pi's keys this agent does not type here: not reported as unknown, since
/// the global file may be Pi's own (`defaultTools` is read where it is
/// used: the session builder). Pi's other `codemode.*` keys are not
/// reported either.
const PI_KEYS: [&str; 18] = [
    "defaultTools",
    "hideThinkingBlock",
    "theme",
    "quietStartup",
    "collapseChangelog",
    "lastChangelogVersion",
    "doubleEscapeAction",
    "editorPaddingX",
    "autocompleteMaxVisible",
    "showHardwareCursor",
    "retry",
    "transport",
    "terminal",
    "markdown",
    "skills",
    "prompts",
    "themes",
    "enableSkillCommands",
];

/// One key of a file, typed on its own: how a bad value is traced to its key.
fn parse_one(key: &str, value: &Value) -> Result<KnownSettings, serde_json::Error> {
    KnownSettings::deserialize(Value::Object(Map::from_iter([(
        key.to_string(),
        value.clone(),
    )])))
}

/// Checks one file's object: `Err` names the first key (dotted when nested)
/// whose value has the wrong type; `Ok` lists the unknown keys, dotted.
pub(super) fn check(map: &Map<String, Value>) -> Result<Vec<String>, String> {
    let mut unknown = Vec::new();
    for (key, value) in map {
        let parsed = match parse_one(key, value) {
            Ok(p) => p,
            Err(e) => return Err(describe(key, value, e)),
        };
        // A rule that does not parse stops the file here, naming its list,
        // rather than when a session starts.
        if let Some(permissions) = &parsed.permissions {
            permissions.check().map_err(|e| e.to_string())?;
        }
        if !parsed.other.is_empty() {
            if !PI_KEYS.contains(&key.as_str()) {
                unknown.push(key.clone());
            }
            continue;
        }
        let nested = parsed
            .images
            .other
            .keys()
            .chain(parsed.compaction.other.keys());
        unknown.extend(nested.map(|inner| format!("{key}.{inner}")));
    }
    Ok(unknown)
}

/// The message for a value of the wrong type: the innermost key it can be
/// traced to (`images.blockImages`, not `images`).
fn describe(key: &str, value: &Value, error: serde_json::Error) -> String {
    if let Value::Object(inner) = value {
        for (inner_key, inner_value) in inner {
            let one = Value::Object(Map::from_iter([(inner_key.clone(), inner_value.clone())]));
            if let Err(e) = parse_one(key, &one) {
                return format!("`{key}.{inner_key}`: {e}");
            }
        }
    }
    format!("`{key}`: {error}")
}

/// The typed view of values that were not checked (given in code, or
/// merged): a key whose value does not fit is left out, so its default
/// applies, as if it were absent.
pub(super) fn lenient(values: &Map<String, Value>) -> KnownSettings {
    if let Ok(known) = KnownSettings::deserialize(Value::Object(values.clone())) {
        return known;
    }
    let mut kept = Map::new();
    for (key, value) in values {
        if parse_one(key, value).is_ok() {
            kept.insert(key.clone(), value.clone());
        } else if let Value::Object(inner) = value {
            let fitting = inner
                .iter()
                .filter(|(k, v)| {
                    let one = Value::Object(Map::from_iter([((*k).clone(), (*v).clone())]));
                    parse_one(key, &one).is_ok()
                })
                .map(|(k, v)| (k.clone(), v.clone()));
            kept.insert(key.clone(), Value::Object(fitting.collect()));
        }
    }
    // Every key left fits on its own, and the fields are independent.
    KnownSettings::deserialize(Value::Object(kept)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enabled_models_is_a_list_of_patterns() {
        let good = serde_json::json!({"enabledModels": ["anthropic/*", "gpt-5:high"]});
        let good = good.as_object().cloned().unwrap_or_default();
        assert_eq!(check(&good), Ok(Vec::new()), "known, not reported");
        assert_eq!(
            lenient(&good).enabled_models,
            Some(vec!["anthropic/*".to_string(), "gpt-5:high".to_string()])
        );
        let bad = serde_json::json!({"enabledModels": "gpt-5"});
        let bad = bad.as_object().cloned().unwrap_or_default();
        assert!(check(&bad).is_err_and(|e| e.contains("`enabledModels`")));
    }

    #[test]
    fn permissions_are_checked_key_by_key() {
        let check_json = |v: Value| check(v.as_object().unwrap_or(&Map::new()));
        let good = serde_json::json!({"permissions": {"allow": ["Read"], "deny": null}});
        assert_eq!(check_json(good), Ok(Vec::new()));
        let typo = check_json(serde_json::json!({"permissions": {"deney": ["Bash"]}}));
        assert!(typo.is_err_and(|e| e.starts_with("`permissions.deney`: unknown field")));
        let wrong = check_json(serde_json::json!({"permissions": {"ask": "Bash"}}));
        assert!(wrong.is_err_and(|e| e.starts_with("`permissions.ask`: invalid type")));
        let rule = check_json(serde_json::json!({"permissions": {"deny": ["Bash(rm:*"]}}));
        assert_eq!(
            rule,
            Err("`permissions.deny`: \"Bash(rm:*\": expected Tool(specifier)".to_string())
        );
    }
}
