//! `--api bedrock-converse-stream` and `--provider amazon-bedrock`: the
//! binary against the fake Bedrock runtime, with AWS credentials from the
//! environment, a Bedrock API key, or none.

use std::process::{Output, Stdio};

use test_support::bedrock::{BedrockScript, Usage};
use test_support::http_server;

const MODEL: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";

/// The binary with no AWS settings of the machine: an empty home, no AWS
/// variables.
fn bin(home: &std::path::Path) -> std::process::Command {
    let mut c = std::process::Command::new(crate::bin());
    for var in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_SHARED_CREDENTIALS_FILE",
        "AWS_CONFIG_FILE",
    ] {
        c.env_remove(var);
    }
    c.env("HOME", home)
        .env(
            "CODING_AGENT_DIR",
            std::env::temp_dir().join("coding-agent-cli-test-no-such-dir"),
        )
        .stdin(Stdio::null());
    c
}

/// Runs the binary in `home` with `args`, the `env` variables, no session
/// and the prompt `hello`.
async fn prompt(home: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = bin(home);
    c.args(args)
        .envs(env.iter().copied())
        .arg("--no-session")
        .arg("--cwd")
        .arg(home)
        .args(["-p", "hello"]);
    tokio::task::spawn_blocking(move || c.output().unwrap())
        .await
        .unwrap()
}

fn succeeded(out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn ok_reply() -> http_server::Reply {
    BedrockScript::new()
        .text(&["from ", "bedrock"])
        .stop("end_turn", Usage::default())
}

#[tokio::test(flavor = "multi_thread")]
async fn api_flag_speaks_converse_stream_signed_with_environment_credentials() {
    let server = http_server::serve(vec![ok_reply()]).await;
    let dir = tempfile::tempdir().unwrap();
    let api = [
        "--api",
        "bedrock-converse-stream",
        "--base-url",
        &server.base,
    ];
    let env = [
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", "secret"),
        ("AWS_SESSION_TOKEN", "token-1"),
        ("AWS_REGION", "eu-west-1"),
    ];
    let out = prompt(dir.path(), &[&api[..], &["--model", MODEL]].concat(), &env).await;
    succeeded(&out);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "from bedrock\n");
    let req = &server.requests()[0];
    assert_eq!(
        req.path,
        "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    );
    let auth = req.header("authorization").unwrap();
    assert!(
        auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
            && auth.contains("/eu-west-1/bedrock/aws4_request"),
        "{auth}"
    );
    assert_eq!(req.header("x-amz-security-token"), Some("token-1"));
    assert_eq!(req.body["messages"][0]["content"][0]["text"], "hello");
}

#[tokio::test(flavor = "multi_thread")]
async fn api_key_is_a_bedrock_api_key_and_profiles_are_read() {
    let server = http_server::serve(vec![ok_reply(), ok_reply()]).await;
    let dir = tempfile::tempdir().unwrap();
    let provider = ["--provider", "amazon-bedrock", "--base-url", &server.base];
    let out = prompt(
        dir.path(),
        &[&provider[..], &["--api-key", "ABSK-key"]].concat(),
        &[],
    )
    .await;
    succeeded(&out);
    let req = &server.requests()[0];
    assert_eq!(req.header("authorization"), Some("Bearer ABSK-key"));
    // The default model, in the path.
    assert!(req.path.contains("claude-sonnet-4-5"), "{}", req.path);

    std::fs::create_dir_all(dir.path().join(".aws")).unwrap();
    std::fs::write(
        dir.path().join(".aws/credentials"),
        "[dev]\naws_access_key_id = AKPROFILE\naws_secret_access_key = s\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join(".aws/config"),
        "[profile dev]\nregion = ap-southeast-2\n",
    )
    .unwrap();
    let api = [
        "--api",
        "bedrock-converse-stream",
        "--base-url",
        &server.base,
    ];
    let nova = ["--model", "us.amazon.nova-lite-v1:0"];
    let out = prompt(
        dir.path(),
        &[&api[..], &nova].concat(),
        &[("AWS_PROFILE", "dev")],
    )
    .await;
    succeeded(&out);
    let auth = server.requests()[1]
        .header("authorization")
        .unwrap()
        .to_string();
    assert!(
        auth.contains("AKPROFILE/") && auth.contains("/ap-southeast-2/bedrock/"),
        "{auth}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn without_credentials_it_says_what_to_set_and_a_bad_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let out = prompt(dir.path(), &["--provider", "amazon-bedrock"], &[]).await;
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("AWS_BEARER_TOKEN_BEDROCK") && err.contains("AWS_ACCESS_KEY_ID"),
        "{err}"
    );

    std::fs::create_dir_all(dir.path().join(".aws")).unwrap();
    std::fs::write(dir.path().join(".aws/credentials"), "[default]\noops\n").unwrap();
    let out = prompt(
        dir.path(),
        &["--provider", "amazon-bedrock", "--model", MODEL],
        &[],
    )
    .await;
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(".aws/credentials:2: expected `key = value`"),
        "{err}"
    );
}
