//! Cross-crate integration tests live in `tests/`; this library holds only
//! the documentation's Rust blocks, compiled and run as its doctests (its
//! dev-dependencies are every crate they use).

/// The README's Rust blocks.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;

/// The blocks of the tool author's guide.
#[cfg(doctest)]
#[doc = include_str!("../../docs/writing-tools.md")]
struct WritingToolsDoctests;
