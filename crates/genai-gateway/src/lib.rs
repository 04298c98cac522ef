//! The gateway: other vendors' HTTP APIs on `genai serve`'s address, so the tools and SDKs a
//! user already has run on every model genai reaches. Today: OpenAI's `GET /v1/models`
//! (`models.rs`) and `POST /v1/chat/completions` (`openai_chat.rs` reads the request,
//! `completion.rs` writes the answer), `POST /v1/responses` (`responses.rs` reads, with
//! `responses_tools.rs` for its tools, `responses_reply.rs` writes), Anthropic's `POST
//! /v1/messages` and `/v1/messages/count_tokens` (`anthropic.rs` reads, with
//! `anthropic_tools.rs` for its tools, `anthropic_reply.rs` writes, `count_tokens.rs`
//! estimates).
//!
//! Each API is a [`VendorApi`](pipeline::VendorApi) type (its path, how it reads a request,
//! how it writes an answer), and every turn goes one way, `pipeline.rs`: read the request,
//! choose the model (`access.rs`), set the request's settings on it as a value
//! (`settings.rs`), run one turn (`turn.rs`), answer it whole or streamed (`respond.rs`) and
//! account for it (`ledger.rs`, one row per request with its key, model, usage and cost).
//! Beside them: `error.rs` writes errors in each API's shape, `fields.rs` reads a request's
//! fields, `sse.rs` frames a stream's events, `body.rs` is the one boxed body of an answer,
//! `keys.rs` holds the virtual keys `access.rs` admits and `aliases.rs` resolves
//! `[serve.models]` names; `routing.rs` chooses among a name's deployments and `tries.rs`
//! runs a request's tries on them; `metrics.rs` counts what `ledger.rs` records for `/metrics`;
//! `shared.rs` is the trait of the state replicas share (`[store] url`, `genai-postgres`).
//!
//! This file owns routing the `/v1/` paths and reading a request's body within the limit. The
//! serve's front door (`genai-server`) admits the caller ([`Access`]) before a request gets here. It must never forward a client's body upstream (every turn
//! goes through the core: [`turn`]), never put genai's provider keys in an answer or a log,
//! and never hold a conversation: the client sends the whole history each time.

mod access;
mod aliases;
mod anthropic;
mod anthropic_reply;
mod anthropic_request;
mod anthropic_tools;
pub mod body;
mod completion;
mod count_tokens;
mod embeddings;
mod error;
mod fields;
mod keys;
mod ledger;
pub mod metrics;
mod models;
mod openai_chat;
mod openai_chat_request;
mod pipeline;
mod rate;
mod rate_redis;
mod respond;
mod responses;
mod responses_reply;
mod responses_request;
mod responses_tools;
mod responses_wire;
mod routing;
mod settings;
pub mod shared;
pub mod sse;
mod tries;
mod turn;

pub use access::Access;
pub use body::{Body, HttpResponse};
use error::INVALID_REQUEST;
pub use error::{Api, ApiError};
pub use keys::{hash as key_hash, hex as key_hex};
pub use ledger::{Caller, SERVE_TOKEN};
pub use shared::{PoolState, SharedState};

use std::sync::Arc;

use anthropic::Messages;
use body::full;
use bytes::Bytes;
use http_body_util::BodyExt;
use openai_chat::ChatCompletions;
use pipeline::VendorApi;
use responses::Responses;
use serde_json::Value;

use genai_core::session::Framework;

/// The paths of the gateway's APIs start with this.
const PREFIX: &str = "/v1/";

/// Whether a plain HTTP request is for the gateway.
pub fn is_gateway<B>(req: &http::Request<B>) -> bool {
    req.uri().path().starts_with(PREFIX)
}

/// What a request's body may be: past `bytes` it is refused (413), and it must have come
/// whole `within` this (408), so a client trickling it does not hold its connection forever.
#[derive(Debug, Clone, Copy)]
pub struct BodyLimit {
    pub bytes: u32,
    pub within: std::time::Duration,
}

/// The answer to a gateway request of `caller`, whom the gate admitted; `limit` is what its
/// body may be. A turn's request is recorded with the caller's key when it ends.
pub async fn answer(
    req: http::Request<hyper::body::Incoming>,
    fw: &Arc<Framework>,
    limit: BodyLimit,
    mut caller: Caller,
) -> HttpResponse {
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    let route = path.trim_end_matches('/');
    let api = Api::of_path(route);
    if let (Some(recorded), &http::Method::POST) = (ledger::api_of(route), &method) {
        caller.recorded_as(recorded);
    }
    let c = &mut caller;
    let response = match (route, method) {
        ("/v1/models", http::Method::GET) => json_response(http::StatusCode::OK, &models::list(fw)),
        (ChatCompletions::PATH, http::Method::POST) => {
            turn::<ChatCompletions>(req, fw, limit, c).await
        }
        (Responses::PATH, http::Method::POST) => turn::<Responses>(req, fw, limit, c).await,
        (Messages::PATH, http::Method::POST) => turn::<Messages>(req, fw, limit, c).await,
        (embeddings::PATH, http::Method::POST) => match read_body(req, limit).await {
            Ok(body) => embeddings::answer(&c.keep(body), fw, c).await,
            Err(e) => e.response_in(api),
        },
        ("/v1/messages/count_tokens", http::Method::POST) => match read_body(req, limit).await {
            Ok(body) => anthropic::count_tokens(&body, fw, c),
            Err(e) => e.response_in(api),
        },
        (
            "/v1/models"
            | "/v1/chat/completions"
            | "/v1/responses"
            | "/v1/embeddings"
            | "/v1/messages"
            | "/v1/messages/count_tokens",
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
                "genai's gateway has no route {path} (it serves GET /v1/models, POST /v1/chat/completions, POST /v1/responses, POST /v1/embeddings, POST /v1/messages and POST /v1/messages/count_tokens)"
            ),
        )
        .response_in(api),
    };
    caller.finish(response)
}

/// The answer to a turn of API `A`: its body read within `limit`, then the pipeline.
async fn turn<A: VendorApi>(
    req: http::Request<hyper::body::Incoming>,
    fw: &Arc<Framework>,
    limit: BodyLimit,
    caller: &mut Caller,
) -> HttpResponse {
    match read_body(req, limit).await {
        Ok(body) => pipeline::run::<A>(&caller.keep(body), fw, caller).await,
        Err(e) => e.response_in(A::ERRORS),
    }
}

/// The whole body of a request, refused past `limit` (413 over its bytes, 408 when it has not
/// come within its time).
pub async fn read_body<B>(req: http::Request<B>, limit: BodyLimit) -> Result<Bytes, ApiError>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let within = limit.within;
    match tokio::time::timeout(within, read_body_within(req, limit.bytes)).await {
        Ok(read) => read,
        Err(_) => Err(ApiError::new(
            http::StatusCode::REQUEST_TIMEOUT,
            INVALID_REQUEST,
            format!(
                "the request body did not come whole within {} s",
                within.as_secs_f64()
            ),
        )),
    }
}

async fn read_body_within<B>(req: http::Request<B>, limit: u32) -> Result<Bytes, ApiError>
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

/// Reads a request's body as the route of `path` does, into the core's terms (messages,
/// tools, schema, parameters), with no framework and no turn: the fuzz targets' way in. An
/// unknown path is a 404.
#[doc(hidden)]
pub fn parse_request(path: &str, body: &[u8]) -> Result<(), ApiError> {
    match path {
        "/v1/chat/completions" => openai_chat::ChatRequest::parse(body).map(drop),
        "/v1/responses" => responses::ResponsesRequest::parse(body).map(drop),
        "/v1/messages" => anthropic::MessagesRequest::parse(body, false).map(drop),
        "/v1/messages/count_tokens" => anthropic::MessagesRequest::parse(body, true).map(drop),
        embeddings::PATH => embeddings::read(body).map(drop),
        _ => Err(ApiError::new(
            http::StatusCode::NOT_FOUND,
            INVALID_REQUEST,
            format!("no parser for {path}"),
        )),
    }
}

/// A JSON answer.
pub(crate) fn json_response(status: http::StatusCode, body: &Value) -> HttpResponse {
    json_bytes_response(status, json_bytes(body))
}

/// The JSON text of `body` (`to_vec` writes straight into its buffer; `to_string` goes
/// through `fmt`).
pub(crate) fn json_bytes(body: &impl serde::Serialize) -> Bytes {
    serde_json::to_vec(body).unwrap_or_default().into()
}

/// An answer whose body is JSON already written.
pub(crate) fn json_bytes_response(status: http::StatusCode, body: Bytes) -> HttpResponse {
    let mut r = HttpResponse::new(full(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
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
        let limit = BodyLimit {
            bytes: 4,
            within: std::time::Duration::from_secs(30),
        };
        let e = read_body(req("0123456789"), limit).await.unwrap_err();
        assert_eq!(e.status, http::StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(&read_body(req("0123"), limit).await.unwrap()[..], b"0123");
    }
}
