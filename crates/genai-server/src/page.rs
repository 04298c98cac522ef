//! What `genai serve` answers to plain HTTP (everything else is the WebSocket or the gateway):
//! the web chat page, the VS Code chat view's own page and script with a WebSocket host. The
//! binary carries it (`assets/web`, built and committed by `npm run page` in
//! `editor-integrations/vscode`; scripts/test.sh fails when it is stale), so no npm runs at
//! `cargo build`; `--web-root DIR` serves a folder in its place while the page is worked on.
//! It serves only the page's own files (from a web root, only the files directly in it, never
//! a path beyond it), and never caches `index.html`, whose script nonce is fresh on every answer.

use std::path::Path;
use std::sync::LazyLock;

use base64::Engine as _;
use genai_gateway::body::{self, Body, HttpResponse};

/// One file of the page in the binary.
struct Asset {
    name: &'static str,
    bytes: &'static [u8],
}

macro_rules! asset {
    ($name:literal) => {
        Asset {
            name: $name,
            bytes: include_bytes!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../assets/web/",
                $name
            )),
        }
    };
}

/// The page in the binary: exactly what `npm run page` writes.
static ASSETS: [Asset; 3] = [asset!("index.html"), asset!("web.js"), asset!("chat.css")];

/// Each asset's ETag, hashed once.
static ETAGS: LazyLock<Vec<http::HeaderValue>> =
    LazyLock::new(|| ASSETS.iter().map(|a| etag(a.bytes)).collect());

/// What index.html says where its script's nonce goes (the CSP and the script tag).
const NONCE_SLOT: &str = "{{nonce}}";

/// The answer to a request for `path`: a file of the page (`/` is `index.html`), from
/// `web_root` when given, else from the binary; 404 for anything else, 405 for other methods
/// than GET, 304 when the client's `If-None-Match` names the file's ETag.
pub(crate) fn answer(
    method: &http::Method,
    path: &str,
    headers: &http::HeaderMap,
    web_root: Option<&Path>,
) -> HttpResponse {
    if method != http::Method::GET {
        return reply(
            http::StatusCode::METHOD_NOT_ALLOWED,
            "text/plain",
            body::full("the WebSocket is at / (with Upgrade)"),
        );
    }
    let name = match path {
        "/" => "index.html",
        p => p.trim_start_matches('/'),
    };
    if let Some(root) = web_root {
        let plain = !name.is_empty()
            && !name.contains('/')
            && !name.contains('\\')
            && !name.starts_with('.');
        if plain && root.join(name).is_file() {
            return match std::fs::read(root.join(name)) {
                Ok(bytes) => file(name, bytes, "no-cache"),
                Err(_) => not_found(),
            };
        }
    } else if let Some(at) = ASSETS.iter().position(|a| a.name == name) {
        let asset = &ASSETS[at];
        if name == "index.html" {
            return file(name, asset.bytes.to_vec(), "no-store");
        }
        let etag = ETAGS[at].clone();
        let mut r = if headers.get(http::header::IF_NONE_MATCH) == Some(&etag) {
            reply(
                http::StatusCode::NOT_MODIFIED,
                content_type(name),
                body::empty(),
            )
        } else {
            file(name, asset.bytes.to_vec(), "no-cache")
        };
        r.headers_mut().insert(http::header::ETAG, etag);
        return r;
    }
    if path == "/favicon.ico" {
        // Browsers ask for an icon on their own; there is none.
        return reply(http::StatusCode::NO_CONTENT, "text/plain", body::empty());
    }
    not_found()
}

/// A file's answer; index.html with a fresh nonce in its slot, never stored.
fn file(name: &str, bytes: Vec<u8>, cache: &'static str) -> HttpResponse {
    let (bytes, cache) = match name {
        "index.html" => (with_nonce(&bytes).into_bytes(), "no-store"),
        _ => (bytes, cache),
    };
    let mut r = reply(http::StatusCode::OK, content_type(name), body::full(bytes));
    r.headers_mut().insert(
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static(cache),
    );
    r
}

/// The page with a nonce from the OS's random source in every slot (none when there is no
/// random source: the page's script then does not run, which is safer than a guessable one).
fn with_nonce(page: &[u8]) -> String {
    let mut bytes = [0u8; 16];
    let nonce = match getrandom::fill(&mut bytes) {
        Ok(()) => base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes),
        Err(e) => {
            tracing::warn!("no random source for the page's nonce: {e}");
            String::new()
        }
    };
    String::from_utf8_lossy(page).replace(NONCE_SLOT, &nonce)
}

/// `"` + 16 hex digits of the bytes' FNV-1a hash + `"`.
fn etag(bytes: &[u8]) -> http::HeaderValue {
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    http::HeaderValue::from_str(&format!("\"{hash:016x}\"")).expect("hex digits in quotes")
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
        body::full("not found"),
    )
}

fn reply(status: http::StatusCode, content_type: &'static str, body: Body) -> HttpResponse {
    let mut r = HttpResponse::new(body);
    *r.status_mut() = status;
    let headers = r.headers_mut();
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(content_type),
    );
    headers.insert(
        http::header::X_CONTENT_TYPE_OPTIONS,
        http::HeaderValue::from_static("nosniff"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(path: &str, web_root: Option<&Path>) -> HttpResponse {
        answer(&http::Method::GET, path, &http::HeaderMap::new(), web_root)
    }

    async fn body(r: HttpResponse) -> String {
        use http_body_util::BodyExt as _;
        let bytes = r.into_body().collect().await.unwrap().to_bytes();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[test]
    fn only_files_directly_in_the_web_root_are_served() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("index.html"), "<p>chat</p>").unwrap();
        std::fs::write(dir.path().join("web.js"), "1").unwrap();
        let status = |p: &str| get(p, Some(dir.path())).status();
        assert_eq!(status("/"), http::StatusCode::OK);
        assert_eq!(status("/web.js"), http::StatusCode::OK);
        for bad in [
            "/../secret",
            "/a/b",
            "/.hidden",
            "/missing.js",
            "//etc/passwd",
            // The binary's page is not mixed into a web root's.
            "/chat.css",
        ] {
            assert_eq!(status(bad), http::StatusCode::NOT_FOUND, "{bad}");
        }
        let post = answer(
            &http::Method::POST,
            "/",
            &http::HeaderMap::new(),
            Some(dir.path()),
        );
        assert_eq!(post.status(), http::StatusCode::METHOD_NOT_ALLOWED);
    }

    #[tokio::test]
    async fn the_page_in_the_binary_is_served_with_its_types_a_fresh_nonce_and_etags() {
        let page = get("/", None);
        assert_eq!(page.status(), http::StatusCode::OK);
        assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
        assert_eq!(page.headers()["cache-control"], "no-store");
        assert!(page.headers().get("etag").is_none());
        let first = body(page).await;
        assert!(first.contains("Content-Security-Policy"), "{first}");
        assert!(first.contains("src=\"web.js\""), "{first}");
        assert!(first.contains("href=\"chat.css\""), "{first}");
        assert!(!first.contains(NONCE_SLOT), "{first}");
        let nonce = |page: &str| {
            let at = page.find("<script nonce=\"").unwrap() + 15;
            page[at..at + 22].to_string()
        };
        assert!(first.contains(&format!("'nonce-{}'", nonce(&first))));
        let second = body(get("/index.html", None)).await;
        assert_ne!(nonce(&first), nonce(&second), "the nonce is not fresh");

        for (path, kind) in [
            ("/web.js", "text/javascript; charset=utf-8"),
            ("/chat.css", "text/css; charset=utf-8"),
        ] {
            let r = get(path, None);
            assert_eq!(r.status(), http::StatusCode::OK, "{path}");
            assert_eq!(r.headers()["content-type"], kind);
            assert_eq!(r.headers()["cache-control"], "no-cache");
            assert_eq!(r.headers()["x-content-type-options"], "nosniff");
            let tag = r.headers()["etag"].clone();
            assert_eq!(tag.len(), 18, "{tag:?}");
            assert!(!body(r).await.is_empty());
            let mut again = http::HeaderMap::new();
            again.insert(http::header::IF_NONE_MATCH, tag.clone());
            let r = answer(&http::Method::GET, path, &again, None);
            assert_eq!(r.status(), http::StatusCode::NOT_MODIFIED, "{path}");
            assert_eq!(r.headers()["etag"], tag);
            assert!(body(r).await.is_empty());
        }
        assert_ne!(
            get("/web.js", None).headers()["etag"],
            get("/chat.css", None).headers()["etag"]
        );
        for missing in ["/web.js.map", "/../Cargo.toml", "/assets/web/web.js"] {
            assert_eq!(get(missing, None).status(), http::StatusCode::NOT_FOUND);
        }
        assert_eq!(
            get("/favicon.ico", None).status(),
            http::StatusCode::NO_CONTENT
        );
    }

    #[test]
    fn the_etag_is_the_hash_of_the_bytes() {
        assert_eq!(etag(b""), "\"cbf29ce484222325\"");
        assert_eq!(etag(b"a"), "\"af63dc4c8601ec8c\"");
    }
}
