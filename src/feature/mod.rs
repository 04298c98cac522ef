//! Features: the logic between the chat widget and the agent.
//!
//! A feature receives a turn (a user's message), talks to its agent, and returns what ends the
//! turn (summary and detailed response); on the way it may stream pieces to the client through
//! the turn's [`ClientPort`]. The conversation task, not the feature, ends the turn, so every
//! turn ends exactly once. Built-in features are rows of [`BUILTIN`]; client-hosted ones are
//! made by the session. A feature must never touch the store directly (history goes through
//! the agent) nor build a wire message (the port's owner does).

pub mod assistant;
pub mod external;
pub mod port;
pub mod tools;

use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::agent::{AIAgent, Delta};
use crate::config::FeatureConfig;
use crate::error::{Error, Result};
use crate::message::{Message, Usage};
use crate::tools::toolbox::Toolbox;
pub use port::{ClientPort, TurnEvent, TurnRef};

/// One turn handed to a feature.
pub struct Turn {
    pub id: TurnRef,
    pub agent: Arc<AIAgent>,
    pub message: Message,
    pub cancel: CancellationToken,
    /// The conversation's system prompt, if any.
    pub system_prompt: Option<String>,
    /// The client that drives the conversation.
    pub port: Arc<dyn ClientPort>,
    /// The schema this turn's reply must match, when its message gives one (else the
    /// agent's, if any).
    pub response_schema: Option<Arc<crate::format::ResponseSchema>>,
}

impl Turn {
    /// Whether the client wants streamed pieces.
    pub fn streaming(&self) -> bool {
        self.port.streaming()
    }

    /// Tells the client something about this turn.
    pub fn emit(&self, event: TurnEvent) {
        self.port.turn_event(&self.id, event);
    }

    /// Streams a piece of the reply to the client.
    pub fn chunk(&self, delta: &str) {
        self.emit(TurnEvent::Chunk(delta.to_string()));
    }

    /// Streams a piece of the reply or of its reasoning to the client.
    pub fn stream(&self, delta: Delta<'_>) {
        match delta {
            Delta::Text(text) => self.chunk(text),
            Delta::Reasoning(text) => self.emit(TurnEvent::Reasoning(text.to_string())),
            Delta::Progress(note) => self.emit(TurnEvent::Step {
                summary: note.to_string(),
                detailed: Vec::new(),
            }),
        }
    }

    /// The prompt of a plain turn: the conversation's system prompt, then `message`.
    pub fn prompt_with(&self, message: Message) -> Vec<Message> {
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
    pub finish_reason: Option<String>,
}

impl TurnOutcome {
    /// A turn that failed: the error is the chat bubble and the last detail.
    pub fn failed(error: Error) -> TurnOutcome {
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
    pub fn failed_after(mut detailed: Vec<String>, error: Error) -> TurnOutcome {
        let mut failed = TurnOutcome::failed(error);
        detailed.append(&mut failed.detailed);
        TurnOutcome { detailed, ..failed }
    }
}

#[async_trait]
pub trait Feature: Send + Sync {
    /// Handles one user message and returns what ends the turn.
    async fn on_new_message(&self, turn: &Turn) -> TurnOutcome;
}

/// What a built-in feature is made from, for one conversation.
pub struct FeatureContext<'a> {
    /// `[features.NAME]` of the config.
    pub config: Option<&'a FeatureConfig>,
    /// The plugin modules and MCP servers of the config.
    pub toolbox: &'a Arc<Toolbox>,
    /// The conversation's tool selection, when it names one.
    pub tools: Option<&'a [String]>,
}

/// A built-in feature: a row of the feature table.
pub struct BuiltinFeature {
    pub name: &'static str,
    pub description: &'static str,
    /// Whether a conversation may give it a tool selection.
    pub takes_tools: bool,
    pub build: fn(&FeatureContext<'_>) -> Result<Arc<dyn Feature>>,
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
