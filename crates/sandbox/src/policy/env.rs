//! The environment rules: which variables commands never see (secret
//! names, values carrying a password).

use super::CREDENTIAL_WORDS;

/// Endings that mark a glued-together name as a credential
/// (`OPENAITOKEN`, `SSHPASS`); `key` is left out (`HOTKEY`, `MONKEY`).
const GLUED_CREDENTIAL_ENDINGS: [&str; 6] =
    ["token", "secret", "password", "passwd", "apikey", "pass"];

/// Whether `value` holds a URL with a password in it (`scheme://user:pw@`).
fn url_with_password(value: &str) -> bool {
    let mut rest = value;
    while let Some(at) = rest.find("://") {
        let after = &rest[at + 3..];
        let authority = after
            .split(['/', '?', '#', ' ', ',', ';'])
            .next()
            .unwrap_or("");
        // A password (`user:pw@`), or a key alone as the user
        // (`https://KEY@sentry.example/1`).
        if let Some((userinfo, _)) = authority.rsplit_once('@')
            && !userinfo.is_empty()
        {
            return true;
        }
        rest = after;
    }
    // A libpq-style connection string (`host=db password=...`), an Azure
    // one (`AccountKey=`), or a value shaped like a well-known token.
    let lower = value.to_ascii_lowercase();
    [
        "password=",
        "passwd=",
        "accountkey=",
        "sharedaccesskey=",
        "hooks.slack.com/",
    ]
    .iter()
    .any(|m| lower.contains(m))
        || [
            "sk_live_",
            "sk_test_",
            "ghp_",
            "gho_",
            "github_pat_",
            "glpat-",
            "xoxb-",
            "xoxp-",
            "AKIA",
        ]
        .iter()
        .any(|p| value.starts_with(p))
}

/// The words of a variable name, lower-cased: split at non-alphanumerics
/// and at lower-to-upper case changes.
fn name_words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && previous_lower && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        current.push(c.to_ascii_lowercase());
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// A policy's environment rules, its `secretEnv` patterns compiled: see
/// [`SandboxPolicy::env_filter`](super::SandboxPolicy::env_filter).
#[derive(Debug, Clone)]
pub struct EnvFilter<'p> {
    pub(super) pass_env: &'p [String],
    /// `None` when the patterns do not compile (see [`secret_env_matcher`]).
    pub(super) secret_env: Option<globset::GlobSet>,
}

impl EnvFilter<'_> {
    /// As [`SandboxPolicy::hides_env`](super::SandboxPolicy::hides_env).
    pub fn hides_env(&self, name: &str) -> bool {
        if self.pass_env.iter().any(|p| p == name) {
            return false;
        }
        let words = name_words(name);
        // `MYSQL_PWD` is a password; the shell's own `PWD` and `OLDPWD` are not.
        let is_shell_pwd = name.eq_ignore_ascii_case("PWD") || name.eq_ignore_ascii_case("OLDPWD");
        let credential = words.iter().any(|w| CREDENTIAL_WORDS.contains(&w.as_str()))
            || (!is_shell_pwd && words.iter().any(|w| w == "pwd"))
            // Words glued together: `OPENAITOKEN`, `githubsecret`.
            || words.iter().any(|w| {
                GLUED_CREDENTIAL_ENDINGS
                    .iter()
                    .any(|end| w.len() > end.len() && w.ends_with(end))
            })
            || words.windows(2).any(|p| {
                matches!(
                    (p[0].as_str(), p[1].as_str()),
                    ("api" | "access" | "private" | "secret" | "signing", "key")
                )
            });
        credential
            || self
                .secret_env
                .as_ref()
                .is_none_or(|set| set.is_match(name.to_ascii_lowercase()))
    }

    /// As [`SandboxPolicy::hides_var`](super::SandboxPolicy::hides_var).
    pub fn hides_var(&self, name: &str, value: &str) -> bool {
        if self.pass_env.iter().any(|p| p == name) {
            return false;
        }
        self.hides_env(name) || url_with_password(value)
    }
}

/// The `secretEnv` patterns as one set over lower-case names: `*` matches
/// any run of characters, every other character stands for itself, case
/// ignored (ASCII). Only a pattern far past any name's length fails to
/// compile.
pub(super) fn secret_env_matcher(patterns: &[String]) -> Result<globset::GlobSet, globset::Error> {
    let mut set = globset::GlobSetBuilder::new();
    for pattern in patterns {
        set.add(agent_tool::wildcard::wildcard_glob(
            &pattern.to_ascii_lowercase(),
        )?);
    }
    set.build()
}
