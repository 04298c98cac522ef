//! A local model kept warm by a running `genai serve` of this user: `genai ask` and `genai
//! chat` send their local requests to it over loopback HTTP instead of loading the model
//! again (0.75–1 s before the first token) and building a context of their own.
//!
//! This file owns the route's wire (the request, the error body, the stream's error event)
//! and the client's half: sending a prepared request and reading the answer back as the
//! in-process engine gives it, so the conversation, its output and its history are the same.
//! The serving half is `genai-server`'s `warm.rs`. It must never decide whether to connect (the front-end
//! does, from `--no-connect` and the config) and never fail a request the engine here could
//! run: a serve that is gone, runs another model or refuses the token means "load it here".

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, ErrorKind, Result};
use crate::format::ModelRequest;
use crate::provider::{ProviderResponse, StreamEvent};

/// The route's path on the serve's address.
pub const ROUTE: &str = "/genai/local";

/// The type of the stream event that carries an error raised after the answer began (its data
/// is an [`WarmError`]).
pub const ERROR_EVENT: &str = "genai.error";

/// The largest event the client reads (a whole tool-call reply comes as one chunk).
const MAX_EVENT: usize = 16 * 1024 * 1024;

/// One request for a warm local model.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WarmRequest {
    /// The provider instance, by name, in the serve's config.
    pub provider: String,
    /// The GGUF file the client would run: the serve runs the request only on the same one.
    pub model_file: PathBuf,
    /// The model as the request names it (may be empty: the provider's default).
    pub model: String,
    pub stream: bool,
    /// The openai-chat body the engine reads.
    pub body: Value,
}

/// A refusal or a failure, as a body (with a status) or as the data of an [`ERROR_EVENT`].
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WarmError {
    /// The error kind's wire name (`ErrorKind::as_str`), so the exit code is the same.
    pub kind: String,
    pub message: String,
    /// The serve cannot run this request as this client would (another model, no such
    /// provider): the client runs it itself.
    #[serde(default)]
    pub run_here: bool,
}

impl WarmError {
    pub fn of(e: &Error) -> WarmError {
        WarmError {
            kind: e.kind.as_str().to_string(),
            message: e.message.clone(),
            run_here: false,
        }
    }

    fn into_error(self) -> Error {
        let kind = ErrorKind::from_name(&self.kind).unwrap_or(ErrorKind::ProviderError);
        Error::new(kind, self.message)
    }
}

/// The serve this process sends its local requests to.
struct Link {
    url: String,
    token: String,
    http: reqwest::Client,
    /// Set once the serve was not there: later requests load the model here at once.
    gone: AtomicBool,
}

static LINK: OnceLock<Link> = OnceLock::new();

/// Sends this process's local requests to the serve at `addr` (with its token) from now on.
/// Building the client does no I/O: finding out the serve is gone is one refused connection.
pub fn use_serve(addr: SocketAddr, token: String) {
    crate::redact::remember(&token);
    let Ok(http) = reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(2))
        .no_proxy()
        .build()
    else {
        return;
    };
    let _ = LINK.set(Link {
        url: format!("http://{addr}{ROUTE}"),
        token,
        http,
        gone: AtomicBool::new(false),
    });
}

/// The answer of the serve this process uses, or `None` when this process must run the request
/// itself: no serve is used, it is gone, or it cannot run this request as this process would.
/// Only the in-process engine sends (`genai-local`'s provider).
pub async fn send(
    provider: &str,
    model_file: impl FnOnce() -> Result<PathBuf>,
    request: &ModelRequest,
) -> Result<Option<ProviderResponse>> {
    let Some(link) = LINK.get().filter(|l| !l.gone.load(Ordering::Relaxed)) else {
        return Ok(None);
    };
    let warm = WarmRequest {
        provider: provider.to_string(),
        model_file: model_file()?,
        model: request.model.clone(),
        stream: request.stream,
        body: request.body().clone(),
    };
    let sent = link
        .http
        .post(&link.url)
        .bearer_auth(&link.token)
        .json(&warm)
        .send()
        .await;
    let response = match sent {
        Ok(r) => r,
        Err(e) => {
            tracing::info!(
                "no genai serve answered at {}: the model is loaded here ({})",
                link.url,
                crate::error::root_cause(&e)
            );
            link.gone.store(true, Ordering::Relaxed);
            return Ok(None);
        }
    };
    let status = response.status();
    if !status.is_success() {
        let text = response.text().await.unwrap_or_default();
        let refusal = serde_json::from_str::<WarmError>(&text).unwrap_or(WarmError {
            kind: String::new(),
            message: text,
            run_here: true,
        });
        if refusal.run_here || status == reqwest::StatusCode::UNAUTHORIZED {
            tracing::info!(
                "the genai serve at {} does not run this model ({status}: {}): it is loaded here",
                link.url,
                refusal.message
            );
            return Ok(None);
        }
        return Err(refusal.into_error());
    }
    tracing::debug!("answered by the genai serve at {}", link.url);
    if !request.stream {
        let body = response.bytes().await.map_err(|e| broken(provider, e))?;
        return Ok(Some(ProviderResponse::Complete(body)));
    }
    let name = provider.to_string();
    let bytes = response
        .bytes_stream()
        .map(move |chunk| chunk.map_err(|e| broken(&name, e)));
    let events = crate::provider::sse::events(Box::pin(bytes), provider, MAX_EVENT);
    let events = events.map(|event| match event {
        Ok(StreamEvent {
            event: Some(t),
            data,
        }) if t == ERROR_EVENT => Err(serde_json::from_str::<WarmError>(&data)
            .map(WarmError::into_error)
            .unwrap_or_else(|_| Error::provider(data))),
        other => other,
    });
    Ok(Some(ProviderResponse::Events(Box::pin(events))))
}

fn broken(provider: &str, e: reqwest::Error) -> Error {
    Error::provider(format!(
        "{provider}: the connection to genai serve broke: {}",
        crate::error::root_cause(&e)
    ))
}
