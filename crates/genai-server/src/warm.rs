//! The warm route of `genai serve` (`POST /genai/local`): `genai ask` and `genai chat` of the
//! same user send a prepared local-engine request here, and the serve's own local provider
//! (its model loaded once, its slots' caches kept) answers it as it would in-process: the whole
//! body, or the stream's events as server-sent events.
//!
//! It owns checking the request (the token, its size, its shape, and that this serve runs the
//! same model file for that provider) and framing the answer. The wire types are the client's
//! (`provider::local::served`). It must never run a provider that sends requests away (that
//! would hand the serve's keys to any holder of the token by another door), and never hold a
//! conversation: the client keeps the conversation and its history.

use futures::StreamExt;
use genai_gateway::body::{self, Body, HttpResponse};

use genai_core::error::{Error, ErrorKind};
use genai_core::format::{openai_chat, ModelRequest};
use genai_core::provider::local::served::{WarmError, WarmRequest, ERROR_EVENT, ROUTE};
use genai_core::provider::{ProviderResponse, StreamEvent};
use genai_core::session::Framework;
use genai_gateway::sse;

/// Whether a plain HTTP request is for this route.
pub(crate) fn is_warm<B>(req: &http::Request<B>) -> bool {
    req.uri().path() == ROUTE
}

/// The answer to a request for the route, its token already checked.
pub(crate) async fn answer(
    req: http::Request<hyper::body::Incoming>,
    fw: &Framework,
    limit: genai_gateway::BodyLimit,
) -> HttpResponse {
    if req.method() != http::Method::POST {
        return refuse(
            http::StatusCode::METHOD_NOT_ALLOWED,
            &Error::invalid_params(format!("{ROUTE} takes POST")),
            false,
        );
    }
    let body = match genai_gateway::read_body(req, limit).await {
        Ok(b) => b,
        Err(e) => return refuse(e.status, &Error::invalid_params(e.message), false),
    };
    let warm: WarmRequest = match serde_json::from_slice(&body) {
        Ok(w) => w,
        Err(e) => {
            return refuse(
                http::StatusCode::BAD_REQUEST,
                &Error::invalid_params(format!("not a warm request: {e}")),
                false,
            )
        }
    };
    let instance = match fw.provider(&warm.provider) {
        Ok(p) => p,
        Err(e) => return refuse(http::StatusCode::CONFLICT, &e, true),
    };
    match instance.provider.model_file(&warm.model) {
        Some(Ok(file)) if same_file(&file, &warm.model_file) => {}
        Some(Ok(file)) => {
            let e = Error::new(
                ErrorKind::Config,
                format!(
                    "this serve's `{}` runs {}, not {}",
                    warm.provider,
                    file.display(),
                    warm.model_file.display()
                ),
            );
            return refuse(http::StatusCode::CONFLICT, &e, true);
        }
        Some(Err(e)) => return refuse(http::StatusCode::CONFLICT, &e, true),
        None => {
            let e = Error::new(
                ErrorKind::Config,
                format!(
                    "this serve's `{}` is not a local model ({})",
                    warm.provider, instance.kind
                ),
            );
            return refuse(http::StatusCode::CONFLICT, &e, true);
        }
    }
    let request = ModelRequest::new(openai_chat::FORMAT, &warm.model, warm.body, warm.stream);
    match instance.provider.send_request(&request).await {
        Ok(ProviderResponse::Complete(body)) => reply(
            http::StatusCode::OK,
            "application/json",
            body::full(body.to_vec()),
        ),
        Ok(ProviderResponse::Events(events)) => {
            // Each event becomes one SSE frame; an error ends the stream with an error event,
            // the way the client's engine would have failed it.
            let frames = events.scan(false, |ended, event| {
                if *ended {
                    return futures::future::ready(None);
                }
                let frame = match event {
                    Ok(e) => sse::frame(&e),
                    Err(e) => {
                        *ended = true;
                        sse::frame(&StreamEvent {
                            event: Some(ERROR_EVENT.to_string()),
                            data: serde_json::to_string(&WarmError::of(&e)).unwrap_or_default(),
                        })
                    }
                };
                futures::future::ready(Some(frame))
            });
            sse::response(frames)
        }
        Err(e) => refuse(status_of(e.kind), &e, false),
    }
}

/// Whether two paths name one file (a link and its target do).
fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    a == b
        || matches!(
            (std::fs::canonicalize(a), std::fs::canonicalize(b)),
            (Ok(x), Ok(y)) if x == y
        )
}

fn status_of(kind: ErrorKind) -> http::StatusCode {
    match kind {
        ErrorKind::InvalidParams | ErrorKind::InvalidParameter => http::StatusCode::BAD_REQUEST,
        ErrorKind::Timeout => http::StatusCode::GATEWAY_TIMEOUT,
        ErrorKind::Cancelled => http::StatusCode::SERVICE_UNAVAILABLE,
        _ => http::StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// A refusal as a JSON [`WarmError`]; `run_here` tells the client to run the request itself.
pub(crate) fn refuse(status: http::StatusCode, e: &Error, run_here: bool) -> HttpResponse {
    let body = WarmError {
        run_here,
        ..WarmError::of(e)
    };
    reply(
        status,
        "application/json",
        body::full(serde_json::to_vec(&body).unwrap_or_default()),
    )
}

fn reply(status: http::StatusCode, content_type: &'static str, body: Body) -> HttpResponse {
    let mut r = HttpResponse::new(body);
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(content_type),
    );
    r
}
