//! The UI's errors.

/// What can stop the UI.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TuiError {
    /// The terminal refused a mode or a write (it went away).
    #[error("terminal: {0}")]
    Terminal(#[source] std::io::Error),
    /// Standard input or output is not a terminal.
    #[error("the UI needs a terminal on standard input and output")]
    NotATerminal,
}
