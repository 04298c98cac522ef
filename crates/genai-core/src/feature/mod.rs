//! Features: the logic between the chat widget and the agent.
//!
//! A feature receives a turn (a user's message), talks to its agent, and returns what ends the
//! turn (summary and detailed response); on the way it may stream pieces to the client through
//! the turn's [`ClientPort`]. The conversation task, not the feature, ends the turn, so every
//! turn ends exactly once; every built-in feature builds its end with
//! `TurnOutcome::of_prompt`. Built-in features are rows of [`BUILTIN`]; client-hosted ones
//! are made by the session. A feature must never touch the store directly (history goes through
//! the agent) nor build a wire message (the port's owner does).

pub mod assistant;
pub(crate) mod external;
pub(crate) mod guard;
pub mod hosted_tools;
mod plugin_asks;
pub mod port;
mod task;
pub mod tools;

use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::agent::{AIAgent, Delta, PromptOutcome};
use crate::config::FeatureConfig;
use crate::error::{Error, Result};
use crate::message::{Message, Usage};
use crate::tools::toolbox::Toolbox;
pub(crate) use port::{ClientPort, TurnEvent, TurnRef};
pub(crate) use task::SubagentModels;

/// One turn handed to a feature.
pub(crate) struct Turn {
    pub(crate) id: TurnRef,
    pub(crate) agent: Arc<AIAgent>,
    pub(crate) message: Message,
    pub(crate) cancel: CancellationToken,
    /// The conversation's system prompt, if any.
    pub(crate) system_prompt: Option<String>,
    /// The client that drives the conversation.
    pub(crate) port: Arc<dyn ClientPort>,
    /// The schema this turn's reply must match, when its message gives one (else the
    /// agent's, if any).
    pub(crate) response_schema: Option<Arc<crate::format::ResponseSchema>>,
    /// The limits of an unattended run's turn.
    pub(crate) budget: Option<crate::agent::budget::Budget>,
}

impl Turn {
    /// Whether the client wants streamed pieces.
    pub(crate) fn streaming(&self) -> bool {
        self.port.streaming()
    }

    /// Tells the client something about this turn.
    pub(crate) fn emit(&self, event: TurnEvent) {
        self.port.turn_event(&self.id, event);
    }

    /// Tells the client what a compaction of this turn's requests did.
    pub(crate) fn compacted(&self, c: &crate::compaction::Compacted) {
        self.emit(TurnEvent::Compacted(c.clone()));
    }

    /// Streams a piece of the reply to the client.
    pub(crate) fn chunk(&self, delta: &str) {
        self.emit(TurnEvent::Chunk(delta.to_string()));
    }

    /// Streams a piece of the reply or of its reasoning to the client.
    pub(crate) fn stream(&self, delta: Delta<'_>) {
        match delta {
            Delta::Text(text) => self.chunk(text),
            Delta::Reasoning(text) => self.emit(TurnEvent::Reasoning(text.to_string())),
            // The client gets the reasoning's signature with the turn's whole reply.
            Delta::ReasoningSignature(_) => {}
            Delta::Progress(note) => self.emit(TurnEvent::Step {
                summary: note.to_string(),
                detailed: Vec::new(),
            }),
            // The turn's outcome says who answered.
            Delta::Answering(_) => {}
        }
    }

    /// The prompt of a plain turn: the conversation's system prompt, then `message`.
    pub(crate) fn prompt_with(&self, message: Message) -> Vec<Message> {
        self.system_prompt
            .iter()
            .map(|s| Message::system(s.clone()))
            .chain(std::iter::once(message))
            .collect()
    }
}

/// What ends a turn.
#[derive(Debug, Clone, Default)]
pub struct TurnOutcome {
    pub summary: String,
    pub detailed: Vec<String>,
    pub error: Option<Error>,
    pub usage: Option<Usage>,
    /// What the turn cost in US dollars; `None`: unknown.
    pub cost: Option<f64>,
    pub model: Option<String>,
    /// The name of the provider instance that answered (a fallback's when one served).
    pub provider: Option<String>,
    /// The model's reasoning over the turn, empty when it gave none.
    pub reasoning: String,
    pub finish_reason: Option<String>,
    /// The budget that stopped the turn's tool calls, its last reply taken as final (the turn
    /// is stored like any other).
    pub stopped: Option<crate::agent::budget::BudgetReached>,
}

impl TurnOutcome {
    /// A turn that failed: the error is the chat bubble and the last detail.
    pub(crate) fn failed(error: Error) -> TurnOutcome {
        TurnOutcome {
            summary: error.message.clone(),
            detailed: vec![format!("error: {error}")],
            error: Some(error),
            ..Default::default()
        }
    }

    /// The note of its details that the reply was cut short (at its token limit, or stopped
    /// repeating itself), when it was.
    pub fn cut(&self) -> Option<&str> {
        self.detailed
            .iter()
            .map(String::as_str)
            .find(|line| line.starts_with(crate::format::CUT))
    }

    /// A failed turn whose details start with what the feature had noted before it failed.
    pub(crate) fn failed_after(mut detailed: Vec<String>, error: Error) -> TurnOutcome {
        let mut failed = TurnOutcome::failed(error);
        detailed.append(&mut failed.detailed);
        TurnOutcome { detailed, ..failed }
    }

    /// How every built-in feature ends a turn from its prompt's result. A failure keeps the
    /// details noted before it ([`TurnOutcome::failed_after`]). An answer is what `answer`
    /// makes of it (which may note more details), its details those noted, then the reply's
    /// usage and cost (framed as `lines` says); the outcome carries the reply's usage, cost and
    /// finish reason.
    pub(crate) fn of_prompt(
        result: Result<PromptOutcome>,
        mut detailed: Vec<String>,
        lines: ReplyLines,
        answer: impl FnOnce(&PromptOutcome, &mut Vec<String>) -> Answer,
    ) -> TurnOutcome {
        let outcome = match result {
            Ok(outcome) => outcome,
            Err(e) => return TurnOutcome::failed_after(detailed, e),
        };
        let Answer { summary, model } = answer(&outcome, &mut detailed);
        let r = outcome.reply;
        // Every turn says who answered, what it cost and how long it took, tools or not.
        detailed.insert(0, format!("provider: {}", outcome.answerer.described()));
        detailed.push(format!("model: {}", model.as_deref().unwrap_or("unknown")));
        detailed.extend(r.usage.map(|u| u.describe()));
        detailed.push(outcome.cost_detail);
        detailed.push(format!("latency: {} ms", outcome.latency.as_millis()));
        if lines == ReplyLines::Request {
            detailed.extend(outcome.notes);
        }
        if let Some(f) = &r.finish_reason {
            detailed.push(format!("finish reason: {f}"));
        }
        detailed.extend(outcome.stopped.map(|b| b.describe()));
        TurnOutcome {
            summary,
            detailed,
            error: None,
            usage: r.usage,
            cost: outcome.cost,
            model,
            provider: Some(outcome.answerer.provider),
            reasoning: outcome.reasoning,
            finish_reason: r.finish_reason,
            stopped: outcome.stopped,
        }
    }
}

/// What a feature makes of its answered prompt, for [`TurnOutcome::of_prompt`].
pub(crate) struct Answer {
    /// The chat bubble.
    pub(crate) summary: String,
    /// The model that answered, as the outcome names it.
    pub(crate) model: Option<String>,
}

/// What a turn's details say of its prompt besides usage and cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReplyLines {
    /// One request: what the middleware did is noted with the rest.
    Request,
    /// The feature noted its rounds itself (tool calls, middleware, tool mode).
    Rounds,
}

#[async_trait]
pub(crate) trait Feature: Send + Sync {
    /// Handles one user message and returns what ends the turn.
    async fn on_new_message(&self, turn: &Turn) -> TurnOutcome;
    /// The guard of its tool calls, when it takes tools (the session changes its mode).
    fn guard(&self) -> Option<Arc<guard::Guard>> {
        None
    }
}

/// What a built-in feature is made from, for one conversation.
pub(crate) struct FeatureContext<'a> {
    /// `[features.NAME]` of the config.
    pub(crate) config: Option<&'a FeatureConfig>,
    /// The plugin modules and MCP servers of the config.
    pub(crate) toolbox: &'a Arc<Toolbox>,
    /// The conversation's tool selection, when it names one.
    pub(crate) tools: Option<&'a [String]>,
    /// What every tool call passes (the permission policy, hooks, checkpoints) and the
    /// workspace; given to the features that take tools.
    pub(crate) guard: Option<&'a Arc<guard::Guard>>,
    /// The agents of subagents whose definition names a model.
    pub(crate) subagent_models: &'a Arc<dyn SubagentModels>,
}

/// A built-in feature: a row of the feature table.
pub struct BuiltinFeature {
    pub name: &'static str,
    pub description: &'static str,
    /// Whether a conversation may give it a tool selection.
    pub takes_tools: bool,
    pub(crate) build: fn(&FeatureContext<'_>) -> Result<Arc<dyn Feature>>,
}

/// Every built-in feature.
pub const BUILTIN: &[BuiltinFeature] = &[assistant::FEATURE, tools::FEATURE];

/// The built-in feature of that name.
pub fn builtin(name: &str) -> Option<&'static BuiltinFeature> {
    BUILTIN.iter().find(|f| f.name == name)
}

/// Registers every built-in feature in the registry.
pub fn register_builtin(registry: &crate::registry::Registry) {
    for f in BUILTIN {
        registry.register_feature(f.name, f.description, crate::registry::Origin::Builtin);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::error::ErrorKind;
    use crate::format::ModelReply;
    use crate::message::Part;

    fn answered() -> Result<PromptOutcome> {
        let usage = Usage {
            input_tokens: 3,
            output_tokens: 5,
            cache_read_tokens: None,
            cache_write_tokens: None,
            reasoning_tokens: None,
        };
        Ok(PromptOutcome {
            reply: ModelReply::assistant(
                vec![Part::text("Hello")],
                Some(usage),
                Some("stop".into()),
                Some("m1".into()),
            ),
            latency: Duration::from_millis(7),
            react: None,
            rounds: 1,
            notes: vec!["middleware: noted".into()],
            cost: Some(0.5),
            cost_detail: "cost: $0.5".into(),
            stopped: None,
            answerer: crate::agent::Answerer {
                provider: "corp".into(),
                kind: "openai",
                model: "m1".into(),
                fallback: None,
                price: None,
            },
            reasoning: String::new(),
        })
    }

    fn answer(o: &PromptOutcome, detailed: &mut Vec<String>) -> Answer {
        detailed.push("answered".into());
        Answer {
            summary: o.reply.message.text(),
            model: o.reply.model.clone(),
        }
    }

    #[test]
    fn one_request_is_described_around_its_usage_and_cost() {
        let o = TurnOutcome::of_prompt(
            answered(),
            vec!["noted".into()],
            ReplyLines::Request,
            answer,
        );
        assert_eq!(
            o.detailed,
            [
                "provider: corp (openai)",
                "noted",
                "answered",
                "model: m1",
                "usage: 3 input + 5 output = 8 tokens",
                "cost: $0.5",
                "latency: 7 ms",
                "middleware: noted",
                "finish reason: stop"
            ]
        );
        assert_eq!(
            (o.summary.as_str(), o.model.as_deref()),
            ("Hello", Some("m1"))
        );
        assert_eq!(
            (o.cost, o.finish_reason.as_deref()),
            (Some(0.5), Some("stop"))
        );
        assert_eq!(o.usage.map(|u| u.total()), Some(8));
        assert!(o.error.is_none());
    }

    #[test]
    fn rounds_say_the_same_but_the_middleware_and_a_failure_keeps_what_was_noted() {
        let o =
            TurnOutcome::of_prompt(answered(), vec!["noted".into()], ReplyLines::Rounds, answer);
        assert_eq!(
            o.detailed,
            [
                "provider: corp (openai)",
                "noted",
                "answered",
                "model: m1",
                "usage: 3 input + 5 output = 8 tokens",
                "cost: $0.5",
                "latency: 7 ms",
                "finish reason: stop"
            ]
        );
        let failed = Err(Error::cancelled());
        let o =
            TurnOutcome::of_prompt(failed, vec!["noted".into()], ReplyLines::Request, |_, _| {
                unreachable!("a failed prompt has no answer")
            });
        assert_eq!(o.error.map(|e| e.kind), Some(ErrorKind::Cancelled));
        assert_eq!(o.detailed, ["noted", "error: cancelled"]);
    }
}
