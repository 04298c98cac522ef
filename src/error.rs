//! The error type of the framework and its stable kinds.
//!
//! Every failure that reaches a user or a client is an [`Error`] with a [`ErrorKind`]; the kind
//! becomes the JSON-RPC `data.kind` and the exit code of `genai ask`. Messages must be readable
//! and must never carry a secret (keys are never formatted into an error).

use std::fmt;

/// A stable category of failure, shown to clients as `data.kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    InvalidParams,
    UnknownConversation,
    UnknownAgent,
    UnknownComponent,
    IncompatibleComponents,
    InvalidParameter,
    MissingCredentials,
    Config,
    ProviderError,
    Timeout,
    Cancelled,
    /// A client-hosted feature reported that its turn failed.
    FeatureError,
    Store,
    Internal,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 14] = [
        ErrorKind::InvalidParams,
        ErrorKind::UnknownConversation,
        ErrorKind::UnknownAgent,
        ErrorKind::UnknownComponent,
        ErrorKind::IncompatibleComponents,
        ErrorKind::InvalidParameter,
        ErrorKind::MissingCredentials,
        ErrorKind::Config,
        ErrorKind::ProviderError,
        ErrorKind::Timeout,
        ErrorKind::Cancelled,
        ErrorKind::FeatureError,
        ErrorKind::Store,
        ErrorKind::Internal,
    ];

    /// The kind of a wire name (`data.kind`).
    pub fn from_name(name: &str) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// The name used on the wire (`data.kind`).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidParams => "invalidParams",
            ErrorKind::UnknownConversation => "unknownConversation",
            ErrorKind::UnknownAgent => "unknownAgent",
            ErrorKind::UnknownComponent => "unknownComponent",
            ErrorKind::IncompatibleComponents => "incompatibleComponents",
            ErrorKind::InvalidParameter => "invalidParameter",
            ErrorKind::MissingCredentials => "missingCredentials",
            ErrorKind::Config => "config",
            ErrorKind::ProviderError => "providerError",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::FeatureError => "featureError",
            ErrorKind::Store => "store",
            ErrorKind::Internal => "internal",
        }
    }

    /// The JSON-RPC error code of this kind (application codes live in -32000..-32099).
    pub fn code(self) -> i64 {
        match self {
            ErrorKind::InvalidParams => -32602,
            ErrorKind::Internal => -32603,
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
}

/// A failure with its kind and a message meant for people.
#[derive(Debug, Clone, thiserror::Error)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
        }
    }

    pub fn invalid_params(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::InvalidParams, message)
    }

    pub fn provider(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::ProviderError, message)
    }

    pub fn internal(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Internal, message)
    }

    pub fn cancelled() -> Error {
        Error::new(ErrorKind::Cancelled, "cancelled")
    }
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Error {
        Error::new(ErrorKind::Store, format!("history store: {e}"))
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_and_codes_are_distinct() {
        let mut codes: Vec<i64> = ErrorKind::ALL.iter().map(|k| k.code()).collect();
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), ErrorKind::ALL.len());
        for k in ErrorKind::ALL {
            assert_eq!(ErrorKind::from_name(k.as_str()), Some(k));
        }
    }
}
