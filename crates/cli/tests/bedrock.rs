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
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin!("coding-agent"));
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

async fn run(mut command: std::process::Command) -> Output {
    tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap()
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
    let mut c = bin(dir.path());
    c.args([
        "--api",
        "bedrock-converse-stream",
        "--base-url",
        &server.base,
    ])
    .args(["--model", MODEL, "--no-session"])
    .env("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    .env("AWS_SECRET_ACCESS_KEY", "secret")
    .env("AWS_SESSION_TOKEN", "token-1")
    .env("AWS_REGION", "eu-west-1")
    .arg("--cwd")
    .arg(dir.path())
    .args(["-p", "hello"]);
    let out = run(c).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "from bedrock\n");
    let req = &server.requests()[0];
    assert_eq!(
        req.path,
        "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    );
    let header = |name: &str| {
        req.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let auth = header("authorization").unwrap();
    assert!(
        auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"),
        "{auth}"
    );
    assert!(auth.contains("/eu-west-1/bedrock/aws4_request"), "{auth}");
    assert_eq!(header("x-amz-security-token"), Some("token-1"));
    assert_eq!(req.body["messages"][0]["content"][0]["text"], "hello");
}

#[tokio::test(flavor = "multi_thread")]
async fn api_key_is_a_bedrock_api_key_and_profiles_are_read() {
    let server = http_server::serve(vec![ok_reply(), ok_reply()]).await;
    let dir = tempfile::tempdir().unwrap();
    let mut c = bin(dir.path());
    c.args(["--provider", "amazon-bedrock", "--base-url", &server.base])
        .args(["--api-key", "ABSK-key", "--no-session"])
        .arg("--cwd")
        .arg(dir.path())
        .args(["-p", "hello"]);
    let out = run(c).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let req = &server.requests()[0];
    assert!(
        req.headers
            .iter()
            .any(|(k, v)| k == "authorization" && v == "Bearer ABSK-key")
    );
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
    let mut c = bin(dir.path());
    c.args([
        "--api",
        "bedrock-converse-stream",
        "--base-url",
        &server.base,
    ])
    .args(["--model", "us.amazon.nova-lite-v1:0", "--no-session"])
    .env("AWS_PROFILE", "dev")
    .arg("--cwd")
    .arg(dir.path())
    .args(["-p", "hello"]);
    let out = run(c).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let auth = server.requests()[1]
        .headers
        .iter()
        .find(|(k, _)| k == "authorization")
        .map(|(_, v)| v.clone())
        .unwrap();
    assert!(
        auth.contains("AKPROFILE/") && auth.contains("/ap-southeast-2/bedrock/"),
        "{auth}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn without_credentials_it_says_what_to_set_and_a_bad_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = bin(dir.path());
    c.args(["--provider", "amazon-bedrock", "--no-session"])
        .arg("--cwd")
        .arg(dir.path())
        .args(["-p", "hello"]);
    let out = run(c).await;
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("AWS_BEARER_TOKEN_BEDROCK") && err.contains("AWS_ACCESS_KEY_ID"),
        "{err}"
    );

    std::fs::create_dir_all(dir.path().join(".aws")).unwrap();
    std::fs::write(dir.path().join(".aws/credentials"), "[default]\noops\n").unwrap();
    let mut c = bin(dir.path());
    c.args([
        "--provider",
        "amazon-bedrock",
        "--model",
        MODEL,
        "--no-session",
    ])
    .arg("--cwd")
    .arg(dir.path())
    .args(["-p", "hello"]);
    let out = run(c).await;
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(".aws/credentials:2: expected `key = value`"),
        "{err}"
    );
}
