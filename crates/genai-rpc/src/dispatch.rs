//! One client's session on the daemon: each message read is checked as JSON-RPC (its id,
//! method and version), answers to requests of ours go to the peer, and a request runs the
//! handler the method table (`methods.rs`) names for it: on the read loop, or off it when it
//! waits on a tool source. The session (`server`) only reads frames and writes answers. This
//! module must never hold conversation state nor know any one method.

use std::sync::Arc;

use serde_json::{json, Value};

use super::errors::{RpcError, INVALID_REQUEST, METHOD_NOT_FOUND};
use super::handlers::Call;
pub(crate) use super::handlers::Flow;
use super::methods::{self, Handler};
use super::port::RpcPort;
use genai_core::session::Framework;
use genai_peer::Peer;

/// One client's view of the core.
pub(crate) struct Session {
    pub(crate) fw: Arc<Framework>,
    pub(crate) port: Arc<RpcPort>,
    /// The connection: answers to requests of ours, responses answered later (tool calls),
    /// the requests that started turns (for `$/cancelRequest`).
    pub(crate) peer: Arc<Peer>,
    /// Requests answered later, waited for before the daemon exits.
    pub(crate) later: tokio_util::task::TaskTracker,
}

fn response(id: Value, result: Result<Value, RpcError>) -> Value {
    match result {
        Ok(v) => json!({"jsonrpc": "2.0", "id": id, "result": v}),
        Err(e) => e.to_json(id),
    }
}

impl Session {
    /// Runs one request or notification (or takes a response to a request of ours); `None`
    /// when nothing is to be answered now.
    pub(crate) fn handle(&mut self, msg: Value) -> (Option<Value>, Flow) {
        let invalid = |why: &str, id: Option<Value>| {
            let e = RpcError::new(INVALID_REQUEST, why);
            (Some(e.to_json(id.unwrap_or(Value::Null))), Flow::Continue)
        };
        let Value::Object(mut obj) = msg else {
            return invalid("a request must be a JSON object", None);
        };
        let id = obj.remove("id");
        if id
            .as_ref()
            .is_some_and(|id| !(id.is_string() || id.is_number() || id.is_null()))
        {
            return invalid("`id` must be a string or a number", None);
        }
        let method = match obj.remove("method") {
            Some(Value::String(m)) => m,
            None if obj.contains_key("result") || obj.contains_key("error") => {
                // A response to a request of ours (`RequestConfirmation`).
                let key = id.unwrap_or(Value::Null);
                let answer = match obj.remove("error") {
                    Some(e) => Err(e),
                    None => Ok(obj.remove("result").unwrap_or(Value::Null)),
                };
                if !self.peer.answered(&key, answer) {
                    tracing::debug!("ignoring a response to no request of ours: {key}");
                }
                return (None, Flow::Continue);
            }
            _ => return invalid("a request needs a `method` string", id),
        };
        if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return invalid("`jsonrpc` must be \"2.0\"", id);
        }
        let p = obj.remove("params").unwrap_or(Value::Null);
        if let Some(Handler::Later(run)) = methods::served(&method).map(|m| &m.handler) {
            self.answer_later(*run, p, id);
            return (None, Flow::Continue);
        }
        let mut flow = Flow::Continue;
        let result = self.dispatch(&method, p, id.as_ref(), &mut flow);
        (id.map(|id| response(id, result)), flow)
    }

    /// Runs a request that waits on the network (a tool source) off the read loop, so other
    /// requests go on; its response is written when it is ready (in a batch, on its own).
    fn answer_later(
        &self,
        run: fn(Arc<Framework>, Arc<super::port::RpcPort>, Value) -> methods::AnswerFuture,
        p: Value,
        id: Option<Value>,
    ) {
        let answer = run(self.fw.clone(), self.port.clone(), p);
        let peer = self.peer.clone();
        self.later.spawn(async move {
            let result = answer.await;
            if let Some(id) = id {
                peer.send(response(id, result).to_string());
            }
        });
    }

    /// Runs one method of `methods::served_now`; `flow` says whether it was `Shutdown`.
    pub(super) fn dispatch(
        &mut self,
        method: &str,
        p: Value,
        id: Option<&Value>,
        flow: &mut Flow,
    ) -> Result<Value, RpcError> {
        let Some(Handler::Now(run)) = methods::served(method).map(|m| &m.handler) else {
            let known = methods::served_now().chain(methods::served_later());
            return Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!(
                    "unknown method `{method}`{}; see docs/PROTOCOL.md",
                    genai_core::suggest::did_you_mean(method, known)
                ),
            ));
        };
        let mut call = Call {
            fw: &self.fw,
            port: &self.port,
            peer: &self.peer,
            id,
            flow: Flow::Continue,
        };
        let result = run(&mut call, p);
        *flow = call.flow;
        result
    }
}
