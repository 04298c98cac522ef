//! The hooks of the `ollama` provider kind: a local or remote Ollama server, reached at
//! `{host}/api/chat` (the `ollama-chat` format, NDJSON streams) or at its OpenAI-compatible
//! `{host}/v1/chat/completions` (the `openai-chat` format), as its row in the kinds table says.
//!
//! It owns the host: config `base_url`, else `OLLAMA_HOST`, in any form Ollama itself accepts,
//! else http://127.0.0.1:11434. The key is optional (for servers behind an authenticating
//! proxy, or ollama.com). It must never build or read a request body.

use super::kinds::OLLAMA;
use super::remote::{self, Endpoint, HttpProvider, Plain};
use crate::config::HttpSettings;
use crate::error::{Error, ErrorKind, Result};

pub(crate) const KIND: &str = OLLAMA.name;
pub(crate) use super::kinds::OLLAMA_HOST_ENV as HOST_ENV;

/// The base URL of an Ollama host written as Ollama accepts it in `OLLAMA_HOST`: `host`,
/// `host:port`, `:port`, `scheme://host[:port][/path]`, IPv6 in brackets. Without a scheme the
/// port defaults to 11434; with `http://` to 80 and `https://` to 443, as in Ollama's own
/// client. A listen-everywhere address (`0.0.0.0`, `::`) means this machine.
pub(crate) fn host_url(text: &str) -> std::result::Result<String, String> {
    let text = text.trim().trim_end_matches('/');
    let (scheme, rest, default_port) = match text.split_once("://") {
        None => ("http", text, "11434"),
        Some((s, rest)) if s.eq_ignore_ascii_case("http") => ("http", rest, "80"),
        Some((s, rest)) if s.eq_ignore_ascii_case("https") => ("https", rest, "443"),
        Some((s, _)) => return Err(format!("unsupported scheme `{s}` (use http or https)")),
    };
    let (hostport, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let (host, port) = if let Some(inner) = hostport.strip_prefix('[') {
        let (h, after) = inner
            .split_once(']')
            .ok_or_else(|| format!("`{text}`: unclosed `[` in the host"))?;
        (format!("[{h}]"), after.strip_prefix(':').unwrap_or(""))
    } else if hostport.matches(':').count() > 1 {
        (format!("[{hostport}]"), "")
    } else {
        match hostport.split_once(':') {
            Some((h, p)) => (h.to_string(), p),
            None => (hostport.to_string(), ""),
        }
    };
    let host = match host.as_str() {
        "" | "0.0.0.0" => "127.0.0.1".to_string(),
        "[::]" => "[::1]".to_string(),
        _ => host,
    };
    let port = if port.is_empty() { default_port } else { port };
    if port.parse::<u16>().is_err() {
        return Err(format!("`{text}`: `{port}` is not a port"));
    }
    let url = format!("{scheme}://{host}:{port}{path}");
    reqwest::Url::parse(&url).map_err(|e| format!("`{text}` is not a host: {e}"))?;
    Ok(url)
}

/// An instance; its host as [`host_url`] reads it, from `base_url`, else `OLLAMA_HOST`, else
/// the default host.
pub(crate) fn create(name: &str, s: &HttpSettings) -> Result<HttpProvider> {
    let (text, origin) = match &s.base_url {
        Some(url) => (url.clone(), format!("service_providers.{name}.base_url")),
        None => match remote::env(HOST_ENV) {
            Some(h) => (h, HOST_ENV.to_string()),
            None => (
                OLLAMA.default_base_url.unwrap_or_default().to_string(),
                "the default host".to_string(),
            ),
        },
    };
    let base_url =
        host_url(&text).map_err(|why| Error::new(ErrorKind::Config, format!("{origin}: {why}")))?;
    Ok(HttpProvider::new(
        Endpoint::new(&OLLAMA, name, s, base_url)?,
        Plain,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_in_every_form_ollama_accepts() {
        let ok = |s: &str| host_url(s).unwrap();
        assert_eq!(ok("127.0.0.1:11434"), "http://127.0.0.1:11434");
        assert_eq!(ok("0.0.0.0"), "http://127.0.0.1:11434");
        assert_eq!(ok("0.0.0.0:8080"), "http://127.0.0.1:8080");
        assert_eq!(ok(":9999"), "http://127.0.0.1:9999");
        assert_eq!(ok("gpu-box"), "http://gpu-box:11434");
        assert_eq!(ok("http://gpu-box"), "http://gpu-box:80");
        assert_eq!(
            ok("https://ollama.example.com/"),
            "https://ollama.example.com:443"
        );
        assert_eq!(ok("http://host:1234/ollama"), "http://host:1234/ollama");
        assert_eq!(ok("[::1]:11434"), "http://[::1]:11434");
        assert_eq!(ok("::1"), "http://[::1]:11434");
        assert_eq!(ok("[::]"), "http://[::1]:11434");
        assert_eq!(ok(" http://127.0.0.1:11434 "), "http://127.0.0.1:11434");
        assert!(host_url("ftp://x").is_err());
        assert!(host_url("host:port").is_err());
    }

    #[test]
    fn formats_choose_the_endpoint() {
        use crate::provider::remote::testing::first_request;
        let s = HttpSettings {
            base_url: Some("localhost:1".into()),
            ..Default::default()
        };
        let p = create("o", &s).unwrap();
        let send = |format, stream| first_request(&p, format, "m", stream, serde_json::json!({}));
        let r = send("ollama-chat", true).unwrap();
        assert_eq!(r.url().as_str(), "http://localhost:1/api/chat");
        assert_eq!(r.headers()["accept"], "application/x-ndjson");
        assert_eq!(r.headers()["authorization"], "Bearer test-key");
        let r = send("openai-chat", true).unwrap();
        assert_eq!(r.url().as_str(), "http://localhost:1/v1/chat/completions");
        assert_eq!(r.headers()["accept"], "text/event-stream");
        let e = send("gemini", false).unwrap_err();
        assert_eq!(e.kind, ErrorKind::IncompatibleComponents);
        let bad = HttpSettings {
            base_url: Some("http://h:x".into()),
            ..s
        };
        let e = create("o", &bad).err().unwrap();
        assert!(
            e.message.contains("service_providers.o.base_url"),
            "{}",
            e.message
        );
    }
}
