//! The llama.cpp engine: a GGUF model loaded once per process and a pool of contexts
//! ("slots") that keep their KV caches between requests. `generate` renders the chat template,
//! tokenizes, evaluates only the prompt tokens its slot does not already hold (in batches),
//! then samples token by token, reporting text through a [`Sink`] until an end-of-generation
//! token, a stop string, `max_tokens`, the end of the context, or the sink going away.
//!
//! Process-wide state, on purpose: the llama.cpp backend can be initialised only once, and a
//! model is loaded once per canonical path and then shared by every provider instance and
//! conversation that names it (loading costs seconds and the weights' memory). Loaded models
//! stay for the life of the process. Everything else hangs off an [`Engine`].
//!
//! This module owns every call into llama.cpp. It must never run on an async worker thread
//! (every call blocks: the provider runs it with `spawn_blocking`), and never speaks a wire
//! format (that is `wire`).

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;

use super::output::TextOutput;
use super::repetition;
use super::slots::{SlotPool, TokenId};
use super::template::{self, ChatMessage, Template};
use super::wire::{GenerationSettings, TokenCounts};
use crate::error::{Error, ErrorKind, Result};

/// Settings of an engine (from the provider's config).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EngineSettings {
    /// Threads for prompt evaluation and generation.
    pub threads: u32,
    /// Tokens each slot's context holds (`n_ctx`); 0 means the default.
    pub context_size: u32,
    /// How many slots (contexts with their own KV cache) the engine keeps.
    pub slots: usize,
}

/// The context size used when none is configured (capped by what the model was trained for).
pub const DEFAULT_CONTEXT_SIZE: u32 = 4096;
/// The slots kept when none is configured.
pub const DEFAULT_SLOTS: usize = 4;
/// The most prompt tokens evaluated in one `llama_decode` call.
const BATCH_SIZE: u32 = 2048;

/// The threads to use when none is configured: one per core. More threads than cores makes
/// llama.cpp's spinning workers fight each other and generation collapses.
pub fn default_threads() -> u32 {
    std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(4)
}

/// Where a generation's output goes.
pub trait Sink {
    /// New text; false when nobody listens any more (generation stops).
    fn text(&mut self, text: &str) -> bool;
    /// True when nobody listens any more; checked before each token.
    fn cancelled(&self) -> bool;
}

/// How a generation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// `stop` (end-of-generation token or stop string), `length` (`max_tokens` or the end of
    /// the context), or `cancelled` (the sink went away).
    pub finish_reason: &'static str,
    pub counts: TokenCounts,
}

/// A prompt ready to run: rendered, tokenized, checked against the context size.
pub struct Prepared {
    pub(super) tokens: Vec<LlamaToken>,
    pub(super) stops: Vec<String>,
    pub(super) settings: GenerationSettings,
}

/// A loaded model with its slots.
pub struct Engine {
    pub(super) model: &'static LlamaModel,
    /// The model's file name without `.gguf`, reported as the answering model.
    pub(super) name: String,
    settings: EngineSettings,
    pub(super) n_ctx: u32,
    pool: Mutex<SlotPool<LlamaContext<'static>>>,
    slot_freed: Condvar,
    /// Held during each `llama_decode`, so that concurrent requests take turns instead of
    /// running two thread pools on the same cores.
    compute: Mutex<()>,
}

fn backend() -> Result<&'static LlamaBackend> {
    static BACKEND: OnceLock<std::result::Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            // llama.cpp's own log lines go to `tracing` (GENAI_LOG), never to stdout.
            llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
            LlamaBackend::init().map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| Error::internal(format!("cannot start llama.cpp: {e}")))
}

fn lock_err() -> Error {
    Error::internal("local engine lock poisoned")
}

/// Making contexts concurrently is unsound in llama.cpp (it may write the model's fields).
static CONTEXT_CREATION: Mutex<()> = Mutex::new(());

/// The engine for a model file and settings, loading the model on first use.
pub fn engine(path: &Path, settings: EngineSettings) -> Result<Arc<Engine>> {
    type Key = (PathBuf, EngineSettings);
    static ENGINES: OnceLock<Mutex<HashMap<Key, Arc<Engine>>>> = OnceLock::new();
    static MODELS: OnceLock<Mutex<HashMap<PathBuf, &'static LlamaModel>>> = OnceLock::new();

    let canonical = path.canonicalize().map_err(|e| {
        Error::new(
            ErrorKind::Config,
            format!("cannot open the model {}: {e}", path.display()),
        )
    })?;
    let key = (canonical.clone(), settings);
    let engines = ENGINES.get_or_init(Default::default);
    if let Some(e) = engines.lock().map_err(|_| lock_err())?.get(&key) {
        return Ok(e.clone());
    }
    let model = {
        let mut models = MODELS
            .get_or_init(Default::default)
            .lock()
            .map_err(|_| lock_err())?;
        match models.get(&canonical) {
            Some(m) => *m,
            None => {
                let backend = backend()?;
                let started = Instant::now();
                let params = LlamaModelParams::default().with_n_gpu_layers(0);
                let model =
                    LlamaModel::load_from_file(backend, &canonical, &params).map_err(|e| {
                        Error::new(
                            ErrorKind::Config,
                            format!(
                                "cannot load the model {} (is it a GGUF file llama.cpp supports?): {e}",
                                canonical.display()
                            ),
                        )
                    })?;
                tracing::info!(model = %canonical.display(), elapsed = ?started.elapsed(), "local model loaded");
                let model: &'static LlamaModel = Box::leak(Box::new(model));
                models.insert(canonical.clone(), model);
                model
            }
        }
    };
    let n_ctx_train = model.n_ctx_train().max(1);
    let n_ctx = match settings.context_size {
        0 => DEFAULT_CONTEXT_SIZE.min(n_ctx_train),
        n => n,
    };
    let name = canonical
        .file_name()
        .map(|n| n.to_string_lossy().trim_end_matches(".gguf").to_string())
        .unwrap_or_else(|| "local".to_string());
    let engine = Arc::new(Engine {
        model,
        name,
        settings,
        n_ctx,
        pool: Mutex::new(SlotPool::new(settings.slots.max(1))),
        slot_freed: Condvar::new(),
        compute: Mutex::new(()),
    });
    let mut engines = engines.lock().map_err(|_| lock_err())?;
    Ok(engines.entry(key).or_insert(engine).clone())
}

/// Gives a slot back to the pool however the generation ends (panics included).
struct SlotGuard<'e> {
    engine: &'e Engine,
    index: usize,
    context: Option<LlamaContext<'static>>,
    tokens: Vec<TokenId>,
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        if let Ok(mut pool) = self.engine.pool.lock() {
            pool.put_back(
                self.index,
                self.context.take(),
                std::mem::take(&mut self.tokens),
            );
        }
        self.engine.slot_freed.notify_one();
    }
}

impl Engine {
    /// The answering model's name (its file name without `.gguf`).
    pub fn model_name(&self) -> &str {
        &self.name
    }

    /// The source of the model's own chat template, if it has one (for its tool-call
    /// convention).
    pub fn template_source(&self) -> Option<String> {
        self.model.chat_template(None).ok()?.to_string().ok()
    }

    /// Renders and tokenizes the messages; fails when the prompt leaves no room in the context.
    pub fn prepare(
        &self,
        messages: &[ChatMessage],
        settings: GenerationSettings,
        provider: &str,
    ) -> Result<Prepared> {
        let architecture = self.model.meta_val_str("general.architecture").ok();
        let rendered = template::render(messages, architecture.as_deref(), |t, m| {
            self.apply_template(t, m)
        });
        if let Some(why) = &rendered.fallback {
            tracing::debug!(model = %self.name, "chat template: {why}");
        }
        tracing::trace!(model = %self.name, prompt = ?rendered.prompt, "rendered prompt");
        let vocab = self.model.vocab();
        // Special tokens in the rendered template (`<start_of_turn>`) are parsed as such.
        let mut tokens = vocab.tokenize(rendered.prompt.as_bytes(), true, true);
        // A template that writes the BOS itself would give two.
        let bos = vocab.bos();
        if tokens.len() >= 2 && tokens[0] == bos && tokens[1] == bos {
            tokens.remove(0);
        }
        if tokens.len() >= self.n_ctx as usize {
            return Err(Error::new(
                ErrorKind::InvalidParams,
                format!(
                    "{provider}: the prompt is {} tokens but the context holds {} (the reply needs room too): \
                     start a new conversation, shorten the prompt, or raise context_size of the provider \
                     (the model was trained for {} tokens)",
                    tokens.len(),
                    self.n_ctx,
                    self.model.n_ctx_train()
                ),
            ));
        }
        let mut stops = settings.stop.clone();
        stops.extend(rendered.extra_stops);
        let mut settings = settings;
        settings.max_tokens = settings.max_tokens.or(rendered.max_tokens);
        Ok(Prepared {
            tokens,
            stops,
            settings,
        })
    }

    fn apply_template(
        &self,
        template: Template,
        messages: &[ChatMessage],
    ) -> std::result::Result<String, String> {
        let tmpl = match template {
            Template::Model => self
                .model
                .chat_template(None)
                .map_err(|_| template::NO_TEMPLATE.to_string())?,
            Template::Builtin(name) => LlamaChatTemplate::new(name).map_err(|e| e.to_string())?,
        };
        let chat = messages
            .iter()
            .map(|m| LlamaChatMessage::new(m.role.clone(), m.content.clone()))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        self.model
            .apply_chat_template(&tmpl, &chat, true)
            .map_err(|e| format!("llama.cpp cannot apply this chat template: {e}"))
    }

    /// Takes the best slot for `prompt`, waiting while all are busy (unless cancelled).
    fn take_slot(
        &self,
        prompt: &[TokenId],
        sink: &dyn Sink,
    ) -> Result<Option<(SlotGuard<'_>, usize)>> {
        let mut pool = self.pool.lock().map_err(|_| lock_err())?;
        loop {
            if let Some(t) = pool.take(prompt) {
                let guard = SlotGuard {
                    engine: self,
                    index: t.index,
                    context: t.context,
                    tokens: t.tokens,
                };
                return Ok(Some((guard, t.common)));
            }
            if sink.cancelled() {
                return Ok(None);
            }
            pool = self
                .slot_freed
                .wait_timeout(pool, Duration::from_millis(50))
                .map_err(|_| lock_err())?
                .0;
        }
    }

    fn new_context(&self) -> Result<LlamaContext<'static>> {
        let threads = self.settings.threads.max(1) as i32;
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(self.n_ctx))
            .with_n_batch(BATCH_SIZE.min(self.n_ctx))
            .with_n_threads(threads)
            .with_n_threads_batch(threads);
        let _one_at_a_time = CONTEXT_CREATION.lock().map_err(|_| lock_err())?;
        self.model.new_context(backend()?, params).map_err(|e| {
            Error::internal(format!(
                "cannot make a llama.cpp context of {} tokens for {}: {e}",
                self.n_ctx, self.name
            ))
        })
    }

    fn sampler(&self, s: &GenerationSettings, prompt: &[LlamaToken]) -> Result<LlamaSampler> {
        let mut chain = Vec::new();
        // Structured output and tool calls (`grammar.rs`): the grammar comes first, so the
        // samplers after it only ever see tokens it allows.
        if let Some(grammar) = &s.grammar {
            chain.push(grammar.sampler(self.model)?);
        }
        let repeat = s.repeat_penalty.unwrap_or(1.0);
        let freq = s.frequency_penalty.unwrap_or(0.0);
        let present = s.presence_penalty.unwrap_or(0.0);
        if repeat != 1.0 || freq != 0.0 || present != 0.0 {
            let mut penalties =
                LlamaSampler::penalties(self.model.n_vocab(), 64, repeat, freq, present);
            // The penalty window starts with the end of the prompt, as in llama-server (given
            // to this sampler alone: a grammar must not see the prompt).
            penalties.accept_many(&prompt[prompt.len().saturating_sub(64)..]);
            chain.push(penalties);
        }
        let temperature = s.temperature.unwrap_or(0.8);
        if temperature <= 0.0 {
            chain.push(LlamaSampler::greedy());
        } else {
            chain.push(LlamaSampler::top_k(s.top_k.unwrap_or(40)));
            chain.push(LlamaSampler::top_p(s.top_p.unwrap_or(0.95), 1));
            chain.push(LlamaSampler::min_p(0.05, 1));
            chain.push(LlamaSampler::temp(temperature));
            chain.push(LlamaSampler::dist(s.seed.unwrap_or_else(rand_seed)));
        }
        Ok(LlamaSampler::chain_simple(chain))
    }

    fn decode(&self, ctx: &mut LlamaContext<'static>, batch: &mut LlamaBatch) -> Result<()> {
        let _turn = self.compute.lock().map_err(|_| lock_err())?;
        ctx.decode(batch)
            .map_err(|e| Error::provider(format!("llama.cpp failed to evaluate tokens: {e}")))
    }

    /// Runs one generation on the calling (blocking) thread.
    pub fn generate(&self, prepared: Prepared, sink: &mut dyn Sink) -> Result<Finished> {
        let Prepared {
            tokens,
            stops,
            settings,
        } = prepared;
        let ids: Vec<TokenId> = tokens.iter().map(|t| t.0).collect();
        let n_prompt = tokens.len();
        let mut counts = TokenCounts {
            prompt: n_prompt as u32,
            cached: 0,
            completion: 0,
        };
        let cancelled = |counts| Finished {
            finish_reason: "cancelled",
            counts,
        };
        let Some((mut slot, common)) = self.take_slot(&ids, &*sink)? else {
            return Ok(cancelled(counts));
        };
        let mut ctx = match slot.context.take() {
            Some(c) => c,
            None => self.new_context()?,
        };
        // Keep the common prefix, but evaluate at least one token to get logits.
        let mut keep = common.min(n_prompt - 1);
        if keep < slot.tokens.len() {
            let trimmed = ctx
                .clear_kv_cache_seq(Some(0), Some(keep as u32), None)
                .unwrap_or(false);
            if !trimmed {
                // Recurrent or hybrid caches cannot drop a tail: start over.
                ctx.clear_kv_cache();
                keep = 0;
            }
        }
        slot.tokens.truncate(keep);
        counts.cached = keep as u32;
        // From here on `slot.tokens` always mirrors the KV cache; on an error the slot is
        // given back empty.
        let result = self.run(
            &mut ctx,
            &mut slot.tokens,
            &tokens,
            keep,
            stops,
            &settings,
            sink,
            counts,
        );
        if result.is_err() {
            ctx.clear_kv_cache();
            slot.tokens.clear();
        }
        slot.context = Some(ctx);
        result
    }

    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        ctx: &mut LlamaContext<'static>,
        cache: &mut Vec<TokenId>,
        tokens: &[LlamaToken],
        keep: usize,
        stops: Vec<String>,
        settings: &GenerationSettings,
        sink: &mut dyn Sink,
        mut counts: TokenCounts,
    ) -> Result<Finished> {
        let started = Instant::now();
        let n_batch = BATCH_SIZE.min(self.n_ctx) as usize;
        let mut batch = LlamaBatch::new(n_batch, 1);
        let batch_err = |e: llama_cpp_2::llama_batch::BatchAddError| {
            Error::internal(format!("cannot fill a llama.cpp batch: {e}"))
        };
        // Prompt: the new tokens, in batches; logits for the last one only.
        let new = &tokens[keep..];
        for (c, chunk) in new.chunks(n_batch).enumerate() {
            if sink.cancelled() {
                return Ok(Finished {
                    finish_reason: "cancelled",
                    counts,
                });
            }
            batch.clear();
            let base = keep + c * n_batch;
            for (i, t) in chunk.iter().enumerate() {
                let pos = base + i;
                batch
                    .add(*t, pos as i32, &[0], pos == tokens.len() - 1)
                    .map_err(batch_err)?;
            }
            self.decode(ctx, &mut batch)?;
            cache.extend(chunk.iter().map(|t| t.0));
        }
        let prompt_done = started.elapsed();

        let mut sampler = self.sampler(settings, tokens)?;
        let mut output = TextOutput::new(&stops);
        if settings.raw {
            output = output.keeping_leading_whitespace();
        }
        let room = self.n_ctx as usize - tokens.len();
        let max_tokens = settings.max_tokens.map_or(room, |m| (m as usize).min(room));
        let vocab = self.model.vocab();
        let mut piece = Vec::with_capacity(32);
        let mut reply = Vec::new();
        let finish_reason = loop {
            if sink.cancelled() {
                break "cancelled";
            }
            let token = sampler.sample(ctx, batch.n_tokens() - 1);
            if vocab.is_eog(token) {
                break "stop";
            }
            counts.completion += 1;
            piece.clear();
            // Control tokens render as nothing.
            vocab.token_to_piece_into(token, &mut piece, false, None);
            let step = output.push(&piece);
            if !step.text.is_empty() && !sink.text(&step.text) {
                break "cancelled";
            }
            if step.stopped {
                break "stop";
            }
            if counts.completion as usize >= max_tokens {
                break "length";
            }
            reply.push(token.0);
            if let Some(period) = repetition::loop_period(&reply) {
                tracing::debug!(model = %self.name, period, "the reply repeats itself: stopped");
                break "length";
            }
            batch.clear();
            batch
                .add(token, cache.len() as i32, &[0], true)
                .map_err(batch_err)?;
            self.decode(ctx, &mut batch)?;
            cache.push(token.0);
        };
        if finish_reason != "cancelled" {
            let tail = output.finish();
            if !tail.is_empty() {
                sink.text(&tail);
            }
        }
        let total = started.elapsed();
        let generated = total.saturating_sub(prompt_done).as_secs_f64();
        let tokens_per_second = if generated > 0.0 {
            counts.completion as f64 / generated
        } else {
            0.0
        };
        tracing::debug!(
            model = %self.name,
            prompt_tokens = counts.prompt,
            cached_tokens = counts.cached,
            completion_tokens = counts.completion,
            prompt_ms = prompt_done.as_millis() as u64,
            tokens_per_second = %format!("{tokens_per_second:.1}"),
            finish_reason,
            "local generation done"
        );
        Ok(Finished {
            finish_reason,
            counts,
        })
    }
}

fn rand_seed() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish() as u32
}
