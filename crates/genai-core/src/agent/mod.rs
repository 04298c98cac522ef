//! The AI agent: its model binding (a model configuration plus its provider, as one value,
//! in `binding`) and the conversation history.
//!
//! `send_prompt` takes the agent's binding as it stands, composes the stored history with the new prompt, calls the model, and commits
//! the turn atomically: the prompt and the reply together on success, nothing on failure; a
//! system message replaces the stored one. With tools, the turn runs the native tool loop
//! (`tool_loop`) or the ReAct text loop (`react`) and commits every step with the reply;
//! each request to the model (middleware, fallbacks, the answer read) is in `request`. Every
//! step of a turn reads the binding taken at its start, never the agent's: a parameter set
//! meanwhile swaps in a new binding for the next turn. The agent must never talk to a client: it returns outcomes and hands stream deltas to the
//! caller's callbacks.

mod binding;
pub mod budget;
mod compact;
#[cfg(test)]
mod compact_tests;
mod fallback;
pub(crate) mod react;
mod request;
mod structured;
#[cfg(test)]
mod testing;
#[cfg(test)]
mod tests;
pub(crate) mod tool_loop;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::config::ToolMode;
use crate::error::{Error, ErrorKind, Result};
use crate::format::{self, ModelReply, ResponseSchema};
use crate::message::{Message, Role, Usage};
use crate::middleware::Chain;
use crate::pricing;
use crate::store::NewMessage;

pub use binding::ModelBinding;
pub(crate) use fallback::Fallback;
pub use fallback::{falls_back, Answerer};
pub use tool_loop::ToolLoop;

/// A streamed piece of a reply: the answer's text, or the model's reasoning before it, or a
/// note from the provider about the request's progress (such as waiting for a free slot).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Delta<'a> {
    Text(&'a str),
    Reasoning(&'a str),
    /// A piece of the signature of the reasoning streamed so far (Claude's thinking
    /// signature), which a client that sends the reasoning back needs with it.
    ReasoningSignature(&'a str),
    Progress(&'a str),
    /// Who answers the request about to go: sent before each provider tried (a fallback
    /// only before any piece of the answer), so the last one before the first piece answers.
    Answering(&'a Answerer),
}

/// Receives the streamed pieces of a reply.
pub(crate) type OnDelta<'a> = &'a (dyn Fn(Delta<'_>) + Send + Sync);

/// Where an agent's turns are persisted.
#[derive(Clone)]
pub(crate) struct Persistence {
    pub(crate) store: Arc<dyn crate::store::History>,
    pub(crate) conversation_id: String,
}

/// The history an agent keeps in memory (a mirror of what is committed).
#[derive(Default)]
struct History {
    system: Option<Message>,
    messages: Vec<Message>,
    /// What a handover changed in the history, for the next turn's details (its feature takes
    /// them before the prompt; a prompt's own lines are its [`Notes`]).
    handed_over: Vec<String>,
}

/// A successful prompt.
#[derive(Debug, Clone)]
pub struct PromptOutcome {
    pub reply: ModelReply,
    pub(crate) latency: Duration,
    /// Why tools went through the ReAct text loop, when they did.
    pub(crate) react: Option<String>,
    /// Requests made to the model in this turn (one per round of tool calls, plus the last).
    pub(crate) rounds: usize,
    /// What the middleware did, one line each (for the turn's details).
    pub(crate) notes: Vec<String>,
    /// What the turn cost in US dollars (`None`: unknown), as stored with its reply.
    pub(crate) cost: Option<f64>,
    /// The details' line for the cost: the amount and its price's source, or why it is unknown.
    pub(crate) cost_detail: String,
    /// Who answered: the agent's provider and model, or a fallback's. The reply's `model`
    /// is the one the provider reports, when it does.
    pub answerer: Answerer,
    /// The model's reasoning over the whole turn (each round's, then the reply's).
    pub(crate) reasoning: String,
    /// The budget that stopped the turn's tool calls, its last reply taken as final.
    pub stopped: Option<budget::BudgetReached>,
}

impl PromptOutcome {
    /// The model that answered: as the provider reports it, else as it was asked for.
    pub(crate) fn answered_model(&self) -> String {
        self.reply
            .model
            .clone()
            .unwrap_or_else(|| self.answerer.model.clone())
    }
}

/// Told what a compaction did, as it happens.
pub(crate) type OnCompacted<'a> = &'a (dyn Fn(&crate::compaction::Compacted) + Send + Sync);

/// Lines for one prompt's details, gathered while it runs (middleware, fallbacks, a schema's
/// handling, a reply cut short, compaction), each line once, and who is told of a compaction.
/// They end with the prompt: a failed one's are never a later turn's.
#[derive(Default)]
pub(crate) struct Notes<'a> {
    lines: std::sync::Mutex<Vec<String>>,
    on_compacted: Option<OnCompacted<'a>>,
}

impl Notes<'_> {
    /// Tells the prompt's caller what a compaction did.
    pub(crate) fn compacted(&self, c: &crate::compaction::Compacted) {
        if let Some(f) = self.on_compacted {
            f(c);
        }
    }

    pub(crate) fn add(&self, lines: impl IntoIterator<Item = String>) {
        if let Ok(mut n) = self.lines.lock() {
            for line in lines {
                if !n.contains(&line) {
                    n.push(line);
                }
            }
        }
    }

    fn take(self) -> Vec<String> {
        self.lines.into_inner().unwrap_or_else(|p| p.into_inner())
    }
}

/// What the rounds of one turn produced: the final reply, the steps before it (each round's
/// calls and results), the usage of all requests, and how many requests there were.
struct TurnSteps {
    reply: ModelReply,
    answerer: Answerer,
    steps: Vec<Message>,
    usage: Option<Usage>,
    rounds: usize,
    /// The budget that stopped the turn's tool calls, when one did.
    stopped: Option<budget::BudgetReached>,
}

pub struct AIAgent {
    pub(crate) id: String,
    /// What the next turn runs on; a running turn holds its own `Arc`. `set_parameter` swaps
    /// in a new one; the lock is held only for that swap or a read, never across an await.
    binding: std::sync::Mutex<Arc<ModelBinding>>,
    /// Held for the whole of a prompt, so prompts to one agent run one at a time.
    turn: tokio::sync::Mutex<()>,
    /// The committed history (and a handover's notes); locked only briefly, never across an
    /// await.
    history: std::sync::Mutex<History>,
    persistence: Option<Persistence>,
    /// The longest a prompt may take, end to end.
    pub(crate) timeout: Option<Duration>,
    /// Run on the messages of every request (and on each reply); never on the history.
    pub(crate) middleware: Chain,
    /// Compacts the messages of a request that nears the model's context (`None`: off).
    pub(crate) compaction: Option<Arc<crate::compaction::Compaction>>,
}

impl AIAgent {
    pub(crate) fn new(
        id: String,
        binding: ModelBinding,
        persistence: Option<Persistence>,
        system: Option<Message>,
        messages: Vec<Message>,
    ) -> AIAgent {
        AIAgent {
            id,
            binding: std::sync::Mutex::new(Arc::new(binding)),
            turn: tokio::sync::Mutex::new(()),
            history: std::sync::Mutex::new(History {
                system,
                messages,
                handed_over: Vec::new(),
            }),
            persistence,
            timeout: None,
            middleware: Chain::default(),
            compaction: None,
        }
    }

    /// A subagent's agent: this one's binding, middleware, compaction and time limit, with no
    /// history and kept nowhere (its answer is the parent's tool result).
    pub(crate) fn subagent(&self, id: String) -> AIAgent {
        let mut agent = AIAgent::new(id, (*self.binding()).clone(), None, None, Vec::new());
        agent.timeout = self.timeout;
        agent.middleware = self.middleware.clone();
        agent.compaction = self.compaction.clone();
        agent
    }

    /// Keeps lines for the details of the next turn (its feature takes them).
    pub(crate) fn add_notes(&self, notes: impl IntoIterator<Item = String>) {
        if let Ok(mut h) = self.history.lock() {
            h.handed_over.extend(notes);
        }
    }

    /// The lines kept for this turn's details; the next turn starts with none.
    pub(crate) fn take_notes(&self) -> Vec<String> {
        self.history
            .lock()
            .map(|mut h| std::mem::take(&mut h.handed_over))
            .unwrap_or_default()
    }

    /// What the next turn runs on: its model configuration, provider, price, response schema
    /// and fallbacks, as they stand now (a value: a later `set_parameter` does not change it).
    pub fn binding(&self) -> Arc<ModelBinding> {
        // Only ever swapped whole: a poisoned lock still holds a whole binding.
        self.binding
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Changes a parameter of this agent's model configuration (and remembers it in the store):
    /// the turns after run on a new binding; a running one keeps its own.
    pub fn set_parameter(&self, name: &str, value: Value) -> Result<()> {
        let params = {
            let mut current = self.binding.lock().unwrap_or_else(|p| p.into_inner());
            let next = current.with_parameter(name, value)?;
            let params = next.model.parameters.clone();
            *current = Arc::new(next);
            params
        };
        if let Some(p) = &self.persistence {
            p.store.update_parameters(&p.conversation_id, &params)?;
        }
        Ok(())
    }

    /// Keeps the permission decisions of a turn's tool calls with the conversation's history
    /// (nothing for an agent without one); `prompt` is the turn's message (a title).
    pub(crate) fn record_decisions(
        &self,
        turn_id: &str,
        prompt: &str,
        decisions: &[crate::store::DecisionRecord],
    ) -> Result<()> {
        match &self.persistence {
            Some(p) => p
                .store
                .record_decisions(&p.conversation_id, turn_id, prompt, decisions),
            None => Ok(()),
        }
    }

    /// The history, system message first.
    pub fn history(&self) -> Result<Vec<Message>> {
        let h = self
            .history
            .lock()
            .map_err(|_| Error::internal("agent lock poisoned"))?;
        Ok(h.system.iter().chain(h.messages.iter()).cloned().collect())
    }

    /// Sends a prompt: the stored history plus `prompt` go to the model; on success the prompt
    /// and the reply are committed together. `on_delta` receives streamed text when given
    /// (the request is then a streaming one).
    pub(crate) async fn send_prompt(
        &self,
        prompt: Vec<Message>,
        on_delta: Option<OnDelta<'_>>,
        cancel: &CancellationToken,
    ) -> Result<PromptOutcome> {
        self.send_prompt_as(prompt, on_delta, cancel, None, None)
            .await
    }

    /// `send_prompt` with tools and a schema. While the model answers with tool calls (up to
    /// `tools.max_steps` rounds), they are run and their results sent back; the prompt, every
    /// call and result, and the final reply are committed together. The calls are the format's
    /// native ones, or ReAct text where the format or the provider has none (or the mode says
    /// so); the outcome says which. The reply must match `schema` (else the agent's
    /// `response_schema`, if any): the reply is checked, retried once with the errors when it
    /// does not match, and then fails. With a schema the reply is not streamed: `on_delta`
    /// receives the checked JSON whole.
    pub async fn send_prompt_as(
        &self,
        prompt: Vec<Message>,
        on_delta: Option<OnDelta<'_>>,
        cancel: &CancellationToken,
        tools: Option<&ToolLoop<'_>>,
        schema: Option<&ResponseSchema>,
    ) -> Result<PromptOutcome> {
        self.send_prompt_observed(prompt, on_delta, None, cancel, tools, schema)
            .await
    }

    /// [`AIAgent::send_prompt_as`], telling `on_compacted` what each compaction of its
    /// requests did as it happens.
    pub(crate) async fn send_prompt_observed(
        &self,
        prompt: Vec<Message>,
        on_delta: Option<OnDelta<'_>>,
        on_compacted: Option<OnCompacted<'_>>,
        cancel: &CancellationToken,
        tools: Option<&ToolLoop<'_>>,
        schema: Option<&ResponseSchema>,
    ) -> Result<PromptOutcome> {
        let _turn = tokio::select! {
            t = self.turn.lock() => t,
            _ = cancel.cancelled() => return Err(Error::cancelled()),
        };
        // The turn's one binding: every step below reads it, never the agent's.
        let binding = self.binding();
        let schema = schema.or(binding.response_schema.as_deref());
        let mut system = None;
        let mut new_messages = Vec::new();
        for m in prompt {
            if m.role == Role::System {
                system = Some(m);
            } else {
                new_messages.push(m);
            }
        }
        if new_messages.is_empty() {
            return Err(Error::invalid_params("the prompt has no user message"));
        }
        let full = {
            let history = self
                .history
                .lock()
                .map_err(|_| Error::internal("agent lock poisoned"))?;
            let mut full = Vec::with_capacity(history.messages.len() + new_messages.len() + 1);
            full.extend(system.as_ref().or(history.system.as_ref()).cloned());
            full.extend(history.messages.iter().cloned());
            full.extend(new_messages.iter().cloned());
            full
        };

        let react = match tools {
            Some(t) if !t.specs.is_empty() => choose_react(&binding, t)?,
            _ => None,
        };
        if self.middleware.is_empty() {
            // Refused before anything is sent; with middleware, after it ran (`call_model`).
            Self::check_images(&binding, &new_messages)?;
        }
        if react.is_some() && schema.is_some() {
            return Err(Error::invalid_params(
                "a response schema needs native tool calls: tools through ReAct cannot give one",
            ));
        }
        // What a handover noted is the feature's to take before the prompt; what is left
        // belongs to no turn.
        self.take_notes();
        let notes = Notes {
            on_compacted,
            ..Notes::default()
        };
        if let Some(schema) = schema {
            notes.add(binding.model.format.schema_notes(schema));
        }
        let started = Instant::now();
        let turn = async {
            match tools {
                Some(t) if react.is_some() => {
                    self.react_turn(&binding, &full, on_delta, t, &notes).await
                }
                _ => {
                    self.native_turn(&binding, &full, on_delta, tools, schema, &notes)
                        .await
                }
            }
        };
        // With no time limit set, no timer: the gateway runs a turn per request.
        let limited = async {
            match self.timeout {
                Some(limit) => tokio::time::timeout(limit, turn).await.map_err(|_| {
                    Error::new(
                        ErrorKind::Timeout,
                        format!(
                            "{}: no complete answer within {limit:.0?}",
                            binding.provider.name
                        ),
                    )
                })?,
                None => turn.await,
            }
        };
        let TurnSteps {
            mut reply,
            answerer,
            steps,
            usage,
            rounds,
            stopped,
        } = tokio::select! {
            // Cancel first: a turn whose answer completes as Cancel arrives is still cancelled.
            biased;
            _ = cancel.cancelled() => return Err(Error::cancelled()),
            r = limited => r?,
        };
        if cancel.is_cancelled() {
            return Err(Error::cancelled());
        }
        reply.usage = usage;
        if let Some(cut) = reply.cut_short() {
            notes.add([cut]);
        }
        let latency = started.elapsed();
        let (cost, cost_detail) = pricing::turn_cost(
            answerer.price.as_ref(),
            usage.as_ref(),
            &answerer.provider,
            &answerer.model,
        );

        if let Some(p) = &self.persistence {
            let mut rows: Vec<NewMessage> = new_messages
                .iter()
                .chain(steps.iter())
                .cloned()
                .map(NewMessage::from)
                .collect();
            rows.push(NewMessage {
                message: reply.message.clone(),
                usage: reply.usage,
                cost,
            });
            // SQLite may fsync (a WAL checkpoint) here: keep that off the async workers.
            let (store, id, sys) = (p.store.clone(), p.conversation_id.clone(), system.clone());
            let (provider, model) = (answerer.provider.clone(), answerer.model.clone());
            tokio::task::spawn_blocking(move || {
                store.commit_turn_by(&id, sys.as_ref(), &provider, &model, &rows)
            })
            .await
            .map_err(|e| Error::internal(format!("committing the turn failed: {e}")))??;
        }
        let mut history = self
            .history
            .lock()
            .map_err(|_| Error::internal("agent lock poisoned"))?;
        if system.is_some() {
            history.system = system;
        }
        let reasoning = steps
            .iter()
            .chain([&reply.message])
            .map(Message::reasoning)
            .collect();
        history.messages.extend(new_messages);
        history.messages.extend(steps);
        history.messages.push(reply.message.clone());
        Ok(PromptOutcome {
            reply,
            latency,
            react,
            rounds,
            notes: notes.take(),
            cost,
            cost_detail,
            answerer,
            reasoning,
            stopped,
        })
    }
}

/// Whether a turn's tools go through ReAct on `binding`, and why (`None`: native tool calls).
/// Auto mode uses native calls when the provider honours them and the format has them.
fn choose_react(binding: &ModelBinding, tools: &ToolLoop<'_>) -> Result<Option<String>> {
    let (provider, model) = (&binding.provider, &binding.model);
    let name = &provider.name;
    let native = model.format.spec().native_tools;
    match tools.mode {
        ToolMode::React => Ok(Some("[features.tools] mode = \"react\"".to_string())),
        ToolMode::Native if !native => Err(format::no_native_tools(model.format.name())),
        // Tools offered to a provider that ignores them would be dropped silently.
        ToolMode::Native if !provider.provider.native_tools() => {
            Err(Error::invalid_params(format!(
                "provider {name} ({}) does not run native tool calls",
                provider.provider.kind()
            )))
        }
        ToolMode::Native => Ok(None),
        ToolMode::Auto if !provider.provider.native_tools() => Ok(Some(format!(
            "provider {name} ({}) does not run native tool calls",
            provider.provider.kind()
        ))),
        ToolMode::Auto if native => Ok(None),
        ToolMode::Auto => Ok(Some(format::no_native_tools(model.format.name()).message)),
    }
}
