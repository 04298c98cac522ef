//! One ACP connection's way out, on the shared peer (`genai_peer`): responses,
//! `session/update` notifications, and agent→client requests (`fs/read_text_file`,
//! `session/request_permission`), which the peer sends and matches answers to.
//!
//! It owns the JSON-RPC envelope and the error codes ACP names; it must never decide anything
//! about a session or a turn.

use std::sync::Arc;

use agent_client_protocol_schema::v1::{ErrorCode, SessionNotification, SessionUpdate};
use serde::Serialize;
use serde_json::{json, Value};

use genai_core::error::{Error, ErrorKind};
use genai_peer::{Peer, Unanswered};

/// A JSON-RPC error as ACP names them.
#[derive(Debug, Clone)]
pub(crate) struct AcpError {
    pub(crate) code: i32,
    pub(crate) message: String,
    pub(crate) data: Option<Value>,
}

impl AcpError {
    pub(crate) fn new(code: ErrorCode, message: impl Into<String>) -> AcpError {
        AcpError {
            code: code.into(),
            message: message.into(),
            data: None,
        }
    }

    pub(crate) fn invalid_params(message: impl Into<String>) -> AcpError {
        AcpError::new(ErrorCode::InvalidParams, message)
    }

    pub(crate) fn not_found(message: impl Into<String>) -> AcpError {
        AcpError::new(ErrorCode::ResourceNotFound, message)
    }

    /// The error object a client answered one of genai's requests with.
    pub(crate) fn from_client(e: &Value) -> AcpError {
        AcpError {
            code: e.get("code").and_then(Value::as_i64).unwrap_or(-32603) as i32,
            message: e
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("no message")
                .to_string(),
            data: e.get("data").cloned(),
        }
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
/// input "invalid params" (-32602), no model or no key "auth required" (-32000, so the client
/// offers `authenticate`, which says how to set one up), the rest internal errors; `data.kind`
/// keeps genai's kind.
impl From<Error> for AcpError {
    fn from(e: Error) -> AcpError {
        let code = match e.kind {
            ErrorKind::UnknownConversation | ErrorKind::UnknownAgent => ErrorCode::ResourceNotFound,
            ErrorKind::InvalidParams
            | ErrorKind::InvalidParameter
            | ErrorKind::UnknownComponent
            | ErrorKind::IncompatibleComponents => ErrorCode::InvalidParams,
            ErrorKind::Config | ErrorKind::MissingCredentials => ErrorCode::AuthRequired,
            _ => ErrorCode::InternalError,
        };
        AcpError {
            code: code.into(),
            message: e.message,
            data: Some(json!({"kind": e.kind.as_str()})),
        }
    }
}

/// The writing half of a connection, shared by the dispatcher and the sessions' ports: ACP's
/// envelope on the shared peer.
pub(crate) struct Connection {
    peer: Arc<Peer>,
}

impl Connection {
    /// A connection writing its lines (JSON texts, without the newline) through `peer`.
    pub(crate) fn new(peer: Arc<Peer>) -> Connection {
        Connection { peer }
    }

    fn send(&self, message: Value) {
        // A closed outbox means the client is gone; there is no one left to tell.
        self.peer.send(message.to_string());
    }

    /// Answers the request `id`.
    pub(crate) fn respond(&self, id: Value, result: Result<Value, AcpError>) {
        self.send(match result {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(e) => json!({"jsonrpc": "2.0", "id": id, "error": e.to_value()}),
        });
    }

    /// Sends a notification.
    pub(crate) fn notify(&self, method: &str, params: impl Serialize) {
        let params = serde_json::to_value(params).unwrap_or(Value::Null);
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends one `session/update` notification.
    pub(crate) fn update(&self, session_id: &str, update: SessionUpdate) {
        self.notify(
            "session/update",
            SessionNotification::new(session_id.to_string(), update),
        );
    }

    /// Sends the client a request and waits for its answer (an error when the client is gone).
    pub(crate) async fn request(
        &self,
        method: &str,
        params: impl Serialize,
    ) -> Result<Value, AcpError> {
        let params = serde_json::to_value(params).unwrap_or(Value::Null);
        self.peer
            .request(method, params)
            .await
            .map_err(|u| match u {
                Unanswered::Refused(e) => AcpError::from_client(&e),
                other => AcpError::new(ErrorCode::InternalError, other.describe(method)),
            })
    }
}
