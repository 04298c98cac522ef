//! JSON-RPC error objects: the protocol's codes for the core's error kinds, and the standard
//! codes for bad frames and requests. This module owns every code on the wire; the core's
//! errors carry only their kind.

use serde_json::{json, Value};

use genai_core::error::{Error, ErrorKind};

pub(crate) const PARSE_ERROR: i64 = -32700;
pub(crate) const INVALID_REQUEST: i64 = -32600;
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
pub(crate) const INTERNAL_ERROR: i64 = -32603;

/// The JSON-RPC error code of a kind (application codes live in -32000..-32099).
pub(crate) fn code(kind: ErrorKind) -> i64 {
    match kind {
        ErrorKind::InvalidParams => -32602,
        ErrorKind::Internal => INTERNAL_ERROR,
        ErrorKind::UnknownConversation => -32001,
        ErrorKind::UnknownAgent => -32002,
        ErrorKind::UnknownComponent => -32003,
        ErrorKind::IncompatibleComponents => -32004,
        ErrorKind::InvalidParameter => -32005,
        ErrorKind::MissingCredentials => -32006,
        ErrorKind::Config => -32007,
        ErrorKind::ProviderError => -32010,
        ErrorKind::Timeout => -32011,
        ErrorKind::Cancelled => -32012,
        ErrorKind::FeatureError => -32013,
        ErrorKind::Store => -32020,
    }
}

/// A JSON-RPC error object.
pub(crate) struct RpcError {
    pub(crate) code: i64,
    pub(crate) message: String,
    pub(crate) kind: Option<&'static str>,
}

impl From<Error> for RpcError {
    fn from(e: Error) -> Self {
        RpcError {
            code: code(e.kind),
            message: e.message,
            kind: Some(e.kind.as_str()),
        }
    }
}

impl RpcError {
    pub(crate) fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            kind: None,
        }
    }

    /// The whole error response to the request `id`.
    pub(crate) fn to_json(&self, id: Value) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(kind) = self.kind {
            error["data"] = json!({"kind": kind});
        }
        json!({"jsonrpc": "2.0", "id": id, "error": error})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_own_code_and_round_trips_by_name() {
        let mut codes: Vec<i64> = ErrorKind::ALL.iter().map(|k| code(*k)).collect();
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), ErrorKind::ALL.len());
        for k in ErrorKind::ALL {
            assert_eq!(ErrorKind::from_name(k.as_str()), Some(k));
        }
        let e = RpcError::from(Error::new(ErrorKind::UnknownAgent, "no agent x")).to_json(json!(7));
        assert_eq!(
            e,
            json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32002, "message": "no agent x", "data": {"kind": "unknownAgent"}}})
        );
    }
}
