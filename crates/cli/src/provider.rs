//! Choosing a model client from flags, environment and settings.

use std::sync::Arc;

use agent_ai::providers::anthropic::{ANTHROPIC_BASE_URL, AnthropicClient};
use agent_ai::providers::google::{GOOGLE_BASE_URL, GoogleClient};
use agent_ai::providers::openai::{OPENAI_BASE_URL, OpenAiClient};
use agent_ai::providers::openai_responses::{OpenAiResponsesClient, azure_base_url};
use agent_ai::providers::scripted::ScriptedClient;
use agent_ai::{Model, ModelClient};
use coding_agent::Settings;

use crate::args::{ApiKind, ProviderKind, RunArgs};

/// Default OpenAI model.
const OPENAI_DEFAULT_MODEL: &str = "gpt-4o-mini";
/// Default Anthropic model.
const ANTHROPIC_DEFAULT_MODEL: &str = "claude-sonnet-4-5";
/// Default Gemini model.
const GOOGLE_DEFAULT_MODEL: &str = "gemini-2.5-flash";

/// What to say when nothing is configured.
pub const NOT_CONFIGURED: &str = "coding-agent: no model is configured.
Set one of:
  OPENAI_API_KEY=sk-...         (OpenAI; add --model to pick one)
  ANTHROPIC_API_KEY=sk-ant-...  (Anthropic)
  GEMINI_API_KEY=...            (Google Gemini; GOOGLE_API_KEY also works)
or pass --provider openai --base-url http://localhost:11434/v1 --model <name> for a local Ollama,
or --api <openai-completions|openai-responses|anthropic-messages|google-generative-ai> --base-url URL for any server speaking it,
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
///
/// `--provider` says whose models (base URL, key variable, default model);
/// `--api` says which wire protocol, and defaults from the provider:
/// OpenAI's own endpoint speaks the Responses API (as Pi uses it), while
/// `--provider openai --base-url URL` keeps Chat Completions, which
/// OpenAI-compatible servers (Ollama, vLLM, llama.cpp) speak.
pub fn select(
    args: &RunArgs,
    settings: &Settings,
) -> Result<(Arc<dyn ModelClient>, Model), String> {
    let known = settings.known();
    let kind = match args.provider {
        Some(k) => k,
        None if args.script.is_some() => ProviderKind::Scripted,
        None if args.api.is_some() => match args.api {
            Some(ApiKind::AnthropicMessages) => ProviderKind::Anthropic,
            Some(ApiKind::AzureOpenaiResponses) => ProviderKind::AzureOpenaiResponses,
            Some(ApiKind::GoogleGenerativeAi) => ProviderKind::Google,
            _ => ProviderKind::Openai,
        },
        None => match known
            .default_provider
            .as_deref()
            .or(known.provider.as_deref())
        {
            Some("openai") => ProviderKind::Openai,
            Some("anthropic") => ProviderKind::Anthropic,
            Some("azure-openai-responses") => ProviderKind::AzureOpenaiResponses,
            Some("google") => ProviderKind::Google,
            Some("scripted") => ProviderKind::Scripted,
            _ if args.base_url.is_some() => ProviderKind::Openai,
            _ if env("OPENAI_API_KEY").is_some() => ProviderKind::Openai,
            _ if env("ANTHROPIC_API_KEY").is_some() => ProviderKind::Anthropic,
            _ if env("GEMINI_API_KEY")
                .or_else(|| env("GOOGLE_API_KEY"))
                .is_some() =>
            {
                ProviderKind::Google
            }
            _ => return Err(NOT_CONFIGURED.to_string()),
        },
    };
    let model_id = args
        .model
        .clone()
        .or_else(|| known.default_model.clone())
        .or_else(|| known.model.clone());
    let (provider, key_var, default_base, default_model) = match kind {
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
            return Ok((Arc::new(client), model));
        }
        ProviderKind::Openai => (
            "openai",
            "OPENAI_API_KEY",
            Some(OPENAI_BASE_URL.to_string()),
            OPENAI_DEFAULT_MODEL,
        ),
        ProviderKind::Anthropic => (
            "anthropic",
            "ANTHROPIC_API_KEY",
            Some(ANTHROPIC_BASE_URL.to_string()),
            ANTHROPIC_DEFAULT_MODEL,
        ),
        ProviderKind::AzureOpenaiResponses => (
            "azure-openai-responses",
            "AZURE_OPENAI_API_KEY",
            env("AZURE_OPENAI_BASE_URL")
                .or_else(|| env("AZURE_OPENAI_RESOURCE_NAME").map(|r| azure_base_url(&r))),
            OPENAI_DEFAULT_MODEL,
        ),
        ProviderKind::Google => (
            "google",
            if env("GEMINI_API_KEY").is_none() && env("GOOGLE_API_KEY").is_some() {
                "GOOGLE_API_KEY"
            } else {
                "GEMINI_API_KEY"
            },
            Some(GOOGLE_BASE_URL.to_string()),
            GOOGLE_DEFAULT_MODEL,
        ),
    };
    let api = args.api.unwrap_or(match kind {
        ProviderKind::Anthropic => ApiKind::AnthropicMessages,
        ProviderKind::Google => ApiKind::GoogleGenerativeAi,
        ProviderKind::AzureOpenaiResponses => ApiKind::AzureOpenaiResponses,
        _ if args.base_url.is_some() => ApiKind::OpenaiCompletions,
        _ => ApiKind::OpenaiResponses,
    });
    let key = args.api_key.clone().or_else(|| env(key_var));
    let Some(base) = args.base_url.clone().or_else(|| default_base.clone()) else {
        return Err(format!(
            "coding-agent: Azure OpenAI needs the resource's URL: pass --base-url https://RESOURCE.openai.azure.com/openai/v1, or set AZURE_OPENAI_BASE_URL or AZURE_OPENAI_RESOURCE_NAME.\n\n{NOT_CONFIGURED}"
        ));
    };
    // A vendor's own endpoint needs a key; a server of one's own may not.
    let official =
        kind == ProviderKind::AzureOpenaiResponses || Some(&base) == default_base.as_ref();
    if key.is_none() && official {
        let vendor = match kind {
            ProviderKind::Anthropic => "Anthropic",
            ProviderKind::AzureOpenaiResponses => "Azure OpenAI",
            ProviderKind::Google => "Google Gemini",
            _ => "OpenAI",
        };
        let local = if kind == ProviderKind::Openai {
            " (or --base-url for a local server)"
        } else {
            ""
        };
        return Err(format!(
            "coding-agent: {vendor} needs an API key: set {key_var} or pass --api-key{local}.\n\n{NOT_CONFIGURED}"
        ));
    }
    let mut model = Model::new(provider, model_id.unwrap_or_else(|| default_model.into()));
    model.base_url = base.clone();
    model.input = vec!["text".into(), "image".into()];
    let idle = idle_timeout(settings);
    let client: Arc<dyn ModelClient> = match api {
        ApiKind::OpenaiCompletions => {
            model.api = "openai-completions".into();
            Arc::new(OpenAiClient::new(base, key).with_idle_timeout(idle))
        }
        ApiKind::OpenaiResponses | ApiKind::AzureOpenaiResponses => {
            let client = if api == ApiKind::AzureOpenaiResponses {
                OpenAiResponsesClient::azure(base, key)
                    .with_api_version(env("AZURE_OPENAI_API_VERSION"))
            } else {
                OpenAiResponsesClient::new(base, key)
            };
            model.api = client.api().into();
            model.reasoning = reasons(&model.id);
            Arc::new(client.with_idle_timeout(idle))
        }
        ApiKind::AnthropicMessages => {
            model.api = "anthropic-messages".into();
            model.max_tokens = 8192;
            Arc::new(AnthropicClient::new(base, key).with_idle_timeout(idle))
        }
        ApiKind::GoogleGenerativeAi => {
            let client = GoogleClient::new(base, key);
            model.api = client.api().into();
            model.reasoning = thinks(&model.id);
            Arc::new(client.with_idle_timeout(idle))
        }
    };
    Ok((client, model))
}

/// Whether an OpenAI model id names a reasoning model (gpt-5, the o
/// series, codex), whose reasoning items the Responses client asks for and
/// replays. The model registry will say this per model; until then the id
/// decides, and a wrong guess only costs the replayed reasoning.
fn reasons(id: &str) -> bool {
    let id = id.rsplit('/').next().unwrap_or(id).to_ascii_lowercase();
    ["gpt-5", "o1", "o3", "o4", "codex"]
        .iter()
        .any(|p| id.starts_with(p))
}

/// Whether a Gemini model id names a thinking model (2.5 and 3), whose
/// thinking the client asks for when a thinking level is set.
fn thinks(id: &str) -> bool {
    let id = id.rsplit('/').next().unwrap_or(id).to_ascii_lowercase();
    ["gemini-2.5", "gemini-3"].iter().any(|p| id.starts_with(p))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn chosen(args: &[&str]) -> Result<Model, String> {
        let mut argv = vec!["coding-agent"];
        argv.extend(args);
        let cli = crate::args::Cli::try_parse_from(argv).map_err(|e| e.to_string())?;
        select(&cli.run, &Settings::default()).map(|(_, model)| model)
    }

    #[test]
    fn the_provider_picks_the_api_unless_api_says() {
        let azure = "https://r.openai.azure.com/openai/v1";
        // (flags, api, provider)
        let cases: [(&[&str], &str, &str); 6] = [
            (
                &["--provider", "openai", "--api-key", "k"],
                "openai-responses",
                "openai",
            ),
            (
                &["--provider", "openai", "--base-url", "http://l/v1"],
                "openai-completions",
                "openai",
            ),
            (
                &[
                    "--provider",
                    "openai",
                    "--base-url",
                    "http://l/v1",
                    "--api",
                    "openai-responses",
                ],
                "openai-responses",
                "openai",
            ),
            // --api alone: the provider follows from it.
            (
                &["--api", "anthropic-messages", "--base-url", "http://l"],
                "anthropic-messages",
                "anthropic",
            ),
            (
                &["--api", "openai-completions", "--api-key", "k"],
                "openai-completions",
                "openai",
            ),
            (
                &[
                    "--api",
                    "azure-openai-responses",
                    "--base-url",
                    azure,
                    "--api-key",
                    "k",
                ],
                "azure-openai-responses",
                "azure-openai-responses",
            ),
        ];
        for (flags, api, provider) in cases {
            let m = chosen(flags).unwrap();
            assert_eq!(
                (m.api.as_str(), m.provider.as_str()),
                (api, provider),
                "{flags:?}"
            );
        }
        let m = chosen(&["--provider", "openai", "--api-key", "k"]).unwrap();
        assert_eq!(m.base_url, OPENAI_BASE_URL);
        let m = chosen(&[
            "--api",
            "azure-openai-responses",
            "--base-url",
            azure,
            "--api-key",
            "k",
            "--model",
            "gpt-5-mini",
        ])
        .unwrap();
        assert!(m.reasoning);
    }

    #[test]
    fn google_by_provider_or_by_api() {
        let m = chosen(&["--provider", "google", "--api-key", "k"]).unwrap();
        assert_eq!(
            (m.api.as_str(), m.provider.as_str(), m.base_url.as_str()),
            ("google-generative-ai", "google", GOOGLE_BASE_URL)
        );
        assert!(m.reasoning, "gemini-2.5-flash thinks");
        let m = chosen(&[
            "--api",
            "google-generative-ai",
            "--base-url",
            "http://l/v1beta",
            "--model",
            "gemma-3",
        ])
        .unwrap();
        assert_eq!(
            (m.api.as_str(), m.provider.as_str()),
            ("google-generative-ai", "google")
        );
        assert!(!m.reasoning);
    }

    #[test]
    fn vendor_endpoints_need_a_key() {
        let e = chosen(&["--provider", "openai", "--api", "openai-responses"]).unwrap_err();
        assert!(e.contains("OpenAI needs an API key"), "{e}");
        let e = chosen(&[
            "--provider",
            "azure-openai-responses",
            "--base-url",
            "https://r.openai.azure.com/openai/v1",
        ])
        .unwrap_err();
        assert!(e.contains("AZURE_OPENAI_API_KEY"), "{e}");
    }

    #[test]
    fn reasoning_models_by_id() {
        for id in [
            "gpt-5",
            "gpt-5.1-codex",
            "o3-mini",
            "o4-mini",
            "openai/gpt-5",
        ] {
            assert!(reasons(id), "{id}");
        }
        for id in ["gpt-4o-mini", "gpt-4.1", "qwen2.5-coder"] {
            assert!(!reasons(id), "{id}");
        }
    }
}
