//! The `azure-openai` provider kind: Azure OpenAI (and Azure AI Foundry) deployments, which
//! speak the `openai-chat` format unchanged, reached at
//! `{endpoint}/openai/deployments/{deployment}/chat/completions?api-version={version}`, or at
//! the version-less `{endpoint}/openai/v1/chat/completions` when `api_version = "v1"`
//! (https://learn.microsoft.com/azure/ai-foundry/openai/api-version-lifecycle).
//!
//! It owns the endpoint (config `base_url`, else `AZURE_OPENAI_ENDPOINT`), the deployment
//! (config `deployment`, else the model id), the API version (config `api_version`, else
//! `OPENAI_API_VERSION`, else [`DEFAULT_API_VERSION`]), the `api-key` header
//! (`AZURE_OPENAI_API_KEY`, keyring, `api_key_cmd`, config) and the HTTP exchange. It must never
//! read a request body; the one thing it may change is the v1 body's `model`, which on Azure
//! names the deployment.

use async_trait::async_trait;

use super::http::Http;
use super::lazy_key::LazyKey;
use super::{ProviderResponse, ServiceProvider};
use crate::config::ProviderConfig;
use crate::error::{Error, ErrorKind, Result};
use crate::format::{openai_chat, ModelRequest};
use crate::secrets::KeySource;

pub const KIND: &str = "azure-openai";
pub const ENDPOINT_ENV: &str = "AZURE_OPENAI_ENDPOINT";
pub const KEY_ENV: &str = "AZURE_OPENAI_API_KEY";
pub const VERSION_ENV: &str = "OPENAI_API_VERSION";
/// The latest GA dated version of the data-plane inference API.
pub const DEFAULT_API_VERSION: &str = "2024-10-21";
/// The version-less API (GA since August 2025).
pub const V1: &str = "v1";

pub struct AzureOpenAiProvider {
    name: String,
    /// The resource root, such as `https://my-resource.openai.azure.com`.
    endpoint: String,
    deployment: Option<String>,
    api_version: String,
    key: LazyKey,
    headers: Vec<(String, String)>,
    default_model: Option<String>,
    http: Http,
}

impl AzureOpenAiProvider {
    pub fn from_config(name: &str, c: &ProviderConfig) -> Result<AzureOpenAiProvider> {
        let env = |var: &str| std::env::var(var).ok().filter(|s| !s.trim().is_empty());
        let config_err = |m: String| Error::new(ErrorKind::Config, m);
        let endpoint = c.base_url.clone().or_else(|| env(ENDPOINT_ENV)).ok_or_else(|| {
            config_err(format!(
                "provider `{name}` needs an endpoint: set base_url (https://RESOURCE.openai.azure.com) or {ENDPOINT_ENV}"
            ))
        })?;
        let mut endpoint = endpoint.trim().trim_end_matches('/').to_string();
        // Accept the endpoint as the portal shows it, or with the API path already on it.
        for suffix in ["/openai/v1", "/openai"] {
            if let Some(root) = endpoint.strip_suffix(suffix) {
                endpoint = root.to_string();
                break;
            }
        }
        reqwest::Url::parse(&endpoint).map_err(|e| {
            config_err(format!(
                "service_providers.{name}.base_url `{endpoint}` is not a URL: {e}"
            ))
        })?;
        let api_version = c
            .api_version
            .clone()
            .or_else(|| env(VERSION_ENV))
            .map(|v| v.trim().to_string())
            .unwrap_or_else(|| DEFAULT_API_VERSION.to_string());
        if api_version.is_empty() || api_version.contains(['&', '#', ' ', '/', '?']) {
            return Err(config_err(format!(
                "service_providers.{name}.api_version `{api_version}` is not an API version (such as {DEFAULT_API_VERSION}, or v1)"
            )));
        }
        let deployment = c.deployment.clone().filter(|d| !d.trim().is_empty());
        Ok(AzureOpenAiProvider {
            name: name.to_string(),
            endpoint,
            default_model: c.default_model.clone().or_else(|| deployment.clone()),
            deployment,
            api_version,
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
            http: Http::from_config(name, c)?,
        })
    }

    /// The deployment for a model id: the configured one, else the id itself.
    fn deployment<'a>(&'a self, model: &'a str) -> Result<&'a str> {
        let d = self.deployment.as_deref().unwrap_or(model).trim();
        if d.is_empty() || d.contains(['/', '?', '#', '&', ' ']) {
            return Err(Error::invalid_params(format!(
                "`{d}` is not an Azure OpenAI deployment name"
            )));
        }
        Ok(d)
    }

    /// The chat completions URL (no credentials in it).
    fn url(&self, model: &str) -> Result<String> {
        if self.api_version == V1 {
            return Ok(format!("{}/openai/v1/chat/completions", self.endpoint));
        }
        Ok(format!(
            "{}/openai/deployments/{}/chat/completions?api-version={}",
            self.endpoint,
            self.deployment(model)?,
            self.api_version
        ))
    }
}

#[async_trait]
impl ServiceProvider for AzureOpenAiProvider {
    fn kind(&self) -> &'static str {
        KIND
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn default_model(&self) -> Option<&str> {
        self.default_model.as_deref()
    }

    /// Azure OpenAI takes images up to 20 MB, as OpenAI does.
    fn max_image_bytes(&self) -> Option<usize> {
        Some(20_000_000)
    }

    async fn send_request(&self, request: &ModelRequest) -> Result<ProviderResponse> {
        if request.format != openai_chat::FORMAT {
            return Err(Error::new(
                ErrorKind::IncompatibleComponents,
                format!(
                    "provider kind azure-openai cannot send the {} format; it sends openai-chat",
                    request.format
                ),
            ));
        }
        let url = self.url(&request.model)?;
        // The v1 API routes by the body's `model`, which must name the deployment.
        let v1_body = match &self.deployment {
            Some(d) if self.api_version == V1 && request.body["model"] != d.as_str() => {
                let mut body = request.body.clone();
                body["model"] = serde_json::Value::from(self.deployment(d)?);
                Some(body)
            }
            _ => None,
        };
        let body = v1_body.as_ref().unwrap_or(&request.body);
        let key = self.key.require(None).await?;
        let resp = self
            .http
            .send(&url, |client| {
                let mut req = client.post(&url).header("api-key", key.expose()).json(body);
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

    fn provider(
        base_url: &str,
        api_version: Option<&str>,
        deployment: Option<&str>,
    ) -> AzureOpenAiProvider {
        let c = ProviderConfig {
            kind: KIND.into(),
            base_url: Some(base_url.into()),
            api_version: api_version.map(str::to_string),
            deployment: deployment.map(str::to_string),
            ..Default::default()
        };
        AzureOpenAiProvider::from_config("az", &c).unwrap()
    }

    #[test]
    fn urls_for_dated_versions_and_v1() {
        let p = provider("https://res.openai.azure.com/", Some("2024-10-21"), None);
        assert_eq!(
            p.url("gpt-4o").unwrap(),
            "https://res.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21"
        );
        let p = provider(
            "https://res.openai.azure.com/openai",
            Some("2025-04-01-preview"),
            Some("prod-4o"),
        );
        assert_eq!(
            p.url("ignored").unwrap(),
            "https://res.openai.azure.com/openai/deployments/prod-4o/chat/completions?api-version=2025-04-01-preview"
        );
        assert_eq!(p.default_model(), Some("prod-4o"));
        let p = provider("https://res.openai.azure.com/openai/v1/", Some("v1"), None);
        assert_eq!(
            p.url("gpt-4o").unwrap(),
            "https://res.openai.azure.com/openai/v1/chat/completions"
        );
        assert!(provider("https://r", None, None).url("a/b").is_err());
    }

    #[test]
    fn bad_settings_are_config_errors() {
        let c = ProviderConfig {
            kind: KIND.into(),
            base_url: Some("https://r".into()),
            api_version: Some("2024-10-21&x=1".into()),
            ..Default::default()
        };
        let e = AzureOpenAiProvider::from_config("az", &c).err().unwrap();
        assert_eq!(e.kind, ErrorKind::Config);
    }
}
