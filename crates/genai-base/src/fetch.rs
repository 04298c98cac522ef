//! Downloads for `genai ask -a URL`, `-f URL` and the workspace's `fetch` tool: one client with
//! timeouts (10 s to connect, 60 s in all), at most 5 redirects, and a size cap checked as the
//! body arrives; and a page as text (HTML converted, plain text and Markdown as they are).
//!
//! It owns the download and the page's text only. It must never decide whether a URL may be
//! fetched (the permission policy does) and never hold more than the cap.

use std::time::Duration;

use crate::error::{Error, ErrorKind};
use futures::StreamExt;

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
    let client = crate::tls::with_system_roots(reqwest::Client::builder())
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

/// The text of a downloaded page and its media type (lower case, without parameters): HTML
/// converted to text (100 columns), plain text and Markdown as they are; anything else is refused.
pub fn page_text(url: &str, fetched: Fetched) -> Result<(String, String), Error> {
    let refuse = |msg: String| Error::new(ErrorKind::InvalidParams, msg);
    let essence = fetched
        .content_type
        .as_deref()
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let text = match essence.as_str() {
        "text/html" | "application/xhtml+xml" => html2text::config::plain()
            .string_from_read(&fetched.bytes[..], 100)
            .map_err(|e| refuse(format!("cannot read the HTML of {url}: {e}")))?,
        "text/plain" | "text/markdown" | "text/x-markdown" => {
            if fetched.bytes.contains(&0) {
                return Err(refuse(format!("{url} is a binary file, not text")));
            }
            String::from_utf8(fetched.bytes)
                .map_err(|_| refuse(format!("{url} is a binary file, not text")))?
        }
        "" => {
            return Err(refuse(format!(
                "{url} gave no Content-Type: genai reads HTML, plain text and Markdown from a URL"
            )))
        }
        other => {
            return Err(refuse(format!(
                "{url} is {other}: genai reads HTML, plain text and Markdown from a URL (images go with -a)"
            )))
        }
    };
    Ok((essence, text))
}
