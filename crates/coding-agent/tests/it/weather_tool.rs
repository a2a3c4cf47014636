//! The weather example against a real HTTP server on 127.0.0.1.

#[path = "../../examples/weather_tool.rs"]
#[allow(dead_code, unreachable_pub)]
mod example;

use std::time::{Duration, Instant};

use agent_core::CancellationToken;
use coding_agent::{ToolCallContext, ToolDefinition};
use example::WeatherTool;
use example::fake_server::{self, Reply};
use serde_json::json;

async fn tool_for(
    route: impl Fn(&str) -> Reply + Send + Sync + 'static,
    timeout: Duration,
) -> ToolDefinition {
    let addr = fake_server::serve(route).await.unwrap();
    WeatherTool::with_base_url(&format!("http://{addr}"), timeout).definition()
}

fn ctx(id: &str) -> ToolCallContext {
    ToolCallContext::new(id)
}

#[tokio::test]
async fn success_returns_text_and_details() {
    let tool = tool_for(fake_server::open_meteo, Duration::from_secs(5)).await;
    let result = tool
        .execute(json!({"city": "Berlin"}), ctx("c1"))
        .await
        .unwrap();
    assert_eq!(
        result.text_content(),
        "Berlin, Germany: 5.6°C, overcast, wind 13.2 km/h, humidity 81%"
    );
    assert_eq!(result.details["location"]["name"], "Berlin");
    assert_eq!(result.details["current"]["temperature"], 5.6);
    assert_eq!(result.details["unit"], "metric");

    let result = tool
        .execute(json!({"city": "Berlin", "unit": "imperial"}), ctx("c2"))
        .await
        .unwrap();
    assert!(
        result.text_content().contains("42.1°F"),
        "{}",
        result.text_content()
    );
    assert!(result.text_content().contains("8.2 mph"));
}

#[tokio::test]
async fn unknown_city_is_a_clear_error() {
    let tool = tool_for(fake_server::open_meteo, Duration::from_secs(5)).await;
    let err = tool
        .execute(json!({"city": "Atlantis"}), ctx("c1"))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("No location found for \"Atlantis\""),
        "{err}"
    );
}

#[tokio::test]
async fn http_500_is_reported() {
    let tool = tool_for(
        |path| {
            if path.starts_with("/v1/forecast") {
                Reply {
                    status: 500,
                    body: "{}".into(),
                    delay: Duration::ZERO,
                }
            } else {
                fake_server::open_meteo(path)
            }
        },
        Duration::from_secs(5),
    )
    .await;
    let err = tool
        .execute(json!({"city": "Berlin"}), ctx("c1"))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Weather service error: the forecast request failed with HTTP 500"
    );
}

#[tokio::test]
async fn slow_server_times_out() {
    let tool = tool_for(
        |path| Reply {
            delay: Duration::from_secs(30),
            ..fake_server::open_meteo(path)
        },
        Duration::from_millis(200),
    )
    .await;
    let started = Instant::now();
    let err = tool
        .execute(json!({"city": "Berlin"}), ctx("c1"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("timed out"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5)); // hang guard
}

#[tokio::test]
async fn cancellation_during_a_slow_response() {
    let tool = tool_for(
        |path| Reply {
            delay: Duration::from_secs(30),
            ..fake_server::open_meteo(path)
        },
        Duration::from_secs(60),
    )
    .await;
    let cancel = CancellationToken::new();
    let mut context = ctx("c1");
    context.cancel = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let err = tool
        .execute(json!({"city": "Berlin"}), context)
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "Operation aborted");
    assert!(started.elapsed() < Duration::from_secs(5)); // hang guard
}

#[test]
fn schema_is_plain_and_metadata_is_present() {
    let tool =
        WeatherTool::with_base_url("http://127.0.0.1:9", Duration::from_secs(1)).definition();
    let schema = tool.parameters();
    assert_eq!(
        schema["properties"]["unit"]["enum"],
        json!(["metric", "imperial"])
    );
    // The model is told what leaving `unit` out means, and the variants'
    // docs reach the description without turning the enum into `oneOf`.
    assert_eq!(schema["properties"]["unit"]["default"], "metric");
    assert!(schema["properties"]["unit"].get("oneOf").is_none());
    assert_eq!(schema["required"], json!(["city"]));
    assert_eq!(
        tool.prompt_snippet(),
        Some("Look up the current weather for a city")
    );
    assert_eq!(tool.prompt_guidelines().len(), 2);
}
