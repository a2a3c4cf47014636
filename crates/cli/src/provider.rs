//! Choosing a model client from flags, environment and settings.

use std::sync::Arc;

use agent_ai::providers::anthropic::{ANTHROPIC_BASE_URL, AnthropicClient};
use agent_ai::providers::bedrock::{
    BedrockClient, DEFAULT_REGION, bedrock_base_url, region_of_endpoint,
};
use agent_ai::providers::google::{GOOGLE_BASE_URL, GoogleClient};
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
or --api <openai-completions|openai-responses|anthropic-messages|google-generative-ai|bedrock-converse-stream> --base-url URL for any server speaking it,
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
    let azure = named == Some(ProviderKind::AzureOpenaiResponses);
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
        "bedrock-converse-stream" => Arc::new(bedrock_client(base, key).with_idle_timeout(idle)),
        other => {
            return Err(format!(
                "coding-agent: this build cannot speak the {other} API yet"
            ));
        }
    })
}

/// Flags that name the endpoint (`--base-url`, `--api`), Azure, or a
/// provider chosen from the environment.
fn legacy(
    args: &RunArgs,
    settings: &Settings,
    registry: &ModelRegistry,
    named: Option<ProviderKind>,
    model_id: Option<String>,
) -> Result<(Arc<dyn ModelClient>, Model), String> {
    let kind = match named {
        Some(k) => k,
        None if args.api.is_some() => match args.api {
            Some(ApiKind::AnthropicMessages) => ProviderKind::Anthropic,
            Some(ApiKind::AzureOpenaiResponses) => ProviderKind::AzureOpenaiResponses,
            Some(ApiKind::GoogleGenerativeAi) => ProviderKind::Google,
            Some(ApiKind::BedrockConverseStream) => ProviderKind::AmazonBedrock,
            _ => ProviderKind::Openai,
        },
        None if args.base_url.is_some() => ProviderKind::Openai,
        None if env("OPENAI_API_KEY").is_some() => ProviderKind::Openai,
        None if env("ANTHROPIC_API_KEY").is_some() => ProviderKind::Anthropic,
        None if env("GEMINI_API_KEY")
            .or_else(|| env("GOOGLE_API_KEY"))
            .is_some() =>
        {
            ProviderKind::Google
        }
        None if env("AWS_BEARER_TOKEN_BEDROCK").is_some() => ProviderKind::AmazonBedrock,
        None => return Err(NOT_CONFIGURED.to_string()),
    };
    let (provider, key_var, default_base, default_model) = match kind {
        ProviderKind::Scripted => return scripted_model(args, registry, model_id),
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
        ProviderKind::AmazonBedrock => (
            "amazon-bedrock",
            "AWS_BEARER_TOKEN_BEDROCK",
            Some(bedrock_base_url(DEFAULT_REGION)),
            BEDROCK_DEFAULT_MODEL,
        ),
    };
    let api = args.api.unwrap_or(match kind {
        ProviderKind::Anthropic => ApiKind::AnthropicMessages,
        ProviderKind::Google => ApiKind::GoogleGenerativeAi,
        ProviderKind::AmazonBedrock => ApiKind::BedrockConverseStream,
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
    if kind == ProviderKind::AmazonBedrock || api == ApiKind::BedrockConverseStream {
        // AWS credentials are not an API key: the key is only a Bedrock API key.
        if key.is_none() {
            bedrock_credentials()?;
        }
    } else if key.is_none() && official {
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
    let id = model_id.unwrap_or_else(|| default_model.into());
    let id = id
        .strip_prefix(&format!("{provider}/"))
        .map(str::to_string)
        .unwrap_or(id);
    // The registry's facts about a model it knows, at this endpoint.
    let mut model = match registry.find(
        if provider == "azure-openai-responses" {
            "openai"
        } else {
            provider
        },
        &id,
    ) {
        Some(known) => Model {
            provider: provider.into(),
            headers: Default::default(),
            ..known.clone()
        },
        None => {
            let mut m = Model::new(provider, id);
            m.input = vec!["text".into(), "image".into()];
            m
        }
    };
    model.base_url = base.clone();
    let api_name = match api {
        ApiKind::OpenaiCompletions => "openai-completions",
        ApiKind::OpenaiResponses => "openai-responses",
        ApiKind::AzureOpenaiResponses => "azure-openai-responses",
        ApiKind::AnthropicMessages => "anthropic-messages",
        ApiKind::GoogleGenerativeAi => "google-generative-ai",
        ApiKind::BedrockConverseStream => "bedrock-converse-stream",
    };
    model.api = api_name.into();
    match api {
        ApiKind::OpenaiResponses | ApiKind::AzureOpenaiResponses => {
            model.reasoning |= reasons(&model.id);
        }
        ApiKind::GoogleGenerativeAi => model.reasoning |= thinks(&model.id),
        _ => {}
    }
    let client = client_for(api_name, base, key, settings)?;
    Ok((client, model))
}

/// What RPC `set_model`, `cycle_model` and `get_available_models` work
/// with: the registry's models whose provider has a key (the current model
/// first), and a resolver that builds a client for any `provider/id` the
/// flags could have named. A scripted run keeps its script: no resolver,
/// and no list (any id of the scripted provider goes).
pub fn switchable(
    args: &RunArgs,
    settings: &Settings,
    current: &Model,
) -> (Vec<Model>, Option<coding_agent::rpc::ModelResolver>) {
    if current.provider == "scripted" {
        return (Vec::new(), None);
    }
    let Ok(registry) = registry() else {
        return (Vec::new(), None);
    };
    let mut models = vec![current.clone()];
    models.extend(
        registry
            .models()
            .filter(|m| registry.has_api_key(&m.provider))
            .filter(|m| !(m.provider == current.provider && m.id == current.id))
            .cloned(),
    );
    let (args, settings, current) = (args.clone(), settings.clone(), current.clone());
    let resolve: coding_agent::rpc::ModelResolver = Arc::new(move |provider, id| {
        let mut args = args.clone();
        // The flags' endpoint and key belong to the provider they started
        // with; another provider comes from the registry and environment.
        if provider != current.provider {
            args.base_url = None;
            args.api = None;
            args.api_key = None;
        }
        args.provider = Some(provider.to_string());
        args.model = Some(id.to_string());
        select_with(&args, &settings, &registry)
            .map(|(client, model)| (model, client))
            .map_err(|e| e.trim_start_matches("coding-agent: ").to_string())
    });
    (models, Some(resolve))
}

/// Prints the models matching `search` as a table, with the built-in
/// table's date.
pub fn list_models(registry: &ModelRegistry, search: &str) -> String {
    let money = |v: f64| {
        if v == 0.0 {
            "-".to_string()
        } else {
            format!("${v}")
        }
    };
    let tokens = |n: u64| {
        if n >= 1_000_000 && n.is_multiple_of(1_000_000) {
            format!("{}M", n / 1_000_000)
        } else if n >= 1000 {
            format!("{}K", n / 1000)
        } else {
            n.to_string()
        }
    };
    let mut rows = vec![[
        "provider".to_string(),
        "model".into(),
        "context".into(),
        "max out".into(),
        "in $/M".into(),
        "out $/M".into(),
        "reasoning".into(),
    ]];
    for m in registry.search(search) {
        rows.push([
            m.provider.clone(),
            m.id.clone(),
            tokens(m.context_window),
            tokens(m.max_tokens),
            money(m.cost.input),
            money(m.cost.output),
            if m.reasoning { "yes" } else { "no" }.into(),
        ]);
    }
    let mut widths = [0usize; 7];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let line: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    if rows.len() == 1 {
        out.push_str(&format!("(no model matches {search:?})\n"));
    }
    out.push_str(&format!(
        "Built-in table of {}; add or change models in <agent dir>/models.json.",
        agent_ai::BUILTIN_MODELS_DATE
    ));
    out
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
