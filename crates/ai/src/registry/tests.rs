//! The registry's cases: the built-in table, `models.json` merged on top,
//! and its errors.

use super::nearest::edit_distance;
use super::*;

const FILE: &str = "/home/u/.pi/agent/models.json";

fn merged(text: &str) -> Result<ModelRegistry, RegistryError> {
    let mut r = ModelRegistry::builtin();
    r.merge_models_json(text, Path::new(FILE))?;
    Ok(r)
}

#[test]
fn the_builtin_table_parses_and_is_dated() {
    let mut r = ModelRegistry {
        providers: Vec::new(),
    };
    r.merge_str(BUILTIN_JSON, Path::new("builtin"), true)
        .unwrap();
    let date: Value = serde_json::from_str(BUILTIN_JSON).unwrap();
    assert_eq!(date["date"], BUILTIN_MODELS_DATE);
    for api in [
        "openai-responses",
        "openai-completions",
        "anthropic-messages",
        "google-generative-ai",
        "bedrock-converse-stream",
    ] {
        assert!(r.models().any(|m| m.api == api), "{api}");
    }
    let sonnet = r
        .find(
            "amazon-bedrock",
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        )
        .unwrap();
    assert_eq!(
        (sonnet.context_window, sonnet.cost.cache_write),
        (200_000, 3.75)
    );
    for m in r.models() {
        assert!(m.context_window > 0 && m.max_tokens > 0, "{}", m.id);
        assert!(!m.cost.is_free(), "{} has prices", m.id);
    }
    let gpt5 = r.find("openai", "gpt-5").unwrap();
    assert_eq!((gpt5.context_window, gpt5.max_tokens), (400_000, 128_000));
    assert_eq!(
        (gpt5.cost.input, gpt5.cost.output, gpt5.cost.cache_read),
        (1.25, 10.0, 0.125)
    );
    assert_eq!(gpt5.base_url, "https://api.openai.com/v1");
    let opus = r.find("anthropic", "claude-opus-4-6").unwrap();
    assert_eq!((opus.context_window, opus.max_tokens), (1_000_000, 128_000));
    assert!(opus.compat.adaptive_thinking && opus.compat.supports_xhigh);
    let gemini = r.find("google", "gemini-2.5-pro").unwrap();
    assert_eq!(
        (gemini.context_window, gemini.cost.cache_read),
        (1_048_576, 0.31)
    );
    let ds = r.find("deepseek", "deepseek-chat").unwrap();
    assert_eq!(ds.compat.max_tokens_field, MaxTokensField::MaxTokens);
}

#[test]
fn a_custom_provider_and_overrides_merge() {
    let r = merged(
        r#"{"providers": {
            "ollama": {"baseUrl": "http://localhost:11434/v1", "api": "openai-completions", "apiKey": "ollama",
                       "headers": {"x-team": "core"},
                       "models": [{"id": "qwen2.5-coder:7b"}, {"id": "big", "contextWindow": 32768, "maxTokens": 4096, "reasoning": true, "headers": {"x-model": "big"}}]},
            "anthropic": {"baseUrl": "https://proxy.example/v1",
                          "modelOverrides": {"claude-sonnet-4-5": {"contextWindow": 1000000, "cost": {"input": 6}}, "no-such": {"name": "x"}},
                          "models": [{"id": "claude-next", "reasoning": true}]}
        }}"#,
    )
    .unwrap();
    let q = r.resolve(None, "ollama/qwen2.5-coder:7b").unwrap();
    assert_eq!(q.api, "openai-completions");
    assert_eq!(q.base_url, "http://localhost:11434/v1");
    assert_eq!((q.context_window, q.max_tokens), (128_000, 16_384));
    assert!(q.cost.is_free());
    assert_eq!(q.headers.get("x-team").map(String::as_str), Some("core"));
    let big = r.resolve(Some("ollama"), "big").unwrap();
    assert_eq!(
        (big.context_window, big.max_tokens, big.reasoning),
        (32_768, 4_096, true)
    );
    assert_eq!(big.headers.len(), 2);
    assert_eq!(r.api_key("ollama").unwrap().as_deref(), Some("ollama"));
    // The override changed two fields and kept the others.
    let s = r.find("anthropic", "claude-sonnet-4-5").unwrap();
    assert_eq!((s.context_window, s.max_tokens), (1_000_000, 64_000));
    assert_eq!((s.cost.input, s.cost.output), (6.0, 15.0));
    assert_eq!(s.base_url, "https://proxy.example/v1");
    // Built-ins kept, the new model added with the provider's api.
    assert!(r.find("anthropic", "claude-haiku-4-5").is_some());
    assert_eq!(
        r.find("anthropic", "claude-next").unwrap().api,
        "anthropic-messages"
    );
}

#[test]
fn api_key_forms() {
    // A variable every test process has (setting one needs `unsafe`).
    let path = std::env::var("PATH").unwrap();
    let r = merged(
        r#"{"providers": {
            "a": {"baseUrl": "http://a", "api": "openai-completions", "apiKey": "PATH", "models": [{"id": "m"}]},
            "b": {"baseUrl": "http://b", "api": "openai-completions", "apiKey": "!printf key", "models": [{"id": "m"}]},
            "c": {"baseUrl": "http://c", "api": "openai-completions", "apiKey": "sk-literal", "models": [{"id": "m"}]},
            "d": {"baseUrl": "http://d", "api": "openai-completions", "apiKey": "!exit 3", "models": [{"id": "m"}]},
            "e": {"baseUrl": "http://e", "api": "openai-completions", "models": [{"id": "m"}], "headers": {"x-h": "!printf hv"}}
        }}"#,
    )
    .unwrap();
    assert_eq!(r.api_key("a").unwrap(), Some(path));
    assert_eq!(r.api_key("b").unwrap().as_deref(), Some("key"));
    assert_eq!(r.api_key("c").unwrap().as_deref(), Some("sk-literal"));
    let e = r.api_key("d").unwrap_err().to_string();
    assert!(
        e.contains("apiKey of provider d") && e.contains("exit 3"),
        "{e}"
    );
    assert_eq!(r.api_key("e").unwrap(), None);
    let m = r.resolve(None, "e/m").unwrap();
    assert_eq!(m.headers["x-h"], "hv");
}

#[test]
fn errors_name_the_file_and_key() {
    let cases = [
        (
            r#"{"providers": {"x": {"baseUrl": "http://x", "api": "openai-completions", "models": [{"id": "m", "contextWindow": "big"}]}}}"#,
            "`providers.x.models[0]`",
        ),
        (
            r#"{"providers": {"x": {"api": "openai-completions", "models": []}}}"#,
            "`providers.x.baseUrl`",
        ),
        (
            r#"{"providers": {"x": {"baseUrl": "http://x", "api": "carrier-pigeon"}}}"#,
            "`providers.x.api`",
        ),
        (
            r#"{"providers": {"x": {"baseUrl": "http://x", "api": "openai-completions", "models": [{"name": "no id"}]}}}"#,
            "`providers.x.models[0].id`",
        ),
        (
            r#"{"providers": {"openai": {"modelOverrides": {"gpt-5": {"maxTokens": -1}}}}}"#,
            "`providers.openai.modelOverrides.gpt-5`",
        ),
        (r#"{"providers": []}"#, "`providers`"),
        ("{not json", "``"),
    ];
    for (text, key) in cases {
        let e = merged(text).unwrap_err().to_string();
        assert!(e.starts_with(FILE), "{e}");
        assert!(e.contains(key), "{key}: {e}");
    }
}

#[test]
fn nearest_matches_suggest() {
    let r = ModelRegistry::builtin();
    let e = r.resolve(None, "gpt-5-mnii").unwrap_err().to_string();
    assert!(e.contains("openai/gpt-5-mini"), "{e}");
    let e = r
        .resolve(Some("anthropic"), "claude-sonnet-4.5")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("unknown model \"anthropic/claude-sonnet-4.5\""),
        "{e}"
    );
    assert!(e.contains("anthropic/claude-sonnet-4-5"), "{e}");
    let e = r.resolve(None, "zzzzzzzzzzzzzz").unwrap_err().to_string();
    assert!(e.contains("--list-models"), "{e}");
    assert_eq!(edit_distance("kitten", "sitting"), 3);
    // Anthropic's own and Bedrock's.
    assert_eq!(r.search("HAIKU").len(), 2);
}
