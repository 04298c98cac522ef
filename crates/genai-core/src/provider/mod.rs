//! Service providers: the transports that move a prepared request to an endpoint and bring the
//! answer back.
//!
//! A provider owns its HTTP client, its endpoint and its credentials. It must never interpret a
//! response body beyond its status and error text: that is the model configuration's job. The
//! HTTP kinds are rows of one table (`kinds`) sent by one provider (`remote`) through one
//! transport (`http`); a kind that differs keeps its hooks in its own file.

pub(crate) mod anthropic;
pub mod aws;
pub(crate) mod azure_openai;
pub(crate) mod bedrock;
pub(crate) mod build;
pub(crate) mod embed;
pub mod http;
pub(crate) mod http_connector;
pub mod kinds;
pub(crate) mod lazy_key;
pub mod local;
pub mod ndjson;
pub(crate) mod ollama;
pub mod remote;
#[cfg(any(test, feature = "testing"))]
pub mod scripted;
pub mod sse;

/// The `openai` provider kind: OpenAI and every OpenAI-compatible server (vLLM, llama.cpp's
/// server, LM Studio, OpenRouter, ...), reached at `{base_url}/chat/completions`. Its row in
/// the kinds table says everything about it.
pub(crate) mod openai {
    pub(crate) const KIND: &str = super::kinds::OPENAI.name;
}

/// The `gemini` provider kind: Google's Gemini API, reached at
/// `{base_url}/v1beta/models/{model}:generateContent` (`:streamGenerateContent?alt=sse` for a
/// stream) with the key in `x-goog-api-key`, never in the URL. Its row in the kinds table says
/// everything about it.
pub(crate) mod gemini {
    pub(crate) const KIND: &str = super::kinds::GEMINI.name;
}

use std::pin::Pin;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::Stream;

use crate::embedding::{EmbedRequest, Embeddings};
use crate::error::{Error, ErrorKind, Result};
use crate::format::ModelRequest;
pub use crate::format::StreamEvent;
use genai_protocol::listings::KeyStatus;

/// The type of a stream event a provider adds itself, not from the model: a note on the
/// request's progress (its data, plain text), shown to the client and never decoded.
pub const PROGRESS_EVENT: &str = "genai.progress";

/// A streamed response body.
pub type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes>> + Send>>;

/// A streamed answer as events.
pub(crate) type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent>> + Send>>;

/// What a provider brings back: a whole body, or the events of a stream. Framing (SSE, NDJSON,
/// AWS event stream) is the provider's job; reading each event is the format's.
pub enum ProviderResponse {
    Complete(Bytes),
    Events(EventStream),
}

/// A configured transport.
#[async_trait]
pub trait ServiceProvider: Send + Sync {
    /// The provider kind, such as `openai`.
    fn kind(&self) -> &'static str;
    /// The instance name, such as `openai` or `work`.
    fn name(&self) -> &str;
    /// The model id used when a conversation names none, as far as it is known without
    /// asking the server.
    fn default_model(&self) -> Option<&str>;
    /// The model id used when a conversation names none: [`Self::default_model`], else (an
    /// OpenAI-compatible server) the first model the server lists, asked once, blocking the
    /// caller a few seconds at most; else an error saying how to name one.
    fn resolve_default_model(&self) -> Result<String> {
        self.default_model()
            .map(str::to_string)
            .ok_or_else(|| no_default_model(self.name(), None))
    }
    /// Whether the built-in price table applies: the kind's own service runs the models the
    /// table names. Another server that merely speaks the API (whatever it calls its models)
    /// says no, and its models cost what the config's `[pricing]` says, else unknown.
    fn vendor_prices(&self) -> bool {
        true
    }
    /// The largest inline image, in bytes, this provider accepts (`None`: no known limit).
    fn max_image_bytes(&self) -> Option<usize> {
        None
    }
    /// Whether the endpoint honours the format's native tool calls. A provider that reads the
    /// format but ignores its tools (the local engine) says no, and the agent uses ReAct.
    fn native_tools(&self) -> bool {
        true
    }
    /// Whether it has the credentials it needs. May read the keyring and the key file (never
    /// runs `api_key_cmd`); for listings, not for sending.
    fn key_status(&self) -> KeyStatus {
        KeyStatus::NotNeeded
    }
    /// The most tokens one answer may have (`None`: no limit).
    fn max_reply_tokens(&self) -> Option<u64> {
        None
    }
    /// The context size in tokens this provider runs `model` with, when it declares one (the
    /// local engine's); `None`: not known here. Compaction counts with it.
    async fn context_tokens(&self, model: &str) -> Option<u64> {
        let _ = model;
        None
    }
    /// The model file this provider runs `model` on, when it runs models in-process (the local
    /// engine): what another process of the same user compares before it lets a running
    /// `genai serve` answer for it. `None` for every provider that sends requests away.
    fn model_file(&self, model: &str) -> Option<Result<std::path::PathBuf>> {
        let _ = model;
        None
    }
    /// Loads what the first request for `model` would (the local engine's model file), so it
    /// answers at once; nothing for a provider that sends requests away.
    async fn warm_up(&self, model: &str) -> Result<()> {
        let _ = model;
        Ok(())
    }
    /// The vectors of `request`'s texts, one per text in order, with the input tokens the
    /// provider counted. A kind without embeddings answers an error naming those with them.
    async fn embed(&self, request: &EmbedRequest) -> Result<Embeddings> {
        let _ = request;
        Err(crate::embedding::unsupported(self.kind()))
    }
    /// Sends the request. Dropping the returned future (or stream) drops the HTTP request.
    async fn send_request(&self, request: &ModelRequest) -> Result<ProviderResponse>;
    /// Fill-in-the-middle: the text `model` writes between `request.prefix` and
    /// `request.suffix`, from a raw prompt in the model's own FIM tokens (no chat template).
    /// `None` when the model has no such tokens (the caller writes a chat prompt instead), and
    /// for every provider that cannot tell. Dropping the future stops the generation.
    async fn fill_in_middle(&self, model: &str, request: &Infill) -> Result<Option<Infilled>> {
        let _ = (model, request);
        Ok(None)
    }
}

/// The error of a provider instance with no model to run: name one, or set its default
/// (`why`: what asking the server for one said).
pub(crate) fn no_default_model(name: &str, why: Option<&str>) -> Error {
    let mut message = format!(
        "provider `{name}` has no default model: pass -m {name}:MODEL, or set `default_model` under [service_providers.{name}]"
    );
    if let Some(why) = why {
        message.push_str(&format!(" ({why})"));
    }
    Error::invalid_params(message)
}

/// A fill-in-the-middle request: the text before and after the cursor.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Infill {
    pub prefix: String,
    pub suffix: String,
    /// The most tokens the middle may have.
    pub max_tokens: u32,
    /// `None`: the engine's default sampling.
    pub temperature: Option<f32>,
}

/// What a fill-in-the-middle generation wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Infilled {
    /// The middle, leading whitespace kept.
    pub text: String,
    /// Tokens of the FIM prompt (its FIM tokens included).
    pub prompt_tokens: u32,
    /// Tokens generated.
    pub completion_tokens: u32,
    /// `stop` (end of generation or a stop string), `length`, `repetition` (a loop was
    /// stopped), or `cancelled`.
    pub finish_reason: String,
}

/// Timeouts of an HTTP provider.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    pub(crate) connect: Duration,
    pub(crate) read: Duration,
    pub(crate) total: Duration,
}

impl Timeouts {
    /// The timeouts of these settings, refusing a negative, zero or non-number one (a typo
    /// must not silently become the default).
    pub(crate) fn checked(provider: &str, c: &crate::config::HttpSettings) -> Result<Timeouts> {
        for (name, value) in [
            ("connect_timeout_secs", c.connect_timeout_secs),
            ("timeout_secs", c.timeout_secs),
            ("read_timeout_secs", c.read_timeout_secs),
            ("retry_budget_secs", c.retry_budget_secs),
        ] {
            if let Some(v) = value.filter(|v| !(v.is_finite() && *v > 0.0)) {
                return Err(Error::new(
                    ErrorKind::Config,
                    format!(
                        "service_providers.{provider}.{name} = {v}: give a number of seconds above 0"
                    ),
                ));
            }
        }
        Ok(Timeouts::from_config(c))
    }

    pub(crate) fn from_config(c: &crate::config::HttpSettings) -> Timeouts {
        let secs =
            |v: Option<f64>, d: f64| Duration::from_secs_f64(v.filter(|s| *s > 0.0).unwrap_or(d));
        Timeouts {
            connect: secs(c.connect_timeout_secs, 10.0),
            read: secs(c.read_timeout_secs, 120.0),
            total: secs(c.timeout_secs, 600.0),
        }
    }

    /// An HTTP client with these timeouts; one for `https` trusts the system's authorities too
    /// (`crate::tls`).
    pub(crate) fn client(&self, https: bool) -> Result<reqwest::Client> {
        let builder = reqwest::Client::builder();
        let builder = if https {
            crate::tls::with_system_roots(builder)
        } else {
            builder
        };
        builder
            .connect_timeout(self.connect)
            .read_timeout(self.read)
            .timeout(self.total)
            .user_agent(concat!("genai/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Error::internal(format!("cannot build an HTTP client: {e}")))
    }
}

/// A readable error for a failed HTTP exchange; never includes headers (keys live there).
/// `url` is the endpoint (without credentials), shown so the user sees where it went.
pub(crate) fn transport_error(provider: &str, url: &str, e: reqwest::Error) -> Error {
    let url = format!(" {url}");
    if e.is_timeout() {
        return Error::new(
            ErrorKind::Timeout,
            format!(
                "{provider}: no answer in time from{url} (raise timeout_secs or read_timeout_secs)"
            ),
        );
    }
    if e.is_connect() {
        return Error::provider(format!(
            "{provider}: cannot connect to{url}: {}",
            crate::error::root_cause(&e)
        ))
        .unreachable();
    }
    if e.is_body() || e.is_decode() {
        return Error::provider(format!(
            "{provider}: the connection broke while reading the answer from{url}: {}",
            crate::error::root_cause(&e)
        ));
    }
    Error::provider(format!(
        "{provider}: request to{url} failed: {}",
        crate::error::root_cause(&e)
    ))
}
