//! A custom tool from end to end: the `weather` tool.
//!
//! It geocodes a city and fetches the current weather from an Open-Meteo
//! compatible HTTP API, honours cancellation mid-request, turns HTTP errors,
//! unknown cities and timeouts into clear tool errors, and returns text for the
//! model plus structured `details` for programs.
//!
//! ```sh
//! # Against a local fake server started by the example itself (no network):
//! cargo run -p coding-agent --example weather_tool -- Berlin --local
//! # Against the public API:
//! cargo run -p coding-agent --example weather_tool -- Berlin --unit imperial
//! # Against any compatible server:
//! cargo run -p coding-agent --example weather_tool -- Berlin --base-url http://127.0.0.1:8080
//! ```

use std::time::Duration;

use coding_agent::{
    AgentToolResult, RenderContext, RenderResultOptions, StyledLine, StyledText, Theme,
    ToolCallContext, ToolDefinition, ToolError, ToolHints, TypedTool,
};
use serde::Deserialize;
use serde_json::{Value, json};

/// Public Open-Meteo endpoints.
pub const DEFAULT_GEOCODING_URL: &str = "https://geocoding-api.open-meteo.com";
/// Public Open-Meteo forecast endpoint.
pub const DEFAULT_FORECAST_URL: &str = "https://api.open-meteo.com";

/// Arguments of the weather tool.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct WeatherParams {
    /// City name, e.g. "Berlin" or "San Francisco".
    pub city: String,
    /// Unit system for temperature and wind speed.
    // `serde(default)` makes it optional, and the schema says what leaving
    // it out means: `"default": "metric"`.
    #[serde(default)]
    pub unit: Unit,
}

/// Unit system. The variants' docs join the field's description; the
/// schema stays a plain `{"type":"string","enum":[...]}`
/// (`agent_tool::params_schema`).
#[derive(
    Deserialize, serde::Serialize, schemars::JsonSchema, Clone, Copy, PartialEq, Eq, Debug, Default,
)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// Celsius and km/h.
    #[default]
    Metric,
    /// Fahrenheit and mph.
    Imperial,
}

/// The weather tool: where to ask, and how long to wait.
pub struct WeatherTool {
    geocoding_url: String,
    forecast_url: String,
    http: reqwest::Client,
}

impl WeatherTool {
    /// Uses the public Open-Meteo API.
    pub fn new() -> Self {
        Self::with_urls(
            DEFAULT_GEOCODING_URL,
            DEFAULT_FORECAST_URL,
            Duration::from_secs(15),
        )
    }

    /// Uses one server for both geocoding and forecasts (a mirror or a test server).
    pub fn with_base_url(base: &str, timeout: Duration) -> Self {
        Self::with_urls(base, base, timeout)
    }

    /// Uses separate servers for geocoding and forecasts.
    pub fn with_urls(geocoding: &str, forecast: &str, timeout: Duration) -> Self {
        agent_ai::providers::install_tls_provider();
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .unwrap_or_default();
        WeatherTool {
            geocoding_url: geocoding.trim_end_matches('/').to_string(),
            forecast_url: forecast.trim_end_matches('/').to_string(),
            http,
        }
    }

    async fn get_json(
        &self,
        what: &str,
        url: &str,
        query: &[(&str, String)],
    ) -> Result<Value, ToolError> {
        let response = self
            .http
            .get(url)
            .query(query)
            .send()
            .await
            .map_err(|e| request_error(what, &e))?;
        let status = response.status();
        if !status.is_success() {
            return Err(ToolError::new(format!(
                "Weather service error: the {what} request failed with HTTP {}",
                status.as_u16()
            )));
        }
        response
            .json::<Value>()
            .await
            .map_err(|e| request_error(what, &e))
    }

    async fn lookup(&self, params: WeatherParams) -> Result<AgentToolResult, ToolError> {
        let city = params.city.trim().to_string();
        if city.is_empty() {
            return Err(ToolError::new("city must not be empty"));
        }
        let unit = params.unit;
        let places = self
            .get_json(
                "geocoding",
                &format!("{}/v1/search", self.geocoding_url),
                &[
                    ("name", city.clone()),
                    ("count", "1".into()),
                    ("format", "json".into()),
                ],
            )
            .await?;
        let Some(place) = places["results"].as_array().and_then(|r| r.first()) else {
            return Err(ToolError::new(format!(
                "No location found for \"{city}\". Check the spelling or try a larger nearby city."
            )));
        };
        let (Some(lat), Some(lon)) = (place["latitude"].as_f64(), place["longitude"].as_f64())
        else {
            return Err(ToolError::new(
                "Weather service error: geocoding result has no coordinates",
            ));
        };
        let name = place["name"].as_str().unwrap_or(&city).to_string();
        let country = place["country"].as_str().unwrap_or("").to_string();

        let mut query = vec![
            ("latitude", lat.to_string()),
            ("longitude", lon.to_string()),
            (
                "current",
                "temperature_2m,relative_humidity_2m,wind_speed_10m,weather_code".into(),
            ),
        ];
        if unit == Unit::Imperial {
            query.push(("temperature_unit", "fahrenheit".into()));
            query.push(("wind_speed_unit", "mph".into()));
        }
        let forecast = self
            .get_json(
                "forecast",
                &format!("{}/v1/forecast", self.forecast_url),
                &query,
            )
            .await?;
        let current = &forecast["current"];
        let Some(temperature) = current["temperature_2m"].as_f64() else {
            return Err(ToolError::new(
                "Weather service error: forecast has no current temperature",
            ));
        };
        let wind = current["wind_speed_10m"].as_f64();
        let humidity = current["relative_humidity_2m"].as_f64();
        let code = current["weather_code"].as_i64();
        let (t_unit, w_unit) = match unit {
            Unit::Metric => ("°C", "km/h"),
            Unit::Imperial => ("°F", "mph"),
        };
        let conditions = code
            .map(describe_weather_code)
            .unwrap_or("unknown conditions");
        let place_name = if country.is_empty() {
            name.clone()
        } else {
            format!("{name}, {country}")
        };
        let mut text = format!("{place_name}: {temperature}{t_unit}, {conditions}");
        if let Some(w) = wind {
            text.push_str(&format!(", wind {w} {w_unit}"));
        }
        if let Some(h) = humidity {
            text.push_str(&format!(", humidity {h}%"));
        }
        Ok(AgentToolResult::text(text).with_details(json!({
            "location": {"name": name, "country": country, "latitude": lat, "longitude": lon},
            "current": {
                "temperature": temperature,
                "windSpeed": wind,
                "humidity": humidity,
                "weatherCode": code,
                "conditions": conditions,
                "time": current["time"],
            },
            "unit": match unit { Unit::Metric => "metric", Unit::Imperial => "imperial" },
        })))
    }
}

impl Default for WeatherTool {
    fn default() -> Self {
        Self::new()
    }
}

fn request_error(what: &str, e: &reqwest::Error) -> ToolError {
    if e.is_timeout() {
        ToolError::new(format!(
            "Weather service timed out during the {what} request. Try again later."
        ))
    } else if e.is_decode() {
        ToolError::new(format!(
            "Weather service error: the {what} response was not valid JSON"
        ))
    } else {
        ToolError::new(format!(
            "Weather service unreachable during the {what} request: {e}"
        ))
    }
}

/// WMO weather interpretation codes, as Open-Meteo reports them.
fn describe_weather_code(code: i64) -> &'static str {
    match code {
        0 => "clear sky",
        1 => "mainly clear",
        2 => "partly cloudy",
        3 => "overcast",
        45 | 48 => "fog",
        51..=57 => "drizzle",
        61..=67 => "rain",
        71..=77 => "snow",
        80..=82 => "rain showers",
        85 | 86 => "snow showers",
        95..=99 => "thunderstorm",
        _ => "unknown conditions",
    }
}

impl TypedTool for WeatherTool {
    type Params = WeatherParams;

    fn name(&self) -> &str {
        "weather"
    }

    fn label(&self) -> &str {
        "Weather"
    }

    fn description(&self) -> &str {
        "Get the current weather for a city: temperature, conditions, wind and humidity. Units are metric unless unit is \"imperial\"."
    }

    async fn execute(
        &self,
        params: WeatherParams,
        cx: ToolCallContext,
    ) -> Result<AgentToolResult, ToolError> {
        // Dropping the request future aborts the HTTP exchange.
        tokio::select! {
            result = self.lookup(params) => result,
            _ = cx.cancel.cancelled() => Err(ToolError::aborted()),
        }
    }
}

impl WeatherTool {
    /// The tool with its prompt snippet, guidelines, renderers and
    /// declarations, as a session registers it.
    pub fn definition(self) -> ToolDefinition {
        ToolDefinition::typed(self)
            .with_prompt_snippet("Look up the current weather for a city")
            .with_guidelines(guidelines())
            .with_render_call(render_call)
            .with_render_result(render_result)
            .with_hints(ToolHints {
                read_only: Some(true),
                destructive: Some(false),
                idempotent: Some(true),
                open_world: Some(true),
            })
    }
}

fn guidelines() -> Vec<String> {
    vec![
        "Use weather when the user asks about current weather conditions instead of guessing"
            .to_string(),
        "Pass unit \"imperial\" only when the user asks for Fahrenheit or mph".to_string(),
    ]
}

fn render_call(args: &Value, theme: &Theme, _ctx: &RenderContext) -> Option<StyledText> {
    let city = args["city"].as_str().unwrap_or("?");
    let unit = args["unit"].as_str().unwrap_or("metric");
    let mut text = StyledText::new();
    text.push(
        StyledLine::styled("weather ", theme.tool_title)
            .push(city, theme.accent)
            .push(format!(" ({unit})"), theme.muted),
    );
    Some(text)
}

fn render_result(
    result: &AgentToolResult,
    options: &RenderResultOptions,
    theme: &Theme,
    _ctx: &RenderContext,
) -> Option<StyledText> {
    let style = if options.is_error {
        theme.error
    } else {
        theme.success
    };
    Some(StyledText::from_text(&result.text_content(), style))
}

/// A tiny HTTP/1.1 server with canned Open-Meteo-shaped answers, for `--local`
/// and for the tests. Not a general web server: one request per connection.
pub mod fake_server {
    use std::net::SocketAddr;
    use std::sync::Arc;
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// A canned response.
    #[derive(Clone, Debug)]
    pub struct Reply {
        /// HTTP status code.
        pub status: u16,
        /// JSON body.
        pub body: String,
        /// Wait this long before answering.
        pub delay: Duration,
    }

    impl Reply {
        /// 200 with a body.
        pub fn ok(body: serde_json::Value) -> Self {
            Reply {
                status: 200,
                body: body.to_string(),
                delay: Duration::ZERO,
            }
        }
    }

    /// Answers like Open-Meteo for Berlin, nothing for other cities.
    pub fn open_meteo(path_and_query: &str) -> Reply {
        if path_and_query.starts_with("/v1/search") {
            if path_and_query.contains("name=Berlin") {
                Reply::ok(serde_json::json!({
                    "results": [{"id": 2950159, "name": "Berlin", "latitude": 52.52437, "longitude": 13.41053,
                                 "country": "Germany", "country_code": "DE", "timezone": "Europe/Berlin"}],
                    "generationtime_ms": 0.9
                }))
            } else {
                Reply::ok(serde_json::json!({"generationtime_ms": 0.5}))
            }
        } else if path_and_query.starts_with("/v1/forecast") {
            let imperial = path_and_query.contains("temperature_unit=fahrenheit");
            Reply::ok(serde_json::json!({
                "latitude": 52.52, "longitude": 13.419998,
                "current_units": {"time": "iso8601", "temperature_2m": if imperial {"°F"} else {"°C"},
                                  "wind_speed_10m": if imperial {"mp/h"} else {"km/h"}},
                "current": {"time": "2026-11-29T12:00", "interval": 900,
                            "temperature_2m": if imperial {42.1} else {5.6},
                            "relative_humidity_2m": 81, "wind_speed_10m": if imperial {8.2} else {13.2},
                            "weather_code": 3}
            }))
        } else {
            Reply {
                status: 404,
                body: "{\"error\":true,\"reason\":\"not found\"}".into(),
                delay: Duration::ZERO,
            }
        }
    }

    /// Serves `route` on 127.0.0.1 (random port) until the runtime stops.
    pub async fn serve(
        route: impl Fn(&str) -> Reply + Send + Sync + 'static,
    ) -> std::io::Result<SocketAddr> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let route = Arc::new(route);
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let route = route.clone();
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        match socket.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                        if buf.len() > 64 * 1024 {
                            return;
                        }
                    }
                    let head = String::from_utf8_lossy(&buf);
                    let target = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                    let reply = route(&target);
                    tokio::time::sleep(reply.delay).await;
                    let response = format!(
                        "HTTP/1.1 {} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{}",
                        reply.status,
                        reply.body.len(),
                        reply.body
                    );
                    let _ = socket.write_all(response.as_bytes()).await;
                    let _ = socket.shutdown().await;
                });
            }
        });
        Ok(addr)
    }
}

#[allow(dead_code)]
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut city = None;
    let mut base_url = None;
    let mut unit = "metric".to_string();
    let mut local = false;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--local" => local = true,
            "--base-url" => base_url = iter.next().cloned(),
            "--unit" => unit = iter.next().cloned().unwrap_or(unit),
            "-h" | "--help" => {
                println!(
                    "usage: weather_tool CITY [--unit metric|imperial] [--local | --base-url URL]"
                );
                return Ok(());
            }
            other => city = Some(other.to_string()),
        }
    }
    let city = city.unwrap_or_else(|| "Berlin".to_string());
    let tool = if local {
        let addr = fake_server::serve(fake_server::open_meteo).await?;
        eprintln!("serving canned Open-Meteo answers on http://{addr}");
        WeatherTool::with_base_url(&format!("http://{addr}"), Duration::from_secs(10))
    } else if let Some(url) = base_url {
        WeatherTool::with_base_url(&url, Duration::from_secs(15))
    } else {
        WeatherTool::new()
    };
    let definition = tool.definition();
    let args = json!({"city": city, "unit": unit});
    let theme = Theme::default();
    let render_ctx = RenderContext::default();
    println!(
        "{}",
        definition
            .render_call(&args, &theme, &render_ctx)
            .unwrap_or_default()
            .to_ansi()
    );
    let outcome = definition
        .execute(args, ToolCallContext::new("call_1"))
        .await;
    let (result, is_error) = match outcome {
        Ok(r) => (r, false),
        Err(e) => (AgentToolResult::error(e.to_string()), true),
    };
    let options = RenderResultOptions {
        is_error,
        ..Default::default()
    };
    println!(
        "{}",
        definition
            .render_result(&result, &options, &theme, &render_ctx)
            .unwrap_or_default()
            .to_ansi()
    );
    println!(
        "{}",
        serde_json::to_string_pretty(&json!({
            "content": result.content, "details": result.details, "isError": is_error
        }))?
    );
    Ok(())
}
