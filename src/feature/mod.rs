//! Features: the logic between the chat widget and the agent (DESIGN §1).
//!
//! A feature receives a turn (`OnNewMessage`), talks to its agent, and returns what ends the
//! turn (summary and detailed response). The conversation task, not the feature, sends the
//! final `OnFeatureResponse`, so every turn ends exactly once. A feature must never touch the
//! store directly: history goes through the agent.

pub mod assistant;
pub mod external;
pub mod tools;

use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::agent::AIAgent;
use crate::error::Error;
use crate::message::{Message, Usage};
use crate::rpc::protocol::{Event, FeatureResponseChunk};

/// One turn handed to a feature.
pub struct Turn {
    pub conversation_id: String,
    pub turn_id: String,
    pub agent: Arc<AIAgent>,
    pub message: Message,
    pub cancel: CancellationToken,
    /// The conversation's system prompt, if any.
    pub system_prompt: Option<String>,
    pub events: Events,
}

/// What ends a turn.
#[derive(Debug, Clone, Default)]
pub struct TurnOutcome {
    pub summary: String,
    pub detailed: Vec<String>,
    pub error: Option<Error>,
    pub usage: Option<Usage>,
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
}

/// The sink of notifications towards clients, with the client's streaming choice: features
/// check `streaming()` and send chunks only when it is on.
#[derive(Clone)]
pub struct Events {
    pub tx: tokio::sync::mpsc::UnboundedSender<Event>,
    pub streaming: Arc<std::sync::atomic::AtomicBool>,
}

impl Events {
    pub fn send(&self, e: Event) {
        // A closed channel means the client is gone; there is no one left to tell.
        let _ = self.tx.send(e);
    }

    /// Sends the client a request and waits for its answer (an error when the client answers
    /// with one, or is gone).
    pub async fn request(
        &self,
        method: &'static str,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, Error> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.send(Event::ClientRequest(crate::rpc::protocol::ClientRequest {
            method,
            params,
            reply: Arc::new(std::sync::Mutex::new(Some(tx))),
        }));
        rx.await.unwrap_or_else(|_| {
            Err(Error::new(
                crate::error::ErrorKind::FeatureError,
                format!("{method} not answered: the client is gone"),
            ))
        })
    }

    pub fn streaming(&self) -> bool {
        self.streaming.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Turn {
    /// Streams a piece of the reply to the widget.
    pub fn chunk(&self, delta: &str) {
        self.events
            .send(Event::OnFeatureResponseChunk(FeatureResponseChunk {
                conversation_id: self.conversation_id.clone(),
                turn_id: self.turn_id.clone(),
                delta: delta.to_string(),
            }));
    }
}

#[async_trait]
pub trait Feature: Send + Sync {
    /// Handles one user message and returns what ends the turn.
    async fn on_new_message(&self, turn: &Turn) -> TurnOutcome;
}
