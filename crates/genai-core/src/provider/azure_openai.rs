//! The hooks of the `azure-openai` provider kind: Azure OpenAI (and Azure AI Foundry)
//! deployments, which speak the `openai-chat` format unchanged, reached at
//! `{endpoint}/openai/deployments/{deployment}/chat/completions?api-version={version}`, or at
//! the version-less `{endpoint}/openai/v1/chat/completions` when `api_version = "v1"`
//! (https://learn.microsoft.com/azure/ai-foundry/openai/api-version-lifecycle).
//!
//! It owns the endpoint (config `base_url`, else `AZURE_OPENAI_ENDPOINT`), the deployment
//! (config `deployment`, else the model id) and the API version (config `api_version`, else
//! `OPENAI_API_VERSION`, else [`DEFAULT_API_VERSION`]); its row in the kinds table says the
//! rest (the `api-key` header, `AZURE_OPENAI_API_KEY`). It must never read a request body; the
//! one thing it may change is the v1 body's `model`, which on Azure names the deployment.

use std::borrow::Cow;

use super::kinds::AZURE_OPENAI;
use super::remote::{self, Call, Endpoint, Hooks, HttpProvider, Prepared};
use crate::config::AzureSettings;
use crate::error::{Error, ErrorKind, Result};
use crate::format::Body;

pub(crate) const KIND: &str = AZURE_OPENAI.name;
pub(crate) use super::kinds::AZURE_ENDPOINT_ENV as ENDPOINT_ENV;
pub(crate) const VERSION_ENV: &str = "OPENAI_API_VERSION";
/// The latest GA dated version of the data-plane inference API.
pub(crate) const DEFAULT_API_VERSION: &str = "2024-10-21";
/// The version-less API (GA since August 2025).
pub(crate) const V1: &str = "v1";

/// The deployment and the API version of an instance.
struct Deployment {
    deployment: Option<String>,
    api_version: String,
}

pub(crate) fn create(name: &str, s: &AzureSettings) -> Result<HttpProvider> {
    let config_err = |m: String| Error::new(ErrorKind::Config, m);
    let mut endpoint = remote::base_url(&AZURE_OPENAI, name, &s.http)?.ok_or_else(|| {
        config_err(format!(
            "provider `{name}` needs an endpoint: set base_url (https://RESOURCE.openai.azure.com) or {ENDPOINT_ENV}"
        ))
    })?;
    // Accept the endpoint as the portal shows it, or with the API path already on it.
    for suffix in ["/openai/v1", "/openai"] {
        if let Some(root) = endpoint.strip_suffix(suffix) {
            endpoint = root.to_string();
            break;
        }
    }
    let api_version = s
        .api_version
        .clone()
        .or_else(|| remote::env(VERSION_ENV))
        .map(|v| v.trim().to_string())
        .unwrap_or_else(|| DEFAULT_API_VERSION.to_string());
    if api_version.is_empty() || api_version.contains(['&', '#', ' ', '/', '?']) {
        return Err(config_err(format!(
            "service_providers.{name}.api_version `{api_version}` is not an API version (such as {DEFAULT_API_VERSION}, or v1)"
        )));
    }
    let deployment = s.deployment.clone().filter(|d| !d.trim().is_empty());
    let mut e = Endpoint::new(&AZURE_OPENAI, name, &s.http, endpoint)?;
    e.default_model = e.default_model.or_else(|| deployment.clone());
    let hooks = Deployment {
        deployment,
        api_version,
    };
    Ok(HttpProvider::new(e, hooks))
}

impl Deployment {
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
}

impl Hooks for Deployment {
    fn prepare<'a>(&self, call: &Call<'a>) -> Result<Prepared<'a>> {
        let (base, request) = (&call.endpoint.base_url, call.request);
        let url = if self.api_version == V1 {
            // The operation of the deployment path (`/chat/completions`, `/embeddings`).
            let path = call.route.path;
            let operation = path.split("{deployment}").nth(1).unwrap_or(path);
            let operation = operation.split('?').next().unwrap_or(operation);
            format!("{base}/openai/v1{operation}")
        } else {
            let path = call
                .route
                .path
                .replace("{deployment}", self.deployment(&request.model)?)
                .replace("{api_version}", &self.api_version);
            format!("{base}{path}")
        };
        // The v1 API routes by the body's `model`, which must name the deployment.
        let body = match &self.deployment {
            Some(d) if self.api_version == V1 && request.body["model"] != d.as_str() => {
                let mut body = request.body().clone();
                body["model"] = serde_json::Value::from(self.deployment(d)?);
                Cow::Owned(Body::Tree(body))
            }
            _ => Cow::Borrowed(&request.body),
        };
        Ok(Prepared {
            url,
            body,
            headers: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::HttpSettings;
    use crate::provider::remote::testing::first_request;
    use crate::provider::ServiceProvider;

    fn settings(
        base_url: &str,
        api_version: Option<&str>,
        deployment: Option<&str>,
    ) -> AzureSettings {
        AzureSettings {
            http: HttpSettings {
                base_url: Some(base_url.into()),
                ..Default::default()
            },
            api_version: api_version.map(str::to_string),
            deployment: deployment.map(str::to_string),
        }
    }

    fn provider(
        base_url: &str,
        api_version: Option<&str>,
        deployment: Option<&str>,
    ) -> HttpProvider {
        create("az", &settings(base_url, api_version, deployment)).unwrap()
    }

    /// The URL of a request for `model`, and the request.
    fn url(p: &HttpProvider, model: &str) -> Result<String> {
        let format = crate::format::openai_chat::FORMAT;
        let body = serde_json::json!({"model": model});
        Ok(first_request(p, format, model, false, body)?
            .url()
            .to_string())
    }

    #[test]
    fn urls_for_dated_versions_and_v1() {
        let p = provider("https://res.openai.azure.com/", Some("2024-10-21"), None);
        assert_eq!(
            url(&p, "gpt-4o").unwrap(),
            "https://res.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21"
        );
        let p = provider(
            "https://res.openai.azure.com/openai",
            Some("2025-04-01-preview"),
            Some("prod-4o"),
        );
        assert_eq!(
            url(&p, "ignored").unwrap(),
            "https://res.openai.azure.com/openai/deployments/prod-4o/chat/completions?api-version=2025-04-01-preview"
        );
        assert_eq!(p.default_model(), Some("prod-4o"));
        let p = provider("https://res.openai.azure.com/openai/v1/", Some("v1"), None);
        assert_eq!(
            url(&p, "gpt-4o").unwrap(),
            "https://res.openai.azure.com/openai/v1/chat/completions"
        );
        assert!(url(&provider("https://r", None, None), "a/b").is_err());
    }

    #[test]
    fn the_key_travels_as_api_key() {
        let p = provider("https://res.openai.azure.com", None, None);
        let format = crate::format::openai_chat::FORMAT;
        let body = serde_json::json!({"model": "m"});
        let r = first_request(&p, format, "m", true, body).unwrap();
        assert_eq!(r.headers()["api-key"], "test-key");
        assert_eq!(r.headers()["accept"], "text/event-stream");
        assert!(r.headers().get("authorization").is_none());
        assert_eq!(p.max_image_bytes(), Some(20_000_000));
    }

    #[test]
    fn bad_settings_are_config_errors() {
        let s = settings("https://r", Some("2024-10-21&x=1"), None);
        let e = create("az", &s).err().unwrap();
        assert_eq!(e.kind, ErrorKind::Config);
    }
}
