//! One ACP connection's way out: newline-delimited JSON-RPC 2.0 messages queued for the writer
//! (responses, `session/update` notifications, agent→client requests), and the agent→client
//! requests (`fs/read_text_file`, `session/request_permission`) waiting for their answers.
//!
//! It owns the JSON-RPC envelope and the error codes ACP names; it must never decide anything
//! about a session or a turn.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use agent_client_protocol_schema::v1::{ErrorCode, SessionNotification, SessionUpdate};
use bytes::Bytes;
use serde::Serialize;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

use crate::error::{Error, ErrorKind};

/// A JSON-RPC error as ACP names them.
#[derive(Debug, Clone)]
pub struct AcpError {
    pub code: i32,
    pub message: String,
    pub data: Option<Value>,
}

impl AcpError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> AcpError {
        AcpError {
            code: code.into(),
            message: message.into(),
            data: None,
        }
    }

    pub fn invalid_params(message: impl Into<String>) -> AcpError {
        AcpError::new(ErrorCode::InvalidParams, message)
    }

    pub fn not_found(message: impl Into<String>) -> AcpError {
        AcpError::new(ErrorCode::ResourceNotFound, message)
    }

    fn to_value(&self) -> Value {
        let mut e = json!({"code": self.code, "message": self.message});
        if let Some(d) = &self.data {
            e["data"] = d.clone();
        }
        e
    }
}

/// The core's errors as ACP errors: unknown sessions are "resource not found" (-32002), bad
/// input "invalid params" (-32602), the rest internal errors; `data.kind` keeps genai's kind.
impl From<Error> for AcpError {
    fn from(e: Error) -> AcpError {
        let code = match e.kind {
            ErrorKind::UnknownConversation | ErrorKind::UnknownAgent => ErrorCode::ResourceNotFound,
            ErrorKind::InvalidParams
            | ErrorKind::InvalidParameter
            | ErrorKind::UnknownComponent
            | ErrorKind::IncompatibleComponents => ErrorCode::InvalidParams,
            _ => ErrorCode::InternalError,
        };
        AcpError {
            code: code.into(),
            message: e.message,
            data: Some(json!({"kind": e.kind.as_str()})),
        }
    }
}

/// An agent→client request waiting for its answer.
type Waiting = oneshot::Sender<Result<Value, AcpError>>;

/// The writing half of a connection, shared by the dispatcher and the sessions' ports.
pub struct Connection {
    out: mpsc::UnboundedSender<Bytes>,
    waiting: Mutex<HashMap<String, Waiting>>,
    next_request: AtomicU64,
    /// Set once the client's input has ended: nobody is left to answer a request.
    closed: AtomicBool,
}

impl Connection {
    /// A connection writing its lines (JSON texts, without the newline) to `out`.
    pub fn new(out: mpsc::UnboundedSender<Bytes>) -> Connection {
        Connection {
            out,
            waiting: Mutex::default(),
            next_request: AtomicU64::new(0),
            closed: AtomicBool::new(false),
        }
    }

    fn send(&self, message: Value) {
        // A closed channel means the client is gone; there is no one left to tell.
        let _ = self.out.send(Bytes::from(message.to_string()));
    }

    /// Answers the request `id`.
    pub fn respond(&self, id: Value, result: Result<Value, AcpError>) {
        self.send(match result {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(e) => json!({"jsonrpc": "2.0", "id": id, "error": e.to_value()}),
        });
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: impl Serialize) {
        let params = serde_json::to_value(params).unwrap_or(Value::Null);
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends one `session/update` notification.
    pub fn update(&self, session_id: &str, update: SessionUpdate) {
        self.notify(
            "session/update",
            SessionNotification::new(session_id.to_string(), update),
        );
    }

    /// Sends the client a request and waits for its answer (an error when the client is gone).
    pub async fn request(&self, method: &str, params: impl Serialize) -> Result<Value, AcpError> {
        let gone = || {
            AcpError::new(
                ErrorCode::InternalError,
                format!("{method} not answered: the client is gone"),
            )
        };
        if self.closed.load(Ordering::SeqCst) {
            return Err(gone());
        }
        let n = self.next_request.fetch_add(1, Ordering::Relaxed) + 1;
        let id = json!(format!("genai-{n}"));
        let (tx, rx) = oneshot::channel();
        if let Ok(mut w) = self.waiting.lock() {
            w.insert(id.to_string(), tx);
        }
        let params = serde_json::to_value(params).unwrap_or(Value::Null);
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        // The input may have ended meanwhile, after the waiting list was drained.
        if self.closed.load(Ordering::SeqCst) {
            if let Ok(mut w) = self.waiting.lock() {
                w.remove(&id.to_string());
            }
            return Err(gone());
        }
        rx.await.unwrap_or_else(|_| Err(gone()))
    }

    /// The client answered a request of ours; false when none had that id.
    pub fn answered(&self, id: &Value, answer: Result<Value, AcpError>) -> bool {
        let waiting = self
            .waiting
            .lock()
            .ok()
            .and_then(|mut w| w.remove(&id.to_string()));
        match waiting {
            Some(w) => {
                let _ = w.send(answer);
                true
            }
            None => false,
        }
    }

    /// The client's input ended: its pending requests fail and no new one is sent.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        if let Ok(mut w) = self.waiting.lock() {
            w.clear();
        }
    }
}
