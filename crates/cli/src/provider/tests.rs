use clap::Parser;

use super::flags::reasons;
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
    let vertex = "https://aiplatform.googleapis.com/v1/projects/p/locations/global";
    let cases: [(&[&str], &str, &str); 8] = [
        (
            &[
                "--provider",
                "google-vertex",
                "--base-url",
                vertex,
                "--api-key",
                "k",
            ],
            "google-vertex",
            "google-vertex",
        ),
        (
            &[
                "--api",
                "google-vertex",
                "--base-url",
                "http://l",
                "--model",
                "gemini-2.5-pro",
            ],
            "google-vertex",
            "google-vertex",
        ),
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

#[test]
fn vertex_without_a_project_or_key_says_what_to_set() {
    // SAFETY-free: the variables are only read; a set one changes nothing
    // asserted here except the project message, which needs it unset.
    if std::env::var_os("GOOGLE_CLOUD_PROJECT").is_none() {
        let err = chosen(&["--provider", "google-vertex", "--api-key", "k"]).unwrap_err();
        assert!(err.contains("GOOGLE_CLOUD_PROJECT"), "{err}");
    }
    if std::env::var_os("GOOGLE_CLOUD_API_KEY").is_none() {
        let err = chosen(&[
            "--provider",
            "google-vertex",
            "--base-url",
            "https://aiplatform.googleapis.com/v1/projects/p/locations/global",
        ])
        .unwrap_err();
        assert!(err.contains("GOOGLE_CLOUD_API_KEY"), "{err}");
    }
    // A known Gemini model keeps the registry's facts on Vertex.
    let model = chosen(&[
        "--api",
        "google-vertex",
        "--base-url",
        "http://l",
        "--model",
        "gemini-2.5-pro",
    ])
    .unwrap();
    assert!(model.reasoning);
    assert!(model.context_window > 128_000, "{model:?}");
}
