//! [`SandboxDenied`]: how operations say "refused by policy".

use std::io;

/// The error inside an [`io::Error`] with which a confining [`FileOps`](super::FileOps)
/// (the sandbox, path rules) refused an access; its text names the root
/// or rule, and the tools show it to the model as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SandboxDenied(pub String);

impl SandboxDenied {
    /// The sandbox's explanation, when `error` is a refusal of the sandbox.
    pub fn message(error: &io::Error) -> Option<&str> {
        error
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<SandboxDenied>())
            .map(|d| d.0.as_str())
    }
}
