//! The gateway's errors: one [`ApiError`] (status, type, message, the field at fault) written in
//! the shape of the API the request came in, OpenAI's `{"error":{"message","type","param",
//! "code"}}` or Anthropic's `{"type":"error","error":{"type","message"}}`, and the core's
//! [`Error`] mapped onto it (the client's mistakes 4xx, an upstream's rate limit 429, its
//! overload 529, its other failures 502, genai's own 500).
//!
//! It owns the statuses and both error shapes. It must never put more in a message than the
//! core's error holds (`Error::new` masked every secret in it), and never decide a status from
//! an error's text: only from its kind and the upstream's HTTP status.

use crate::HttpResponse;
use serde_json::{json, Value};

use genai_core::error::{Error, ErrorKind};

/// The API a request came in, which decides the shape of its errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    OpenAi,
    Anthropic,
}

impl Api {
    /// The API of a gateway path: Anthropic's Messages API under `/v1/messages`, else OpenAI's.
    pub fn of_path(path: &str) -> Api {
        match path.starts_with("/v1/messages") {
            true => Api::Anthropic,
            false => Api::OpenAi,
        }
    }
}

/// OpenAI's error type of a request the client must change.
pub(crate) const INVALID_REQUEST: &str = "invalid_request_error";

/// An error as the gateway answers it, with its HTTP status. `kind` and `code` are OpenAI's
/// words; Anthropic's type follows from the status ([`ApiError::anthropic_type`]).
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: http::StatusCode,
    pub(crate) kind: &'static str,
    pub message: String,
    /// The request's field at fault, such as `messages[2].content`.
    pub(crate) param: Option<String>,
    pub(crate) code: Option<&'static str>,
    /// Seconds the client should wait before it tries again (`Retry-After`), when known.
    pub(crate) retry_after: Option<u64>,
}

impl ApiError {
    pub(crate) fn new(status: http::StatusCode, kind: &'static str, message: String) -> ApiError {
        ApiError {
            status,
            kind,
            message,
            param: None,
            code: None,
            retry_after: None,
        }
    }

    /// A 400 naming the request's field at fault.
    pub(crate) fn invalid(param: impl Into<String>, message: impl Into<String>) -> ApiError {
        let param = param.into();
        ApiError {
            message: format!("{param}: {}", message.into()),
            param: Some(param),
            ..ApiError::new(
                http::StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                String::new(),
            )
        }
    }

    /// The 400 of a body that is not JSON.
    pub(crate) fn not_json(e: &serde_json::Error) -> ApiError {
        ApiError {
            message: format!("the request body is not valid JSON: {e}"),
            ..ApiError::invalid("body", "")
        }
    }

    /// The 401 of a request without the serve's token or a live virtual key.
    pub(crate) fn unauthorized() -> ApiError {
        ApiError {
            code: Some("invalid_api_key"),
            ..ApiError::new(
                http::StatusCode::UNAUTHORIZED,
                "authentication_error",
                "genai serve needs its token or a live virtual key as `Authorization: Bearer KEY` or `x-api-key: KEY` (genai serve --print-token; genai serve keys create NAME)".into(),
            )
        }
    }

    /// The 403 of a browser page from an origin that may not call.
    pub fn forbidden_origin() -> ApiError {
        ApiError::new(
            http::StatusCode::FORBIDDEN,
            "permission_error",
            "this origin may not call genai serve (genai serve --allow-origin ORIGIN)".into(),
        )
    }

    /// The answer to a core error: the client's mistakes are 4xx, an upstream's rate limit
    /// 429 and its overload 529 (as the provider answered), its other failures 502 (504 when
    /// it did not answer in time), genai's own 500. `param` is the request's field the error
    /// is about, when known.
    pub(crate) fn of(e: &Error, param: Option<&str>) -> ApiError {
        use http::StatusCode as S;
        let (status, kind, code) = match (e.kind, e.upstream_status) {
            (ErrorKind::ProviderError, Some(429)) => (
                S::TOO_MANY_REQUESTS,
                "rate_limit_exceeded",
                Some("rate_limit_exceeded"),
            ),
            (ErrorKind::ProviderError, Some(529)) => (
                S::from_u16(529).unwrap_or(S::SERVICE_UNAVAILABLE),
                "upstream_error",
                Some("overloaded"),
            ),
            (
                ErrorKind::InvalidParams
                | ErrorKind::InvalidParameter
                | ErrorKind::IncompatibleComponents,
                _,
            ) => (S::BAD_REQUEST, INVALID_REQUEST, None),
            (ErrorKind::UnknownComponent | ErrorKind::UnknownAgent, _) => {
                (S::NOT_FOUND, INVALID_REQUEST, Some("model_not_found"))
            }
            // genai's own key for the provider was refused upstream: not the client's key.
            (ErrorKind::MissingCredentials, _) => (
                S::BAD_GATEWAY,
                "upstream_error",
                Some("upstream_credentials"),
            ),
            // The provider found the request itself at fault (a context too long, a value
            // out of its range): the client's to change, as the provider said it.
            (ErrorKind::ProviderError, Some(s @ (400 | 413 | 422))) => (
                S::from_u16(s).unwrap_or(S::BAD_REQUEST),
                INVALID_REQUEST,
                None,
            ),
            (ErrorKind::ProviderError, _) => (S::BAD_GATEWAY, "upstream_error", None),
            (ErrorKind::Timeout, _) => (S::GATEWAY_TIMEOUT, "upstream_error", Some("timeout")),
            (
                ErrorKind::UnknownConversation
                | ErrorKind::Config
                | ErrorKind::Cancelled
                | ErrorKind::FeatureError
                | ErrorKind::Store
                | ErrorKind::Internal,
                _,
            ) => (S::INTERNAL_SERVER_ERROR, "server_error", None),
        };
        ApiError {
            status,
            kind,
            // Error::new masked every secret in its message already.
            message: e.message.clone(),
            param: param.map(str::to_string),
            code,
            // The provider's own wait, passed on with its rate limit or overload.
            retry_after: e
                .retry_after
                .filter(|_| matches!(status.as_u16(), 429 | 503 | 529))
                .map(|w| (w.as_secs() + u64::from(w.subsec_nanos() > 0)).max(1)),
        }
    }

    /// Anthropic's error type of this error's status.
    pub fn anthropic_type(&self) -> &'static str {
        match self.status.as_u16() {
            401 => "authentication_error",
            403 => "permission_error",
            404 => "not_found_error",
            413 => "request_too_large",
            429 => "rate_limit_error",
            529 => "overloaded_error",
            400..=499 => "invalid_request_error",
            _ => "api_error",
        }
    }

    /// The error's JSON body in OpenAI's shape.
    pub(crate) fn body(&self) -> Value {
        json!({"error": {
            "message": self.message,
            "type": self.kind,
            "param": self.param,
            "code": self.code,
        }})
    }

    /// The error's JSON body in this API's shape.
    pub(crate) fn body_in(&self, api: Api) -> Value {
        match api {
            Api::OpenAi => self.body(),
            // Anthropic's shape has no `param`: the message names the field.
            Api::Anthropic => {
                let message = match &self.param {
                    Some(p) if !self.message.starts_with(p.as_str()) => {
                        format!("{p}: {}", self.message)
                    }
                    _ => self.message.clone(),
                };
                json!({"type": "error", "error": {
                    "type": self.anthropic_type(),
                    "message": message,
                }})
            }
        }
    }

    /// The answer in this API's shape.
    pub fn response_in(&self, api: Api) -> HttpResponse {
        if self.status.is_server_error() {
            tracing::debug!("gateway: {} {}", self.status, self.message);
        }
        let mut response = super::json_response(self.status, &self.body_in(api));
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(http::header::RETRY_AFTER, http::HeaderValue::from(secs));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_errors_become_openai_errors_with_their_status() {
        let e = ApiError::of(
            &Error::new(ErrorKind::UnknownComponent, "no x"),
            Some("model"),
        );
        assert_eq!(e.status, http::StatusCode::NOT_FOUND);
        assert_eq!(
            e.body(),
            json!({"error": {"message": "no x", "type": "invalid_request_error", "param": "model", "code": "model_not_found"}})
        );
        let e = ApiError::of(&Error::provider("openai: HTTP 500"), None);
        assert_eq!(e.status, http::StatusCode::BAD_GATEWAY);
        let e = ApiError::of(&Error::new(ErrorKind::Timeout, "slow"), None);
        assert_eq!(e.status, http::StatusCode::GATEWAY_TIMEOUT);
        let e = ApiError::invalid("messages[1].role", "unknown role `robot`");
        assert_eq!(e.status, http::StatusCode::BAD_REQUEST);
        assert_eq!(e.body()["error"]["param"], "messages[1].role");
        assert!(e.message.starts_with("messages[1].role: "));
    }

    #[test]
    fn an_upstream_rate_limit_is_429_and_its_overload_529_in_both_shapes() {
        // Only the upstream's status decides, never the text.
        let text_only = ApiError::of(&Error::provider("p: HTTP 429 Too Many Requests"), None);
        assert_eq!(text_only.status, http::StatusCode::BAD_GATEWAY);
        let limited = Error::provider("p: HTTP 429 Too Many Requests").with_upstream_status(429);
        let e = ApiError::of(&limited, None);
        assert_eq!(e.status, http::StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(e.body()["error"]["code"], "rate_limit_exceeded");
        assert_eq!(
            e.body_in(Api::Anthropic),
            json!({"type": "error", "error": {"type": "rate_limit_error", "message": "p: HTTP 429 Too Many Requests"}})
        );
        let over = ApiError::of(&Error::provider("p: 529").with_upstream_status(529), None);
        assert_eq!(over.status.as_u16(), 529);
        assert_eq!(over.anthropic_type(), "overloaded_error");
        let failed = ApiError::of(&Error::provider("p: 500").with_upstream_status(500), None);
        assert_eq!(failed.status, http::StatusCode::BAD_GATEWAY);
        assert_eq!(failed.anthropic_type(), "api_error");
        // The rewording a provider's name adds keeps the status.
        let named = limited.reworded(|m| format!("agent a: {m}"));
        assert_eq!(named.upstream_status, Some(429));
        assert_eq!(
            ApiError::invalid("x", "bad").anthropic_type(),
            "invalid_request_error"
        );
        let unknown = ApiError::of(
            &Error::new(
                ErrorKind::InvalidParameter,
                "`stop` is not a parameter of f",
            ),
            Some("stop_sequences"),
        );
        assert_eq!(
            unknown.body_in(Api::Anthropic)["error"]["message"],
            "stop_sequences: `stop` is not a parameter of f"
        );
        assert_eq!(
            ApiError::unauthorized().anthropic_type(),
            "authentication_error"
        );
        assert_eq!(Api::of_path("/v1/messages/count_tokens"), Api::Anthropic);
        assert_eq!(Api::of_path("/v1/chat/completions"), Api::OpenAi);
    }
}
