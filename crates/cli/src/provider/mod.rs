//! Choosing a model client from flags, environment and settings.
//!
//! - this module: the registry's way (`--model provider/id`) and the
//!   clients of each API;
//! - [`flags`]: the flags' way (`--api`, `--base-url`, a provider chosen
//!   from the environment);
//! - [`listing`]: `--list-models` and what RPC may switch to.

mod flags;
mod listing;
#[cfg(test)]
mod tests;

use flags::legacy;
pub use listing::{list_models, scripted_choices, switchable};

use std::sync::Arc;

use agent_ai::providers::anthropic::{ANTHROPIC_BASE_URL, AnthropicClient};
use agent_ai::providers::bedrock::{
    BedrockClient, DEFAULT_REGION, bedrock_base_url, region_of_endpoint,
};
use agent_ai::providers::google::{GOOGLE_BASE_URL, GoogleClient, vertex_base_url};
use agent_ai::providers::openai::{OPENAI_BASE_URL, OpenAiClient};
use agent_ai::providers::openai_responses::{OpenAiResponsesClient, azure_base_url};
use agent_ai::providers::scripted::ScriptedClient;
use agent_ai::{Model, ModelClient, ModelRegistry};
use coding_agent::Settings;

use crate::args::{ApiKind, ProviderKind, RunArgs};

/// Default OpenAI model.
const OPENAI_DEFAULT_MODEL: &str = "gpt-4o-mini";
/// Default Anthropic model.
const ANTHROPIC_DEFAULT_MODEL: &str = "claude-sonnet-4-5";
/// Default Google model.
const GOOGLE_DEFAULT_MODEL: &str = "gemini-2.5-flash";
/// Default Bedrock model (the US inference profile of Claude Sonnet 4.5).
const BEDROCK_DEFAULT_MODEL: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";

/// What to say when nothing is configured.
pub const NOT_CONFIGURED: &str = "coding-agent: no model is configured.
Set one of:
  OPENAI_API_KEY=sk-...         (OpenAI; add --model to pick one)
  ANTHROPIC_API_KEY=sk-ant-...  (Anthropic)
  GEMINI_API_KEY=...            (Google Gemini; GOOGLE_API_KEY also works)
  AWS_BEARER_TOKEN_BEDROCK=...  (Amazon Bedrock; or AWS credentials with --provider amazon-bedrock)
or pass --provider openai --base-url http://localhost:11434/v1 --model <name> for a local Ollama,
or --api <openai-completions|openai-responses|anthropic-messages|google-generative-ai|google-vertex|bedrock-converse-stream> --base-url URL for any server speaking it,
or --provider scripted --script FILE to replay a script.
To see the agent work without any key or network, run: coding-agent demo";

/// `streamIdleTimeoutSeconds` as the providers take it.
fn idle_timeout(settings: &Settings) -> Option<std::time::Duration> {
    settings
        .stream_idle_timeout_seconds()
        .map(std::time::Duration::from_secs_f64)
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The model registry: the built-in table and the agent directory's
/// `models.json`.
pub fn registry() -> Result<ModelRegistry, String> {
    match coding_agent::agent_dir() {
        Some(dir) => {
            ModelRegistry::load(&dir.join("models.json")).map_err(|e| format!("coding-agent: {e}"))
        }
        None => Ok(ModelRegistry::builtin()),
    }
}

impl ProviderKind {
    /// The kind of a `--provider` name, when it is one of the built-in
    /// endpoints (others come from the registry).
    fn named(name: &str) -> Option<Self> {
        Some(match name {
            "openai" => ProviderKind::Openai,
            "anthropic" => ProviderKind::Anthropic,
            "azure-openai-responses" => ProviderKind::AzureOpenaiResponses,
            "google" => ProviderKind::Google,
            "google-vertex" => ProviderKind::GoogleVertex,
            "amazon-bedrock" => ProviderKind::AmazonBedrock,
            "scripted" => ProviderKind::Scripted,
            _ => return None,
        })
    }
}

/// The client and model to use, or a message for the user.
///
/// `--provider` says whose models (base URL, key variable, default model);
/// `--api` says which wire protocol, and defaults from the provider:
/// OpenAI's own endpoint speaks the Responses API (as Pi uses it), while
/// `--provider openai --base-url URL` keeps Chat Completions, which
/// OpenAI-compatible servers (Ollama, vLLM, llama.cpp) speak. A model the
/// registry knows (`--model provider/id`, or an id) takes its window,
/// prices, reasoning and endpoint from there.
pub fn select(
    args: &RunArgs,
    settings: &Settings,
) -> Result<(Arc<dyn ModelClient>, Model), String> {
    select_with(args, settings, &registry()?)
}

/// [`select`] with a given registry.
pub fn select_with(
    args: &RunArgs,
    settings: &Settings,
    registry: &ModelRegistry,
) -> Result<(Arc<dyn ModelClient>, Model), String> {
    let known = settings.known();
    let provider_name = args
        .provider
        .clone()
        .or_else(|| known.default_provider.clone())
        .or_else(|| known.provider.clone());
    let model_id = args
        .model
        .clone()
        .or_else(|| known.default_model.clone())
        .or_else(|| known.model.clone());
    let named = provider_name.as_deref().and_then(ProviderKind::named);
    if let Some(name) = provider_name.as_deref()
        && named.is_none()
        && !registry.has_provider(name)
    {
        let known: Vec<&str> = [
            "openai",
            "anthropic",
            "azure-openai-responses",
            "google",
            "google-vertex",
            "amazon-bedrock",
            "scripted",
        ]
        .into_iter()
        .chain(registry.provider_names())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
        return Err(format!(
            "coding-agent: unknown provider {name:?} (known: {}; add others in models.json)",
            known.join(", ")
        ));
    }
    let scripted =
        named == Some(ProviderKind::Scripted) || (provider_name.is_none() && args.script.is_some());
    if scripted {
        return scripted_model(args, registry, model_id);
    }
    // The registry decides, unless the flags name an endpoint of their own.
    let own_endpoint = args.base_url.is_some() || args.api.is_some();
    // Azure and Vertex endpoints are per resource or project: the flags way.
    let azure = matches!(
        named,
        Some(ProviderKind::AzureOpenaiResponses | ProviderKind::GoogleVertex)
    );
    if !own_endpoint && !azure {
        let by_registry = match (&model_id, provider_name.as_deref()) {
            (Some(spec), p) => Some(registry.resolve(p, spec)),
            // A registry provider without a model: its first one.
            (None, Some(p)) if named.is_none() => registry
                .models()
                .find(|m| m.provider == p)
                .map(|m| registry.resolve(Some(p), &m.id)),
            _ => None,
        };
        match by_registry {
            Some(Ok(model)) => return registry_client(args, settings, registry, model),
            Some(Err(e)) => return Err(format!("coding-agent: {e}")),
            None => {}
        }
    }
    legacy(args, settings, registry, named, model_id)
}

/// `--provider scripted`: a script, with the registry's facts (window,
/// prices, reasoning) when the model is one it knows.
fn scripted_model(
    args: &RunArgs,
    registry: &ModelRegistry,
    model_id: Option<String>,
) -> Result<(Arc<dyn ModelClient>, Model), String> {
    let Some(path) = &args.script else {
        return Err("coding-agent: --provider scripted needs --script FILE (JSONL, one assistant turn per line)".into());
    };
    let mut client = ScriptedClient::from_file(path).map_err(|e| format!("coding-agent: {e}"))?;
    if let Some(log) = &args.script_log {
        client = client.with_request_file(log);
    }
    let id = model_id.unwrap_or_else(|| "script".into());
    let model = match registry.resolve(None, &id) {
        Ok(known) => Model {
            provider: "scripted".into(),
            api: "scripted".into(),
            base_url: String::new(),
            headers: Default::default(),
            ..known
        },
        Err(_) => Model::new("scripted", id),
    };
    Ok((Arc::new(client), model))
}

/// A client for a model of the registry, at its own endpoint.
fn registry_client(
    args: &RunArgs,
    settings: &Settings,
    registry: &ModelRegistry,
    model: Model,
) -> Result<(Arc<dyn ModelClient>, Model), String> {
    let key = match &args.api_key {
        Some(k) => Some(k.clone()),
        None => registry
            .api_key(&model.provider)
            .map_err(|e| format!("coding-agent: {e}"))?,
    };
    if model.api == "bedrock-converse-stream" {
        // AWS credentials are not an API key: the key is only a Bedrock API key.
        if key.is_none() {
            bedrock_credentials()?;
        }
    } else if key.is_none() && registry.is_builtin_provider(&model.provider) {
        return Err(format!(
            "coding-agent: {} needs an API key: set {} or pass --api-key.\n\n{NOT_CONFIGURED}",
            model.provider,
            key_variable(&model.provider)
        ));
    }
    let client = client_for(&model.api, model.base_url.clone(), key, settings)?;
    Ok((client, model))
}

/// Checks that AWS credentials for Bedrock can be found (environment or
/// profile); the error says where they were looked for.
fn bedrock_credentials() -> Result<(), String> {
    BedrockClient::new()
        .resolve()
        .map(|_| ())
        .map_err(|e| format!("coding-agent: Amazon Bedrock: {e}.\n\n{NOT_CONFIGURED}"))
}

/// A Bedrock client for `base`: the endpoint of the region the environment
/// names when `base` is the built-in table's default endpoint, the region
/// of any other regional endpoint, or `base` itself (a proxy, a test
/// server); `key` is a Bedrock API key, sent instead of signing.
fn bedrock_client(base: String, key: Option<String>) -> BedrockClient {
    let mut client = BedrockClient::new();
    if base.trim_end_matches('/') != bedrock_base_url(DEFAULT_REGION) {
        match region_of_endpoint(&base) {
            Some(region) => client = client.with_region(region),
            None => client = client.with_base_url(Some(base)),
        }
    }
    match key {
        Some(key) => client.with_bearer_token(key),
        None => client,
    }
}

/// The environment variable of a built-in provider's key.
fn key_variable(provider: &str) -> String {
    format!(
        "{}_API_KEY",
        provider.to_ascii_uppercase().replace('-', "_")
    )
}

/// A client speaking `api` at `base`.
fn client_for(
    api: &str,
    base: String,
    key: Option<String>,
    settings: &Settings,
) -> Result<Arc<dyn ModelClient>, String> {
    let idle = idle_timeout(settings);
    Ok(match api {
        "openai-completions" => Arc::new(OpenAiClient::new(base, key).with_idle_timeout(idle)),
        "openai-responses" => {
            Arc::new(OpenAiResponsesClient::new(base, key).with_idle_timeout(idle))
        }
        "azure-openai-responses" => Arc::new(
            OpenAiResponsesClient::azure(base, key)
                .with_api_version(env("AZURE_OPENAI_API_VERSION"))
                .with_idle_timeout(idle),
        ),
        "anthropic-messages" => Arc::new(AnthropicClient::new(base, key).with_idle_timeout(idle)),
        "google-generative-ai" => Arc::new(GoogleClient::new(base, key).with_idle_timeout(idle)),
        "google-vertex" => Arc::new(GoogleClient::vertex(base, key).with_idle_timeout(idle)),
        "bedrock-converse-stream" => Arc::new(bedrock_client(base, key).with_idle_timeout(idle)),
        other => {
            return Err(format!(
                "coding-agent: this build cannot speak the {other} API yet"
            ));
        }
    })
}
