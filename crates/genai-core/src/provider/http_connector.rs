//! The hooks of the `http` provider kind: a generic connector to any HTTP model endpoint, after OpenSearch
//! ML Commons' connector blueprints (an action's `method`, `url`, `headers` and `credential`).
//! It sends what the `http-template` format rendered.
//!
//! It owns the endpoint URL (`base_url`, the whole URL), the method, the headers, the named
//! credentials and how a stream is framed. It fills `${credential.NAME}` (URL, headers, and the
//! markers the format left in the body's strings) and `${parameters.model}` (URL, headers). It
//! must never build or read a body beyond that, and never put a credential in a log line or an
//! error: errors show the URL with its placeholders, and any credential value an answer echoes
//! back is masked.

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;
use serde_json::Value;

use super::kinds::HTTP;
use super::remote::{Call, Endpoint, Hooks, HttpProvider};
use super::ProviderResponse;
use crate::config::{ConnectorSettings, MASK};
use crate::error::{Error, ErrorKind, Result};
use crate::format::http_template::CREDENTIAL_MARK;
use crate::secrets::{KeySource, Secret};

/// How a streamed answer is cut into events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// From the Content-Type (`text/event-stream` or an NDJSON type).
    Auto,
    Sse,
    Ndjson,
}

/// What the connector adds to an endpoint, whose base URL is the whole URL with its
/// placeholders (shown in errors as is).
struct Template {
    method: reqwest::Method,
    credentials: BTreeMap<String, KeySource>,
    resolved: Mutex<BTreeMap<String, Secret>>,
    framing: Framing,
}

/// The `${...}` placeholders of a URL or header value.
fn placeholders(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        match rest[start..].find('}') {
            Some(end) => {
                out.push(&rest[start + 2..start + end]);
                rest = &rest[start + end + 1..];
            }
            None => {
                out.push(&rest[start + 2..]);
                break;
            }
        }
    }
    out
}

/// An instance; its URL, headers and credentials are checked now.
pub(crate) fn create(name: &str, c: &ConnectorSettings) -> Result<HttpProvider> {
    let config_error = |msg: String| Error::new(ErrorKind::Config, msg);
    let url = c
        .http
        .base_url
        .as_deref()
        .map(str::trim)
        .filter(|u| !u.is_empty());
    let url = url
        .ok_or_else(|| {
            config_error(format!(
                "service_providers.{name}: the http kind needs `base_url`, the endpoint's whole URL"
            ))
        })?
        .to_string();
    let method_text = c.method.as_deref().unwrap_or("POST").trim().to_uppercase();
    let method = match method_text.as_str() {
        "POST" | "PUT" | "PATCH" | "GET" => reqwest::Method::from_bytes(method_text.as_bytes())
            .map_err(|e| config_error(format!("service_providers.{name}.method: {e}")))?,
        other => {
            return Err(config_error(format!(
                "service_providers.{name}.method `{other}`: use POST, PUT, PATCH or GET"
            )))
        }
    };
    let framing = match c.stream_framing.as_deref().map(str::trim) {
        None | Some("") | Some("auto") => Framing::Auto,
        Some("sse") => Framing::Sse,
        Some("ndjson") => Framing::Ndjson,
        Some(other) => {
            return Err(config_error(format!(
                "service_providers.{name}.stream_framing `{other}`: use sse or ndjson"
            )))
        }
    };
    let e = Endpoint::new(&HTTP, name, &c.http, url)?;
    let mut credentials = BTreeMap::new();
    credentials.insert("api_key".to_string(), e.key.source().clone());
    for (cred, source) in &c.credentials {
        credentials.insert(
            cred.clone(),
            KeySource {
                instance: format!("{name}.{cred}"),
                env_var: source.env.clone(),
                command: source.cmd.clone(),
                inline: source.value.clone(),
            },
        );
    }
    let url = &e.base_url;
    for (place, text) in std::iter::once(("base_url".to_string(), url.as_str())).chain(
        e.headers
            .iter()
            .map(|(k, v)| (format!("headers.{k}"), v.as_str())),
    ) {
        for p in placeholders(text) {
            let known = p == "parameters.model"
                || p.strip_prefix("credential.")
                    .is_some_and(|n| credentials.contains_key(n));
            if !known {
                return Err(config_error(format!(
                    "service_providers.{name}.{place}: unknown placeholder `${{{p}}}`; \
                     use ${{parameters.model}} or ${{credential.NAME}} with NAME one of: {}",
                    credentials.keys().cloned().collect::<Vec<_>>().join(", ")
                )));
            }
        }
    }
    let probe = url.replace("${", "x").replace('}', "x");
    reqwest::Url::parse(&probe).map_err(|e| {
        config_error(format!(
            "service_providers.{name}.base_url `{url}` is not a URL: {e}"
        ))
    })?;
    let hooks = Template {
        method,
        credentials,
        resolved: Mutex::new(BTreeMap::new()),
        framing,
    };
    Ok(HttpProvider::new(e, hooks))
}

impl Template {
    /// Looks up the named credentials of instance `provider` (off the async threads, once
    /// each).
    async fn resolve(&self, provider: &str, names: &[String]) -> Result<BTreeMap<String, Secret>> {
        let mut out = BTreeMap::new();
        for name in names {
            let cached = self
                .resolved
                .lock()
                .map_err(|_| Error::internal("credential cache poisoned"))?
                .get(name)
                .cloned();
            let secret = match cached {
                Some(s) => s,
                None => {
                    let source = self.credentials.get(name).cloned().ok_or_else(|| {
                        Error::invalid_params(format!(
                            "${{credential.{name}}}: provider `{}` has no credential `{name}`; \
                             configured: {}",
                            provider,
                            self.credentials
                                .keys()
                                .cloned()
                                .collect::<Vec<_>>()
                                .join(", ")
                        ))
                    })?;
                    let env = source.env_var.clone();
                    let found = tokio::task::spawn_blocking(move || source.resolve())
                        .await
                        .map_err(|e| Error::internal(format!("credential lookup failed: {e}")))??;
                    let secret = found.ok_or_else(|| {
                        Error::new(
                            ErrorKind::MissingCredentials,
                            format!(
                                "no value for credential `{name}` of provider `{}`: {}run \
                                 `genai keys set {}`",
                                provider,
                                env.map(|e| format!("set {e}, or ")).unwrap_or_default(),
                                if name == "api_key" {
                                    provider.to_string()
                                } else {
                                    format!("{}.{name}", provider)
                                }
                            ),
                        )
                    })?;
                    self.resolved
                        .lock()
                        .map_err(|_| Error::internal("credential cache poisoned"))?
                        .insert(name.clone(), secret.clone());
                    secret
                }
            };
            out.insert(name.clone(), secret);
        }
        Ok(out)
    }

    /// Masks every credential value found in an error message.
    fn mask(&self, mut e: Error) -> Error {
        if let Ok(resolved) = self.resolved.lock() {
            for secret in resolved.values() {
                if secret.expose().len() >= 4 {
                    e.message = e.message.replace(secret.expose(), MASK);
                }
            }
        }
        e
    }
}

/// Fills `${credential.NAME}` and `${parameters.model}` in a URL or header value.
fn fill(text: &str, model: &str, secrets: &BTreeMap<String, Secret>) -> String {
    let mut out = text.replace("${parameters.model}", model);
    for (name, secret) in secrets {
        out = out.replace(&format!("${{credential.{name}}}"), secret.expose());
    }
    out
}

/// The credential names a body's markers use.
fn body_credentials(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => {
            let mut parts = s.split(CREDENTIAL_MARK).skip(1).step_by(2);
            for part in parts.by_ref() {
                if let Some(name) = part.strip_prefix("credential:") {
                    if !out.iter().any(|n| n == name) {
                        out.push(name.to_string());
                    }
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| body_credentials(i, out)),
        Value::Object(map) => map.values().for_each(|i| body_credentials(i, out)),
        _ => {}
    }
}

/// Replaces the body's credential markers with their values.
fn fill_body(v: &mut Value, secrets: &BTreeMap<String, Secret>) {
    match v {
        Value::String(s) if s.contains(CREDENTIAL_MARK) => {
            for (name, secret) in secrets {
                *s = s.replace(
                    &format!("{CREDENTIAL_MARK}credential:{name}{CREDENTIAL_MARK}"),
                    secret.expose(),
                );
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| fill_body(i, secrets)),
        Value::Object(map) => map.values_mut().for_each(|i| fill_body(i, secrets)),
        _ => {}
    }
}

#[async_trait]
impl Hooks for Template {
    /// Fills the templates, sends with the configured method, and frames a stream as told.
    async fn send(&self, call: &Call<'_>) -> Result<ProviderResponse> {
        let (e, request) = (call.endpoint, call.request);
        let mut names: Vec<String> = Vec::new();
        for text in
            std::iter::once(e.base_url.as_str()).chain(e.headers.iter().map(|h| h.1.as_str()))
        {
            for p in placeholders(text) {
                if let Some(n) = p.strip_prefix("credential.") {
                    if !names.iter().any(|x| x == n) {
                        names.push(n.to_string());
                    }
                }
            }
        }
        body_credentials(request.body(), &mut names);
        let secrets = self.resolve(&e.name, &names).await?;
        let shown_url = e.base_url.replace("${parameters.model}", &request.model);
        let url = fill(&e.base_url, &request.model, &secrets);
        let mut body = request.body().clone();
        fill_body(&mut body, &secrets);
        let body = serde_json::to_vec(&body)
            .map_err(|e| Error::internal(format!("cannot encode the request body: {e}")))?;
        // A Content-Type among the configured headers wins over application/json.
        let typed = e
            .headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-type"));
        let resp = e
            .http
            .send(&shown_url, |client| {
                let mut req = client.request(self.method.clone(), &url);
                if self.method != reqwest::Method::GET {
                    req = req.body(body.clone());
                    if !typed {
                        req = req.header(reqwest::header::CONTENT_TYPE, "application/json");
                    }
                }
                if request.stream {
                    req = req.header(reqwest::header::ACCEPT, call.route.stream_accept);
                }
                for (k, v) in &e.headers {
                    req = req.header(k, fill(v, &request.model, &secrets));
                }
                Ok(req)
            })
            .await
            .map_err(|err| self.mask(err))?;
        if !request.stream {
            return e.http.response(resp, &shown_url, false).await;
        }
        match self.framing {
            Framing::Auto => e.http.response(resp, &shown_url, true).await,
            Framing::Sse => Ok(ProviderResponse::Events(e.http.sse(resp, &shown_url))),
            Framing::Ndjson => Ok(ProviderResponse::Events(e.http.ndjson(resp, &shown_url))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(url: &str) -> ConnectorSettings {
        let mut c = ConnectorSettings::default();
        c.http.base_url = Some(url.into());
        c
    }

    #[test]
    fn config_is_checked_when_the_instance_is_made() {
        let e = create("h", &ConnectorSettings::default()).err().unwrap();
        assert!(e.message.contains("needs `base_url`"), "{}", e.message);
        let mut c = config("http://x/${credential.nope}");
        let e = create("h", &c).err().unwrap();
        assert!(
            e.message
                .contains("unknown placeholder `${credential.nope}`"),
            "{}",
            e.message
        );
        c.http.base_url = Some("http://x/m/${parameters.model}?k=${credential.api_key}".into());
        c.method = Some("DELETE".into());
        let e = create("h", &c).err().unwrap();
        assert!(e.message.contains("use POST"), "{}", e.message);
        c.method = Some("put".into());
        assert!(create("h", &c).is_ok());
    }

    #[test]
    fn credentials_fill_urls_headers_and_body_markers() {
        let secrets: BTreeMap<String, Secret> = [("k".to_string(), Secret::new("s3cret"))]
            .into_iter()
            .collect();
        assert_eq!(
            fill(
                "http://x/${parameters.model}?key=${credential.k}",
                "m1",
                &secrets
            ),
            "http://x/m1?key=s3cret"
        );
        let mut body = json!({"a": ["Bearer \u{1}credential:k\u{1}"], "b": "plain"});
        let mut names = Vec::new();
        body_credentials(&body, &mut names);
        assert_eq!(names, ["k"]);
        fill_body(&mut body, &secrets);
        assert_eq!(body, json!({"a": ["Bearer s3cret"], "b": "plain"}));
    }
}
