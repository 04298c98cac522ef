//! What `genai serve` answers to plain HTTP (everything else is the WebSocket): the web chat
//! page from `--web-root` (the folder `editor-integrations/vscode` builds into `dist/web/`:
//! the VS Code chat view's own page and script with a WebSocket host), or a short note when
//! no page is given. It serves only the files directly in that folder, never a path beyond it.

use std::path::Path;

use jsonrpsee::server::{HttpBody, HttpResponse};

/// The answer to a GET of `path`: a file of `web_root` (`/` is `index.html`), or the note at
/// `/` without one; 404 for anything else, 405 for other methods.
pub fn answer(method: &http::Method, path: &str, web_root: Option<&Path>) -> HttpResponse {
    if method != http::Method::GET {
        return reply(
            http::StatusCode::METHOD_NOT_ALLOWED,
            "text/plain",
            HttpBody::from("the WebSocket is at / (with Upgrade)"),
        );
    }
    let name = match path {
        "/" => "index.html",
        p => p.trim_start_matches('/'),
    };
    let plain =
        !name.is_empty() && !name.contains('/') && !name.contains('\\') && !name.starts_with('.');
    match web_root {
        Some(root) if plain && root.join(name).is_file() => match std::fs::read(root.join(name)) {
            Ok(bytes) => reply(
                http::StatusCode::OK,
                content_type(name),
                HttpBody::from(bytes),
            ),
            Err(_) => not_found(),
        },
        // Browsers ask for an icon on their own; there is none.
        _ if path == "/favicon.ico" => reply(
            http::StatusCode::NO_CONTENT,
            "text/plain",
            HttpBody::empty(),
        ),
        None if path == "/" => reply(
            http::StatusCode::OK,
            "text/html; charset=utf-8",
            HttpBody::from(NOTE),
        ),
        _ => not_found(),
    }
}

fn content_type(name: &str) -> &'static str {
    match name.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("map") | Some("json") => "application/json",
        Some("svg") => "image/svg+xml",
        _ => "application/octet-stream",
    }
}

fn not_found() -> HttpResponse {
    reply(
        http::StatusCode::NOT_FOUND,
        "text/plain",
        HttpBody::from("not found"),
    )
}

fn reply(status: http::StatusCode, content_type: &'static str, body: HttpBody) -> HttpResponse {
    let mut r = HttpResponse::new(body);
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(content_type),
    );
    r
}

/// The page without `--web-root`.
const NOTE: &str = "<!doctype html><meta charset=utf-8><title>genai serve</title>\
<p>This is <code>genai serve</code>: the genai daemon's JSON-RPC protocol over WebSocket at this \
address. Connect with the bearer token (<code>genai serve --print-token</code>) as \
<code>Authorization: Bearer TOKEN</code> or the subprotocol <code>bearer.TOKEN</code>. \
Start it with <code>--web-root editor-integrations/vscode/dist/web</code> for the chat page.</p>";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_files_directly_in_the_web_root_are_served() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("index.html"), "<p>chat</p>").unwrap();
        std::fs::write(dir.path().join("web.js"), "1").unwrap();
        let get = |p: &str| answer(&http::Method::GET, p, Some(dir.path())).status();
        assert_eq!(get("/"), http::StatusCode::OK);
        assert_eq!(get("/web.js"), http::StatusCode::OK);
        for bad in [
            "/../secret",
            "/a/b",
            "/.hidden",
            "/missing.js",
            "//etc/passwd",
        ] {
            assert_eq!(get(bad), http::StatusCode::NOT_FOUND, "{bad}");
        }
        let post = answer(&http::Method::POST, "/", Some(dir.path())).status();
        assert_eq!(post, http::StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(
            answer(&http::Method::GET, "/", None).status(),
            http::StatusCode::OK
        );
        assert_eq!(
            answer(&http::Method::GET, "/web.js", None).status(),
            http::StatusCode::NOT_FOUND
        );
    }
}
