//! The HTTP exchange every remote provider shares: retries with backoff before an answer has
//! started, the framing of a streamed body into events, the limits on what an answer may
//! bring (its bytes, one event's bytes, an error body's bytes), and one shape for provider
//! errors.
//!
//! It owns the client, the retry policy, the limits, the places for requests in flight (a
//! request waits for one, and its answer holds it until its body is read), the error shape and
//! the `traceparent` each attempt carries when traces are on. It must never build a
//! URL, a key or a body (each provider builds every attempt's request), never retry once the
//! answer's body has started to reach the caller, and never hold more of an answer than its
//! limits allow.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use reqwest::header::HeaderMap;
use reqwest::{RequestBuilder, Response, StatusCode};
use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{transport_error, EventStream, ProviderResponse, Timeouts};
use crate::config::HttpSettings;
use crate::error::{Error, ErrorKind, Result};

/// How often and how long a request is tried again after a connect error, 429 or 5xx.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RetryPolicy {
    /// Retries after the first attempt.
    pub(crate) max_retries: u32,
    /// The first backoff; each retry doubles it, with full jitter.
    pub(crate) base_delay: Duration,
    /// No single wait is longer, whatever `Retry-After` asks.
    pub(crate) max_delay: Duration,
    /// Attempts and waits together stop after this long.
    pub(crate) budget: Duration,
}

impl RetryPolicy {
    pub(crate) fn from_config(c: &HttpSettings) -> RetryPolicy {
        RetryPolicy {
            max_retries: c.max_retries.unwrap_or(3),
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            budget: Duration::from_secs_f64(
                c.retry_budget_secs.filter(|s| *s >= 0.0).unwrap_or(60.0),
            ),
        }
    }

    /// The wait before retry number `retry` (0-based): `Retry-After` when the server gave one,
    /// else exponential backoff with full jitter, capped at `max_delay`.
    fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        retry_after.unwrap_or_else(|| {
            let cap = self.base_delay.saturating_mul(1u32 << retry.min(16));
            cap.min(self.max_delay).mul_f64(fastrand::f64())
        })
    }
}

/// How much of an answer is read: past `reply_bytes` the turn fails, past `event_bytes` one
/// streamed event is refused, and an error body is read up to `error_bytes` only.
/// `reply_tokens` is enforced by the agent, which sees the decoded pieces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    pub(crate) reply_bytes: u64,
    pub(crate) reply_tokens: u64,
    pub(crate) event_bytes: u64,
    pub(crate) error_bytes: u64,
}

impl Limits {
    pub(crate) fn from_config(c: &HttpSettings) -> Limits {
        Limits {
            reply_bytes: c.max_reply_bytes.unwrap_or(32 << 20),
            reply_tokens: c.max_reply_tokens.unwrap_or(1 << 18),
            event_bytes: c.max_event_bytes.unwrap_or(16 << 20),
            error_bytes: c.max_error_bytes.unwrap_or(64 << 10),
        }
    }
}

/// The longest provider message an error shows (a provider may send megabytes of it).
const MAX_ERROR_TEXT: usize = 1000;

/// The HTTP side of one provider instance.
pub(crate) struct Http {
    provider: String,
    timeouts: Timeouts,
    /// The client for plain HTTP, and the one for HTTPS, made at its first request (it reads
    /// the system's certificates).
    client: reqwest::Client,
    https: std::sync::OnceLock<reqwest::Client>,
    retry: RetryPolicy,
    limits: Limits,
    /// Places for requests in flight; a request waits for one before it is sent.
    in_flight: Arc<Semaphore>,
}

/// A request's place in flight, carried by its answer until the body is read or dropped.
#[derive(Clone)]
struct InFlight(#[allow(dead_code)] Arc<OwnedSemaphorePermit>);

/// Requests in flight per instance when the config says nothing.
const DEFAULT_CONCURRENT_REQUESTS: u32 = 32;

/// The same under `genai serve`, whose gateway relays for many clients at once: with 32, 33
/// clients of a model that takes 10 s to answer would wait for each other, where LiteLLM's
/// proxy sends them all.
const SERVE_CONCURRENT_REQUESTS: u32 = 1024;

/// Whether this process serves many clients (set by `genai serve`).
static MANY_CLIENTS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Tells the providers made from now on that this process serves many clients (`genai
/// serve`): an instance whose config sets no `max_concurrent_requests` takes
/// [`SERVE_CONCURRENT_REQUESTS`] in flight instead of [`DEFAULT_CONCURRENT_REQUESTS`].
pub fn serving_many_clients() {
    MANY_CLIENTS.store(true, std::sync::atomic::Ordering::Relaxed);
}

fn default_concurrent_requests() -> u32 {
    if MANY_CLIENTS.load(std::sync::atomic::Ordering::Relaxed) {
        SERVE_CONCURRENT_REQUESTS
    } else {
        DEFAULT_CONCURRENT_REQUESTS
    }
}

tokio::task_local! {
    /// Set while a caller that tries another endpoint itself runs a request ([`failing_over`]).
    static FAILING_OVER: ();
}

/// Runs `f` with the provider's own retries off: each request made within it is tried once,
/// its error (with the provider's `Retry-After`) returned at once, because the caller tries
/// another endpoint itself (the gateway's deployments).
pub async fn failing_over<F: std::future::Future>(f: F) -> F::Output {
    FAILING_OVER.scope((), f).await
}

/// Why an attempt failed, and whether another one may help.
struct Failure {
    error: Error,
    retryable: bool,
    retry_after: Option<Duration>,
}

impl Http {
    pub(crate) fn from_config(provider: &str, c: &HttpSettings) -> Result<Http> {
        let timeouts = Timeouts::checked(provider, c)?;
        Ok(Http {
            provider: provider.to_string(),
            timeouts,
            client: timeouts.client(false)?,
            https: std::sync::OnceLock::new(),
            retry: RetryPolicy::from_config(c),
            limits: Limits::from_config(c),
            in_flight: Arc::new(Semaphore::new(
                c.max_concurrent_requests
                    .unwrap_or_else(default_concurrent_requests)
                    .max(1) as usize,
            )),
        })
    }

    /// The limits on what an answer may bring.
    pub(crate) fn limits(&self) -> Limits {
        self.limits
    }

    /// The client for `url`.
    fn client_for(&self, url: &str) -> Result<&reqwest::Client> {
        if !url.starts_with("https:") {
            return Ok(&self.client);
        }
        if let Some(c) = self.https.get() {
            return Ok(c);
        }
        let c = self.timeouts.client(true)?;
        Ok(self.https.get_or_init(|| c))
    }

    /// Sends a request built by `build` (called again for every attempt, so a signature can
    /// carry a fresh date) and returns the first 2xx answer, its body unread. Connect errors,
    /// 429 and 5xx are retried within the policy; the last error is returned in one line.
    /// `url` is shown in errors and must carry no credentials.
    pub(crate) async fn send(
        &self,
        url: &str,
        mut build: impl FnMut(&reqwest::Client) -> Result<RequestBuilder> + Send,
    ) -> Result<Response> {
        let place = self
            .in_flight
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| Error::internal("the provider is closed"))?;
        let client = self.client_for(url)?;
        let started = Instant::now();
        let mut retry = 0;
        let max_retries = match FAILING_OVER.try_with(|_| ()) {
            Ok(()) => 0,
            Err(_) => self.retry.max_retries,
        };
        // The current span's W3C trace context (the model request's `chat` span), when traces
        // are on: the provider's own traces join genai's.
        let mut traced = HeaderMap::new();
        crate::telemetry::propagate::inject_current(&mut traced);
        loop {
            let mut request = build(client)?;
            if !traced.is_empty() {
                request = request.headers(traced.clone());
            }
            let failure = match request.send().await {
                Ok(mut resp) if resp.status().is_success() => {
                    resp.extensions_mut().insert(InFlight(Arc::new(place)));
                    return Ok(resp);
                }
                Ok(resp) => {
                    let status = resp.status();
                    let headers = resp.headers().clone();
                    let body = self.error_body(resp).await;
                    Failure {
                        error: status_error(&self.provider, url, status, &headers, &body),
                        retryable: status == StatusCode::TOO_MANY_REQUESTS
                            || status.is_server_error(),
                        retry_after: retry_after(&headers),
                    }
                }
                Err(e) => Failure {
                    retryable: e.is_connect(),
                    retry_after: None,
                    error: transport_error(&self.provider, url, e),
                },
            };
            let delay = self.retry.delay(retry, failure.retry_after);
            // A `Retry-After` longer than one wait may be, or than the budget left, is honoured
            // by not retrying at all.
            let too_long =
                delay > self.retry.max_delay || started.elapsed() + delay > self.retry.budget;
            if !failure.retryable || retry >= max_retries || too_long {
                let mut error = failure.error.with_retry_after(failure.retry_after);
                if failure.retryable && too_long && failure.retry_after.is_some() {
                    error.message.push_str(&format!(
                        " (the provider asks to wait {:.0}s: more than genai waits)",
                        delay.as_secs_f64()
                    ));
                }
                if retry > 0 {
                    error.message.push_str(&format!(
                        " (after {} tries over {:.1}s)",
                        retry + 1,
                        started.elapsed().as_secs_f64()
                    ));
                }
                return Err(error);
            }
            tracing::debug!(provider = %self.provider, retry, ?delay, error = %failure.error.message, "retrying");
            tokio::time::sleep(delay).await;
            retry += 1;
        }
    }

    /// Turns a 2xx answer into the provider response: its events when the request asked for a
    /// stream and the body is framed as one (SSE or NDJSON), else the whole body. Servers that
    /// ignore `stream: true` and answer one JSON body are handled this way.
    pub(crate) async fn response(
        &self,
        resp: Response,
        url: &str,
        stream: bool,
    ) -> Result<ProviderResponse> {
        let content_type = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        if stream && content_type.starts_with("text/event-stream") {
            return Ok(ProviderResponse::Events(self.sse(resp, url)));
        }
        if stream
            && [
                "application/x-ndjson",
                "application/jsonl",
                "application/json-lines",
            ]
            .iter()
            .any(|t| content_type.starts_with(t))
        {
            return Ok(ProviderResponse::Events(self.ndjson(resp, url)));
        }
        let mut body = BytesMut::new();
        let mut pieces = self.bytes(resp, url);
        while let Some(piece) = pieces.next().await {
            body.extend_from_slice(&piece?);
        }
        Ok(ProviderResponse::Complete(body.freeze()))
    }

    /// The body's bytes as they arrive, transport errors made readable; past `reply_bytes` the
    /// stream ends with an error (and the connection is dropped).
    pub(crate) fn bytes(&self, mut resp: Response, url: &str) -> super::ByteStream {
        let (provider, url) = (self.provider.clone(), url.to_string());
        // The request keeps its place in flight until its body is read or dropped.
        let place = resp.extensions_mut().remove::<InFlight>();
        let max = self.limits.reply_bytes;
        let mut seen = 0u64;
        Box::pin(resp.bytes_stream().scan(false, move |ended, r| {
            let _place = &place;
            if *ended {
                return futures::future::ready(None);
            }
            let item = match r {
                Err(e) => Err(transport_error(&provider, &url, e)),
                Ok(piece) => {
                    seen += piece.len() as u64;
                    if seen > max {
                        *ended = true;
                        Err(Error::provider(format!(
                            "{provider}: the answer is over {max} bytes (max_reply_bytes): \
                             the turn is ended"
                        )))
                    } else {
                        Ok(piece)
                    }
                }
            };
            futures::future::ready(Some(item))
        }))
    }

    /// Reads at most `error_bytes` of an error answer's body; the rest is never read.
    async fn error_body(&self, resp: Response) -> Bytes {
        let max = self.limits.error_bytes as usize;
        let mut body = BytesMut::new();
        let mut pieces = resp.bytes_stream();
        while let Some(Ok(piece)) = pieces.next().await {
            let room = max.saturating_sub(body.len());
            body.extend_from_slice(&piece[..piece.len().min(room)]);
            if body.len() >= max {
                break;
            }
        }
        body.freeze()
    }

    /// Server-sent events; `message` (the default type) is reported as no type.
    pub(crate) fn sse(&self, resp: Response, url: &str) -> EventStream {
        super::sse::events(
            self.bytes(resp, url),
            &self.provider,
            self.limits.event_bytes as usize,
        )
    }

    /// Newline-delimited JSON: one event per non-empty line.
    pub(crate) fn ndjson(&self, resp: Response, url: &str) -> EventStream {
        super::ndjson::events(
            self.bytes(resp, url),
            &self.provider,
            self.limits.event_bytes as usize,
        )
    }
}

/// `Retry-After` (seconds or an HTTP date) or `retry-after-ms` (OpenAI, Azure).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Some(Duration::from_secs_f64(ms.max(0.0) / 1000.0));
    }
    let v = text("retry-after")?;
    if let Ok(secs) = v.parse::<f64>() {
        return Some(Duration::from_secs_f64(secs.max(0.0)));
    }
    let when = httpdate::parse_http_date(v).ok()?;
    Some(
        when.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// The request id headers providers send, most specific first.
const REQUEST_ID_HEADERS: &[&str] = &[
    "x-request-id",
    "request-id",
    "x-amzn-requestid",
    "apim-request-id",
    "x-goog-request-id",
];

/// One readable line from a non-2xx answer: the provider, the HTTP status, the provider's error
/// type and message, the request id, and a hint. Reads the error bodies of OpenAI
/// (`{"error":{"message","type"}}`), Anthropic (`{"type":"error","error":{...}}`), Gemini
/// (`{"error":{"message","status"}}`), Bedrock (`{"message"}` + `x-amzn-ErrorType`) and Ollama
/// (`{"error":"..."}`); other bodies are shown cut short. Headers are never shown (keys live
/// there); a 404 names the `url` tried (it carries no credentials), which is most often what
/// is wrong.
pub(crate) fn status_error(
    provider: &str,
    url: &str,
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
) -> Error {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let json = serde_json::from_slice::<Value>(body).ok();
    let (mut error_type, message) = match json.as_ref().map(error_of) {
        Some((t, Some(m))) => (t, cut(&m, MAX_ERROR_TEXT)),
        _ => {
            let text = String::from_utf8_lossy(body);
            let text = text.trim();
            let text: String = text.chars().take(300).collect();
            (
                None,
                if text.is_empty() {
                    "no details".to_string()
                } else {
                    text
                },
            )
        }
    };
    if error_type.is_none() {
        // `x-amzn-ErrorType: ValidationException:http://internal.amazon.com/...`
        error_type =
            header("x-amzn-errortype").map(|t| t.split(':').next().unwrap_or(t).to_string());
    }
    let request_id = REQUEST_ID_HEADERS.iter().find_map(|h| header(h));
    let hint = match status.as_u16() {
        401 | 403 => " (check the API key)".to_string(),
        404 => format!(
            " (tried {url}: check the base URL, which for most servers ends in /v1, and the model id)"
        ),
        429 => " (rate limited: wait and try again)".to_string(),
        500..=599 => " (the provider failed: try again later)".to_string(),
        _ => String::new(),
    };
    let kind = if matches!(status.as_u16(), 401 | 403) {
        ErrorKind::MissingCredentials
    } else {
        ErrorKind::ProviderError
    };
    let mut line = format!("{provider}: HTTP {status}");
    if let Some(t) = error_type.filter(|t| !t.is_empty()) {
        line.push_str(&format!(" {t}"));
    }
    line.push_str(&format!(": {message}"));
    if let Some(id) = request_id {
        line.push_str(&format!(" [request {id}]"));
    }
    line.push_str(&hint);
    Error::new(kind, line).with_upstream_status(status.as_u16())
}

/// `text`, cut to `max` characters with an ellipsis.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// The error type and message of a JSON error body, in any of the shapes above.
pub(crate) fn error_of(v: &Value) -> (Option<String>, Option<String>) {
    let text = |v: Option<&Value>| match v {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    match v.get("error") {
        Some(Value::String(m)) => (None, Some(m.clone())),
        Some(e @ Value::Object(_)) => (
            text(e.get("type"))
                .or_else(|| text(e.get("status")))
                .or_else(|| text(e.get("code"))),
            text(e.get("message")),
        ),
        _ => (
            text(v.get("__type")).or_else(|| text(v.get("type")).filter(|t| t != "error")),
            text(v.get("message")).or_else(|| text(v.get("Message"))),
        ),
    }
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
