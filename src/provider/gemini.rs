//! The `gemini` provider kind: Google's Gemini API (Google AI Studio keys), reached at
//! `{base_url}/v1beta/models/{model}:generateContent`, or `:streamGenerateContent?alt=sse` for
//! a stream.
//!
//! It owns the URL (config `base_url`, else `GEMINI_BASE_URL`, else
//! https://generativelanguage.googleapis.com), the key (sent as the `x-goog-api-key` header:
//! `GEMINI_API_KEY`, else `GOOGLE_API_KEY`, the keyring, `api_key_cmd`, the config) and the
//! HTTP exchange. It must never put the key in the URL (where proxies and logs would keep it),
//! and never build or read a request body.

use async_trait::async_trait;

use super::http::Http;
use super::lazy_key::LazyKey;
use super::{ProviderResponse, ServiceProvider};
use crate::config::ProviderConfig;
use crate::error::{Error, ErrorKind, Result};
use crate::format::{gemini, ModelRequest};
use crate::secrets::KeySource;

pub const KIND: &str = "gemini";
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com";
pub const BASE_URL_ENV: &str = "GEMINI_BASE_URL";
pub const KEY_ENV: &str = "GEMINI_API_KEY";
/// Read when `GEMINI_API_KEY` is not set, as Google's SDKs do.
pub const FALLBACK_KEY_ENV: &str = "GOOGLE_API_KEY";
pub const DEFAULT_MODEL: &str = "gemini-2.5-flash";
/// A request with inline data may be 20 MB in all (https://ai.google.dev/gemini-api/docs/image-understanding);
/// base64 makes 15 MB of image about 20 MB of request.
pub const MAX_INLINE_IMAGE_BYTES: usize = 15_000_000;

pub struct GeminiProvider {
    name: String,
    /// With the API version, such as `https://generativelanguage.googleapis.com/v1beta`.
    base_url: String,
    key: LazyKey,
    headers: Vec<(String, String)>,
    default_model: Option<String>,
    http: Http,
}

impl GeminiProvider {
    pub fn from_config(name: &str, c: &ProviderConfig) -> Result<GeminiProvider> {
        let env = |var: &str| std::env::var(var).ok().filter(|s| !s.trim().is_empty());
        let base = c
            .base_url
            .clone()
            .or_else(|| env(BASE_URL_ENV))
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_string());
        let mut base_url = base.trim().trim_end_matches('/').to_string();
        reqwest::Url::parse(&base_url).map_err(|e| {
            Error::new(
                ErrorKind::Config,
                format!("service_providers.{name}.base_url `{base_url}` is not a URL: {e}"),
            )
        })?;
        // A base URL that already names the API version keeps it.
        let last = base_url.rsplit('/').next().unwrap_or_default();
        if !(last.starts_with("v1") && last[2..].chars().all(|c| c.is_ascii_alphanumeric())) {
            base_url.push_str("/v1beta");
        }
        let env_var = c.api_key_env.clone().unwrap_or_else(|| {
            if env(KEY_ENV).is_none() && env(FALLBACK_KEY_ENV).is_some() {
                FALLBACK_KEY_ENV.to_string()
            } else {
                KEY_ENV.to_string()
            }
        });
        Ok(GeminiProvider {
            name: name.to_string(),
            base_url,
            key: LazyKey::new(KeySource {
                instance: name.to_string(),
                env_var: Some(env_var),
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

    /// The endpoint for a model; `models/NAME` and `NAME` are the same model.
    fn url(&self, model: &str, stream: bool) -> Result<String> {
        let model = model.trim().trim_start_matches("models/");
        if model.is_empty() || model.contains(['/', '?', '#', ' ', ':']) {
            return Err(Error::invalid_params(format!(
                "`{model}` is not a Gemini model id (such as {DEFAULT_MODEL})"
            )));
        }
        Ok(if stream {
            format!(
                "{}/models/{model}:streamGenerateContent?alt=sse",
                self.base_url
            )
        } else {
            format!("{}/models/{model}:generateContent", self.base_url)
        })
    }
}

#[async_trait]
impl ServiceProvider for GeminiProvider {
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
        Some(MAX_INLINE_IMAGE_BYTES)
    }

    async fn send_request(&self, request: &ModelRequest) -> Result<ProviderResponse> {
        if request.format != gemini::FORMAT {
            return Err(Error::new(
                ErrorKind::IncompatibleComponents,
                format!(
                    "provider kind gemini cannot send the {} format; it sends gemini",
                    request.format
                ),
            ));
        }
        let url = self.url(&request.model, request.stream)?;
        let key = self.key.require(Some(FALLBACK_KEY_ENV)).await?;
        let resp = self
            .http
            .send(&url, |client| {
                let mut req = client
                    .post(&url)
                    .header("x-goog-api-key", key.expose())
                    .json(&request.body);
                if request.stream {
                    req = req.header(reqwest::header::ACCEPT, "text/event-stream");
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

    fn provider(base_url: Option<&str>) -> GeminiProvider {
        let c = ProviderConfig {
            kind: KIND.into(),
            base_url: base_url.map(str::to_string),
            api_key_env: Some("GENAI_TEST_NO_SUCH_VAR".into()),
            ..Default::default()
        };
        GeminiProvider::from_config("g", &c).unwrap()
    }

    #[test]
    fn urls_name_the_model_and_never_the_key() {
        let p = provider(Some("https://generativelanguage.googleapis.com/"));
        assert_eq!(
            p.url("gemini-2.0-flash", false).unwrap(),
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:generateContent"
        );
        assert_eq!(
            p.url("models/gemini-2.0-flash", true).unwrap(),
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse"
        );
        let v1 = provider(Some("http://127.0.0.1:9/v1"));
        assert_eq!(
            v1.url("m", false).unwrap(),
            "http://127.0.0.1:9/v1/models/m:generateContent"
        );
        assert!(p.url("a/b", false).is_err());
        assert!(p.url("m?key=x", false).is_err());
    }
}
