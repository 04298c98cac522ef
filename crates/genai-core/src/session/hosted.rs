//! The clients that host features and middleware ([`Hosts`]): a client registers a feature
//! by name and hosts its turns, each waiting in `feature::external` until the client's final
//! answer arrives here; a client registers a middleware (`session::middleware` builds its
//! link). A client gone takes everything it hosted with it. This module must never run a turn
//! or a middleware itself.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::middleware::MiddlewareHost;
use super::{poisoned, Framework};
use crate::error::{Error, ErrorKind, Result};
use crate::feature::external::{host_key, External, PendingTurns};
use crate::feature::port::{ClientPort, TurnEvent, TurnRef};
use crate::feature::{Feature, TurnOutcome};
use crate::registry::Origin;

/// A hosting client's answer for a turn: a step (not final), or the end of the turn.
#[derive(Debug, Clone, Default)]
pub struct FeatureReply {
    pub conversation_id: String,
    /// The running turn, when the client names it (checked).
    pub turn_id: Option<String>,
    pub summary: String,
    pub detailed: Vec<String>,
    pub is_final: bool,
    /// Set when the turn failed: it then ends with a `featureError` of this text.
    pub error: Option<String>,
}

/// The service of the clients hosting features and middleware.
#[derive(Default)]
pub(super) struct Hosts {
    /// Turns waiting on the clients that host their features.
    pending: PendingTurns,
    /// The clients hosting features, by feature name.
    features: Mutex<HashMap<String, Arc<dyn ClientPort>>>,
    /// The clients hosting middleware, by name, with their time limit.
    middleware: Mutex<HashMap<String, MiddlewareHost>>,
}

impl Hosts {
    /// From now on `host` runs the middleware `name`.
    pub(super) fn host_middleware(&self, name: &str, host: MiddlewareHost) -> Result<()> {
        self.middleware
            .lock()
            .map_err(|_| poisoned())?
            .insert(name.to_string(), host);
        Ok(())
    }

    /// The middleware clients host now, by name.
    pub(super) fn middleware(&self) -> Result<HashMap<String, MiddlewareHost>> {
        Ok(self.middleware.lock().map_err(|_| poisoned())?.clone())
    }
}

impl Framework {
    /// From now on `host` hosts the feature `name`.
    pub fn register_feature(
        &self,
        name: &str,
        description: &str,
        host: Arc<dyn ClientPort>,
    ) -> Result<()> {
        if name.trim().is_empty() {
            return Err(Error::invalid_params("a feature needs a name"));
        }
        if let Ok(f) = self.registry.feature(name) {
            if f.origin == Origin::Builtin {
                return Err(Error::invalid_params(format!(
                    "`{name}` is a built-in feature"
                )));
            }
        }
        if let Ok(mut p) = self.hosts.pending.lock() {
            // A new client may reuse a gone client's address.
            p.gone.remove(&host_key(&host));
        }
        self.hosts
            .features
            .lock()
            .map_err(|_| poisoned())?
            .insert(name.to_string(), host);
        self.registry
            .register_feature(name, description, Origin::Client);
        Ok(())
    }

    /// The feature of a conversation whose feature a client hosts.
    pub(super) fn hosted_feature(&self, name: &str) -> Result<Arc<dyn Feature>> {
        let host = self
            .hosts
            .features
            .lock()
            .map_err(|_| poisoned())?
            .get(name)
            .cloned()
            .ok_or_else(|| Error::internal(format!("feature `{name}` has no implementation")))?;
        Ok(Arc::new(External {
            name: name.to_string(),
            pending: self.hosts.pending.clone(),
            host,
        }))
    }

    /// The client of `port` is gone: the turns waiting on a feature it hosts end with an
    /// error, and its features and middleware have no host any more (an agent made from now on
    /// cannot name them). Other clients' turns go on.
    pub fn client_gone(&self, port: &Arc<dyn ClientPort>) {
        let key = host_key(port);
        if let Ok(mut p) = self.hosts.pending.lock() {
            // Dropping the senders wakes each waiting turn, which then reports the client gone.
            p.gone.insert(key);
            p.turns.retain(|_, t| t.host != key);
        }
        if let Ok(mut hosts) = self.hosts.features.lock() {
            hosts.retain(|_, h| host_key(h) != key);
        }
        if let Ok(mut hosts) = self.hosts.middleware.lock() {
            hosts.retain(|_, (h, _)| host_key(h) != key);
        }
    }

    /// A hosting client's answer: a step goes at once to the conversation's client; the final
    /// answer ends the turn.
    pub fn on_feature_response(&self, reply: FeatureReply) -> Result<()> {
        let cid = reply.conversation_id.clone();
        let mut pending = self.hosts.pending.lock().map_err(|_| poisoned())?;
        let Some(waiting) = pending.turns.get(&cid) else {
            return Err(Error::new(
                ErrorKind::UnknownConversation,
                format!("conversation {cid} has no turn waiting for a feature response"),
            ));
        };
        if reply
            .turn_id
            .as_ref()
            .is_some_and(|t| t != &waiting.turn_id)
        {
            return Err(Error::invalid_params(format!(
                "turn {} is not the running turn of {cid}",
                reply.turn_id.unwrap_or_default()
            )));
        }
        if !reply.is_final {
            let turn = TurnRef {
                conversation_id: cid.clone(),
                turn_id: waiting.turn_id.clone(),
            };
            let port = self.running.conversation(&cid, |c| c.port.clone())?;
            if let Some(port) = port {
                port.turn_event(
                    &turn,
                    TurnEvent::Step {
                        summary: reply.summary,
                        detailed: reply.detailed,
                    },
                );
            }
            return Ok(());
        }
        if let Some(w) = pending.turns.remove(&cid) {
            let error = reply.error.map(|e| Error::new(ErrorKind::FeatureError, e));
            let _ = w.done.send(TurnOutcome {
                summary: reply.summary,
                detailed: reply.detailed,
                error,
                ..Default::default()
            });
        }
        Ok(())
    }
}
