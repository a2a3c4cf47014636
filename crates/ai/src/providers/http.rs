//! HTTP plumbing shared by the providers: POST with bounded retries, then SSE.

use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::sse::{SseEvent, SseParser};

/// How often and how patiently to retry 429 and 5xx answers (and failed
/// connections) before any byte of the response was used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// Delay before the first retry; doubles each time.
    pub initial_delay: Duration,
    /// Longest delay of the exponential backoff.
    pub max_delay: Duration,
    /// Longest delay a server may ask for (`retry-after-ms`, or
    /// `Retry-After` in seconds or as an HTTP date), which is honoured as
    /// asked up to this cap. A server that asks for more fails the request
    /// at once, with the delay it asked for in the message: waiting hours on
    /// an out-of-quota answer helps nobody. Default 60 s.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            initial_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            max_retry_after: DEFAULT_MAX_RETRY_AFTER,
        }
    }
}

/// The default of [`RetryPolicy::max_retry_after`]: 60 s, as Pi.
pub const DEFAULT_MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// The delay a server asked for before a retry: `retry-after-ms`
/// (milliseconds, OpenAI's), else `Retry-After` as seconds or as an HTTP
/// date (a date in the past means now). `None` when neither header is
/// there or readable.
pub(crate) fn requested_delay(
    headers: &reqwest::header::HeaderMap,
    now: std::time::SystemTime,
) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let number = |v: &str| v.parse::<f64>().ok().filter(|n| n.is_finite() && *n >= 0.0);
    if let Some(ms) = header("retry-after-ms").and_then(number) {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = header("retry-after")?;
    if let Some(secs) = number(value) {
        return Some(Duration::from_secs_f64(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// The delay a Google error body asks for: the `retryDelay` (`"12s"`,
/// `"41.8s"`) of a `google.rpc.RetryInfo` entry in `error.details`.
/// `None` when the body has none or it is unreadable.
pub(crate) fn retry_info_delay(body: &str) -> Option<Duration> {
    let value: Value = serde_json::from_str(body).ok()?;
    let details = value.pointer("/error/details")?.as_array()?;
    details.iter().find_map(|d| {
        let kind = d.get("@type")?.as_str()?;
        if !kind.ends_with("google.rpc.RetryInfo") {
            return None;
        }
        let secs: f64 = d
            .get("retryDelay")?
            .as_str()?
            .strip_suffix('s')?
            .parse()
            .ok()?;
        (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs))
    })
}

/// Seconds for a message: whole numbers without a fraction.
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{}", d.as_secs())
    } else {
        format!("{s:.1}")
    }
}

/// The builder methods every HTTP client shares, over its `retry` and
/// `idle_timeout` fields (and with `strict`, its `strict_tools` field).
macro_rules! client_settings {
    () => {
        /// How long the server may stay silent (before the response headers, or
        /// between two pieces of the body) before the request fails with a
        /// retryable error; `None` waits forever. Default
        /// [`DEFAULT_IDLE_TIMEOUT`](crate::providers::DEFAULT_IDLE_TIMEOUT).
        pub fn with_idle_timeout(mut self, idle: Option<std::time::Duration>) -> Self {
            self.idle_timeout = idle;
            self
        }

        /// Sets the retry policy for 429 and 5xx answers, and how long a
        /// server may ask to wait ([`RetryPolicy::max_retry_after`](crate::providers::RetryPolicy::max_retry_after)).
        pub fn with_retry(mut self, retry: crate::providers::RetryPolicy) -> Self {
            self.retry = retry;
            self
        }
    };
    (strict) => {
        $crate::providers::http::client_settings!();

        /// Sends every tool whose schema allows it in OpenAI strict mode, as
        /// if each asked for [`ConstrainedSampling::prefer`](crate::ConstrainedSampling::prefer).
        /// Without this, only the tools that ask for constrained sampling are
        /// sent strict (see [`sends_strict`](crate::providers::lowering::sends_strict)).
        pub fn with_strict_tools(mut self, strict: bool) -> Self {
            self.strict_tools = strict;
            self
        }
    };
}
pub(crate) use client_settings;

/// How long a model server may stay silent (no response headers, no bytes
/// of the body) before the request fails: five minutes.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// The message of an idle timeout; says it can be retried.
pub(crate) fn idle_message(waiting_for: &str, idle: Duration) -> String {
    format!(
        "Request timed out: the model server sent no {waiting_for} for {} s (idle timeout; streamIdleTimeoutSeconds in settings). The request can be retried.",
        idle.as_secs_f64()
    )
}

/// Awaits `f`, giving up after `idle` (never when `None`).
pub(crate) async fn within<F: std::future::Future>(
    idle: Option<Duration>,
    f: F,
) -> Result<F::Output, ()> {
    match idle {
        Some(d) => tokio::time::timeout(d, f).await.map_err(|_| ()),
        None => Ok(f.await),
    }
}

/// Why a request failed before streaming.
pub(crate) enum RequestFailure {
    Aborted,
    Failed(String),
}

/// An error answer in one line: `HTTP 400: message`, with the AWS error
/// type (`x-amzn-errortype: ValidationException:http://...`) when the
/// server names one: `HTTP 400 ValidationException: message`.
fn error_message(status: reqwest::StatusCode, error_type: Option<&str>, body: &str) -> String {
    let detail = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| {
            v.pointer("/error/message")
                .or_else(|| v.get("message"))
                .or_else(|| v.get("error"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_else(|| body.chars().take(500).collect());
    let detail = detail.trim();
    let status = match error_type.and_then(|t| t.split(':').next()).map(str::trim) {
        Some(kind) if !kind.is_empty() => format!("HTTP {} {kind}", status.as_u16()),
        _ => format!("HTTP {}", status.as_u16()),
    };
    if detail.is_empty() {
        status
    } else {
        format!("{status}: {detail}")
    }
}

/// What went wrong sending a request, in one line: what we tried and the
/// innermost cause (`Connection refused (os error 111)`), which reqwest's
/// own text ("error sending request for url") leaves out.
fn transport_message(error: &reqwest::Error, url: &str) -> String {
    let mut cause: Option<&dyn std::error::Error> = None;
    let mut next = std::error::Error::source(error);
    while let Some(inner) = next {
        cause = Some(inner);
        next = inner.source();
    }
    let what = if error.is_connect() {
        "cannot connect to"
    } else if error.is_timeout() {
        "timed out talking to"
    } else {
        "request failed for"
    };
    match cause {
        Some(cause) => format!("{what} {url}: {cause}"),
        None => format!("{what} {url}: {error}"),
    }
}

/// POSTs `body`, JSON already encoded, retrying per `retry`. Returns the
/// successful response.
pub(crate) async fn post_json(
    http: &reqwest::Client,
    url: &str,
    headers: &[(String, String)],
    body: &[u8],
    retry: RetryPolicy,
    idle: Option<Duration>,
    cancel: &CancellationToken,
) -> Result<reqwest::Response, RequestFailure> {
    let mut attempt = 0;
    loop {
        let mut request = http
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_vec());
        for (k, v) in headers {
            request = request.header(k, v);
        }
        let sent = tokio::select! {
            r = within(idle, request.send()) => r,
            _ = cancel.cancelled() => return Err(RequestFailure::Aborted),
        };
        let (retryable, message, retry_after) = match sent {
            Err(()) => (
                true,
                idle_message("response", idle.unwrap_or_default()),
                None,
            ),
            Ok(sent) => match sent {
                Ok(response) if response.status().is_success() => return Ok(response),
                Ok(response) => {
                    let status = response.status();
                    let retry_after =
                        requested_delay(response.headers(), std::time::SystemTime::now());
                    let error_type = response
                        .headers()
                        .get("x-amzn-errortype")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_string);
                    let text = tokio::select! {
                        t = within(idle, response.text()) => t.ok().and_then(Result::ok).unwrap_or_default(),
                        _ = cancel.cancelled() => return Err(RequestFailure::Aborted),
                    };
                    let retryable = status.as_u16() == 429 || status.is_server_error();
                    // Google says how long to wait in the body, not a header.
                    let retry_after = retry_after.or_else(|| retry_info_delay(&text));
                    (
                        retryable,
                        error_message(status, error_type.as_deref(), &text),
                        retry_after,
                    )
                }
                Err(e) => (
                    e.is_connect() || e.is_timeout(),
                    transport_message(&e, url),
                    None,
                ),
            },
        };
        if !retryable || attempt >= retry.max_retries {
            return Err(RequestFailure::Failed(if attempt > 0 {
                format!("{message} (tried {} times)", attempt + 1)
            } else {
                message
            }));
        }
        if let Some(asked) = retry_after
            && asked > retry.max_retry_after
        {
            tracing::warn!(%message, asked_ms = asked.as_millis() as u64, "the server asked for a retry later than the cap");
            return Err(RequestFailure::Failed(format!(
                "{message} (the server asked to retry after {} s, more than the {} s cap, so the request was not retried)",
                seconds(asked),
                seconds(retry.max_retry_after)
            )));
        }
        let backoff = retry
            .initial_delay
            .saturating_mul(1 << attempt.min(16))
            .min(retry.max_delay);
        let delay = retry_after.unwrap_or(backoff);
        tracing::warn!(%message, attempt = attempt + 1, delay_ms = delay.as_millis() as u64, "retrying model request");
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = cancel.cancelled() => return Err(RequestFailure::Aborted),
        }
        attempt += 1;
    }
}

/// One provider request, ready to send from a streaming task.
pub(crate) struct PreparedRequest {
    pub(crate) http: reqwest::Client,
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, String)>,
    /// The request body as sent (Bedrock signs these very bytes).
    pub(crate) body: Vec<u8>,
    pub(crate) retry: RetryPolicy,
    /// How long the server may stay silent.
    pub(crate) idle: Option<Duration>,
    /// Why the request cannot be sent, if it cannot: a tool name the
    /// provider would refuse, a tool requiring strict mode its schema
    /// cannot have, or a body that could not be encoded.
    pub(crate) bad_tool_name: Option<String>,
}

impl PreparedRequest {
    /// A request of `body`, a provider's typed request, encoded here once.
    pub(crate) fn new(
        http: &reqwest::Client,
        url: String,
        headers: Vec<(String, String)>,
        body: &impl serde::Serialize,
        retry: RetryPolicy,
        idle: Option<Duration>,
        tools: &[crate::tool::Tool],
    ) -> Self {
        let (body, unencodable) = match serde_json::to_vec(body) {
            Ok(bytes) => (bytes, None),
            Err(e) => (
                Vec::new(),
                Some(format!("Could not encode the request: {e}")),
            ),
        };
        PreparedRequest {
            http: http.clone(),
            url,
            headers,
            body,
            retry,
            idle,
            bad_tool_name: unencodable.or_else(|| {
                tools.iter().find_map(|t| {
                    super::lowering::check_tool_name(&t.name)
                        .err()
                        .map(|e| e.to_string())
                        // A tool that requires constrained sampling its schema
                        // cannot have is refused, not sent unconstrained.
                        .or_else(|| {
                            super::lowering::sends_strict(t, false)
                                .err()
                                .map(|e| e.to_string())
                        })
                })
            }),
        }
    }

    /// POSTs the body and returns the response to stream. Any failure before
    /// streaming (a tool name the provider refuses, an HTTP error after
    /// retries, cancellation) ends the message through `builder` and returns `None`.
    #[cfg_attr(
        not(any(
            feature = "openai",
            feature = "openai-responses",
            feature = "anthropic",
            feature = "bedrock"
        )),
        allow(dead_code)
    )]
    pub(crate) async fn open(
        self,
        builder: &mut super::builder::MessageBuilder,
        cancel: &CancellationToken,
    ) -> Option<reqwest::Response> {
        self.open_or_resend(builder, cancel, |_| None).await
    }

    /// [`open`](Self::open), with one second chance: when the request
    /// fails, `resend` sees the error message and may give another body
    /// (encoded) to send once (a provider falling back to a form a server
    /// understands).
    pub(crate) async fn open_or_resend(
        self,
        builder: &mut super::builder::MessageBuilder,
        cancel: &CancellationToken,
        resend: impl FnOnce(&str) -> Option<Vec<u8>>,
    ) -> Option<reqwest::Response> {
        use crate::message::StopReason;
        if let Some(e) = self.bad_tool_name {
            builder.fail(StopReason::Error, e);
            return None;
        }
        let mut sent = post_json(
            &self.http,
            &self.url,
            &self.headers,
            &self.body,
            self.retry,
            self.idle,
            cancel,
        )
        .await;
        if let Err(RequestFailure::Failed(m)) = &sent
            && let Some(body) = resend(m)
        {
            tracing::warn!(error = %m, "sending the request once more in another form");
            sent = post_json(
                &self.http,
                &self.url,
                &self.headers,
                &body,
                self.retry,
                self.idle,
                cancel,
            )
            .await;
        }
        match sent {
            Ok(r) => Some(r),
            Err(RequestFailure::Aborted) => {
                builder.fail(StopReason::Aborted, "Request was aborted");
                None
            }
            Err(RequestFailure::Failed(m)) => {
                builder.fail(StopReason::Error, m);
                None
            }
        }
    }
}

/// A response's content type, in lower case (empty when it has none).
pub(crate) fn content_type(response: &reqwest::Response) -> String {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase()
}

/// The body of a response that is plain JSON instead of an event stream (a
/// server that ignored `"stream": true`); `Err(response)` for an event
/// stream. A body that is neither (an HTML login page from a proxy, say) is
/// an error saying what was received.
pub(crate) async fn json_body(
    response: reqwest::Response,
    idle: Option<Duration>,
    cancel: &CancellationToken,
) -> Result<Result<Value, String>, reqwest::Response> {
    let content_type = content_type(&response);
    let is_json = content_type.contains("json");
    // No content type at all: assume an event stream, as lenient servers send.
    if !is_json && (content_type.is_empty() || content_type.contains("event-stream")) {
        return Err(response);
    }
    let status = response.status().as_u16();
    let text = tokio::select! {
        t = within(idle, response.text()) => match t {
            Ok(t) => t.map_err(|e| format!("Connection lost while reading the response: {e}")),
            Err(()) => Err(idle_message("data", idle.unwrap_or_default())),
        },
        _ = cancel.cancelled() => return Ok(Err("Request was aborted".to_string())),
    };
    if !is_json {
        return Ok(text.and_then(|t| {
            let excerpt: String = t.trim().chars().take(200).collect();
            Err(format!(
                "Unexpected response: HTTP {status} with content type {content_type} instead of an event stream: {excerpt}"
            ))
        }));
    }
    Ok(text
        .and_then(|t| serde_json::from_str(&t).map_err(|e| format!("Invalid JSON response: {e}"))))
}

/// How an SSE stream ended.
pub(crate) enum StreamEnd {
    /// The server closed the stream.
    Closed,
    /// The handler said the response is complete.
    Completed,
    /// The caller cancelled.
    Aborted,
    /// The connection failed mid-stream.
    Broken(String),
}

/// Feeds the response's SSE events to `handle` until it returns `false`, the
/// stream ends, fails, or `cancel` fires.
pub(crate) async fn read_sse(
    response: reqwest::Response,
    idle: Option<Duration>,
    cancel: &CancellationToken,
    mut handle: impl FnMut(SseEvent) -> bool,
) -> StreamEnd {
    let mut parser = SseParser::default();
    let mut body = response.bytes_stream();
    loop {
        let next = tokio::select! {
            biased;
            _ = cancel.cancelled() => return StreamEnd::Aborted,
            n = within(idle, body.next()) => match n {
                Ok(n) => n,
                Err(()) => return StreamEnd::Broken(idle_message("data", idle.unwrap_or_default())),
            },
        };
        match next {
            Some(Ok(bytes)) => {
                for event in parser.push(&bytes) {
                    if !handle(event) {
                        return StreamEnd::Completed;
                    }
                }
            }
            Some(Err(e)) => {
                return StreamEnd::Broken(format!("Connection lost while streaming: {e}"));
            }
            None => {
                for event in parser.finish() {
                    if !handle(event) {
                        return StreamEnd::Completed;
                    }
                }
                return StreamEnd::Closed;
            }
        }
    }
}

/// [`read_sse`] for a provider whose event handler can fail: the events go
/// to `handle` until it returns `Ok(false)` (the response is complete) or
/// an error. `Ok` says how a healthy stream ended ([`StreamEnd::Completed`]
/// or [`StreamEnd::Closed`], the provider decides whether that was too
/// early); `Err` is the stop reason and message to fail the message with
/// (the handler's error, a broken connection, cancellation).
pub(crate) async fn read_events(
    response: reqwest::Response,
    idle: Option<Duration>,
    cancel: &CancellationToken,
    mut handle: impl FnMut(SseEvent) -> Result<bool, String>,
) -> Result<StreamEnd, (crate::message::StopReason, String)> {
    use crate::message::StopReason;
    let mut failed = None;
    let end = read_sse(response, idle, cancel, |event| match handle(event) {
        Ok(more) => more,
        Err(e) => {
            failed = Some(e);
            false
        }
    })
    .await;
    match (failed, end) {
        (Some(e), _) => Err((StopReason::Error, e)),
        (None, StreamEnd::Aborted) => Err((StopReason::Aborted, "Request was aborted".into())),
        (None, StreamEnd::Broken(e)) => Err((StopReason::Error, e)),
        (None, end) => Ok(end),
    }
}

/// The message of a stream that closed before its final event.
pub(crate) const ENDED_EARLY: &str =
    "Connection lost: the stream ended before the response was complete";

/// A shared HTTP client (rustls; connection timeout only, streams may be long).
pub(crate) fn http_client() -> reqwest::Client {
    super::install_tls_provider();
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(30))
        .build()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderValue};
    use std::time::SystemTime;

    fn delay(pairs: &[(&'static str, &str)], now: SystemTime) -> Option<Duration> {
        let mut headers = HeaderMap::new();
        for (k, v) in pairs {
            headers.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        requested_delay(&headers, now)
    }

    #[test]
    fn retry_after_in_seconds_milliseconds_and_dates() {
        let now = httpdate::parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT").unwrap();
        assert_eq!(
            delay(&[("retry-after", "2")], now),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            delay(&[("retry-after", "0.5")], now),
            Some(Duration::from_millis(500))
        );
        // The milliseconds header wins.
        assert_eq!(
            delay(&[("retry-after", "9"), ("retry-after-ms", "250")], now),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            delay(&[("retry-after", "Wed, 21 Oct 2015 07:29:30 GMT")], now),
            Some(Duration::from_secs(90))
        );
        // A date in the past: now.
        assert_eq!(
            delay(&[("retry-after", "Wed, 21 Oct 2015 07:00:00 GMT")], now),
            Some(Duration::ZERO)
        );
        for bad in ["soon", "-1", "NaN"] {
            assert_eq!(delay(&[("retry-after", bad)], now), None, "{bad}");
        }
        assert_eq!(delay(&[], now), None);
    }

    #[test]
    fn seconds_read_as_written() {
        assert_eq!(seconds(Duration::from_secs(172_800)), "172800");
        assert_eq!(seconds(Duration::from_millis(1500)), "1.5");
    }
}
