//! A plugin module as a client sees it: its manifest fetched from
//! `/.well-known/ai-plugin.json`, calls as `POST endpoint {"method", "params": "<JSON string>"}`,
//! and the answer's fields (text, error, confirmation, actions, collect mode).
//!
//! It owns the module's HTTP exchange and the `X-API-KEY` of `service_api_key` modules, which
//! goes to the origin the module was added from and nowhere else. It must never decide what to
//! do with an answer (ask the user, emit an action): the `tools` feature does.

use std::time::Duration;

use reqwest::Url;
use serde_json::{json, Value};

use super::manifest::{Auth, Manifest};
use super::Tool;
use crate::error::{root_cause, Error, ErrorKind, Result};
use crate::secrets::Secret;

/// The path of a module's manifest.
pub(crate) const MANIFEST_PATH: &str = "/.well-known/ai-plugin.json";

/// A loaded module.
pub struct PluginModule {
    pub(crate) name: String,
    pub(crate) manifest_url: Url,
    pub manifest: Manifest,
    endpoint: Url,
    key: Option<Secret>,
    client: reqwest::Client,
}

/// What a module answered to one call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModuleAnswer {
    /// What the model is told.
    pub text: String,
    /// The module reported an error (`error`, or a non-2xx status): the model sees `text` as a
    /// tool error.
    pub is_error: bool,
    /// `askConfirmation` with its `confirmationLink`.
    pub confirmation_link: Option<String>,
    /// `actions`: objects with at least `code` and `type`.
    pub actions: Vec<Value>,
    /// `collectResponse` with its `collectResponseLink`.
    pub collect_link: Option<String>,
    /// Images the tool answered (MCP image content), as image parts for the model.
    pub(crate) images: Vec<crate::message::Part>,
    /// The file the call changed (the workspace's edit tools).
    pub(crate) edit: Option<super::FileEdit>,
}

/// The keyring name of a module's key.
pub fn key_name(module: &str) -> String {
    format!("plugin:{module}")
}

/// Loads the module `[plugins.NAME]` of the config, its key from `GENAI_PLUGIN_<NAME>_KEY`,
/// the keyring, the key file, `api_key_cmd` or `api_key`.
pub async fn from_config(name: &str, c: &crate::config::PluginConfig) -> Result<PluginModule> {
    let keys = crate::secrets::KeySource {
        instance: key_name(name),
        env_var: Some(crate::secrets::plugin_key_env(name)),
        command: c.api_key_cmd.clone(),
        inline: c.api_key.clone(),
    };
    let key = tokio::task::spawn_blocking(move || keys.resolve())
        .await
        .map_err(|e| Error::internal(format!("key lookup failed: {e}")))??;
    let timeout = Duration::from_secs_f64(c.timeout_secs.filter(|s| *s > 0.0).unwrap_or(30.0));
    PluginModule::load(name, manifest_url(&c.url)?, key, timeout).await
}

/// The manifest URL for what a user typed: a manifest URL, or a module's base URL.
pub fn manifest_url(text: &str) -> Result<Url> {
    let mut url = Url::parse(text.trim())
        .map_err(|e| Error::invalid_params(format!("`{text}` is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Error::invalid_params(format!(
            "`{text}`: a plugin module is reached over http or https"
        )));
    }
    if !url.path().ends_with(".json") {
        let path = format!("{}{MANIFEST_PATH}", url.path().trim_end_matches('/'));
        url.set_path(&path);
    }
    Ok(url)
}

fn module_error(name: &str, message: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::FeatureError,
        format!("plugin `{name}`: {message}"),
    )
}

impl PluginModule {
    /// Fetches and validates the manifest. Every problem is listed with its path.
    pub async fn load(
        name: &str,
        manifest_url: Url,
        key: Option<Secret>,
        timeout: Duration,
    ) -> Result<PluginModule> {
        let client = crate::tls::with_system_roots(reqwest::Client::builder())
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .timeout(timeout)
            .user_agent(concat!("genai/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Error::internal(format!("cannot build an HTTP client: {e}")))?;
        let resp = client.get(manifest_url.clone()).send().await.map_err(|e| {
            module_error(
                name,
                format!("cannot fetch {manifest_url}: {}", root_cause(&e)),
            )
        })?;
        let status = resp.status();
        let body = resp.bytes().await.map_err(|e| {
            module_error(
                name,
                format!("cannot read {manifest_url}: {}", root_cause(&e)),
            )
        })?;
        if !status.is_success() {
            return Err(module_error(
                name,
                format!("{manifest_url} answered HTTP {status}"),
            ));
        }
        let value: Value = serde_json::from_slice(&body).map_err(|e| {
            module_error(
                name,
                format!("the manifest at {manifest_url} is not JSON: {e}"),
            )
        })?;
        let manifest = Manifest::parse(&value).map_err(|problems| {
            let list: Vec<String> = problems.iter().map(ToString::to_string).collect();
            module_error(
                name,
                format!(
                    "the manifest at {manifest_url} is invalid: {}",
                    list.join("; ")
                ),
            )
        })?;
        let endpoint = manifest_url
            .join(&manifest.api.endpoint)
            .map_err(|e| module_error(name, format!("api.endpoint is not a URL: {e}")))?;
        Ok(PluginModule {
            name: name.to_string(),
            manifest_url,
            manifest,
            endpoint,
            key,
            client,
        })
    }

    /// The module's tools, named `NAME.function`.
    pub fn tools(&self) -> Vec<Tool> {
        self.manifest.tools(&self.name)
    }

    /// Whether calls can go out: a `service_api_key` module needs its key.
    pub(crate) fn check_key(&self) -> Result<()> {
        if self.manifest.auth == Auth::ServiceApiKey && self.key.is_none() {
            return Err(Error::new(
                ErrorKind::MissingCredentials,
                format!(
                    "plugin `{}` needs a service API key: run `genai keys set {}` or set {}",
                    self.name,
                    key_name(&self.name),
                    crate::secrets::plugin_key_env(&self.name)
                ),
            ));
        }
        Ok(())
    }

    /// A POST to a URL of this module, with the key when the URL is on the module's origin.
    fn post(&self, url: &Url, body: &Value) -> reqwest::RequestBuilder {
        let mut req = self.client.post(url.clone()).json(body);
        if let Some(key) = &self.key {
            if url.origin() == self.manifest_url.origin() {
                req = req.header("X-API-KEY", key.expose());
            }
        }
        req
    }

    /// Calls one function with the model's arguments (sent as a JSON string, as modules expect).
    pub async fn call(&self, function: &str, arguments: &Value) -> Result<ModuleAnswer> {
        if !self
            .manifest
            .api
            .functions
            .iter()
            .any(|f| f.name == function)
        {
            let names: Vec<&str> = self
                .manifest
                .api
                .functions
                .iter()
                .map(|f| f.name.as_str())
                .collect();
            return Err(module_error(
                &self.name,
                format!("no function `{function}`; it has: {}", names.join(", ")),
            ));
        }
        self.check_key()?;
        let body = json!({"method": function, "params": arguments.to_string()});
        let resp = self.post(&self.endpoint, &body).send().await.map_err(|e| {
            let what = if e.is_timeout() {
                "no answer in time from"
            } else {
                "cannot reach"
            };
            module_error(
                &self.name,
                format!("{what} {}: {}", self.endpoint, root_cause(&e)),
            )
        })?;
        let status = resp.status();
        let bytes = resp.bytes().await.map_err(|e| {
            module_error(
                &self.name,
                format!("the answer broke off: {}", root_cause(&e)),
            )
        })?;
        Ok(answer_of(status, &bytes))
    }

    /// Confirms a pending operation: POSTs its confirmation link. Returns the module's text.
    pub(crate) async fn confirm(&self, link: &str) -> Result<String> {
        let url = self.endpoint.join(link).map_err(|e| {
            module_error(
                &self.name,
                format!("confirmationLink `{link}` is not a URL: {e}"),
            )
        })?;
        self.post_text(&url, &json!({})).await
    }

    /// Sends the user's raw message to a collect link.
    pub(crate) async fn collect(&self, link: &str, text: &str) -> Result<String> {
        let url = self.endpoint.join(link).map_err(|e| {
            module_error(
                &self.name,
                format!("collectResponseLink `{link}` is not a URL: {e}"),
            )
        })?;
        self.post_text(&url, &json!({"text": text})).await
    }

    async fn post_text(&self, url: &Url, body: &Value) -> Result<String> {
        let resp = self.post(url, body).send().await.map_err(|e| {
            module_error(
                &self.name,
                format!("cannot reach {url}: {}", root_cause(&e)),
            )
        })?;
        let status = resp.status();
        let bytes = resp.bytes().await.unwrap_or_default();
        let answer = answer_of(status, &bytes);
        if answer.is_error {
            return Err(module_error(&self.name, answer.text));
        }
        Ok(answer.text)
    }
}

/// Reads a module's answer: `text`; else `message` taken as text; `error` (or a non-2xx
/// status) becomes a tool error.
pub(crate) fn answer_of(status: reqwest::StatusCode, body: &[u8]) -> ModuleAnswer {
    let value: Option<Value> = serde_json::from_slice(body).ok();
    let field = |name: &str| {
        value
            .as_ref()
            .and_then(|v| v.get(name))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let raw = || {
        let text = String::from_utf8_lossy(body);
        let text = text.trim();
        if text.is_empty() {
            "no details".to_string()
        } else {
            text.chars().take(500).collect()
        }
    };
    if let Some(error) = value
        .as_ref()
        .and_then(|v| v.get("error"))
        .filter(|e| !e.is_null())
    {
        let text = match error {
            Value::String(s) => s.clone(),
            other => other
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| other.to_string()),
        };
        return ModuleAnswer {
            text,
            is_error: true,
            ..ModuleAnswer::default()
        };
    }
    if !status.is_success() {
        let detail = field("text")
            .or_else(|| field("message"))
            .unwrap_or_else(raw);
        return ModuleAnswer {
            text: format!("HTTP {status}: {detail}"),
            is_error: true,
            ..ModuleAnswer::default()
        };
    }
    let Some(v) = value.as_ref().filter(|v| v.is_object()) else {
        return ModuleAnswer {
            text: format!("the module's answer is not a JSON object: {}", raw()),
            is_error: true,
            ..ModuleAnswer::default()
        };
    };
    let flag = |name: &str| v.get(name).and_then(Value::as_bool).unwrap_or(false);
    let link = |name: &str| v.get(name).and_then(Value::as_str).map(str::to_string);
    let text = field("text")
        .or_else(|| field("message"))
        .unwrap_or_default();
    ModuleAnswer {
        text,
        is_error: false,
        confirmation_link: flag("askConfirmation")
            .then(|| link("confirmationLink"))
            .flatten(),
        actions: v
            .get("actions")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter(|x| x.get("code").is_some())
                    .cloned()
                    .collect()
            })
            .unwrap_or_default(),
        collect_link: flag("collectResponse")
            .then(|| link("collectResponseLink"))
            .flatten(),
        images: Vec::new(),
        edit: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::StatusCode;

    #[test]
    fn manifest_urls_from_what_users_type() {
        assert_eq!(
            manifest_url("http://localhost:8085").unwrap().as_str(),
            "http://localhost:8085/.well-known/ai-plugin.json"
        );
        assert_eq!(
            manifest_url("http://h/mod/").unwrap().as_str(),
            "http://h/mod/.well-known/ai-plugin.json"
        );
        assert_eq!(
            manifest_url("https://h/x/manifest.json").unwrap().as_str(),
            "https://h/x/manifest.json"
        );
        assert!(manifest_url("ftp://h").is_err());
        assert!(manifest_url("not a url").is_err());
    }

    #[test]
    fn every_answer_field_is_read() {
        let ok = StatusCode::OK;
        let a = answer_of(ok, br#"{"text":"Participation validated."}"#);
        assert_eq!(a.text, "Participation validated.");
        assert!(!a.is_error);
        assert_eq!(
            answer_of(ok, br#"{"message":"Hello World!"}"#).text,
            "Hello World!"
        );
        let a = answer_of(ok, br#"{"error":"Unknown method"}"#);
        assert_eq!((a.text.as_str(), a.is_error), ("Unknown method", true));
        let a = answer_of(StatusCode::INTERNAL_SERVER_ERROR, b"boom");
        assert_eq!(
            (a.text.as_str(), a.is_error),
            ("HTTP 500 Internal Server Error: boom", true)
        );
        let a = answer_of(ok, b"<html>");
        assert!(a.is_error && a.text.contains("not a JSON object"), "{a:?}");
        let a = answer_of(
            ok,
            br#"{"text":"Confirm?","askConfirmation":true,"confirmationLink":"http://m/confirmations/873YDBAI"}"#,
        );
        assert_eq!(
            a.confirmation_link.as_deref(),
            Some("http://m/confirmations/873YDBAI")
        );
        let a = answer_of(
            ok,
            br#"{"text":"x","askConfirmation":false,"confirmationLink":"http://m/c"}"#,
        );
        assert_eq!(a.confirmation_link, None);
        let a = answer_of(
            ok,
            br#"{"text":"Dance: [[ACTION.PLAY_ANIMATION.WAIT]]","actions":[{"code":"[[ACTION.PLAY_ANIMATION.WAIT]]","type":"PLAY_ANIMATION","animationId":"WAIT"},{"type":"no code"}]}"#,
        );
        assert_eq!(a.actions.len(), 1);
        assert_eq!(a.actions[0]["animationId"], "WAIT");
        let a = answer_of(
            ok,
            br#"{"text":"Your opinion?","collectResponse":true,"collectResponseLink":"https://t/collection/INEBD763D"}"#,
        );
        assert_eq!(
            a.collect_link.as_deref(),
            Some("https://t/collection/INEBD763D")
        );
    }
}
