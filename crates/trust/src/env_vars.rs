//! `${VAR}` and `${VAR:-default}` in settings strings (the `mcpServers`
//! entries): one expansion, shared by the code that starts the servers
//! (`agent_mcp`) and by [`pins`](crate::pins), which pins the files the
//! expanded command will run, not the text before expansion.

/// A `${...}` that cannot be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExpandError {
    /// `${` without its `}`.
    #[error("unclosed ${{ in {text:?}")]
    Unclosed {
        /// The whole string.
        text: String,
    },
    /// `${VAR}` with `VAR` unset and no default.
    #[error("environment variable {var} is not set (write ${{{var}:-default}} for a default)")]
    Unset {
        /// The variable.
        var: String,
    },
}

/// `text` with `${VAR}` and `${VAR:-default}` replaced by the environment's
/// values (the default when `VAR` is unset). Nothing else is expanded: no
/// `$VAR`, no `~`, no globs (the servers are not started through a shell).
///
/// ```
/// use agent_trust::env_vars::expand;
/// assert_eq!(expand("${CODING_AGENT_NO_SUCH_VAR:-srv.sh}").unwrap(), "srv.sh");
/// assert!(expand("${CODING_AGENT_NO_SUCH_VAR}").is_err());
/// ```
///
/// # Errors
/// An unclosed `${`, or an unset variable without a default.
pub fn expand(text: &str) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(ExpandError::Unclosed {
                text: text.to_string(),
            });
        };
        let inner = &after[..end];
        let (var, default) = match inner.split_once(":-") {
            Some((v, d)) => (v, Some(d)),
            None => (inner, None),
        };
        match (std::env::var(var), default) {
            (Ok(value), _) => out.push_str(&value),
            (Err(_), Some(d)) => out.push_str(d),
            (Err(_), None) => {
                return Err(ExpandError::Unset {
                    var: var.to_string(),
                });
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}
