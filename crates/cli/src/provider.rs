//! Choosing a model client from flags, environment and settings.

use std::sync::Arc;

use agent_ai::providers::anthropic::{ANTHROPIC_BASE_URL, AnthropicClient};
use agent_ai::providers::openai::{OPENAI_BASE_URL, OpenAiClient};
use agent_ai::providers::scripted::ScriptedClient;
use agent_ai::{Model, ModelClient};
use coding_agent::Settings;

use crate::args::{ProviderKind, RunArgs};

/// Default OpenAI model.
const OPENAI_DEFAULT_MODEL: &str = "gpt-4o-mini";
/// Default Anthropic model.
const ANTHROPIC_DEFAULT_MODEL: &str = "claude-sonnet-4-5";

/// What to say when nothing is configured.
pub const NOT_CONFIGURED: &str = "coding-agent: no model is configured.
Set one of:
  OPENAI_API_KEY=sk-...         (OpenAI; add --model to pick one)
  ANTHROPIC_API_KEY=sk-ant-...  (Anthropic)
or pass --provider openai --base-url http://localhost:11434/v1 --model <name> for a local Ollama,
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

/// The client and model to use, or a message for the user.
pub fn select(
    args: &RunArgs,
    settings: &Settings,
) -> Result<(Arc<dyn ModelClient>, Model), String> {
    let known = settings.known();
    let kind = match args.provider {
        Some(k) => k,
        None if args.script.is_some() => ProviderKind::Scripted,
        None => match known
            .default_provider
            .as_deref()
            .or(known.provider.as_deref())
        {
            Some("openai") => ProviderKind::Openai,
            Some("anthropic") => ProviderKind::Anthropic,
            Some("scripted") => ProviderKind::Scripted,
            _ if args.base_url.is_some() => ProviderKind::Openai,
            _ if env("OPENAI_API_KEY").is_some() => ProviderKind::Openai,
            _ if env("ANTHROPIC_API_KEY").is_some() => ProviderKind::Anthropic,
            _ => return Err(NOT_CONFIGURED.to_string()),
        },
    };
    let model_id = args
        .model
        .clone()
        .or_else(|| known.default_model.clone())
        .or_else(|| known.model.clone());
    match kind {
        ProviderKind::Scripted => {
            let Some(path) = &args.script else {
                return Err("coding-agent: --provider scripted needs --script FILE (JSONL, one assistant turn per line)".into());
            };
            let mut client =
                ScriptedClient::from_file(path).map_err(|e| format!("coding-agent: {e}"))?;
            if let Some(log) = &args.script_log {
                client = client.with_request_file(log);
            }
            let model = Model::new("scripted", model_id.unwrap_or_else(|| "script".into()));
            Ok((Arc::new(client), model))
        }
        ProviderKind::Openai => {
            let key = args.api_key.clone().or_else(|| env("OPENAI_API_KEY"));
            let base = args
                .base_url
                .clone()
                .unwrap_or_else(|| OPENAI_BASE_URL.to_string());
            if key.is_none() && base == OPENAI_BASE_URL {
                return Err(format!(
                    "coding-agent: OpenAI needs an API key: set OPENAI_API_KEY or pass --api-key (or --base-url for a local server).\n\n{NOT_CONFIGURED}"
                ));
            }
            let mut model = Model::new(
                "openai",
                model_id.unwrap_or_else(|| OPENAI_DEFAULT_MODEL.into()),
            );
            model.api = "openai-completions".into();
            model.base_url = base.clone();
            model.input = vec!["text".into(), "image".into()];
            let client = OpenAiClient::new(base, key).with_idle_timeout(idle_timeout(settings));
            Ok((Arc::new(client), model))
        }
        ProviderKind::Anthropic => {
            let key = args.api_key.clone().or_else(|| env("ANTHROPIC_API_KEY"));
            let base = args
                .base_url
                .clone()
                .unwrap_or_else(|| ANTHROPIC_BASE_URL.to_string());
            if key.is_none() && base == ANTHROPIC_BASE_URL {
                return Err(format!(
                    "coding-agent: Anthropic needs an API key: set ANTHROPIC_API_KEY or pass --api-key.\n\n{NOT_CONFIGURED}"
                ));
            }
            let mut model = Model::new(
                "anthropic",
                model_id.unwrap_or_else(|| ANTHROPIC_DEFAULT_MODEL.into()),
            );
            model.api = "anthropic-messages".into();
            model.base_url = base.clone();
            model.input = vec!["text".into(), "image".into()];
            model.max_tokens = 8192;
            let client = AnthropicClient::new(base, key).with_idle_timeout(idle_timeout(settings));
            Ok((Arc::new(client), model))
        }
    }
}
