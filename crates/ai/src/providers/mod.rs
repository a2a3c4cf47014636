//! Model providers: implementations of [`ModelClient`](crate::ModelClient).
//!
//! - [`scripted`]: replays a JSONL script (tests, examples, the demo).
//! - [`openai`]: Chat Completions, for OpenAI and compatible servers.
//! - [`openai_responses`]: the Responses API, on OpenAI and on Azure OpenAI.
//! - [`anthropic`]: the Messages API.
//! - [`google`]: Google's Gemini API (`streamGenerateContent`).
//! - [`bedrock`]: Amazon Bedrock's Converse API (`ConverseStream`).
//!
//! The HTTP providers stream (over SSE; Bedrock over AWS event-stream frames), retry 429 and 5xx answers a bounded
//! number of times with backoff (a server's `Retry-After` up to a cap, see
//! [`RetryPolicy`]), honour cancellation (`stopReason: aborted`), and
//! turn HTTP errors and broken streams into an assistant message with
//! `stopReason: error` and a useful `errorMessage`.

#[cfg(feature = "anthropic")]
pub mod anthropic;
#[cfg(feature = "bedrock")]
pub mod bedrock;
#[cfg(any(
    feature = "openai",
    feature = "openai-responses",
    feature = "anthropic",
    feature = "google",
    feature = "bedrock"
))]
mod builder;
#[cfg(feature = "google")]
pub mod google;
#[cfg(any(
    feature = "openai",
    feature = "openai-responses",
    feature = "anthropic",
    feature = "google",
    feature = "bedrock"
))]
// The SSE half is unused in a build with only `bedrock`.
#[cfg_attr(
    not(any(
        feature = "openai",
        feature = "openai-responses",
        feature = "anthropic",
        feature = "google"
    )),
    allow(dead_code)
)]
mod http;
pub mod lowering;
#[cfg(feature = "openai")]
pub mod openai;
#[cfg(feature = "openai-responses")]
pub mod openai_responses;
pub mod scripted;
pub mod sse;

#[cfg(any(
    feature = "openai",
    feature = "openai-responses",
    feature = "anthropic",
    feature = "google",
    feature = "bedrock"
))]
pub use http::{DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_RETRY_AFTER, RetryPolicy};

/// Makes the TLS crypto provider of this crate's features (`tls-ring`, the
/// default, or `tls-aws-lc`) the process's rustls default, unless the
/// program installed one already. The HTTP providers call it before
/// building a client; other code that builds a `reqwest` client (an MCP
/// HTTP client) calls it too. Without either feature it does nothing, and
/// the program must install a provider itself.
///
/// ```
/// agent_ai::providers::install_tls_provider();
/// agent_ai::providers::install_tls_provider(); // once is enough; twice is harmless
/// ```
pub fn install_tls_provider() {
    #[cfg(feature = "tls-ring")]
    let provider = Some(rustls::crypto::ring::default_provider());
    #[cfg(all(feature = "tls-aws-lc", not(feature = "tls-ring")))]
    let provider = Some(rustls::crypto::aws_lc_rs::default_provider());
    #[cfg(not(any(feature = "tls-ring", feature = "tls-aws-lc")))]
    let provider: Option<()> = None;
    #[cfg(any(feature = "tls-ring", feature = "tls-aws-lc"))]
    if let Some(provider) = provider
        && rustls::crypto::CryptoProvider::get_default().is_none()
    {
        // Another thread may win the race: its provider is as good.
        let _ = provider.install_default();
    }
    #[cfg(not(any(feature = "tls-ring", feature = "tls-aws-lc")))]
    let _ = provider;
}

#[cfg(test)]
mod wire_tests;
