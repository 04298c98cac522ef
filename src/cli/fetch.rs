//! Downloads for `genai ask -a URL` and `-f URL`: one client with timeouts (10 s to connect,
//! 60 s in all), at most 5 redirects, and a size cap checked as the body arrives.
//!
//! It owns the download only. It must never decide what a body means (attach.rs sniffs an
//! image, files.rs reads text) and never hold more than the cap.

use std::time::Duration;

use futures::StreamExt;
use genai::error::{Error, ErrorKind};

/// A downloaded body and the server's Content-Type, if it gave one.
pub struct Fetched {
    pub bytes: Vec<u8>,
    pub content_type: Option<String>,
}

/// Whether `spec` is an http(s) URL.
pub fn is_url(spec: &str) -> bool {
    let lower = spec.to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

/// Downloads `url` (a `what`, for messages), stopped as soon as it passes `cap` bytes;
/// `too_big` makes the error for a body over the cap (with its announced size, when known).
pub async fn download(
    url: &str,
    what: &str,
    cap: u64,
    too_big: impl Fn(Option<u64>) -> Error,
) -> Result<Fetched, Error> {
    let refuse = |msg: String| Error::new(ErrorKind::InvalidParams, msg);
    let client = genai::tls::with_system_roots(reqwest::Client::builder())
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(60))
        .redirect(reqwest::redirect::Policy::limited(5))
        .user_agent(concat!("genai/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| Error::internal(format!("cannot build an HTTP client: {e}")))?;
    let failed = |e: reqwest::Error| {
        let why = if e.is_timeout() {
            "no answer in time".to_string()
        } else if e.is_redirect() {
            "too many redirects".to_string()
        } else {
            e.without_url().to_string()
        };
        refuse(format!("cannot download {what} {url}: {why}"))
    };
    let resp = client.get(url).send().await.map_err(failed)?;
    if !resp.status().is_success() {
        return Err(refuse(format!(
            "cannot download {what} {url}: HTTP {}",
            resp.status()
        )));
    }
    if let Some(len) = resp.content_length().filter(|l| *l > cap) {
        return Err(too_big(Some(len)));
    }
    let content_type = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let mut bytes = Vec::new();
    let mut body = resp.bytes_stream();
    while let Some(chunk) = body.next().await {
        bytes.extend_from_slice(&chunk.map_err(failed)?);
        if bytes.len() as u64 > cap {
            return Err(too_big(None));
        }
    }
    Ok(Fetched {
        bytes,
        content_type,
    })
}
