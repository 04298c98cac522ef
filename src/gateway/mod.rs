//! The gateway: other vendors' HTTP APIs on `genai serve`'s address, so the tools and SDKs a
//! user already has run on every model genai reaches. Today: OpenAI's `GET /v1/models`
//! (`models.rs`) and `POST /v1/chat/completions` (`openai_chat.rs` reads the request,
//! `completion.rs` writes the answer).
//!
//! This file owns routing the `/v1/` paths, reading a request's body within the limit, and
//! errors in OpenAI's shape with their status codes. The serve's gate checks the token before
//! a request gets here (`rpc/ws`). It must never forward a client's body upstream (every turn
//! goes through the core: [`turn`]), never put genai's provider keys in an answer or a log,
//! and never hold a conversation: the client sends the whole history each time.

mod completion;
mod models;
mod openai_chat;
pub mod sse;
mod turn;

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::BodyExt;
use jsonrpsee::server::{HttpBody, HttpResponse};
use serde_json::{json, Value};

use crate::error::{Error, ErrorKind};
use crate::session::Framework;

/// The paths of the gateway's APIs start with this.
const PREFIX: &str = "/v1/";

/// Whether a plain HTTP request is for the gateway.
pub fn is_gateway<B>(req: &http::Request<B>) -> bool {
    req.uri().path().starts_with(PREFIX)
}

/// The answer to a gateway request, its token already checked; `limit` is the largest body.
pub async fn answer(
    req: http::Request<hyper::body::Incoming>,
    fw: &Arc<Framework>,
    limit: u32,
) -> HttpResponse {
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    let route = path.trim_end_matches('/');
    match (route, method) {
        ("/v1/models", http::Method::GET) => json_response(http::StatusCode::OK, &models::list(fw)),
        ("/v1/chat/completions", http::Method::POST) => match read_body(req, limit).await {
            Ok(body) => openai_chat::answer(&body, fw).await,
            Err(e) => e.response(),
        },
        ("/v1/models" | "/v1/chat/completions", m) => ApiError::new(
            http::StatusCode::METHOD_NOT_ALLOWED,
            INVALID_REQUEST,
            format!("{route} does not take {m}"),
        )
        .response(),
        _ => ApiError::new(
            http::StatusCode::NOT_FOUND,
            INVALID_REQUEST,
            format!(
                "genai's gateway has no route {path} (it serves GET /v1/models and POST /v1/chat/completions)"
            ),
        )
        .response(),
    }
}

/// The whole body of a request, refused (413) past `limit` bytes.
pub async fn read_body<B>(req: http::Request<B>, limit: u32) -> Result<Bytes, ApiError>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let too_large = || {
        ApiError::new(
            http::StatusCode::PAYLOAD_TOO_LARGE,
            INVALID_REQUEST,
            format!("the request body is over this server's limit of {limit} bytes"),
        )
    };
    let declared = req
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > u64::from(limit)) {
        return Err(too_large());
    }
    match http_body_util::Limited::new(req.into_body(), limit as usize)
        .collect()
        .await
    {
        Ok(b) => Ok(b.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Err(e) => Err(ApiError::new(
            http::StatusCode::BAD_REQUEST,
            INVALID_REQUEST,
            format!("the request body could not be read: {e}"),
        )),
    }
}

/// OpenAI's error type of a request the client must change.
const INVALID_REQUEST: &str = "invalid_request_error";

/// An error as OpenAI's APIs answer it: `{"error":{"message","type","param","code"}}` with
/// its HTTP status.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: http::StatusCode,
    pub kind: &'static str,
    pub message: String,
    /// The request's field at fault, such as `messages[2].content`.
    pub param: Option<String>,
    pub code: Option<&'static str>,
}

impl ApiError {
    pub fn new(status: http::StatusCode, kind: &'static str, message: String) -> ApiError {
        ApiError {
            status,
            kind,
            message,
            param: None,
            code: None,
        }
    }

    /// A 400 naming the request's field at fault.
    pub fn invalid(param: impl Into<String>, message: impl Into<String>) -> ApiError {
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

    /// The 401 of a request without the serve's token.
    pub fn unauthorized() -> ApiError {
        ApiError {
            code: Some("invalid_api_key"),
            ..ApiError::new(
                http::StatusCode::UNAUTHORIZED,
                "authentication_error",
                "genai serve needs its token as `Authorization: Bearer TOKEN` or `x-api-key: TOKEN` (genai serve --print-token)".into(),
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

    /// The answer to a core error: the client's mistakes are 4xx, the upstream's failures
    /// 502 (504 when it did not answer in time), genai's own 500. `param` is the request's
    /// field the error is about, when known.
    pub fn of(e: &Error, param: Option<&str>) -> ApiError {
        use http::StatusCode as S;
        let (status, kind, code) = match e.kind {
            ErrorKind::InvalidParams
            | ErrorKind::InvalidParameter
            | ErrorKind::IncompatibleComponents => (S::BAD_REQUEST, INVALID_REQUEST, None),
            ErrorKind::UnknownComponent | ErrorKind::UnknownAgent => {
                (S::NOT_FOUND, INVALID_REQUEST, Some("model_not_found"))
            }
            // genai's own key for the provider was refused upstream: not the client's key.
            ErrorKind::MissingCredentials => (
                S::BAD_GATEWAY,
                "upstream_error",
                Some("upstream_credentials"),
            ),
            ErrorKind::ProviderError => (S::BAD_GATEWAY, "upstream_error", None),
            ErrorKind::Timeout => (S::GATEWAY_TIMEOUT, "upstream_error", Some("timeout")),
            ErrorKind::UnknownConversation
            | ErrorKind::Config
            | ErrorKind::Cancelled
            | ErrorKind::FeatureError
            | ErrorKind::Store
            | ErrorKind::Internal => (S::INTERNAL_SERVER_ERROR, "server_error", None),
        };
        ApiError {
            status,
            kind,
            // Error::new masked every secret in its message already.
            message: e.message.clone(),
            param: param.map(str::to_string),
            code,
        }
    }

    /// The error's JSON body.
    pub fn body(&self) -> Value {
        json!({"error": {
            "message": self.message,
            "type": self.kind,
            "param": self.param,
            "code": self.code,
        }})
    }

    pub fn response(&self) -> HttpResponse {
        if self.status.is_server_error() {
            tracing::debug!("gateway: {} {}", self.status, self.message);
        }
        json_response(self.status, &self.body())
    }
}

/// A JSON answer.
pub fn json_response(status: http::StatusCode, body: &Value) -> HttpResponse {
    let mut r = HttpResponse::new(HttpBody::from(body.to_string()));
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}

/// Seconds since the Unix epoch, for the `created` of answers.
fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
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

    #[tokio::test]
    async fn a_body_over_the_limit_is_413_and_within_it_is_read() {
        let req = |body: &'static str| {
            http::Request::new(http_body_util::Full::new(Bytes::from_static(
                body.as_bytes(),
            )))
        };
        let e = read_body(req("0123456789"), 4).await.unwrap_err();
        assert_eq!(e.status, http::StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(&read_body(req("0123"), 4).await.unwrap()[..], b"0123");
    }
}
