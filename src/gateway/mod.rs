//! The gateway: other vendors' HTTP APIs on `genai serve`'s address, so the tools and SDKs a
//! user already has run on every model genai reaches. Today: OpenAI's `GET /v1/models`
//! (`models.rs`) and `POST /v1/chat/completions` (`openai_chat.rs` reads the request,
//! `completion.rs` writes the answer), Anthropic's `POST /v1/messages` and
//! `/v1/messages/count_tokens` (`anthropic.rs` reads, with `anthropic_tools.rs` for its tools,
//! `anthropic_reply.rs` writes, `count_tokens.rs` estimates). Beside
//! them: `turn.rs` runs a turn on the core, `respond.rs` answers it whole or streamed,
//! `error.rs` writes errors in each API's shape, `fields.rs` reads a request's fields.
//!
//! This file owns routing the `/v1/` paths and reading a request's body within the limit. The serve's gate checks the token before
//! a request gets here (`rpc/ws`). It must never forward a client's body upstream (every turn
//! goes through the core: [`turn`]), never put genai's provider keys in an answer or a log,
//! and never hold a conversation: the client sends the whole history each time.

mod anthropic;
mod anthropic_reply;
mod anthropic_tools;
mod completion;
mod count_tokens;
mod error;
mod fields;
mod models;
mod openai_chat;
mod respond;
pub mod sse;
mod turn;

use error::INVALID_REQUEST;
pub use error::{Api, ApiError};

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::BodyExt;
use jsonrpsee::server::{HttpBody, HttpResponse};
use serde_json::Value;

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
    let api = Api::of_path(route);
    match (route, method) {
        ("/v1/models", http::Method::GET) => json_response(http::StatusCode::OK, &models::list(fw)),
        ("/v1/chat/completions", http::Method::POST) => match read_body(req, limit).await {
            Ok(body) => openai_chat::answer(&body, fw).await,
            Err(e) => e.response(),
        },
        ("/v1/messages", http::Method::POST) => match read_body(req, limit).await {
            Ok(body) => anthropic::answer(&body, fw).await,
            Err(e) => e.response_in(api),
        },
        ("/v1/messages/count_tokens", http::Method::POST) => match read_body(req, limit).await {
            Ok(body) => anthropic::count_tokens(&body, fw),
            Err(e) => e.response_in(api),
        },
        (
            "/v1/models" | "/v1/chat/completions" | "/v1/messages" | "/v1/messages/count_tokens",
            m,
        ) => ApiError::new(
            http::StatusCode::METHOD_NOT_ALLOWED,
            INVALID_REQUEST,
            format!("{route} does not take {m}"),
        )
        .response_in(api),
        _ => ApiError::new(
            http::StatusCode::NOT_FOUND,
            INVALID_REQUEST,
            format!(
                "genai's gateway has no route {path} (it serves GET /v1/models, POST /v1/chat/completions, POST /v1/messages and POST /v1/messages/count_tokens)"
            ),
        )
        .response_in(api),
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
