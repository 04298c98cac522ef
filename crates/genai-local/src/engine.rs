//! The llama.cpp engine: a GGUF model loaded once per process and its scheduler (one context
//! whose KV cache holds one sequence per slot; `scheduler` runs every request in it
//! by continuous batching). `prepare` renders the chat template, tokenizes and checks the
//! prompt against a sequence's share of the context; `generate` builds the request's sampler
//! and hands it to the scheduler, which reports text through the request's [`Sink`] until an
//! end-of-generation token, a stop string, `max_tokens`, the end of the share, or the sink
//! going away.
//!
//! Process-wide state, on purpose: the llama.cpp backend can be initialised only once, and a
//! model is loaded once per canonical path and then shared by every provider instance and
//! conversation that names it (loading costs seconds and the weights' memory). Loaded models
//! stay for the life of the process. Everything else hangs off an [`Engine`].
//!
//! This module owns loading models, templates, tokenizing and building samplers. It must never
//! run on an async worker thread (loading and tokenizing block: the provider runs them with
//! `spawn_blocking`), never decode (that is `scheduler`), and never speaks a wire format
//! (that is `wire`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::logit_bias::LlamaLogitBias;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::LlamaModelLoadError;

use super::sampling::TokenSampler;
use super::scheduler::{Job, Scheduler, Setup, Sink};
use super::template::{self, ChatMessage, Template};
use super::wire::GenerationSettings;
use genai_core::error::{Error, ErrorKind, Result};

/// Settings of an engine (from the provider's config).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct EngineSettings {
    /// Threads for generation (one token per sequence a step).
    pub(crate) threads: u32,
    /// Threads for evaluating prompts (batches of up to 512 tokens).
    pub(crate) threads_batch: u32,
    /// Tokens each slot's sequence may hold; 0 means the default. The context holds
    /// `context_size × slots`.
    pub(crate) context_size: u32,
    /// How many sequences (conversations with their own cached prefix) run at once.
    pub(crate) slots: usize,
    /// One KV cache for every sequence, instead of one per sequence.
    pub(crate) kv_unified: bool,
    /// The threads are the default ones, fitted to the machine's load when the engine starts
    /// (`load`); configured ones are taken as they are.
    pub(crate) fit_to_load: bool,
}

/// The context size used when none is configured (capped by what the model was trained for).
pub(crate) const DEFAULT_CONTEXT_SIZE: u32 = 4096;
/// The slots kept when none is configured, in a process that serves several conversations
/// (the daemon, `serve`, `acp`, `lsp`).
pub(crate) const DEFAULT_SLOTS: usize = 4;

/// The slots of an engine: the configured number, else one in a process that runs one
/// conversation at a time (`genai ask`, `genai chat`), else [`DEFAULT_SLOTS`].
pub(crate) fn slots(configured: Option<u32>, one_conversation: bool) -> usize {
    match configured {
        Some(n) => n as usize,
        None if one_conversation => 1,
        None => DEFAULT_SLOTS,
    }
}

/// The most threads generation gets by default: one token per sequence a step is bound by
/// memory, not arithmetic, and more threads only add waiting (llama.cpp's examples used
/// `min(4, cores)` for the same reason).
pub(crate) const MAX_GENERATION_THREADS: usize = 4;

/// The threads to use when none is configured, for generation and for prompt evaluation.
///
/// As llama.cpp's own tools count, from the physical cores (not hardware threads; at most
/// what this process may run on), generation capped at [`MAX_GENERATION_THREADS`], prompts
/// uncapped: every core of an idle machine. llama.cpp's workers spin at a barrier every
/// step, so one that loses its core to another process stalls the whole step (on a 2-core
/// machine kept at a load of 12 to 15 by builds, 2 threads took 41–86 s a run where 1 took
/// 3.9–7.3 s): the engine leaves the cores other processes keep busy to them when it starts
/// ([`super::load`]), instead of leaving one core free on every machine, which halved the
/// speed of an idle 2-core one.
pub(crate) fn default_threads() -> (u32, u32) {
    threads_for(cores())
}

/// The physical cores this process may run on.
pub(crate) fn cores() -> usize {
    let available = std::thread::available_parallelism().map_or(4, |n| n.get());
    physical_cores().unwrap_or(available).min(available)
}

/// [`default_threads`] for this many physical cores.
fn threads_for(cores: usize) -> (u32, u32) {
    let cores = cores.max(1);
    (cores.min(MAX_GENERATION_THREADS) as u32, cores as u32)
}

/// The physical cores of this machine (the hardware threads of one core counted once), as
/// llama.cpp's own tools count them on Linux (distinct `thread_siblings` sets); None where
/// that cannot be read.
fn physical_cores() -> Option<usize> {
    let mut cores = std::collections::HashSet::new();
    for entry in std::fs::read_dir("/sys/devices/system/cpu").ok()?.flatten() {
        let name = entry.file_name();
        let Some(n) = name.to_str().and_then(|n| n.strip_prefix("cpu")) else {
            continue;
        };
        if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(s) = std::fs::read_to_string(entry.path().join("topology/thread_siblings")) {
            cores.insert(s.trim().to_string());
        }
    }
    (!cores.is_empty()).then_some(cores.len())
}

/// Why a GGUF file did not load, when llama.cpp only says it failed (its reasons are in its
/// log, which `GENAI_LOG=info` shows).
const LLAMA_CANNOT_READ: &str = "llama.cpp cannot read it (a damaged or cut file, or a model \
     architecture this llama.cpp does not know; GENAI_LOG=info shows llama.cpp's reasons)";

/// A prompt ready to run: rendered, tokenized, checked against a sequence's share of the
/// context.
pub struct Prepared {
    pub(super) tokens: Vec<LlamaToken>,
    pub(super) stops: Vec<String>,
    pub(super) settings: GenerationSettings,
}

/// A loaded model with its scheduler (one context, one sequence per slot).
pub(crate) struct Engine {
    pub(super) model: &'static LlamaModel,
    /// The model's file name without `.gguf`, reported as the answering model.
    pub(super) name: String,
    /// Tokens each sequence may hold (its share of the context).
    pub(super) n_ctx: u32,
    scheduler: Scheduler,
}

pub(crate) fn backend() -> Result<&'static LlamaBackend> {
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

type EngineKey = (PathBuf, EngineSettings);

/// Every engine made in this process, by model file and settings.
static ENGINES: OnceLock<Mutex<HashMap<EngineKey, Arc<Engine>>>> = OnceLock::new();

/// Stops every engine's scheduler thread (after the step it is decoding), so that the process
/// can exit: llama.cpp's static state must not be torn down under a running step.
pub(crate) fn stop_all() {
    let engines: Vec<Arc<Engine>> = match ENGINES.get() {
        Some(m) => m
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect(),
        None => return,
    };
    for e in engines {
        e.scheduler.stop();
    }
}

/// A model file's canonical path, or the error that says it cannot be opened.
pub(crate) fn canonical(path: &Path) -> Result<PathBuf> {
    path.canonicalize().map_err(|e| {
        Error::new(
            ErrorKind::Config,
            format!("cannot open the model {}: {e}", path.display()),
        )
    })
}

/// The model of a canonical path, loaded on first use and then shared by every engine (and
/// embedding) of this process.
pub(crate) fn model(canonical: &Path) -> Result<&'static LlamaModel> {
    static MODELS: OnceLock<Mutex<HashMap<PathBuf, &'static LlamaModel>>> = OnceLock::new();
    let mut models = MODELS
        .get_or_init(Default::default)
        .lock()
        .map_err(|_| lock_err())?;
    if let Some(m) = models.get(canonical) {
        return Ok(*m);
    }
    let cannot = |why: String| {
        Error::new(
            ErrorKind::Config,
            format!("cannot load the model {}: {why}", canonical.display()),
        )
    };
    // Not a GGUF at all (a file put in the folder by hand): said plainly, and llama.cpp never
    // sees it.
    genai_core::models::gguf::check_file(canonical).map_err(cannot)?;
    let backend = backend()?;
    let started = Instant::now();
    let params = LlamaModelParams::default().with_n_gpu_layers(0);
    let model = LlamaModel::load_from_file(backend, canonical, &params).map_err(|e| {
        cannot(match e {
            LlamaModelLoadError::NullResult => LLAMA_CANNOT_READ.to_string(),
            other => other.to_string(),
        })
    })?;
    tracing::info!(model = %canonical.display(), elapsed = ?started.elapsed(), "local model loaded");
    let model: &'static LlamaModel = Box::leak(Box::new(model));
    models.insert(canonical.to_path_buf(), model);
    Ok(model)
}

/// The engine for a model file and settings, loading the model on first use.
pub(crate) fn engine(path: &Path, settings: EngineSettings) -> Result<Arc<Engine>> {
    let canonical = canonical(path)?;
    let key = (canonical.clone(), settings);
    // Held until the engine is made, so that racing requests make one scheduler.
    let mut engines = ENGINES
        .get_or_init(Default::default)
        .lock()
        .map_err(|_| lock_err())?;
    if let Some(e) = engines.get(&key) {
        return Ok(e.clone());
    }
    // The load is measured while the model loads (`load::fitted`).
    let load_before = settings
        .fit_to_load
        .then(super::load::CpuTimes::now)
        .flatten();
    let model = model(&canonical)?;
    let n_ctx_train = model.n_ctx_train().max(1);
    let n_ctx = match settings.context_size {
        0 => DEFAULT_CONTEXT_SIZE.min(n_ctx_train),
        n => n,
    };
    let name = canonical
        .file_name()
        .map(|n| n.to_string_lossy().trim_end_matches(".gguf").to_string())
        .unwrap_or_else(|| "local".to_string());
    let wanted = (settings.threads, settings.threads_batch);
    let (threads, threads_batch) = match load_before {
        Some(before) => super::load::fitted(wanted, before, cores()),
        None => wanted,
    };
    let scheduler = Scheduler::start(Setup {
        model,
        backend: backend()?,
        name: name.clone(),
        threads,
        threads_batch,
        sequences: settings.slots.max(1),
        per_sequence: n_ctx,
        unified: settings.kv_unified,
    })?;
    let engine = Arc::new(Engine {
        model,
        name,
        n_ctx,
        scheduler,
    });
    engines.insert(key, engine.clone());
    Ok(engine)
}

impl Engine {
    /// The answering model's name (its file name without `.gguf`).
    pub(crate) fn model_name(&self) -> &str {
        &self.name
    }

    /// The source of the model's own chat template, if it has one (for its tool-call
    /// convention).
    pub(crate) fn template_source(&self) -> Option<String> {
        self.model.chat_template(None).ok()?.to_string().ok()
    }

    /// Renders and tokenizes the messages; fails when the prompt leaves no room in the context.
    pub(crate) fn prepare(
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
        if let Some(g) = &settings.grammar {
            // As JSON, so that a benchmark can give llama-server this very prompt and grammar.
            tracing::trace!(
                model = %self.name,
                prompt = %serde_json::Value::from(rendered.prompt.as_str()),
                grammar = %serde_json::Value::from(g.text.as_str()),
                triggers = %serde_json::json!(g.triggers),
                "constrained prompt"
            );
        }
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

    fn sampler(&self, s: &GenerationSettings, prompt: &[LlamaToken]) -> Result<TokenSampler> {
        // Structured output and tool calls (`grammar.rs`): the grammar is asked about the
        // chain's pick, and narrows the vocabulary only when it refuses it (`sampling.rs`).
        let grammar = s
            .grammar
            .as_ref()
            .map(|g| g.sampler(self.model))
            .transpose()?;
        let mut chain = Vec::new();
        if s.ignore_eos {
            chain.push(self.no_end_of_generation());
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
        let greedy = temperature <= 0.0;
        if greedy {
            chain.push(LlamaSampler::greedy());
        } else {
            chain.push(LlamaSampler::top_k(s.top_k.unwrap_or(40)));
            chain.push(LlamaSampler::top_p(s.top_p.unwrap_or(0.95), 1));
            chain.push(LlamaSampler::min_p(0.05, 1));
            chain.push(LlamaSampler::temp(temperature));
            chain.push(LlamaSampler::dist(s.seed.unwrap_or_else(rand_seed)));
        }
        Ok(TokenSampler::new(
            LlamaSampler::chain_simple(chain),
            grammar,
            greedy,
        ))
    }

    /// A sampler that never lets an end-of-generation token through (as llama-server does for
    /// `ignore_eos`: a bias of -inf on each).
    fn no_end_of_generation(&self) -> LlamaSampler {
        let vocab = self.model.vocab();
        let n_vocab = self.model.n_vocab();
        let biases: Vec<LlamaLogitBias> = (0..n_vocab)
            .map(LlamaToken)
            .filter(|&t| vocab.is_eog(t))
            .map(|t| LlamaLogitBias::new(t, f32::NEG_INFINITY))
            .collect();
        LlamaSampler::logit_bias(n_vocab, &biases)
    }

    /// Starts a generation; `sink` hears its text and its end. Returns at once: the engine's
    /// scheduler runs it alongside the other requests.
    pub(crate) fn generate(&self, prepared: Prepared, sink: Box<dyn Sink>) {
        let Prepared {
            tokens,
            stops,
            settings,
        } = prepared;
        let sampler = match self.sampler(&settings, &tokens) {
            Ok(s) => s,
            Err(e) => return sink.finish(Err(e)),
        };
        self.scheduler.submit(Job {
            tokens,
            stops,
            max_tokens: settings.max_tokens,
            raw: settings.raw,
            keep_repeats: settings.ignore_eos
                || settings
                    .grammar
                    .as_ref()
                    .is_some_and(|g| g.triggers.is_none()),
            sampler,
            sink,
        });
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_physical_core_is_taken_and_generation_is_capped() {
        assert_eq!(threads_for(0), (1, 1));
        assert_eq!(threads_for(1), (1, 1));
        assert_eq!(threads_for(2), (2, 2));
        assert_eq!(threads_for(4), (4, 4));
        assert_eq!(threads_for(16), (4, 16));
        assert!(physical_cores().is_none_or(|n| n >= 1));
    }

    #[test]
    fn one_conversation_makes_one_slot_unless_configured() {
        assert_eq!(slots(None, false), DEFAULT_SLOTS);
        assert_eq!(slots(None, true), 1);
        assert_eq!(slots(Some(2), true), 2);
        assert_eq!(slots(Some(3), false), 3);
    }
}
