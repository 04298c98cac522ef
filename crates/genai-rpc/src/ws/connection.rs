//! One WebSocket client of `genai serve`: its own daemon `Session` (the same dispatcher and
//! client port as the stdio daemon), the pump that carries its port's messages to
//! subscriptions, and the jsonrpsee module that serves every daemon method plus `Subscribe`
//! / `Unsubscribe` (a conversation's events, or all of the client's own) and `AnswerRequest`
//! (the answer to a daemon→client request such as `RequestConfirmation`). A subscriber that
//! cannot keep up is dropped. Every request's folder is confined to the serve's roots first
//! (`roots.rs`), and `Initialize` tells them. It must never run a turn: the core does.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use jsonrpsee::server::{PendingSubscriptionSink, RpcModule, ServerHandle, SubscriptionMessage};
use jsonrpsee::types::{ErrorObject, ErrorObjectOwned, Params};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::broadcast;

use super::super::dispatch::{Flow, Session};
use super::super::errors::RpcError;
use super::super::methods;
use super::super::port::RpcPort;
use super::roots::Roots;
use super::Limits;
use genai_core::feature::port::ClientPort;
use genai_core::session::Framework;
use genai_peer::{outbox, Outbox, Peer, Queue};

/// What every connection of one server shares.
pub(crate) struct Shared {
    pub(crate) fw: Arc<Framework>,
    pub(crate) limits: Limits,
    /// The folders conversations may work in.
    pub(crate) roots: Roots,
    /// Every conversation event of every client, for followers.
    pub(crate) hub: broadcast::Sender<Arc<Value>>,
    /// Running turns: turn id → the in-flight count of the client that started it.
    turns: Mutex<HashMap<String, Arc<AtomicUsize>>>,
}

impl Shared {
    pub(crate) fn new(fw: Arc<Framework>, limits: Limits, roots: Roots) -> Shared {
        Shared {
            fw,
            roots,
            hub: broadcast::channel(limits.buffered_events).0,
            limits,
            turns: Mutex::default(),
        }
    }
}

/// One client.
pub(crate) struct Connection {
    shared: Arc<Shared>,
    session: Mutex<Session>,
    peer: Arc<Peer>,
    port: Arc<RpcPort>,
    /// The client's own messages (its port's), for its `Subscribe` without a conversation.
    own: broadcast::Sender<Arc<Value>>,
    in_flight: Arc<AtomicUsize>,
    /// Stops this connection (a slow client).
    handle: ServerHandle,
}

impl Drop for Connection {
    fn drop(&mut self) {
        // Requests the client will never answer now fail, and its hosted turns end.
        self.peer.close();
        let client: Arc<dyn ClientPort> = self.port.clone();
        self.shared.fw.client_gone(&client);
    }
}

fn to_error(e: RpcError) -> ErrorObjectOwned {
    let data = e.kind.map(|k| json!({"kind": k}));
    ErrorObject::owned(e.code as i32, e.message, data)
}

fn params_value(p: &Params) -> Value {
    p.as_str()
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or(Value::Null)
}

/// Moves the port's messages to the client's own subscribers and, for conversation events, to
/// every follower; counts the client's turns down as they end.
async fn pump(mut out: Queue, own: broadcast::Sender<Arc<Value>>, shared: Arc<Shared>) {
    while let Some(bytes) = out.recv().await {
        let Ok(msg) = serde_json::from_slice::<Value>(&bytes) else {
            continue;
        };
        let msg = Arc::new(msg);
        if msg["method"] == "OnFeatureResponse" && msg["params"]["final"] == true {
            if let Some(turn) = msg["params"]["turnId"].as_str() {
                let count = shared.turns.lock().ok().and_then(|mut t| t.remove(turn));
                if let Some(c) = count {
                    c.fetch_sub(1, Ordering::SeqCst);
                }
            }
        }
        if msg["params"]["conversationId"].is_string() {
            let _ = shared.hub.send(msg.clone());
        }
        let _ = own.send(msg);
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SubscribeParams {
    #[serde(default)]
    conversation_id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AnswerRequestParams {
    id: Value,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

impl Connection {
    /// A new client with its session and pump.
    pub(crate) fn new(shared: Arc<Shared>, handle: ServerHandle) -> Connection {
        // The pump reads at once (a slow client lags its broadcast instead), so the outbox's
        // bound is a backstop only.
        let (out_tx, out_rx) = Outbox::new(outbox::DEFAULT_LIMIT);
        let peer = Arc::new(Peer::new(out_tx));
        let port = Arc::new(RpcPort::new(peer.clone()));
        let own = broadcast::channel(shared.limits.buffered_events).0;
        tokio::spawn(pump(out_rx, own.clone(), shared.clone()));
        let session = Session {
            fw: shared.fw.clone(),
            port: port.clone(),
            peer: peer.clone(),
            later: tokio_util::task::TaskTracker::new(),
        };
        Connection {
            shared,
            session: Mutex::new(session),
            peer,
            port,
            own,
            in_flight: Arc::new(AtomicUsize::new(0)),
            handle,
        }
    }

    /// One daemon method through the same dispatcher as the stdio daemon, its folder confined
    /// to the serve's roots.
    fn call(&self, method: &str, mut p: Value) -> Result<Value, ErrorObjectOwned> {
        if method == "Shutdown" || method == "$/cancelRequest" {
            return Err(ErrorObject::owned(
                -32601,
                format!(
                    "`{method}` is not served over WebSocket: the daemon is shared (use Cancel)"
                ),
                None::<()>,
            ));
        }
        let limit = self.shared.limits.turns_per_connection;
        if method == "OnNewMessage" && self.in_flight.load(Ordering::SeqCst) >= limit {
            return Err(ErrorObject::owned(
                -32029,
                format!("too many turns in flight on this connection (at most {limit}); wait for one to end"),
                Some(json!({"kind": "tooManyRequests"})),
            ));
        }
        let roots = &self.shared.roots;
        roots
            .confine(&self.shared.fw, method, &mut p)
            .map_err(|e| to_error(e.into()))?;
        let mut session = self
            .session
            .lock()
            .map_err(|_| ErrorObject::owned(-32603, "session lock poisoned", None::<()>))?;
        let mut flow = Flow::Continue;
        let mut result = session
            .dispatch(method, p, None, &mut flow)
            .map_err(to_error)?;
        if method == "Initialize" {
            result["roots"] = serde_json::to_value(roots.shown()).unwrap_or(Value::Null);
        }
        if method == "OnNewMessage" {
            if let Some(turn) = result["turnId"].as_str() {
                self.in_flight.fetch_add(1, Ordering::SeqCst);
                if let Ok(mut t) = self.shared.turns.lock() {
                    t.insert(turn.to_string(), self.in_flight.clone());
                }
            }
        }
        Ok(result)
    }

    /// Streams one subscription until the client leaves it or falls behind (then the client
    /// is dropped: its memory must not grow).
    async fn subscribe(self: Arc<Self>, params: Params<'static>, pending: PendingSubscriptionSink) {
        let p: SubscribeParams = match params.as_str() {
            None => SubscribeParams::default(),
            Some(s) => match serde_json::from_str(s) {
                Ok(p) => p,
                Err(e) => {
                    pending
                        .reject(ErrorObject::owned(
                            -32602,
                            format!("invalid params: {e}"),
                            None::<()>,
                        ))
                        .await;
                    return;
                }
            },
        };
        let (mut rx, only) = match p.conversation_id {
            Some(id) => match self.shared.fw.resolve_conversation(&id) {
                Ok(id) => (self.shared.hub.subscribe(), Some(id)),
                Err(e) => {
                    pending.reject(to_error(e.into())).await;
                    return;
                }
            },
            None => (self.own.subscribe(), None),
        };
        let Ok(mut sink) = pending.accept().await else {
            return;
        };
        loop {
            let msg = tokio::select! {
                _ = sink.closed() => return,
                m = rx.recv() => m,
            };
            let msg = match msg {
                Ok(m) => m,
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!("dropping a WebSocket client {n} events behind");
                    let _ = self.handle.stop();
                    return;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            };
            if only
                .as_deref()
                .is_some_and(|id| msg["params"]["conversationId"] != id)
            {
                continue;
            }
            let Ok(raw) = serde_json::value::to_raw_value(&*msg) else {
                continue;
            };
            if let Err(e) = sink.try_send(SubscriptionMessage::from(raw)) {
                if matches!(e, jsonrpsee::core::server::TrySendError::Full(_)) {
                    tracing::warn!("dropping a WebSocket client that does not read its events");
                    let _ = self.handle.stop();
                }
                return;
            }
        }
    }

    /// The jsonrpsee methods of this connection.
    pub(crate) fn module(self) -> RpcModule<Connection> {
        let mut m = RpcModule::new(self);
        for method in methods::served_now() {
            m.register_method(method, move |p, conn: &Connection, _| {
                conn.call(method, params_value(&p))
            })
            .expect("daemon method names are unique");
        }
        for method in methods::METHODS {
            let methods::Handler::Later(run) = method.handler else {
                continue;
            };
            m.register_async_method(method.name, move |p, conn: Arc<Connection>, _| async move {
                let mut p = params_value(&p);
                let shared = &conn.shared;
                shared
                    .roots
                    .confine(&shared.fw, method.name, &mut p)
                    .map_err(|e| to_error(e.into()))?;
                run(shared.fw.clone(), conn.port.clone(), p)
                    .await
                    .map_err(to_error)
            })
            .expect("tool method names are unique");
        }
        m.register_method("AnswerRequest", |p, conn: &Connection, _| {
            let a: AnswerRequestParams = serde_json::from_value(params_value(&p)).map_err(|e| {
                ErrorObject::owned(-32602, format!("invalid params: {e}"), None::<()>)
            })?;
            let answer = match a.error {
                Some(e) => Err(e),
                None => Ok(a.result.unwrap_or(Value::Null)),
            };
            if conn.peer.answered(&a.id, answer) {
                Ok(json!({}))
            } else {
                Err(ErrorObject::owned(
                    -32602,
                    format!("no request {} is waiting for an answer", a.id),
                    None::<()>,
                ))
            }
        })
        .expect("AnswerRequest is unique");
        m.register_subscription(
            "Subscribe",
            "Event",
            "Unsubscribe",
            |p, pending, conn, _| async move {
                conn.subscribe(p, pending).await;
            },
        )
        .expect("Subscribe is unique");
        m
    }
}
