//! The `anthropic` provider kind: Anthropic's API (or a server speaking it), reached at
//! `{base_url}/v1/messages` with an `x-api-key` header.
//!
//! It owns the URL, the key, the headers (`anthropic-version`, `anthropic-beta`) and the HTTP
//! exchange. It must never build or read a request body beyond moving the `anthropic_version`
//! and `anthropic_beta` parameters out of it into their headers (the `claude-messages` format
//! builds the body), and it must never log or format the key.

use async_trait::async_trait;
use serde_json::Value;

use super::http::Http;
use super::lazy_key::LazyKey;
use super::{ProviderResponse, ServiceProvider};
use crate::config::ProviderConfig;
use crate::error::{Error, ErrorKind, Result};
use crate::format::claude_messages::{BETA_PARAMETER, FORMAT, VERSION_PARAMETER};
use crate::format::ModelRequest;
use crate::secrets::KeySource;

pub const KIND: &str = "anthropic";
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
pub const KEY_ENV: &str = "ANTHROPIC_API_KEY";
pub const BASE_URL_ENV: &str = "ANTHROPIC_BASE_URL";
/// The `anthropic-version` header sent when the model configuration sets none.
pub const DEFAULT_VERSION: &str = "2023-06-01";
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";
/// Anthropic's API refuses an image whose base64 data exceeds 5 MB (5,242,880 characters,
/// <https://docs.anthropic.com/en/docs/build-with-claude/vision>); `check_images` counts decoded
/// bytes, so the limit is the bytes that encode to 5 MB.
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024 / 4 * 3;

pub struct AnthropicProvider {
    name: String,
    /// `{base_url}/v1/messages`.
    endpoint: String,
    /// Anthropic's API always needs one.
    key: LazyKey,
    headers: Vec<(String, String)>,
    default_model: Option<String>,
    http: Http,
}

impl AnthropicProvider {
    /// Builds an instance from its config; without `base_url`, `ANTHROPIC_BASE_URL` or
    /// Anthropic's own. A base URL ending in `/v1` is taken as the API root itself.
    pub fn from_config(name: &str, c: &ProviderConfig) -> Result<AnthropicProvider> {
        let base_url = c
            .base_url
            .clone()
            .or_else(|| {
                std::env::var(BASE_URL_ENV)
                    .ok()
                    .filter(|s| !s.trim().is_empty())
            })
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_string());
        let base_url = base_url.trim().trim_end_matches('/');
        reqwest::Url::parse(base_url).map_err(|e| {
            Error::new(
                ErrorKind::Config,
                format!("service_providers.{name}.base_url `{base_url}` is not a URL: {e}"),
            )
        })?;
        let endpoint = match base_url.strip_suffix("/v1") {
            Some(root) => format!("{root}/v1/messages"),
            None => format!("{base_url}/v1/messages"),
        };
        Ok(AnthropicProvider {
            name: name.to_string(),
            endpoint,
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

    fn has_header(&self, name: &str) -> bool {
        self.headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case(name))
    }
}

/// Splits the header parameters off a `claude-messages` body: the body without them, the
/// `anthropic-version` value and the `anthropic-beta` value (comma-separated).
pub fn split_headers(body: &Value) -> (Value, Option<String>, Option<String>) {
    let mut body = body.clone();
    let mut version = None;
    let mut beta = None;
    if let Some(map) = body.as_object_mut() {
        version = map
            .remove(VERSION_PARAMETER)
            .and_then(|v| v.as_str().map(str::to_string));
        beta = map.remove(BETA_PARAMETER).and_then(|v| match v {
            Value::String(s) => Some(s),
            Value::Array(items) => {
                let names: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
                (!names.is_empty()).then(|| names.join(","))
            }
            _ => None,
        });
    }
    (body, version, beta)
}

#[async_trait]
impl ServiceProvider for AnthropicProvider {
    fn kind(&self) -> &'static str {
        KIND
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn default_model(&self) -> Option<&str> {
        self.default_model.as_deref()
    }

    fn max_image_bytes(&self) -> Option<usize> {
        Some(MAX_IMAGE_BYTES)
    }

    async fn send_request(&self, request: &ModelRequest) -> Result<ProviderResponse> {
        if request.format != FORMAT {
            return Err(Error::new(
                ErrorKind::IncompatibleComponents,
                format!(
                    "provider kind anthropic cannot send the {} format (it sends {FORMAT})",
                    request.format
                ),
            ));
        }
        let key = self.key.require(None).await?;
        let (body, version, beta) = split_headers(&request.body);
        // The parameter wins over a configured header, which wins over the default.
        let version = version.or_else(|| {
            (!self.has_header("anthropic-version")).then(|| DEFAULT_VERSION.to_string())
        });
        let url = &self.endpoint;
        let resp = self
            .http
            .send(url, |client| {
                let mut req = client
                    .post(url)
                    .header("x-api-key", key.expose())
                    .json(&body);
                for (k, v) in &self.headers {
                    let overridden = (k.eq_ignore_ascii_case("anthropic-version")
                        && version.is_some())
                        || (k.eq_ignore_ascii_case("anthropic-beta") && beta.is_some());
                    if !overridden {
                        req = req.header(k, v);
                    }
                }
                if let Some(v) = &version {
                    req = req.header("anthropic-version", v);
                }
                if let Some(b) = &beta {
                    req = req.header("anthropic-beta", b);
                }
                if request.stream {
                    req = req.header(reqwest::header::ACCEPT, "text/event-stream");
                }
                Ok(req)
            })
            .await?;
        self.http.response(resp, url, request.stream).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn provider(base_url: Option<&str>) -> AnthropicProvider {
        AnthropicProvider::from_config(
            "anthropic",
            &ProviderConfig {
                kind: KIND.into(),
                base_url: base_url.map(str::to_string),
                ..Default::default()
            },
        )
        .unwrap()
    }

    #[test]
    fn endpoint_and_defaults() {
        assert_eq!(
            provider(Some("https://api.anthropic.com/")).endpoint,
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            provider(Some("http://127.0.0.1:9/v1")).endpoint,
            "http://127.0.0.1:9/v1/messages"
        );
        let p = provider(Some("http://proxy.local/anthropic"));
        assert_eq!(p.endpoint, "http://proxy.local/anthropic/v1/messages");
        assert_eq!(p.default_model(), Some(DEFAULT_MODEL));
        assert_eq!(p.max_image_bytes(), Some(3_932_160));
        assert!(AnthropicProvider::from_config(
            "x",
            &ProviderConfig {
                kind: KIND.into(),
                base_url: Some("not a url".into()),
                ..Default::default()
            }
        )
        .is_err());
    }

    #[test]
    fn header_parameters_leave_the_body() {
        let body = json!({"model": "m", "max_tokens": 5, "anthropic_version": "2024-01-01",
                          "anthropic_beta": ["a-1", "b-2"]});
        let (body, version, beta) = split_headers(&body);
        assert_eq!(body, json!({"model": "m", "max_tokens": 5}));
        assert_eq!(version.as_deref(), Some("2024-01-01"));
        assert_eq!(beta.as_deref(), Some("a-1,b-2"));
        let (_, version, beta) = split_headers(&json!({"model": "m"}));
        assert_eq!((version, beta), (None, None));
    }
}
