//! The cross-crate integration tests, one binary (as rust-analyzer keeps
//! its own): a module per concern, picked with a name filter
//! (`cargo nextest run -p integration-tests -E 'test(/^providers::/)'`).

mod agent_loop;
mod bedrock;
mod bedrock_sdk;
mod fakes_sdk;
mod fuzz;
mod gemini;
mod gemini_sdk;
mod handoff_matrix;
mod hardening;
mod library_use;
mod mutation_queue;
mod openai_sdk;
mod product_layer;
mod provider_stalls;
mod providers;
mod responses;
mod wire_format;
