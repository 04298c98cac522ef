//! The web chat page `genai serve` answers at `/` (a plain HTTP GET; everything else is the
//! WebSocket). It must never serve anything but the page and 404s.

use jsonrpsee::server::{HttpBody, HttpResponse};

/// The page, or 404 for any other path, 405 for any other method.
pub fn answer(method: &http::Method, path: &str) -> HttpResponse {
    let (status, content_type, body): (http::StatusCode, &str, HttpBody) = match (method, path) {
        (&http::Method::GET, "/") => (
            http::StatusCode::OK,
            "text/html; charset=utf-8",
            HttpBody::from(PAGE),
        ),
        (&http::Method::GET, _) => (
            http::StatusCode::NOT_FOUND,
            "text/plain",
            HttpBody::from("not found"),
        ),
        _ => (
            http::StatusCode::METHOD_NOT_ALLOWED,
            "text/plain",
            HttpBody::from("the WebSocket is at / (with Upgrade)"),
        ),
    };
    let mut r = HttpResponse::new(body);
    *r.status_mut() = status;
    if let Ok(v) = http::HeaderValue::from_str(content_type) {
        r.headers_mut().insert(http::header::CONTENT_TYPE, v);
    }
    r
}

/// A plain page saying what this address is; the web chat client is not built yet.
const PAGE: &str = "<!doctype html><meta charset=utf-8><title>genai serve</title>\
<p>This is <code>genai serve</code>: the genai daemon's JSON-RPC protocol over WebSocket at this \
address. Connect with the bearer token (<code>genai serve --print-token</code>) as \
<code>Authorization: Bearer TOKEN</code> or the subprotocol <code>bearer.TOKEN</code>.</p>";
