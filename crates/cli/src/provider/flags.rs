//! The flags' way to a client: `--api`, `--base-url`, `--provider` with
//! its environment, and the environment alone.

use super::*;

/// Flags that name the endpoint (`--base-url`, `--api`), Azure, or a
/// provider chosen from the environment.
pub(super) fn legacy(
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
            Some(ApiKind::GoogleVertex) => ProviderKind::GoogleVertex,
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
        ProviderKind::GoogleVertex => (
            "google-vertex",
            "GOOGLE_CLOUD_API_KEY",
            env("GOOGLE_CLOUD_PROJECT").map(|project| {
                let location = env("GOOGLE_CLOUD_LOCATION").unwrap_or_else(|| "global".into());
                vertex_base_url(&project, &location)
            }),
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
        ProviderKind::GoogleVertex => ApiKind::GoogleVertex,
        ProviderKind::AmazonBedrock => ApiKind::BedrockConverseStream,
        ProviderKind::AzureOpenaiResponses => ApiKind::AzureOpenaiResponses,
        _ if args.base_url.is_some() => ApiKind::OpenaiCompletions,
        _ => ApiKind::OpenaiResponses,
    });
    let key = args.api_key.clone().or_else(|| env(key_var));
    let Some(base) = args.base_url.clone().or_else(|| default_base.clone()) else {
        if kind == ProviderKind::GoogleVertex {
            return Err(format!(
                "coding-agent: Vertex AI needs a project: set GOOGLE_CLOUD_PROJECT (and GOOGLE_CLOUD_LOCATION, default global), or pass --base-url https://aiplatform.googleapis.com/v1/projects/PROJECT/locations/global.\n\n{NOT_CONFIGURED}"
            ));
        }
        return Err(format!(
            "coding-agent: Azure OpenAI needs the resource's URL: pass --base-url https://RESOURCE.openai.azure.com/openai/v1, or set AZURE_OPENAI_BASE_URL or AZURE_OPENAI_RESOURCE_NAME.\n\n{NOT_CONFIGURED}"
        ));
    };
    // A vendor's own endpoint needs a key; a server of one's own may not.
    let official = kind == ProviderKind::AzureOpenaiResponses
        || (kind == ProviderKind::GoogleVertex && base.contains(".googleapis.com/"))
        || Some(&base) == default_base.as_ref();
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
            ProviderKind::GoogleVertex => "Vertex AI",
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
        match provider {
            "azure-openai-responses" => "openai",
            "google-vertex" => "google",
            other => other,
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
        ApiKind::GoogleVertex => "google-vertex",
        ApiKind::BedrockConverseStream => "bedrock-converse-stream",
    };
    model.api = api_name.into();
    match api {
        ApiKind::OpenaiResponses | ApiKind::AzureOpenaiResponses => {
            model.reasoning |= reasons(&model.id);
        }
        ApiKind::GoogleGenerativeAi | ApiKind::GoogleVertex => model.reasoning |= thinks(&model.id),
        _ => {}
    }
    let client = client_for(api_name, base, key, settings)?;
    Ok((client, model))
}

/// Whether an OpenAI model id names a reasoning model (gpt-5, the o
/// series, codex), whose reasoning items the Responses client asks for and
/// replays. The model registry will say this per model; until then the id
/// decides, and a wrong guess only costs the replayed reasoning.
pub(super) fn reasons(id: &str) -> bool {
    let id = id.rsplit('/').next().unwrap_or(id).to_ascii_lowercase();
    ["gpt-5", "o1", "o3", "o4", "codex"]
        .iter()
        .any(|p| id.starts_with(p))
}

/// Whether a Gemini model id names a thinking model (2.5 and 3), whose
/// thinking the client asks for when a thinking level is set.
pub(super) fn thinks(id: &str) -> bool {
    let id = id.rsplit('/').next().unwrap_or(id).to_ascii_lowercase();
    ["gemini-2.5", "gemini-3"].iter().any(|p| id.starts_with(p))
}
