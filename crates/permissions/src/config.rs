//! [`PermissionConfig`]: the `permissions` section of the settings, typed.

use std::path::Path;

use serde::{Deserialize, Deserializer};

use super::rule::{PermissionRule, RuleError};

/// The rule lists as the settings write them (`permissions.allow`, `.ask`,
/// `.deny`; Claude Code's names). A key this struct does not know is an
/// error naming it: a misspelt `deny` must not leave the rules it held
/// unread (settings do not fail open). A list written as `null` is empty.
///
/// ```
/// use agent_permissions::PermissionConfig;
/// let config: PermissionConfig =
///     serde_json::from_value(serde_json::json!({"deny": ["Bash(rm:*)"]})).unwrap();
/// assert_eq!(config.deny, ["Bash(rm:*)"]);
/// let typo = serde_json::from_value::<PermissionConfig>(serde_json::json!({"deney": []}));
/// assert!(typo.unwrap_err().to_string().contains("unknown field `deney`"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PermissionConfig {
    /// Rules whose calls run without asking.
    #[serde(deserialize_with = "null_is_empty")]
    pub allow: Vec<String>,
    /// Rules whose calls need a person's approval.
    #[serde(deserialize_with = "null_is_empty")]
    pub ask: Vec<String>,
    /// Rules whose calls are refused.
    #[serde(deserialize_with = "null_is_empty")]
    pub deny: Vec<String>,
}

/// Permission settings that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PermissionConfigError {
    /// The section is not an object of rule lists (a wrong type or an
    /// unknown key, which serde's message names).
    #[error("`permissions`: {0}")]
    Shape(String),
    /// A rule that does not parse, with the list it is in (`allow`, `ask`
    /// or `deny`).
    #[error("`permissions.{list}`: {error}")]
    Rule {
        /// `allow`, `ask` or `deny`.
        list: &'static str,
        /// The rule and why it does not parse.
        error: RuleError,
    },
}

impl PermissionConfig {
    /// The section from its JSON value.
    ///
    /// # Errors
    /// [`PermissionConfigError::Shape`] for a value of the wrong shape.
    pub fn from_value(value: &serde_json::Value) -> Result<Self, PermissionConfigError> {
        Self::deserialize(value).map_err(|e| PermissionConfigError::Shape(e.to_string()))
    }

    /// Whether every rule parses, so a settings file can be refused when it
    /// is read rather than when a session starts. Path globs are checked
    /// against `/`; [`PermissionRules`](crate::PermissionRules) anchors them
    /// at the working directory.
    ///
    /// # Errors
    /// The first rule that does not parse.
    pub fn check(&self) -> Result<(), PermissionConfigError> {
        self.lists()
            .try_for_each(|(list, rules)| parse_list(list, rules, Path::new("/")).map(drop))
    }

    /// The three lists with their names.
    pub(crate) fn lists(&self) -> impl Iterator<Item = (&'static str, &[String])> {
        [
            ("allow", self.allow.as_slice()),
            ("ask", self.ask.as_slice()),
            ("deny", self.deny.as_slice()),
        ]
        .into_iter()
    }
}

/// Each rule of `list` parsed, path globs anchored at `cwd`.
pub(crate) fn parse_list<S: AsRef<str>>(
    list: &'static str,
    rules: &[S],
    cwd: &Path,
) -> Result<Vec<PermissionRule>, PermissionConfigError> {
    rules
        .iter()
        .map(|r| {
            PermissionRule::parse(r.as_ref(), cwd)
                .map_err(|error| PermissionConfigError::Rule { list, error })
        })
        .collect()
}

fn null_is_empty<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(Option::<Vec<String>>::deserialize(d)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn errors_name_the_key() {
        let wrong = PermissionConfig::from_value(&json!({"deny": "Bash(rm:*)"})).unwrap_err();
        assert!(
            wrong.to_string().starts_with("`permissions`: invalid type"),
            "{wrong}"
        );
        let unknown = PermissionConfig::from_value(&json!({"allow": [], "default": "ask"}));
        assert!(
            unknown
                .unwrap_err()
                .to_string()
                .contains("unknown field `default`"),
            "the unknown key is named"
        );
        let bad = PermissionConfig::from_value(&json!({"ask": null, "deny": ["Bash(rm:*"]}));
        let bad = bad.unwrap().check().unwrap_err();
        assert_eq!(
            bad.to_string(),
            "`permissions.deny`: \"Bash(rm:*\": expected Tool(specifier)"
        );
    }
}
