//! The `local` kind's provider, [`LocalProvider`]: one configured instance (its settings, its
//! default model), resolving a request's model to a file, moving the engine's work onto
//! blocking threads, and the channel between a generation and its caller (text chunks, the
//! progress note of a request waiting for a slot, tool calls read back whole). A process that
//! uses a running `genai serve` lets it answer first (the core's `served`).
//!
//! It must never call llama.cpp itself (`engine.rs` and `scheduler.rs` do) nor build JSON by
//! hand (`wire.rs` does).

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use futures::channel::mpsc;
use futures::StreamExt;

use genai_core::config::{LocalSettings, Paths};
use genai_core::embedding::{EmbedRequest, Embeddings};
use genai_core::error::{Error, ErrorKind, Result};
use genai_core::format::ModelRequest;
use genai_core::models::ModelLibrary;
use genai_core::provider::local::{self, served, KIND};
use genai_core::provider::{
    Infill, Infilled, ProviderResponse, ServiceProvider, StreamEvent, PROGRESS_EVENT,
};

use crate::engine::{self, Engine, EngineSettings};
use crate::grammar::{self, Convention};
use crate::scheduler::{Finished, Sink};
use crate::wire::{self, Answer};

/// The progress note of a request waiting for a free slot.
fn waiting_note(ahead: usize) -> String {
    match ahead {
        0 => "waiting for a slot: every local slot is busy".to_string(),
        n => format!("waiting for a slot: every local slot is busy, {n} requests ahead"),
    }
}

/// A configured local engine.
pub(crate) struct LocalProvider {
    name: String,
    /// The configured model (name or path), else the models folder's default at startup.
    default_model: Option<String>,
    settings: EngineSettings,
}

/// What the generation thread sends.
enum Event {
    Text(String),
    /// Every slot is busy: this many requests are ahead.
    Waiting(usize),
    Done(Finished),
}

/// A generation's sink: a channel whose closing (the caller dropped the stream, as
/// `Cancel` does) stops generation before the next step.
struct ChannelSink {
    tx: mpsc::UnboundedSender<Result<Event>>,
    /// The provider's name, for errors.
    provider: String,
}

impl Sink for ChannelSink {
    fn text(&mut self, text: &str) -> bool {
        self.tx
            .unbounded_send(Ok(Event::Text(text.to_string())))
            .is_ok()
    }

    fn cancelled(&self) -> bool {
        self.tx.is_closed()
    }

    fn waiting(&mut self, ahead: usize) {
        tracing::info!(
            provider = %self.provider,
            ahead,
            "every local slot is busy: the request waits for a slot"
        );
        let _ = self.tx.unbounded_send(Ok(Event::Waiting(ahead)));
    }

    fn finish(self: Box<Self>, result: Result<Finished>) {
        let provider = &self.provider;
        let result = result.map_err(|e| Error::new(e.kind, format!("{provider}: {}", e.message)));
        let _ = self.tx.unbounded_send(result.map(Event::Done));
    }
}

impl LocalProvider {
    pub(crate) fn from_config(name: &str, c: &LocalSettings) -> Result<LocalProvider> {
        let positive = |v: Option<u32>, what: &str| -> Result<Option<u32>> {
            match v {
                Some(0) => Err(Error::new(
                    ErrorKind::Config,
                    format!("service_providers.{name}.{what} must be at least 1"),
                )),
                other => Ok(other),
            }
        };
        let configured = positive(c.threads, "threads")?;
        let (threads, threads_batch) = match configured {
            Some(n) => (n, n),
            None => engine::default_threads(),
        };
        let context_size = positive(c.context_size, "context_size")?.unwrap_or(0);
        let slots = engine::slots(positive(c.slots, "slots")?, local::runs_one_conversation());
        let default_model = c
            .model
            .clone()
            .or_else(|| c.default_model.clone())
            .filter(|m| !m.trim().is_empty())
            .or_else(|| {
                // Zero config: the models folder's default, if any (read once, at start).
                let paths = Paths::from_env().ok()?;
                ModelLibrary::open(&paths).default_name().ok().flatten()
            });
        Ok(LocalProvider {
            name: name.to_string(),
            default_model,
            settings: EngineSettings {
                threads,
                threads_batch,
                context_size,
                slots,
                kv_unified: c.kv_unified.unwrap_or(false),
                fit_to_load: configured.is_none(),
            },
        })
    }

    fn model_path(&self, model: &str) -> Result<PathBuf> {
        let model = match model.trim() {
            "" => self.default_model.as_deref().ok_or_else(|| {
                Error::new(
                    ErrorKind::Config,
                    format!(
                        "{}: no local model: set `model` in [service_providers.{}], name one, or install one (`genai models pull demo` for the demo model, `genai models pull URL` for any GGUF)",
                        self.name, self.name
                    ),
                )
            })?,
            m => m,
        };
        let paths = Paths::from_env()?;
        ModelLibrary::open(&paths)
            .resolve(model)
            .map_err(|e| Error::new(e.kind, format!("{}: {}", self.name, e.message)))
    }

    /// The engine of a model (loading it on first use), the prepared prompt, and the tool
    /// calling convention when tools are offered.
    async fn prepare(
        &self,
        request: &ModelRequest,
    ) -> Result<(Arc<Engine>, engine::Prepared, Option<Convention>)> {
        let path = self.model_path(request.model())?;
        let (settings, name) = (self.settings, self.name.clone());
        let body = request.body().clone();
        tokio::task::spawn_blocking(move || {
            let engine = engine::engine(&path, settings)?;
            let convention = Convention::of_template(engine.template_source().as_deref());
            let chat = wire::parse_request(&body, convention)?;
            let prepared = engine.prepare(&chat.messages, chat.settings, &name)?;
            Ok((engine, prepared, chat.tools.map(|(_, c)| c)))
        })
        .await
        .map_err(|e| Error::internal(format!("the local engine failed: {e}")))?
    }

    /// Runs a prepared prompt on a blocking thread; its text and end come through the
    /// channel, whose dropping stops the generation.
    fn spawn_generation(
        &self,
        engine: Arc<Engine>,
        prepared: engine::Prepared,
    ) -> mpsc::UnboundedReceiver<Result<Event>> {
        let (tx, rx) = mpsc::unbounded();
        let sink = ChannelSink {
            tx,
            provider: self.name.clone(),
        };
        // Building the sampler may block a little (a grammar is parsed): off the async
        // workers, like everything that calls llama.cpp.
        tokio::task::spawn_blocking(move || engine.generate(prepared, Box::new(sink)));
        rx
    }
}

#[async_trait]
impl ServiceProvider for LocalProvider {
    fn kind(&self) -> &'static str {
        KIND
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn default_model(&self) -> Option<&str> {
        self.default_model.as_deref()
    }

    /// Tool calls are constrained by a grammar and read back (`grammar.rs`).
    fn native_tools(&self) -> bool {
        true
    }

    fn model_file(&self, model: &str) -> Option<Result<PathBuf>> {
        Some(self.model_path(model))
    }

    /// The configured `context_size`, else the loaded engine's (loading it as the request
    /// would).
    async fn context_tokens(&self, model: &str) -> Option<u64> {
        if self.settings.context_size > 0 {
            return Some(u64::from(self.settings.context_size));
        }
        let (path, settings) = (self.model_path(model).ok()?, self.settings);
        tokio::task::spawn_blocking(move || engine::engine(&path, settings).map(|e| e.n_ctx))
            .await
            .ok()?
            .ok()
            .map(u64::from)
    }

    async fn warm_up(&self, model: &str) -> Result<()> {
        let (path, settings) = (self.model_path(model)?, self.settings);
        tokio::task::spawn_blocking(move || engine::engine(&path, settings).map(|_| ()))
            .await
            .map_err(|e| Error::internal(format!("the local engine failed: {e}")))?
    }

    async fn send_request(&self, request: &ModelRequest) -> Result<ProviderResponse> {
        let model_file = || self.model_path(request.model());
        if let Some(answer) = served::send(&self.name, model_file, request).await? {
            return Ok(answer);
        }
        let (engine, prepared, tools) = self.prepare(request).await?;
        let answer = Answer::new(engine.model_name());
        let rx = self.spawn_generation(engine, prepared);
        if let Some(convention) = tools {
            // A reply that may call tools is read whole, then split into text and calls.
            return collect(rx, &self.name)
                .await
                .map(|(text, f)| with_calls(&answer, &text, f, convention, request.stream()));
        }
        if request.stream() {
            let first = futures::stream::iter([Ok(StreamEvent::data(answer.role_chunk()))]);
            let rest = rx.flat_map(move |event| {
                let items: Vec<Result<StreamEvent>> = match event {
                    Ok(Event::Text(t)) => vec![Ok(StreamEvent::data(answer.text_chunk(&t)))],
                    Ok(Event::Waiting(ahead)) => vec![Ok(StreamEvent {
                        event: Some(PROGRESS_EVENT.to_string()),
                        data: waiting_note(ahead),
                    })],
                    Ok(Event::Done(f)) => vec![
                        Ok(StreamEvent::data(answer.finish_chunk(f.finish_reason))),
                        Ok(StreamEvent::data(answer.usage_chunk(f.counts))),
                        Ok(StreamEvent::data(wire::DONE.to_string())),
                    ],
                    Err(e) => vec![Err(e)],
                };
                futures::stream::iter(items)
            });
            return Ok(ProviderResponse::Events(Box::pin(first.chain(rest))));
        }
        let (text, f) = collect(rx, &self.name).await?;
        let body = answer.completion(&text, &[], f.finish_reason, f.counts);
        Ok(ProviderResponse::Complete(body.into()))
    }

    /// Pooled embeddings in a context of their own (`embed.rs`).
    async fn embed(&self, request: &EmbedRequest) -> Result<Embeddings> {
        request.check()?;
        let path = self.model_path(&request.model)?;
        let (settings, name, request) = (self.settings, self.name.clone(), request.clone());
        tokio::task::spawn_blocking(move || crate::embed::embed(&path, settings, &request, &name))
            .await
            .map_err(|e| Error::internal(format!("the local engine failed: {e}")))?
    }

    /// The raw FIM prompt when the model's vocabulary has FIM tokens.
    async fn fill_in_middle(&self, model: &str, request: &Infill) -> Result<Option<Infilled>> {
        let path = self.model_path(model)?;
        let (settings, name, request) = (self.settings, self.name.clone(), request.clone());
        let prepared = tokio::task::spawn_blocking(move || {
            let engine = engine::engine(&path, settings)?;
            Ok::<_, Error>(engine.prepare_infill(&request, &name)?.map(|p| (engine, p)))
        })
        .await
        .map_err(|e| Error::internal(format!("the local engine failed: {e}")))??;
        let Some((engine, prepared)) = prepared else {
            return Ok(None);
        };
        let rx = self.spawn_generation(engine, prepared);
        let (text, f) = collect(rx, &self.name).await?;
        Ok(Some(Infilled {
            text,
            prompt_tokens: f.counts.prompt,
            completion_tokens: f.counts.completion,
            finish_reason: f.finish_reason.to_string(),
        }))
    }
}

/// The whole text of a generation and how it ended.
async fn collect(
    mut rx: mpsc::UnboundedReceiver<Result<Event>>,
    provider: &str,
) -> Result<(String, Finished)> {
    let mut text = String::new();
    while let Some(event) = rx.next().await {
        match event? {
            Event::Text(t) => text.push_str(&t),
            Event::Waiting(_) => {}
            Event::Done(f) => return Ok((text, f)),
        }
    }
    Err(Error::internal(format!(
        "{provider}: the local engine stopped without an answer"
    )))
}

/// The answer of a generation that may call tools: its text before the calls, and the
/// calls, as chunks or as one body.
fn with_calls(
    answer: &Answer,
    text: &str,
    f: Finished,
    convention: Convention,
    stream: bool,
) -> ProviderResponse {
    let (text, calls) = grammar::parse_calls(text, convention);
    let finish = match calls.is_empty() {
        true => f.finish_reason,
        false => "tool_calls",
    };
    if !stream {
        let body = answer.completion(&text, &calls, finish, f.counts);
        return ProviderResponse::Complete(body.into());
    }
    let mut events = vec![answer.role_chunk()];
    if !text.is_empty() {
        events.push(answer.text_chunk(&text));
    }
    if !calls.is_empty() {
        events.push(answer.calls_chunk(&calls));
    }
    events.push(answer.finish_chunk(finish));
    events.push(answer.usage_chunk(f.counts));
    events.push(wire::DONE.to_string());
    let events = events.into_iter().map(|e| Ok(StreamEvent::data(e)));
    ProviderResponse::Events(Box::pin(futures::stream::iter(events.collect::<Vec<_>>())))
}
