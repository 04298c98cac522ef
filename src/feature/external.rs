//! Client-hosted features (`RegisterFeature`): the daemon forwards the turn to the client as an
//! `OnNewMessage` notification and waits for the client's final `OnFeatureResponse`, as the
//! seed's Python features do on the buses. It must never answer a turn on the client's behalf,
//! except to end it when it is cancelled or the client is gone.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tokio::sync::oneshot;

use super::{Feature, Turn, TurnOutcome};
use crate::error::{Error, ErrorKind};
use crate::rpc::protocol::{Event, NewMessageToFeature};

/// A turn waiting for the hosting client's final answer.
pub struct PendingTurn {
    pub turn_id: String,
    pub done: oneshot::Sender<TurnOutcome>,
}

/// Turns waiting on clients, by conversation id.
#[derive(Default)]
pub struct Pending {
    pub turns: HashMap<String, PendingTurn>,
    /// Set once the client is gone: no turn may wait on it any more.
    pub client_gone: bool,
}

pub type PendingTurns = Arc<Mutex<Pending>>;

pub struct External {
    pub name: String,
    pub pending: PendingTurns,
}

#[async_trait]
impl Feature for External {
    async fn on_new_message(&self, turn: &Turn) -> TurnOutcome {
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.pending.lock() {
            if !p.client_gone {
                let waiting = PendingTurn {
                    turn_id: turn.turn_id.clone(),
                    done: tx,
                };
                p.turns.insert(turn.conversation_id.clone(), waiting);
            }
        }
        turn.events.send(Event::OnNewMessage(NewMessageToFeature {
            conversation_id: turn.conversation_id.clone(),
            agent_id: turn.agent.id.clone(),
            turn_id: turn.turn_id.clone(),
            feature: self.name.clone(),
            message: turn.message.clone(),
        }));
        let result = tokio::select! {
            r = rx => r.ok(),
            _ = turn.cancel.cancelled() => None,
        };
        if let Ok(mut p) = self.pending.lock() {
            p.turns.remove(&turn.conversation_id);
        }
        result.unwrap_or_else(|| {
            let e = if turn.cancel.is_cancelled() {
                Error::cancelled()
            } else {
                Error::new(
                    ErrorKind::Internal,
                    format!("the client hosting feature `{}` went away", self.name),
                )
            };
            TurnOutcome::failed(e)
        })
    }
}
