//! The `local` provider kind: a GGUF model run in-process by llama.cpp (cargo feature `local`,
//! on by default). Its interface is the `openai-chat` format: it reads an openai-chat request
//! body and answers with openai-chat JSON (chunk events when streaming, one
//! `chat.completion` body otherwise), so the openai-chat decoder reads it unchanged.
//!
//! Config: `[service_providers.NAME] kind = "local"` with `model` (a name in the models folder
//! or a path to a `.gguf` file), `threads` (default: `engine::default_threads`, the physical
//! cores less those other processes keep busy when the engine starts), `context_size`
//! (tokens each slot's sequence may hold, default 4096 capped by the model's training context)
//! and `slots` (conversations run at once, each keeping its cached prefix, default 4, or 1 in a
//! process that runs one conversation at a time: `genai ask`, `genai chat`; one context of
//! `context_size × slots` tokens holds them all). No GPU offload. With nothing configured,
//! the registry makes an implicit instance `local` for the models folder's default model
//! (`default_model`, read like `model`).
//!
//! This file owns the provider: resolving the model, moving work onto blocking threads, and
//! the channel between generation and the caller. It must never call llama.cpp itself
//! (`local/engine.rs` and `local/scheduler.rs` do) nor build JSON by hand (`local/wire.rs`
//! does). The parts, one job each: `engine` (llama.cpp: model cache, template, tokens,
//! samplers), `load` (how busy the machine is, for the default threads), `scheduler` (the
//! context and continuous batching), `slots` (which sequence a
//! request takes), `template` (chat template and its ChatML fallback), `infill` (the
//! fill-in-the-middle prompt of models with FIM tokens), `output` (UTF-8 across tokens, stop
//! strings), `repetition` (a reply stuck in a loop), `grammar` (structured output and tool calls
//! by grammar), `wire` (openai-chat in and out), `served` (the same model kept warm by a
//! running `genai serve`, for `ask` and `chat`).

pub(crate) const KIND: &str = "local";

#[cfg(feature = "local")]
mod engine;
#[cfg(feature = "local")]
mod grammar;
#[cfg(feature = "local")]
mod infill;
#[cfg(feature = "local")]
mod load;
#[cfg(feature = "local")]
mod output;
#[cfg(feature = "local")]
mod repetition;
#[cfg(feature = "local")]
mod sampling;
#[cfg(feature = "local")]
mod scheduler;
pub mod served;
#[cfg(feature = "local")]
mod slots;
#[cfg(feature = "local")]
mod template;
#[cfg(feature = "local")]
mod wire;

#[cfg(feature = "local")]
pub(crate) use enabled::LocalProvider;

use std::sync::Arc;

use super::ServiceProvider;
use crate::config::LocalSettings;
use crate::error::Result;

/// Builds a `local` provider instance (the registry's factory).
pub(crate) fn create(name: &str, c: &LocalSettings) -> Result<Arc<dyn ServiceProvider>> {
    #[cfg(feature = "local")]
    {
        Ok(Arc::new(LocalProvider::from_config(name, c)?))
    }
    #[cfg(not(feature = "local"))]
    {
        let _ = c;
        Err(crate::error::Error::new(
            crate::error::ErrorKind::Config,
            format!(
                "service_providers.{name}: this genai was built without the `local` feature: rebuild with default features (needs cmake and clang)"
            ),
        ))
    }
}

/// Whether this process runs one conversation at a time (set by `genai ask` and `genai chat`).
static ONE_CONVERSATION: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Tells the local providers made from now on that this process runs one conversation at a
/// time (`genai ask`, `genai chat`): their engines default to one slot instead of the
/// daemon's four (each slot is a share of the context's KV cache: one `ask` with four took
/// 513 MB and 1.11 s, with one 235 MB and 0.49 s). A configured `slots` still wins.
pub fn one_conversation_at_a_time() {
    ONE_CONVERSATION.store(true, std::sync::atomic::Ordering::Relaxed);
}

#[cfg(feature = "local")]
fn runs_one_conversation() -> bool {
    ONE_CONVERSATION.load(std::sync::atomic::Ordering::Relaxed)
}

/// The `tracing` target of llama.cpp's own log lines (llama-cpp-2 sends them there).
pub(crate) const LLAMA_LOG_TARGET: &str = "llama-cpp-2";

/// The directive that keeps llama.cpp's own log below genai's, for a log filter `spec` whose
/// most verbose level is `max`: its lines show from `info` on (at `warn` and `error` they
/// would only repeat, raw, what genai's own error line says), and never its debug lines (one
/// per tensor, thousands of them) unless `spec` names its target itself
/// (`GENAI_LOG=debug,llama-cpp-2=debug`), in which case `spec` is left alone (None).
pub fn llama_log_directive(
    spec: &str,
    max: Option<tracing::level_filters::LevelFilter>,
) -> Option<String> {
    use tracing::level_filters::LevelFilter;
    if spec.contains(LLAMA_LOG_TARGET) {
        return None;
    }
    let level = match max {
        Some(m) if m >= LevelFilter::INFO => "info",
        _ => "off",
    };
    Some(format!("{LLAMA_LOG_TARGET}={level}"))
}

/// Ends the local engines' threads before the process exits (each after the step it is
/// decoding): exiting under a running llama.cpp step crashes in its static destructors.
pub fn stop_engines() {
    #[cfg(feature = "local")]
    engine::stop_all();
}

#[cfg(feature = "local")]
mod enabled {
    use std::path::PathBuf;
    use std::sync::Arc;

    use async_trait::async_trait;
    use futures::channel::mpsc;
    use futures::StreamExt;

    use super::engine::{self, Engine, EngineSettings};
    use super::grammar::{self, Convention};
    use super::scheduler::{Finished, Sink};
    use super::wire::{self, Answer};
    use super::KIND;
    use crate::config::{LocalSettings, Paths};
    use crate::error::{Error, ErrorKind, Result};
    use crate::format::ModelRequest;
    use crate::models::ModelLibrary;
    use crate::provider::{
        Infill, Infilled, ProviderResponse, ServiceProvider, StreamEvent, PROGRESS_EVENT,
    };

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
            let result =
                result.map_err(|e| Error::new(e.kind, format!("{provider}: {}", e.message)));
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
            let slots = engine::slots(positive(c.slots, "slots")?, super::runs_one_conversation());
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
            let path = self.model_path(&request.model)?;
            let (settings, name) = (self.settings, self.name.clone());
            let body = request.body.clone();
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

        /// Tool calls are constrained by a grammar and read back (`local/grammar.rs`).
        fn native_tools(&self) -> bool {
            true
        }

        fn model_file(&self, model: &str) -> Option<Result<PathBuf>> {
            Some(self.model_path(model))
        }

        async fn warm_up(&self, model: &str) -> Result<()> {
            let (path, settings) = (self.model_path(model)?, self.settings);
            tokio::task::spawn_blocking(move || engine::engine(&path, settings).map(|_| ()))
                .await
                .map_err(|e| Error::internal(format!("the local engine failed: {e}")))?
        }

        async fn send_request(&self, request: &ModelRequest) -> Result<ProviderResponse> {
            let model_file = || self.model_path(&request.model);
            if let Some(answer) = super::served::send(&self.name, model_file, request).await? {
                return Ok(answer);
            }
            let (engine, prepared, tools) = self.prepare(request).await?;
            let answer = Answer::new(engine.model_name());
            let rx = self.spawn_generation(engine, prepared);
            if let Some(convention) = tools {
                // A reply that may call tools is read whole, then split into text and calls.
                return collect(rx, &self.name)
                    .await
                    .map(|(text, f)| with_calls(&answer, &text, f, convention, request.stream));
            }
            if request.stream {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing::level_filters::LevelFilter;

    #[test]
    fn llama_cpp_logs_show_from_info_on_and_their_debug_lines_only_when_named() {
        let directive = |spec: &str, max| llama_log_directive(spec, Some(max));
        assert_eq!(
            directive("error", LevelFilter::ERROR).as_deref(),
            Some("llama-cpp-2=off")
        );
        assert_eq!(
            directive("warn", LevelFilter::WARN).as_deref(),
            Some("llama-cpp-2=off")
        );
        assert_eq!(
            directive("debug", LevelFilter::DEBUG).as_deref(),
            Some("llama-cpp-2=info")
        );
        assert_eq!(
            directive("debug,llama-cpp-2=debug", LevelFilter::DEBUG),
            None
        );
        let parsed: tracing_subscriber::filter::Directive = directive("trace", LevelFilter::TRACE)
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(parsed.to_string(), "llama-cpp-2=info");
    }
}
