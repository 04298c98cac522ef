//! The error type of the framework and its stable kinds.
//!
//! Every failure that reaches a user or a client is an [`Error`] with a [`ErrorKind`]; each
//! front-end maps the kind to what it speaks (the daemon's error codes and `data.kind`, the
//! exit codes of `genai ask`). Messages must be readable and must never carry a secret: keys
//! are never formatted into an error, and `Error::new` masks any that came in a provider's or
//! a child's text. This module knows no protocol's codes.

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
}

/// A failure with its kind and a message meant for people.
#[derive(Debug, Clone, thiserror::Error)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    /// The HTTP status a provider answered, when the error is that answer (a 429 is a rate
    /// limit, a 529 an overload): what a gateway passes on to its own client.
    pub upstream_status: Option<u16>,
    /// The provider could not be reached at all (a refused connection): nothing was sent.
    pub unreachable: bool,
    /// How long the provider asked to be left alone (its `Retry-After`), when it said.
    pub retry_after: Option<std::time::Duration>,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl Error {
    /// An error with this message, every secret in it masked ([`crate::redact`]): whatever a
    /// provider, a child process or a file put in the text, no key leaves through an error.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        let message = message.into();
        let message = match crate::redact::redact(&message) {
            std::borrow::Cow::Borrowed(_) => message,
            std::borrow::Cow::Owned(masked) => masked,
        };
        Error {
            kind,
            message,
            upstream_status: None,
            unreachable: false,
            retry_after: None,
        }
    }

    /// This error as the answer of a provider that gave this HTTP status.
    pub fn with_upstream_status(self, status: u16) -> Error {
        Error {
            upstream_status: Some(status),
            ..self
        }
    }

    /// This error with the wait its provider asked for (`Retry-After`), if it asked.
    pub fn with_retry_after(self, wait: Option<std::time::Duration>) -> Error {
        Error {
            retry_after: wait,
            ..self
        }
    }

    /// This error as a provider's that could not be reached.
    pub fn unreachable(self) -> Error {
        Error {
            unreachable: true,
            ..self
        }
    }

    /// The same error (its kind, upstream status, reachability and `Retry-After`) with its message reworded by `f`, such
    /// as a prefix naming the provider; the new message is masked as in [`Error::new`].
    pub fn reworded(self, f: impl FnOnce(&str) -> String) -> Error {
        Error {
            upstream_status: self.upstream_status,
            unreachable: self.unreachable,
            retry_after: self.retry_after,
            ..Error::new(self.kind, f(&self.message))
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

/// The root of what went wrong under `e` (a transport error's own text names only the
/// request). A TLS certificate this machine does not trust is said plainly, with the way out.
pub fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    let text = cur.to_string();
    if text.contains("invalid peer certificate") {
        format!(
            "{text}: the server's TLS certificate is not trusted on this machine (add its CA to \
             the system's certificates, or point SSL_CERT_FILE at a file that holds it)"
        )
    } else {
        text
    }
}

/// The names an error lists as the known ones: `a, b, c`, or `none`.
pub fn known<I: IntoIterator<Item = S>, S: std::fmt::Display>(names: I) -> String {
    let v: Vec<String> = names.into_iter().map(|s| s.to_string()).collect();
    if v.is_empty() {
        "none".to_string()
    } else {
        v.join(", ")
    }
}
