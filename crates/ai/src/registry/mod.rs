//! The model registry: a dated built-in table of models (data, not code)
//! with a user's `models.json` merged on top, in the format of Pi's
//! `~/.pi/agent/models.json`.
//!
//! A `models.json` adds providers (`baseUrl`, `api`, `apiKey`, `headers`,
//! `models`), adds or replaces models of a built-in provider, moves a
//! built-in provider elsewhere (`baseUrl`), and changes single fields of
//! built-in models (`modelOverrides`). `apiKey` and header values are a
//! literal, the name of an environment variable (used when it is set), or
//! `!command` (its standard output).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::model::{MaxTokensField, Model, ModelCompat};

mod nearest;

pub use nearest::nearest_matches;

/// The built-in table, as shipped.
const BUILTIN_JSON: &str = include_str!("../../data/models.json");

/// The date of the built-in table's facts (context windows, prices).
pub const BUILTIN_MODELS_DATE: &str = "2026-12-03";

/// The APIs a provider or model may name.
const KNOWN_APIS: [&str; 6] = [
    "openai-completions",
    "openai-responses",
    "azure-openai-responses",
    "anthropic-messages",
    "google-generative-ai",
    "bedrock-converse-stream",
];

/// Defaults of a model that says nothing (Pi's `models.json` defaults).
const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;
const DEFAULT_MAX_TOKENS: u64 = 16_384;

/// Why the registry could not be built or could not answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// The models file exists but cannot be read.
    #[error("cannot read {}: {source}", file.display())]
    Read {
        /// The file.
        file: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// A value of the models file is wrong; `key` is its dotted path.
    #[error("{}: `{key}`: {message}", file.display())]
    Invalid {
        /// The file.
        file: PathBuf,
        /// Dotted path of the key (`providers.ollama.models[0].contextWindow`).
        key: String,
        /// What is wrong.
        message: String,
    },
    /// No model matches; `suggestions` are the nearest known ones.
    #[error("unknown model {spec:?}{}", suggest(suggestions))]
    UnknownModel {
        /// What was asked for.
        spec: String,
        /// Nearest `provider/id`s, best first.
        suggestions: Vec<String>,
    },
    /// An `apiKey` or header value could not be resolved.
    #[error("{what} of provider {provider}: {message}")]
    Value {
        /// The provider.
        provider: String,
        /// `apiKey` or `headers.NAME`.
        what: String,
        /// What went wrong.
        message: String,
    },
}

fn suggest(suggestions: &[String]) -> String {
    if suggestions.is_empty() {
        " (coding-agent --list-models shows the known models)".to_string()
    } else {
        format!("; did you mean {}?", suggestions.join(", "))
    }
}

/// Where an `apiKey` (or header value) comes from.
///
/// ```
/// use agent_ai::ApiKeySource;
/// assert_eq!(ApiKeySource::parse("!pass show k"), ApiKeySource::Command("pass show k".into()));
/// assert_eq!(ApiKeySource::parse("MY_KEY"), ApiKeySource::EnvOrLiteral("MY_KEY".into()));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiKeySource {
    /// The named environment variable's value when it is set and not
    /// empty, otherwise the text itself (Pi's rule).
    EnvOrLiteral(String),
    /// A shell command (`sh -c`) whose trimmed standard output is the value.
    Command(String),
    /// The named environment variable only (the built-in providers' keys).
    Env(String),
}

impl ApiKeySource {
    /// Reads a `models.json` value: `!command`, else a variable name or a
    /// literal.
    pub fn parse(text: &str) -> Self {
        match text.strip_prefix('!') {
            Some(command) => ApiKeySource::Command(command.to_string()),
            None => ApiKeySource::EnvOrLiteral(text.to_string()),
        }
    }

    /// The value; `Ok(None)` when an [`ApiKeySource::Env`] variable is unset.
    ///
    /// # Errors
    /// The command cannot start, fails, or prints nothing.
    pub fn resolve(&self) -> Result<Option<String>, String> {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        match self {
            ApiKeySource::Env(name) => Ok(env(name)),
            ApiKeySource::EnvOrLiteral(text) => Ok(Some(env(text).unwrap_or_else(|| text.clone()))),
            ApiKeySource::Command(command) => {
                tracing::debug!(%command, "running a models.json value command");
                let out = std::process::Command::new("sh")
                    .arg("-c")
                    .arg(command)
                    .stdin(std::process::Stdio::null())
                    .stderr(std::process::Stdio::inherit())
                    .output()
                    .map_err(|e| format!("cannot run `{command}`: {e}"))?;
                if !out.status.success() {
                    return Err(format!("`{command}` failed ({})", out.status));
                }
                let value = String::from_utf8_lossy(&out.stdout).trim().to_string();
                if value.is_empty() {
                    return Err(format!("`{command}` printed nothing"));
                }
                Ok(Some(value))
            }
        }
    }
}

/// One provider of the registry.
#[derive(Debug, Clone)]
struct Provider {
    name: String,
    api: String,
    base_url: String,
    api_key: Option<ApiKeySource>,
    headers: BTreeMap<String, String>,
    builtin: bool,
    models: Vec<Model>,
}

/// The known models: the built-in table, with a `models.json` merged on
/// top.
///
/// ```
/// use agent_ai::ModelRegistry;
/// let registry = ModelRegistry::builtin();
/// let m = registry.find("anthropic", "claude-sonnet-4-5").unwrap();
/// assert_eq!((m.context_window, m.max_tokens), (200_000, 64_000));
/// assert_eq!(m.cost.input, 3.0);
/// assert_eq!(registry.resolve(None, "anthropic/claude-sonnet-4-5").unwrap().id, "claude-sonnet-4-5");
/// let err = registry.resolve(None, "claude-sonet-4-5").unwrap_err().to_string();
/// assert!(err.contains("did you mean anthropic/claude-sonnet-4-5"), "{err}");
/// ```
#[derive(Debug, Clone)]
pub struct ModelRegistry {
    providers: Vec<Provider>,
}

// --- the files' shapes ---------------------------------------------------

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CostConfig {
    input: Option<f64>,
    output: Option<f64>,
    cache_read: Option<f64>,
    cache_write: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CompatConfig {
    max_tokens_field: Option<MaxTokensField>,
    supports_reasoning_effort: Option<bool>,
    supports_xhigh: Option<bool>,
    adaptive_thinking: Option<bool>,
}

impl CompatConfig {
    fn apply(&self, compat: &mut ModelCompat) {
        if let Some(f) = self.max_tokens_field {
            compat.max_tokens_field = f;
        }
        if self.supports_reasoning_effort.is_some() {
            compat.supports_reasoning_effort = self.supports_reasoning_effort;
        }
        if let Some(x) = self.supports_xhigh {
            compat.supports_xhigh = x;
        }
        if let Some(a) = self.adaptive_thinking {
            compat.adaptive_thinking = a;
        }
    }
}

/// A model of a file, or an override of one: every field optional.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ModelConfig {
    id: Option<String>,
    name: Option<String>,
    api: Option<String>,
    base_url: Option<String>,
    reasoning: Option<bool>,
    input: Option<Vec<String>>,
    context_window: Option<u64>,
    max_tokens: Option<u64>,
    cost: Option<CostConfig>,
    headers: Option<BTreeMap<String, String>>,
    compat: Option<CompatConfig>,
}

impl ModelConfig {
    fn apply(&self, m: &mut Model) {
        if let Some(v) = &self.name {
            m.name = v.clone();
        }
        if let Some(v) = &self.api {
            m.api = v.clone();
        }
        if let Some(v) = &self.base_url {
            m.base_url = v.clone();
        }
        if let Some(v) = self.reasoning {
            m.reasoning = v;
        }
        if let Some(v) = &self.input {
            m.input = v.clone();
        }
        if let Some(v) = self.context_window {
            m.context_window = v;
        }
        if let Some(v) = self.max_tokens {
            m.max_tokens = v;
        }
        if let Some(c) = &self.cost {
            let set = |slot: &mut f64, v: Option<f64>| *slot = v.unwrap_or(*slot);
            set(&mut m.cost.input, c.input);
            set(&mut m.cost.output, c.output);
            set(&mut m.cost.cache_read, c.cache_read);
            set(&mut m.cost.cache_write, c.cache_write);
        }
        if let Some(h) = &self.headers {
            m.headers.extend(h.clone());
        }
        if let Some(c) = &self.compat {
            c.apply(&mut m.compat);
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProviderConfig {
    api: Option<String>,
    base_url: Option<String>,
    api_key: Option<String>,
    /// Built-in table only: the variable holding the key.
    api_key_env: Option<String>,
    headers: Option<BTreeMap<String, String>>,
    compat: Option<CompatConfig>,
    #[serde(default)]
    models: Vec<Value>,
    #[serde(default)]
    model_overrides: Map<String, Value>,
}

fn typed<T: for<'de> Deserialize<'de>>(
    value: &Value,
    file: &Path,
    key: &str,
) -> Result<T, RegistryError> {
    T::deserialize(value).map_err(|e| RegistryError::Invalid {
        file: file.to_path_buf(),
        key: key.to_string(),
        message: e.to_string(),
    })
}

fn invalid(file: &Path, key: impl Into<String>, message: impl Into<String>) -> RegistryError {
    RegistryError::Invalid {
        file: file.to_path_buf(),
        key: key.into(),
        message: message.into(),
    }
}

fn check_api(api: &str, file: &Path, key: &str) -> Result<(), RegistryError> {
    if KNOWN_APIS.contains(&api) {
        Ok(())
    } else {
        Err(invalid(
            file,
            key,
            format!("unknown api {api:?} (known: {})", KNOWN_APIS.join(", ")),
        ))
    }
}

impl ModelRegistry {
    /// The built-in table alone.
    pub fn builtin() -> Self {
        let mut registry = ModelRegistry {
            providers: Vec::new(),
        };
        // The table is part of the build and tested: it always parses.
        if let Err(e) = registry.merge_str(BUILTIN_JSON, Path::new("<built-in models>"), true) {
            tracing::error!(error = %e, "the built-in model table is broken");
        }
        registry
    }

    /// The built-in table with `file` (a `models.json`) merged on top; a
    /// missing file is no error.
    ///
    /// # Errors
    /// The file cannot be read, is not JSON, or has a wrong value
    /// ([`RegistryError::Invalid`] names the key).
    pub fn load(file: &Path) -> Result<Self, RegistryError> {
        let mut registry = ModelRegistry::builtin();
        match std::fs::read_to_string(file) {
            Ok(text) => registry.merge_models_json(&text, file)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(RegistryError::Read {
                    file: file.to_path_buf(),
                    source,
                });
            }
        }
        Ok(registry)
    }

    /// Merges a `models.json`'s text (`file` names it in errors).
    ///
    /// # Errors
    /// As [`ModelRegistry::load`].
    pub fn merge_models_json(&mut self, text: &str, file: &Path) -> Result<(), RegistryError> {
        self.merge_str(text, file, false)
    }

    fn merge_str(&mut self, text: &str, file: &Path, builtin: bool) -> Result<(), RegistryError> {
        let root: Value =
            serde_json::from_str(text).map_err(|e| invalid(file, "", e.to_string()))?;
        let Some(root) = root.as_object() else {
            return Err(invalid(file, "", "expected a JSON object"));
        };
        let providers = match root.get("providers") {
            None => return Ok(()),
            Some(Value::Object(p)) => p,
            Some(_) => return Err(invalid(file, "providers", "expected an object")),
        };
        for (name, value) in providers {
            let key = format!("providers.{name}");
            let config: ProviderConfig = typed(value, file, &key)?;
            self.merge_provider(name, config, file, &key, builtin)?;
        }
        Ok(())
    }

    fn merge_provider(
        &mut self,
        name: &str,
        config: ProviderConfig,
        file: &Path,
        key: &str,
        builtin: bool,
    ) -> Result<(), RegistryError> {
        if let Some(api) = &config.api {
            check_api(api, file, &format!("{key}.api"))?;
        }
        let index = match self.providers.iter().position(|p| p.name == name) {
            Some(i) => i,
            None => {
                let (Some(api), Some(base_url)) = (&config.api, &config.base_url) else {
                    let missing = if config.api.is_none() {
                        "api"
                    } else {
                        "baseUrl"
                    };
                    return Err(invalid(
                        file,
                        format!("{key}.{missing}"),
                        "a provider that is not built in needs `baseUrl` and `api`",
                    ));
                };
                self.providers.push(Provider {
                    name: name.to_string(),
                    api: api.clone(),
                    base_url: base_url.clone(),
                    api_key: None,
                    headers: BTreeMap::new(),
                    builtin,
                    models: Vec::new(),
                });
                self.providers.len() - 1
            }
        };
        let provider = &mut self.providers[index];
        if let Some(api) = &config.api {
            provider.api = api.clone();
        }
        if let Some(url) = &config.base_url {
            provider.base_url = url.clone();
            for m in &mut provider.models {
                m.base_url = url.clone();
            }
        }
        if let Some(var) = &config.api_key_env {
            provider.api_key = Some(ApiKeySource::Env(var.clone()));
        }
        if let Some(k) = &config.api_key {
            provider.api_key = Some(ApiKeySource::parse(k));
        }
        if let Some(h) = &config.headers {
            provider.headers.extend(h.clone());
        }
        for (id, value) in &config.model_overrides {
            let okey = format!("{key}.modelOverrides.{id}");
            let over: ModelConfig = typed(value, file, &okey)?;
            if let Some(api) = &over.api {
                check_api(api, file, &format!("{okey}.api"))?;
            }
            match provider.models.iter_mut().find(|m| &m.id == id) {
                Some(m) => over.apply(m),
                None => {
                    tracing::warn!(file = %file.display(), key = %okey, "modelOverrides names an unknown model; ignored")
                }
            }
        }
        for (i, value) in config.models.iter().enumerate() {
            let mkey = format!("{key}.models[{i}]");
            let mc: ModelConfig = typed(value, file, &mkey)?;
            let Some(id) = mc.id.clone().filter(|id| !id.trim().is_empty()) else {
                return Err(invalid(
                    file,
                    format!("{mkey}.id"),
                    "every model needs an `id`",
                ));
            };
            if let Some(api) = &mc.api {
                check_api(api, file, &format!("{mkey}.api"))?;
            }
            let mut model = Model::new(name, &id);
            model.api = provider.api.clone();
            model.base_url = provider.base_url.clone();
            model.context_window = DEFAULT_CONTEXT_WINDOW;
            model.max_tokens = DEFAULT_MAX_TOKENS;
            if let Some(c) = &config.compat {
                c.apply(&mut model.compat);
            }
            mc.apply(&mut model);
            match provider.models.iter_mut().find(|m| m.id == id) {
                Some(slot) => *slot = model,
                None => provider.models.push(model),
            }
        }
        Ok(())
    }

    /// Every model, provider by provider, in table order.
    pub fn models(&self) -> impl Iterator<Item = &Model> {
        self.providers.iter().flat_map(|p| p.models.iter())
    }

    /// The provider names, in table order.
    pub fn provider_names(&self) -> impl Iterator<Item = &str> {
        self.providers.iter().map(|p| p.name.as_str())
    }

    /// Whether `name` is a provider of the registry.
    pub fn has_provider(&self, name: &str) -> bool {
        self.provider(name).is_some()
    }

    /// Whether `name` is a provider of the built-in table.
    pub fn is_builtin_provider(&self, name: &str) -> bool {
        self.provider(name).is_some_and(|p| p.builtin)
    }

    fn provider(&self, name: &str) -> Option<&Provider> {
        self.providers.iter().find(|p| p.name == name)
    }

    /// A provider's API and base URL.
    pub fn provider_endpoint(&self, name: &str) -> Option<(&str, &str)> {
        self.provider(name)
            .map(|p| (p.api.as_str(), p.base_url.as_str()))
    }

    /// The model `id` of `provider`, as stored (header values unresolved).
    pub fn find(&self, provider: &str, id: &str) -> Option<&Model> {
        self.provider(provider)?.models.iter().find(|m| m.id == id)
    }

    /// Finds a model by `provider/id`, by `id` (the first provider that has
    /// it), or by `id` within `provider` when one is given. The model's
    /// provider-level headers are merged in and every header value
    /// resolved.
    ///
    /// # Errors
    /// [`RegistryError::UnknownModel`] with the nearest matches;
    /// [`RegistryError::Value`] when a header value cannot be resolved.
    pub fn resolve(&self, provider: Option<&str>, spec: &str) -> Result<Model, RegistryError> {
        let spec = spec.trim();
        let found = match provider {
            Some(p) => self.find(p, spec).or_else(|| {
                spec.split_once('/')
                    .filter(|(prefix, _)| *prefix == p)
                    .and_then(|(_, id)| self.find(p, id))
            }),
            None => spec
                .split_once('/')
                .and_then(|(p, id)| self.find(p, id))
                .or_else(|| self.models().find(|m| m.id == spec)),
        };
        let Some(model) = found else {
            let candidates: Vec<String> = self
                .models()
                .filter(|m| provider.is_none_or(|p| m.provider == p))
                .map(|m| format!("{}/{}", m.provider, m.id))
                .collect();
            let asked = match provider {
                Some(p) if !spec.contains('/') => format!("{p}/{spec}"),
                _ => spec.to_string(),
            };
            return Err(RegistryError::UnknownModel {
                spec: asked.clone(),
                suggestions: nearest_matches(&asked, candidates.iter().map(String::as_str), 3),
            });
        };
        let mut model = model.clone();
        let mut headers = self
            .provider(&model.provider)
            .map(|p| p.headers.clone())
            .unwrap_or_default();
        headers.extend(std::mem::take(&mut model.headers));
        for (name, raw) in headers {
            let value = ApiKeySource::parse(&raw)
                .resolve()
                .map_err(|message| RegistryError::Value {
                    provider: model.provider.clone(),
                    what: format!("headers.{name}"),
                    message,
                })?
                .unwrap_or_default();
            model.headers.insert(name, value);
        }
        Ok(model)
    }

    /// The API key of `provider`: its `models.json` `apiKey`, or the
    /// built-in provider's environment variable. `Ok(None)` when there is
    /// none.
    ///
    /// # Errors
    /// A `!command` failed.
    pub fn api_key(&self, provider: &str) -> Result<Option<String>, RegistryError> {
        let Some(source) = self.provider(provider).and_then(|p| p.api_key.as_ref()) else {
            return Ok(None);
        };
        source.resolve().map_err(|message| RegistryError::Value {
            provider: provider.to_string(),
            what: "apiKey".into(),
            message,
        })
    }

    /// Whether `provider` has an API key configured, without running a
    /// `!command` (one counts as configured): what lists the models a user
    /// can switch to.
    pub fn has_api_key(&self, provider: &str) -> bool {
        match self.provider(provider).and_then(|p| p.api_key.as_ref()) {
            None => false,
            Some(ApiKeySource::Env(name)) => {
                std::env::var(name).is_ok_and(|v| !v.trim().is_empty())
            }
            Some(_) => true,
        }
    }

    /// The models whose `provider/id` contains `search` (case-insensitive;
    /// every model for an empty search).
    pub fn search(&self, search: &str) -> Vec<&Model> {
        let needle = search.to_lowercase();
        self.models()
            .filter(|m| {
                format!("{}/{} {}", m.provider, m.id, m.name)
                    .to_lowercase()
                    .contains(&needle)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
