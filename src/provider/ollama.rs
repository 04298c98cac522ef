//! The `ollama` provider kind: a local or remote Ollama server, reached at `{host}/api/chat`
//! (the `ollama-chat` format) or at its OpenAI-compatible `{host}/v1/chat/completions`
//! (the `openai-chat` format).
//!
//! It owns the host (config `base_url`, else `OLLAMA_HOST` in any form Ollama itself accepts,
//! else http://127.0.0.1:11434), the optional bearer key (for servers behind an authenticating
//! proxy, or ollama.com), and the HTTP exchange. Ollama streams NDJSON (`application/x-ndjson`),
//! which `Http::response` frames. It must never build or read a request body.

use async_trait::async_trait;

use super::http::Http;
use super::lazy_key::LazyKey;
use super::{ProviderResponse, ServiceProvider};
use crate::config::ProviderConfig;
use crate::error::{Error, ErrorKind, Result};
use crate::format::{ollama_chat, openai_chat, ModelRequest};
use crate::secrets::KeySource;

pub const KIND: &str = "ollama";
pub const DEFAULT_HOST: &str = "http://127.0.0.1:11434";
pub const HOST_ENV: &str = "OLLAMA_HOST";
/// An optional key, sent as a bearer token when set.
pub const KEY_ENV: &str = "OLLAMA_API_KEY";
pub const DEFAULT_MODEL: &str = "llama3.2";

pub struct OllamaProvider {
    name: String,
    base_url: String,
    key: LazyKey,
    headers: Vec<(String, String)>,
    default_model: Option<String>,
    http: Http,
}

/// The base URL of an Ollama host written as Ollama accepts it in `OLLAMA_HOST`: `host`,
/// `host:port`, `:port`, `scheme://host[:port][/path]`, IPv6 in brackets. Without a scheme the
/// port defaults to 11434; with `http://` to 80 and `https://` to 443, as in Ollama's own
/// client. A listen-everywhere address (`0.0.0.0`, `::`) means this machine.
pub fn host_url(text: &str) -> std::result::Result<String, String> {
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

impl OllamaProvider {
    pub fn from_config(name: &str, c: &ProviderConfig) -> Result<OllamaProvider> {
        let (text, origin) = match &c.base_url {
            Some(url) => (url.clone(), format!("service_providers.{name}.base_url")),
            None => match std::env::var(HOST_ENV)
                .ok()
                .filter(|s| !s.trim().is_empty())
            {
                Some(h) => (h, HOST_ENV.to_string()),
                None => (DEFAULT_HOST.to_string(), "the default host".to_string()),
            },
        };
        let base_url = host_url(&text)
            .map_err(|why| Error::new(ErrorKind::Config, format!("{origin}: {why}")))?;
        Ok(OllamaProvider {
            name: name.to_string(),
            base_url,
            key: LazyKey::new(KeySource {
                instance: name.to_string(),
                env_var: Some(c.api_key_env.clone().unwrap_or_else(|| KEY_ENV.to_string())),
                command: c.api_key_cmd.clone(),
                inline: c.api_key.clone(),
            }),
            headers: c
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            default_model: c
                .default_model
                .clone()
                .or_else(|| Some(DEFAULT_MODEL.to_string())),
            http: Http::from_config(name, c)?,
        })
    }

    /// The endpoint of a format, or an error for a format Ollama cannot take.
    fn url(&self, format: &str) -> Result<String> {
        let path = match format {
            f if f == ollama_chat::FORMAT => "/api/chat",
            f if f == openai_chat::FORMAT => "/v1/chat/completions",
            other => {
                return Err(Error::new(
                    ErrorKind::IncompatibleComponents,
                    format!("provider kind ollama cannot send the {other} format; it sends ollama-chat and openai-chat"),
                ))
            }
        };
        Ok(format!("{}{path}", self.base_url))
    }
}

#[async_trait]
impl ServiceProvider for OllamaProvider {
    fn kind(&self) -> &'static str {
        KIND
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn default_model(&self) -> Option<&str> {
        self.default_model.as_deref()
    }

    async fn send_request(&self, request: &ModelRequest) -> Result<ProviderResponse> {
        let url = self.url(request.format)?;
        let key = self.key.get().await?;
        let sse = request.format == openai_chat::FORMAT;
        let resp = self
            .http
            .send(&url, |client| {
                let mut req = client.post(&url).json(&request.body);
                if let Some(key) = key {
                    req = req.bearer_auth(key.expose());
                }
                if request.stream {
                    let accept = if sse {
                        "text/event-stream"
                    } else {
                        "application/x-ndjson"
                    };
                    req = req.header(reqwest::header::ACCEPT, accept);
                }
                for (k, v) in &self.headers {
                    req = req.header(k, v);
                }
                Ok(req)
            })
            .await?;
        self.http.response(resp, &url, request.stream).await
    }
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
        let c = ProviderConfig {
            kind: KIND.into(),
            base_url: Some("localhost:1".into()),
            ..Default::default()
        };
        let p = OllamaProvider::from_config("o", &c).unwrap();
        assert_eq!(p.url("ollama-chat").unwrap(), "http://localhost:1/api/chat");
        assert_eq!(
            p.url("openai-chat").unwrap(),
            "http://localhost:1/v1/chat/completions"
        );
        let e = p.url("gemini").unwrap_err();
        assert_eq!(e.kind, ErrorKind::IncompatibleComponents);
        let bad = ProviderConfig {
            base_url: Some("http://h:x".into()),
            ..c
        };
        let e = OllamaProvider::from_config("o", &bad).err().unwrap();
        assert!(
            e.message.contains("service_providers.o.base_url"),
            "{}",
            e.message
        );
    }
}
