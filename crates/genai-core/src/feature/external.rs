//! Client-hosted features: the turn goes to the client that registered the feature, as the
//! seed framework's Python features receive bus events, and waits for that client's final
//! answer. It must never answer a turn on the client's behalf, except to end it when it is
//! cancelled or the client is gone.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tokio::sync::oneshot;

use super::port::{ClientPort, HostedTurn};
use super::{Feature, Turn, TurnOutcome};
use crate::error::{Error, ErrorKind};

/// A turn waiting for the hosting client's final answer.
pub(crate) struct PendingTurn {
    pub(crate) turn_id: String,
    /// The client that hosts it (see [`host_key`]).
    pub(crate) host: usize,
    pub(crate) done: oneshot::Sender<TurnOutcome>,
}

/// Turns waiting on clients, by conversation id. Several clients may host features at once
/// (the WebSocket server): each leaving client ends only the turns it hosts.
#[derive(Default)]
pub(crate) struct Pending {
    pub(crate) turns: HashMap<String, PendingTurn>,
    /// The clients gone (see [`host_key`]): no turn may wait on them any more.
    pub(crate) gone: std::collections::HashSet<usize>,
}

/// Tells client ports apart: the address of the port a client gave the core.
pub(crate) fn host_key(port: &Arc<dyn ClientPort>) -> usize {
    Arc::as_ptr(port) as *const () as usize
}

pub(crate) type PendingTurns = Arc<Mutex<Pending>>;

pub(crate) struct External {
    pub(crate) name: String,
    pub(crate) pending: PendingTurns,
    /// The client that hosts the feature.
    pub(crate) host: Arc<dyn ClientPort>,
}

#[async_trait]
impl Feature for External {
    async fn on_new_message(&self, turn: &Turn) -> TurnOutcome {
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.pending.lock() {
            let host = host_key(&self.host);
            if !p.gone.contains(&host) {
                let waiting = PendingTurn {
                    turn_id: turn.id.turn_id.clone(),
                    host,
                    done: tx,
                };
                p.turns.insert(turn.id.conversation_id.clone(), waiting);
            }
        }
        self.host.hosted_turn(HostedTurn {
            turn: turn.id.clone(),
            agent_id: turn.agent.id.clone(),
            feature: self.name.clone(),
            message: turn.message.clone(),
        });
        let result = tokio::select! {
            r = rx => r.ok(),
            _ = turn.cancel.cancelled() => None,
        };
        if let Ok(mut p) = self.pending.lock() {
            p.turns.remove(&turn.id.conversation_id);
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
