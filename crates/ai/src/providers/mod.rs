//! Model providers: implementations of [`ModelClient`](crate::ModelClient).
//!
//! - [`scripted`]: replays a JSONL script (tests, examples, the demo).
//! - [`openai`]: Chat Completions, for OpenAI and compatible servers.
//! - [`anthropic`]: the Messages API.
//!
//! Both HTTP providers stream over SSE, retry 429 and 5xx answers a bounded
//! number of times with backoff, honour cancellation (`stopReason: aborted`), and
//! turn HTTP errors and broken streams into an assistant message with
//! `stopReason: error` and a useful `errorMessage`.

#[cfg(feature = "anthropic")]
pub mod anthropic;
#[cfg(any(feature = "openai", feature = "anthropic"))]
mod builder;
#[cfg(any(feature = "openai", feature = "anthropic"))]
mod http;
pub mod lowering;
#[cfg(feature = "openai")]
pub mod openai;
pub mod scripted;
pub mod sse;

#[cfg(any(feature = "openai", feature = "anthropic"))]
pub use http::{DEFAULT_IDLE_TIMEOUT, RetryPolicy};
