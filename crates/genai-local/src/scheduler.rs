//! Continuous batching over one llama.cpp context, as llama-server does it. One thread owns
//! the context, with one sequence per slot; its KV cache holds `per_sequence` tokens for each,
//! either as one cache per sequence (the default, as llama-server's `-np`: a sequence's
//! attention then runs over its own cells only, so a greedy reply does not change with what
//! else runs) or as one unified cache (`kv_unified`, where sequences share prefix cells
//! without copying them, and attention runs over every sequence's cells). Each step it builds
//! one batch with the next token of every generating sequence plus at most
//! [`PROMPT_CHUNK`] pending prompt tokens, decodes it once, and samples each sequence that
//! asked for logits with its own sampler. Requests join and leave between steps; one that
//! finds no free sequence waits in order (told through [`Sink::waiting`]); a cancelled one
//! leaves before the next step.
//!
//! A request's sequence keeps the prefix it shares with what that sequence holds (its
//! conversation's last turn), or copies it from another sequence that holds more of it
//! (`seq_cp`, a shared system prompt); the rest of the prompt is evaluated.
//!
//! This module owns the context and every `llama_decode`. It must never render a template,
//! tokenize or choose sampling settings (the engine hands it ready requests), and never
//! blocks a caller: results go to each request's [`Sink`].

use std::collections::VecDeque;
use std::num::NonZeroU32;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

use super::sampling::TokenSampler;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;

use super::output::TextOutput;
use super::repetition;
use super::slots::{SequenceTable, TokenId};
use super::wire::TokenCounts;
use genai_core::error::{Error, Result};

/// The most prompt tokens one step evaluates, so that a long prompt holds the other
/// sequences' next tokens back by one chunk at most.
pub(crate) const PROMPT_CHUNK: usize = 512;

/// Where a generation's output goes. Called on the scheduler thread: every method must
/// return at once.
pub(crate) trait Sink: Send {
    /// New text; false when nobody listens any more (generation stops).
    fn text(&mut self, text: &str) -> bool;
    /// True when nobody listens any more; checked before each step.
    fn cancelled(&self) -> bool;
    /// Every sequence is busy: the request waits behind `ahead` others.
    fn waiting(&mut self, ahead: usize);
    /// The end: how the generation finished, or why it failed.
    fn finish(self: Box<Self>, result: Result<Finished>);
}

/// How a generation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finished {
    /// `stop` (end-of-generation token or stop string), `length` (`max_tokens` or the end of
    /// the sequence's share of the context), `repetition` (the reply looped:
    /// [`genai_core::format::REPEATED`]), or `cancelled` (the sink went away).
    pub(crate) finish_reason: &'static str,
    pub(crate) counts: TokenCounts,
}

/// A request ready to run.
pub(crate) struct Job {
    /// The whole prompt; shorter than a sequence's share of the context.
    pub(crate) tokens: Vec<LlamaToken>,
    pub(crate) stops: Vec<String>,
    /// The most tokens to generate (also capped by the room left in the sequence's share).
    pub(crate) max_tokens: Option<u32>,
    /// A raw completion (fill-in-the-middle): the reply's leading whitespace is kept.
    pub(crate) raw: bool,
    /// Not stopped when it repeats itself: a run to `max_tokens` (`ignore_eos`), or a reply a
    /// grammar constrains whole (`[0, 0, 0]` is well-formed; its grammar ends it).
    pub(crate) keep_repeats: bool,
    /// This request's own sampler.
    pub(crate) sampler: TokenSampler,
    pub(crate) sink: Box<dyn Sink>,
}

/// What the scheduler thread needs to make its context.
pub(crate) struct Setup {
    pub(crate) model: &'static LlamaModel,
    pub(crate) backend: &'static LlamaBackend,
    /// The model's name, for logs and errors.
    pub(crate) name: String,
    /// Threads for generation, and for prompt evaluation.
    pub(crate) threads: u32,
    pub(crate) threads_batch: u32,
    /// Sequences (slots) in the context.
    pub(crate) sequences: usize,
    /// Tokens each sequence may hold.
    pub(crate) per_sequence: u32,
    /// One KV cache for all sequences, else one cache of `per_sequence` each.
    pub(crate) unified: bool,
}

struct Queue {
    jobs: VecDeque<Job>,
    /// Sequences free for the queued requests: set on admission and when one is given back.
    free: usize,
    /// Why the scheduler cannot run (its context could not be made, or it stopped).
    broken: Option<String>,
    /// Asked to end its thread after the step under way ([`Scheduler::stop`]).
    stopping: bool,
}

struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
}

/// The handle to an engine's scheduler thread.
pub(crate) struct Scheduler {
    shared: Arc<Shared>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

fn lock(shared: &Shared) -> MutexGuard<'_, Queue> {
    shared.queue.lock().unwrap_or_else(|p| p.into_inner())
}

impl Scheduler {
    /// Starts the thread; it makes the context at once, so the first request finds it ready.
    pub(crate) fn start(setup: Setup) -> Result<Scheduler> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                jobs: VecDeque::new(),
                free: setup.sequences.max(1),
                broken: None,
                stopping: false,
            }),
            wake: Condvar::new(),
        });
        let thread_shared = shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("llama {}", setup.name))
            .spawn(move || {
                let _broken = BrokenOnExit(thread_shared.clone());
                match Batcher::new(&setup, thread_shared.clone()) {
                    Ok(mut b) => b.run(),
                    Err(e) => lock(&thread_shared).broken = Some(e.message),
                }
            })
            .map_err(|e| Error::internal(format!("cannot start the local engine's thread: {e}")))?;
        Ok(Scheduler {
            shared,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Ends the thread once the step under way is decoded, failing what still runs or waits,
    /// and waits for it. The process must not exit while a step is in llama.cpp: its static
    /// state is torn down at exit under the running step (a crash).
    pub(crate) fn stop(&self) {
        lock(&self.shared).stopping = true;
        self.shared.wake.notify_all();
        let thread = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(t) = thread {
            let _ = t.join();
        }
    }

    /// Queues a request; its sink hears the rest.
    pub(crate) fn submit(&self, mut job: Job) {
        let mut q = lock(&self.shared);
        if let Some(why) = &q.broken {
            let e = Error::internal(format!("the local engine cannot run: {why}"));
            drop(q);
            job.sink.finish(Err(e));
            return;
        }
        // Only when the requests queued before it take every free sequence: several arriving
        // at once between two steps are all admitted at the next one.
        if q.jobs.len() >= q.free {
            job.sink.waiting(q.jobs.len() - q.free);
        }
        q.jobs.push_back(job);
        drop(q);
        self.shared.wake.notify_one();
    }
}

/// Fails the queued requests and refuses new ones when the scheduler thread ends (a panic).
struct BrokenOnExit(Arc<Shared>);

impl Drop for BrokenOnExit {
    fn drop(&mut self) {
        let jobs: Vec<Job> = {
            let mut q = lock(&self.0);
            q.broken
                .get_or_insert_with(|| "its thread stopped".to_string());
            q.jobs.drain(..).collect()
        };
        for j in jobs {
            j.sink
                .finish(Err(Error::internal("the local engine's thread stopped")));
        }
    }
}

/// A request holding a sequence.
struct Running {
    seq: usize,
    sink: Box<dyn Sink>,
    prompt: Vec<LlamaToken>,
    sampler: TokenSampler,
    output: TextOutput,
    counts: TokenCounts,
    max_tokens: usize,
    keep_repeats: bool,
    /// The generated tokens, to see a loop (not kept when running to `max_tokens`).
    reply: Vec<TokenId>,
    /// The token sampled last, to evaluate in the next step.
    next: Option<LlamaToken>,
    /// This step: tokens put in the batch, and the batch index whose logits to sample.
    fed: usize,
    logits: Option<i32>,
    started: Instant,
    prompt_done: Option<Instant>,
}

impl Running {
    fn prefilling(&self, held: usize) -> bool {
        self.next.is_none() && held < self.prompt.len()
    }
}

/// The scheduler thread's state.
struct Batcher {
    model: &'static LlamaModel,
    name: String,
    per_sequence: usize,
    unified: bool,
    context: LlamaContext<'static>,
    table: SequenceTable,
    running: Vec<Running>,
    batch: LlamaBatch<'static>,
    shared: Arc<Shared>,
}

/// Making contexts concurrently is unsound in llama.cpp (it may write the model's fields).
pub(crate) static CONTEXT_CREATION: Mutex<()> = Mutex::new(());

impl Batcher {
    fn new(s: &Setup, shared: Arc<Shared>) -> Result<Batcher> {
        let threads = s.threads.max(1) as i32;
        let threads_batch = s.threads_batch.max(1) as i32;
        let sequences = s.sequences.max(1);
        let n_ctx = s.per_sequence * sequences as u32;
        let n_batch = (PROMPT_CHUNK + sequences) as u32;
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(n_ctx))
            .with_n_batch(n_batch)
            .with_n_seq_max(sequences as u32)
            .with_kv_unified(s.unified)
            .with_n_threads(threads)
            .with_n_threads_batch(threads_batch);
        let started = Instant::now();
        let context = {
            let _one_at_a_time = CONTEXT_CREATION.lock().unwrap_or_else(|p| p.into_inner());
            s.model.new_context(s.backend, params).map_err(|e| {
                Error::internal(format!(
                    "cannot make a llama.cpp context of {n_ctx} tokens ({sequences} sequences) for {}: {e}",
                    s.name
                ))
            })?
        };
        tracing::debug!(model = %s.name, n_ctx, sequences, threads, threads_batch, elapsed = ?started.elapsed(), "local context made");
        Ok(Batcher {
            model: s.model,
            name: s.name.clone(),
            per_sequence: s.per_sequence as usize,
            unified: s.unified,
            context,
            table: SequenceTable::new(sequences),
            running: Vec::new(),
            batch: LlamaBatch::new(n_batch as usize, 1),
            shared,
        })
    }

    fn run(&mut self) {
        let shared = self.shared.clone();
        loop {
            let (admitted, cancelled) = {
                let mut q = lock(&shared);
                while self.running.is_empty() && q.jobs.is_empty() && !q.stopping {
                    q = shared.wake.wait(q).unwrap_or_else(|p| p.into_inner());
                }
                if q.stopping {
                    q.broken = Some("it is stopping".to_string());
                    drop(q);
                    for r in std::mem::take(&mut self.running) {
                        r.sink
                            .finish(Err(Error::internal("the local engine is stopping")));
                    }
                    // The queued requests fail when `BrokenOnExit` drops.
                    return;
                }
                let (gone, kept): (Vec<Job>, Vec<Job>) =
                    q.jobs.drain(..).partition(|j| j.sink.cancelled());
                q.jobs = kept.into();
                let mut admitted = Vec::new();
                while self.table.has_free() {
                    let Some(job) = q.jobs.pop_front() else { break };
                    let ids: Vec<TokenId> = job.tokens.iter().map(|t| t.0).collect();
                    if let Some(claim) = self.table.claim(&ids) {
                        admitted.push((job, claim.index, claim.common));
                    }
                }
                q.free = self.table.free();
                (admitted, gone)
            };
            for j in cancelled {
                let counts = TokenCounts {
                    prompt: j.tokens.len() as u32,
                    ..Default::default()
                };
                j.sink.finish(Ok(Finished {
                    finish_reason: "cancelled",
                    counts,
                }));
            }
            for (job, seq, common) in admitted {
                self.admit(job, seq, common);
            }
            self.step();
        }
    }

    /// Readies a claimed sequence: keeps what it shares with the prompt (or copies a longer
    /// shared prefix from another sequence) and drops the rest of its cells.
    fn admit(&mut self, job: Job, seq: usize, common: usize) {
        let ids: Vec<TokenId> = job.tokens.iter().map(|t| t.0).collect();
        // At least one prompt token is evaluated, for the logits of the first reply token.
        let limit = ids.len() - 1;
        let mut keep = common.min(limit);
        let id = seq as i32;
        if keep < self.table.tokens(seq).len() {
            let trimmed = self
                .context
                .clear_kv_cache_seq(Some(seq as u32), Some(keep as u32), None)
                .unwrap_or(false);
            if !trimmed {
                // Recurrent or hybrid caches cannot drop a tail: start over.
                let _ = self
                    .context
                    .clear_kv_cache_seq(Some(seq as u32), None, None);
                keep = 0;
            }
            self.table.tokens_mut(seq).truncate(keep);
        }
        if let Some((donor, shared)) = self.table.donor(seq, &ids, limit) {
            let _ = self
                .context
                .clear_kv_cache_seq(Some(seq as u32), None, None);
            let copied = if self.unified {
                // The cells are shared: nothing is copied but their ownership.
                self.context
                    .copy_kv_cache_seq(donor as i32, id, Some(0), Some(shared as u32))
                    .is_ok()
            } else {
                // Across caches llama.cpp copies a whole cache (a range would abort), and the
                // tail past the shared prefix is dropped after.
                self.context
                    .copy_kv_cache_seq(donor as i32, id, None, None)
                    .is_ok()
                    && self
                        .context
                        .clear_kv_cache_seq(Some(seq as u32), Some(shared as u32), None)
                        .unwrap_or(false)
            };
            if !copied {
                // A copy whose tail could not be dropped must not stay behind.
                let _ = self
                    .context
                    .clear_kv_cache_seq(Some(seq as u32), None, None);
            }
            keep = if copied { shared } else { 0 };
            *self.table.tokens_mut(seq) = ids[..keep].to_vec();
        }
        let n_prompt = job.tokens.len();
        let room = self.per_sequence - n_prompt;
        self.running.push(Running {
            seq,
            sink: job.sink,
            output: match job.raw {
                true => TextOutput::new(&job.stops).keeping_leading_whitespace(),
                false => TextOutput::new(&job.stops),
            },
            prompt: job.tokens,
            sampler: job.sampler,
            counts: TokenCounts {
                prompt: n_prompt as u32,
                cached: keep as u32,
                completion: 0,
            },
            max_tokens: job.max_tokens.map_or(room, |m| (m as usize).min(room)),
            keep_repeats: job.keep_repeats,
            reply: Vec::new(),
            next: None,
            fed: 0,
            logits: None,
            started: Instant::now(),
            prompt_done: None,
        });
    }

    /// One batch: every generating sequence's next token, then prompt tokens up to the chunk.
    fn step(&mut self) {
        let mut i = 0;
        while i < self.running.len() {
            if self.running[i].sink.cancelled() {
                let r = self.running.swap_remove(i);
                self.end(r, "cancelled");
            } else {
                i += 1;
            }
        }
        if self.running.is_empty() {
            return;
        }
        self.batch.clear();
        // In sequence order: with a cache per sequence llama.cpp puts only consecutive
        // sequence ids in one micro-batch, so any other order splits a step into several.
        self.running.sort_by_key(|r| r.seq);
        let mut budget = PROMPT_CHUNK;
        for generating in [true, false] {
            for r in &mut self.running {
                let held = self.table.tokens(r.seq).len();
                let id = [r.seq as i32];
                if generating {
                    let Some(t) = r.next else { continue };
                    if self.batch.add(t, held as i32, &id, true).is_err() {
                        continue;
                    }
                    r.fed = 1;
                    r.logits = Some(self.batch.n_tokens() - 1);
                } else if budget > 0 && r.prefilling(held) {
                    let n = budget.min(r.prompt.len() - held);
                    for pos in held..held + n {
                        let last = pos == r.prompt.len() - 1;
                        if self
                            .batch
                            .add(r.prompt[pos], pos as i32, &id, last)
                            .is_err()
                        {
                            break;
                        }
                        r.fed += 1;
                        if last {
                            r.logits = Some(self.batch.n_tokens() - 1);
                        }
                    }
                    budget -= r.fed;
                }
            }
        }
        if self.batch.n_tokens() == 0 {
            return;
        }
        if let Err(e) = self.context.decode(&mut self.batch) {
            let e = Error::provider(format!("llama.cpp failed to evaluate tokens: {e}"));
            self.fail_fed(e);
            return;
        }
        let now = Instant::now();
        let mut finished = Vec::new();
        for (i, r) in self.running.iter_mut().enumerate() {
            if r.fed == 0 {
                continue;
            }
            let tokens = self.table.tokens_mut(r.seq);
            match r.next.take() {
                Some(t) => tokens.push(t.0),
                None => {
                    let held = tokens.len();
                    tokens.extend(r.prompt[held..held + r.fed].iter().map(|t| t.0));
                }
            }
            r.fed = 0;
            let Some(index) = r.logits.take() else {
                continue;
            };
            r.prompt_done.get_or_insert(now);
            let token = r.sampler.sample(&self.context, index);
            if let Some(reason) = Self::take(self.model, &self.name, r, token) {
                finished.push((i, reason));
            }
        }
        for (i, reason) in finished.into_iter().rev() {
            let r = self.running.swap_remove(i);
            self.end(r, reason);
        }
    }

    /// Takes a sampled token: its text to the sink, or why the generation ends.
    fn take(
        model: &LlamaModel,
        name: &str,
        r: &mut Running,
        token: LlamaToken,
    ) -> Option<&'static str> {
        let vocab = model.vocab();
        if vocab.is_eog(token) {
            return Some("stop");
        }
        r.counts.completion += 1;
        let mut piece = Vec::with_capacity(32);
        // Control tokens render as nothing.
        vocab.token_to_piece_into(token, &mut piece, false, None);
        let step = r.output.push(&piece);
        if !step.text.is_empty() && !r.sink.text(&step.text) {
            return Some("cancelled");
        }
        if step.stopped {
            return Some("stop");
        }
        if r.counts.completion as usize >= r.max_tokens {
            return Some("length");
        }
        if !r.keep_repeats {
            r.reply.push(token.0);
            if let Some(period) = repetition::loop_period(&r.reply) {
                tracing::debug!(model = %name, period, "the reply repeats itself: stopped");
                return Some(genai_core::format::REPEATED);
            }
        }
        r.next = Some(token);
        None
    }

    /// Ends a request: the rest of its text, its counts, its sequence given back.
    fn end(&mut self, mut r: Running, finish_reason: &'static str) {
        if finish_reason != "cancelled" {
            let tail = r.output.finish();
            if !tail.is_empty() {
                r.sink.text(&tail);
            }
        }
        self.give_back(r.seq);
        let prompt_done = r.prompt_done.unwrap_or_else(Instant::now);
        let generated = prompt_done.elapsed().as_secs_f64();
        let tokens_per_second = if generated > 0.0 {
            r.counts.completion as f64 / generated
        } else {
            0.0
        };
        tracing::debug!(
            model = %self.name,
            sequence = r.seq,
            prompt_tokens = r.counts.prompt,
            cached_tokens = r.counts.cached,
            completion_tokens = r.counts.completion,
            prompt_ms = prompt_done.duration_since(r.started).as_millis() as u64,
            tokens_per_second = %format!("{tokens_per_second:.1}"),
            grammar_refusals_full_passes = ?r.sampler.refusals(),
            finish_reason,
            "local generation done"
        );
        r.sink.finish(Ok(Finished {
            finish_reason,
            counts: r.counts,
        }));
    }

    /// Gives a sequence back, and says so to [`Scheduler::submit`] before the request's
    /// sink hears its end: a client that sends its next request on the final reply must
    /// not be told to wait for a slot that is free.
    fn give_back(&mut self, seq: usize) {
        self.table.release(seq);
        lock(&self.shared).free = self.table.free();
    }

    /// A failed decode: the requests in that batch fail and their sequences start empty.
    fn fail_fed(&mut self, e: Error) {
        let mut i = 0;
        while i < self.running.len() {
            if self.running[i].fed == 0 {
                i += 1;
                continue;
            }
            let r = self.running.swap_remove(i);
            let _ = self
                .context
                .clear_kv_cache_seq(Some(r.seq as u32), None, None);
            self.table.tokens_mut(r.seq).clear();
            self.give_back(r.seq);
            r.sink.finish(Err(e.clone()));
        }
        for r in &mut self.running {
            r.logits = None;
        }
    }
}
