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

const PAGE: &str = "<!doctype html><title>genai</title><p>genai serve</p>";
