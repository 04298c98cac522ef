//! The `openai` provider kind: OpenAI and every OpenAI-compatible server (vLLM, llama.cpp's
//! server, LM Studio, OpenRouter, ...), reached at `{base_url}/chat/completions`.
//!
//! It owns the URL, the bearer key and the HTTP exchange; it must never build or read a
//! request body (the `openai-chat` format does).

use async_trait::async_trait;

use super::http::Http;
use super::lazy_key::LazyKey;
use super::{ProviderResponse, ServiceProvider};
use crate::config::ProviderConfig;
use crate::error::{Error, ErrorKind, Result};
use crate::format::ModelRequest;
use crate::secrets::{KeySource, Secret};

pub const KIND: &str = "openai";
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
pub const KEY_ENV: &str = "OPENAI_API_KEY";

pub struct OpenAiProvider {
    name: String,
    base_url: String,
    /// True when the base URL is OpenAI's own, which always needs a key.
    needs_key: bool,
    key: LazyKey,
    headers: Vec<(String, String)>,
    default_model: Option<String>,
    http: Http,
}

impl OpenAiProvider {
    /// Builds an instance from its config; the built-in instance `openai` reads `OPENAI_BASE_URL`.
    pub fn from_config(name: &str, c: &ProviderConfig) -> Result<OpenAiProvider> {
        let base_url = c
            .base_url
            .clone()
            .or_else(|| {
                std::env::var("OPENAI_BASE_URL")
                    .ok()
                    .filter(|s| !s.trim().is_empty())
            })
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_string());
        let base_url = base_url.trim().trim_end_matches('/').to_string();
        reqwest::Url::parse(&base_url).map_err(|e| {
            Error::new(
                ErrorKind::Config,
                format!("service_providers.{name}.base_url `{base_url}` is not a URL: {e}"),
            )
        })?;
        Ok(OpenAiProvider {
            name: name.to_string(),
            needs_key: base_url == DEFAULT_BASE_URL,
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
                .or_else(|| Some("gpt-4o-mini".to_string())),
            http: Http::from_config(name, c)?,
        })
    }

    /// The key; OpenAI's own endpoint needs one, a custom base URL may not.
    async fn key(&self) -> Result<Option<&Secret>> {
        if self.needs_key {
            return Ok(Some(self.key.require(None).await?));
        }
        self.key.get().await
    }
}

#[async_trait]
impl ServiceProvider for OpenAiProvider {
    fn kind(&self) -> &'static str {
        KIND
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn default_model(&self) -> Option<&str> {
        self.default_model.as_deref()
    }

    /// OpenAI takes images up to 20 MB; compatible servers may take more or less.
    fn max_image_bytes(&self) -> Option<usize> {
        self.needs_key.then_some(20_000_000)
    }

    async fn send_request(&self, request: &ModelRequest) -> Result<ProviderResponse> {
        if request.format != crate::format::openai_chat::FORMAT {
            return Err(Error::new(
                ErrorKind::IncompatibleComponents,
                format!(
                    "provider kind openai cannot send the {} format",
                    request.format
                ),
            ));
        }
        let url = format!("{}/chat/completions", self.base_url);
        let key = self.key().await?;
        let resp = self
            .http
            .send(&url, |client| {
                let mut req = client.post(&url).json(&request.body);
                if let Some(key) = key {
                    req = req.bearer_auth(key.expose());
                }
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
