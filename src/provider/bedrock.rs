//! The `bedrock` provider kind: Amazon Bedrock Runtime at
//! `https://bedrock-runtime.{region}.amazonaws.com`, carrying `bedrock-converse` (Converse,
//! ConverseStream) and `claude-messages` (InvokeModel, InvokeModelWithResponseStream).
//!
//! It owns the endpoint, the model id in the path, the authentication (a Bedrock API key as a
//! bearer token, else SigV4 signed afresh for every attempt) and the event-stream framing of
//! streamed answers. It must never build or read the body of a format, except the Claude
//! envelope Bedrock requires (`anthropic_version` in, `model` and `stream` out, the `chunk`
//! events' base64 unwrapped), and never log or show a credential.

use std::time::SystemTime;

use async_trait::async_trait;
use base64::Engine;
use futures::StreamExt;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde_json::Value;
use tokio::sync::OnceCell;

use super::aws::credentials::{self, AwsCredentials, AwsEnv};
use super::aws::{event_stream, sigv4};
use super::http::Http;
use super::{ProviderResponse, ServiceProvider, StreamEvent};
use crate::config::ProviderConfig;
use crate::error::{Error, ErrorKind, Result};
use crate::format::ModelRequest;
use crate::secrets::{KeySource, Secret};

pub const KIND: &str = "bedrock";
/// The SigV4 service name of Bedrock Runtime.
pub const SIGNING_SERVICE: &str = "bedrock";
/// The environment variable of a Bedrock API key (a bearer token that replaces SigV4).
pub const KEY_ENV: &str = "AWS_BEARER_TOKEN_BEDROCK";
/// The model used when a conversation names none.
pub const DEFAULT_MODEL: &str = "anthropic.claude-3-haiku-20240307-v1:0";
/// Converse takes images of at most 3.75 MB each (Converse `Message.content`: "Each image's
/// size, height, and width must be no more than 3.75 MB, 8000 px, and 8000 px").
pub const MAX_IMAGE_BYTES: usize = 3_750_000;
/// The `anthropic_version` Bedrock requires in a Claude InvokeModel body.
pub const ANTHROPIC_VERSION: &str = "bedrock-2023-05-31";
/// The formats this kind sends.
pub const CONVERSE_FORMAT: &str = crate::format::bedrock_converse::FORMAT;
pub const CLAUDE_FORMAT: &str = crate::format::claude_messages::FORMAT;

/// Everything but RFC 3986's unreserved characters is escaped, so a model id or an ARN
/// (`arn:aws:bedrock:us-east-1:123:inference-profile/us.anthropic...`) stays ONE path segment.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// `/model/{model id as one segment}/{action}`.
pub fn model_path(model: &str, action: &str) -> String {
    format!("/model/{}/{action}", utf8_percent_encode(model, SEGMENT))
}

/// How a request is authenticated.
enum Auth {
    Bearer(Secret),
    SigV4(AwsCredentials),
}

pub struct BedrockProvider {
    name: String,
    /// `base_url` from the config, if any (the environment is read per request).
    base_url: Option<String>,
    region: Option<String>,
    profile: Option<String>,
    keys: KeySource,
    bearer: OnceCell<Option<Secret>>,
    headers: Vec<(String, String)>,
    default_model: Option<String>,
    http: Http,
}

impl BedrockProvider {
    /// Builds an instance; nothing is looked up yet (no region or credentials needed to start).
    pub fn from_config(name: &str, c: &ProviderConfig) -> Result<BedrockProvider> {
        let base_url = c
            .base_url
            .as_deref()
            .map(|u| normalize_url(name, u))
            .transpose()?;
        Ok(BedrockProvider {
            name: name.to_string(),
            base_url,
            region: c.region.clone(),
            profile: c.profile.clone(),
            keys: KeySource {
                instance: name.to_string(),
                env_var: Some(c.api_key_env.clone().unwrap_or_else(|| KEY_ENV.to_string())),
                command: c.api_key_cmd.clone(),
                inline: c.api_key.clone(),
            },
            bearer: OnceCell::new(),
            headers: c
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            default_model: Some(
                c.default_model
                    .clone()
                    .unwrap_or_else(|| DEFAULT_MODEL.to_string()),
            ),
            http: Http::from_config(name, c)?,
        })
    }

    fn region(&self, env: &AwsEnv) -> Result<Option<String>> {
        credentials::region(env, self.region.as_deref(), self.profile.as_deref())
    }

    fn no_region(&self) -> Error {
        Error::new(
            ErrorKind::Config,
            format!(
                "no AWS region for provider `{}`: set `region` in its config, or AWS_REGION",
                self.name
            ),
        )
    }

    /// The base URL: the config's, else `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`, else
    /// `AWS_ENDPOINT_URL`, else the region's public endpoint.
    fn base_url(&self, env: &AwsEnv, region: Option<&str>) -> Result<String> {
        if let Some(u) = &self.base_url {
            return Ok(u.clone());
        }
        if let Some(u) = env
            .var("AWS_ENDPOINT_URL_BEDROCK_RUNTIME")
            .or_else(|| env.var("AWS_ENDPOINT_URL"))
        {
            return normalize_url(&self.name, &u);
        }
        let region = region.ok_or_else(|| self.no_region())?;
        Ok(format!("https://bedrock-runtime.{region}.amazonaws.com"))
    }

    /// The Bedrock API key, else SigV4 credentials; with the endpoint and the signing region.
    async fn auth(&self) -> Result<(Auth, String, Option<String>)> {
        let keys = self.keys.clone();
        let bearer = self
            .bearer
            .get_or_try_init(|| async move {
                tokio::task::spawn_blocking(move || keys.resolve())
                    .await
                    .map_err(|e| Error::internal(format!("key lookup failed: {e}")))?
            })
            .await?
            .clone();
        let profile = self.profile.clone();
        let (env, creds) = tokio::task::spawn_blocking(move || {
            let env = AwsEnv::process();
            let creds = match bearer {
                Some(key) => Ok(Auth::Bearer(key)),
                None => credentials::resolve(&env, profile.as_deref()).map(Auth::SigV4),
            };
            (env, creds)
        })
        .await
        .map_err(|e| Error::internal(format!("credential lookup failed: {e}")))?;
        let auth = creds
            .map_err(|e| Error::new(e.kind, format!("provider `{}`: {}", self.name, e.message)))?;
        let region = self.region(&env)?;
        let base = self.base_url(&env, region.as_deref())?;
        if matches!(auth, Auth::SigV4(_)) && region.is_none() {
            return Err(self.no_region());
        }
        Ok((auth, base, region))
    }
}

fn normalize_url(name: &str, url: &str) -> Result<String> {
    let url = url.trim().trim_end_matches('/').to_string();
    reqwest::Url::parse(&url).map_err(|e| {
        Error::new(
            ErrorKind::Config,
            format!("service_providers.{name}.base_url `{url}` is not a URL: {e}"),
        )
    })?;
    Ok(url)
}

/// The InvokeModel body for Claude: the Messages body without `model` and `stream` (the model
/// is in the path, streaming in the action), with `anthropic_version` (Bedrock's
/// `bedrock-2023-05-31` unless the parameter was set) and `anthropic_beta` kept in the body.
pub fn claude_invoke_body(body: &Value) -> Value {
    let mut body = body.clone();
    if let Some(o) = body.as_object_mut() {
        o.remove("model");
        o.remove("stream");
        o.entry("anthropic_version")
            .or_insert_with(|| Value::from(ANTHROPIC_VERSION));
    }
    body
}

/// A `chunk` event of InvokeModelWithResponseStream (`{"bytes": base64}`) as the Claude SSE
/// event it carries: `event` is the JSON's `type`, `data` the JSON.
pub fn claude_chunk(provider: &str, ev: StreamEvent) -> Result<StreamEvent> {
    if ev.event.as_deref() != Some("chunk") {
        return Ok(ev);
    }
    let bad =
        |why: &str| Error::provider(format!("{provider}: a stream chunk is malformed: {why}"));
    let v: Value = serde_json::from_str(&ev.data).map_err(|_| bad("not JSON"))?;
    let b64 = v
        .get("bytes")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("no `bytes`"))?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|_| bad("`bytes` is not base64"))?;
    let data = String::from_utf8(bytes).map_err(|_| bad("`bytes` is not UTF-8"))?;
    let kind = serde_json::from_str::<Value>(&data)
        .ok()
        .and_then(|j| j.get("type").and_then(Value::as_str).map(str::to_string));
    Ok(StreamEvent { event: kind, data })
}

#[async_trait]
impl ServiceProvider for BedrockProvider {
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
        let claude = match request.format {
            CONVERSE_FORMAT => false,
            CLAUDE_FORMAT => true,
            other => {
                return Err(Error::new(
                    ErrorKind::IncompatibleComponents,
                    format!("provider kind bedrock cannot send the {other} format"),
                ))
            }
        };
        let action = match (claude, request.stream) {
            (false, false) => "converse",
            (false, true) => "converse-stream",
            (true, false) => "invoke",
            (true, true) => "invoke-with-response-stream",
        };
        let body = if claude {
            claude_invoke_body(&request.body)
        } else {
            request.body.clone()
        };
        let body = serde_json::to_vec(&body)
            .map_err(|e| Error::internal(format!("cannot encode the request: {e}")))?;
        let (auth, base, region) = self.auth().await?;
        let url = format!("{base}{}", model_path(&request.model, action));
        let accept = if request.stream {
            event_stream::CONTENT_TYPE
        } else {
            "application/json"
        };
        let signed: [(&str, &str); 2] = [("content-type", "application/json"), ("accept", accept)];
        let resp = self
            .http
            .send(&url, |client| {
                let mut req = client.post(&url);
                for (k, v) in signed {
                    req = req.header(k, v);
                }
                match &auth {
                    Auth::Bearer(key) => req = req.bearer_auth(key.expose()),
                    Auth::SigV4(creds) => {
                        let region = region.as_deref().unwrap_or_default();
                        let to_sign = sigv4::SignRequest {
                            method: "POST",
                            url: &url,
                            headers: &signed,
                            body: &body,
                        };
                        let now = SystemTime::now();
                        for (k, v) in sigv4::sign(creds, region, SIGNING_SERVICE, &to_sign, now)? {
                            req = req.header(k, v);
                        }
                    }
                }
                for (k, v) in &self.headers {
                    req = req.header(k, v);
                }
                Ok(req.body(body.clone()))
            })
            .await
            .map_err(|mut e| {
                // A refusal names where the credentials came from (never what they are).
                if e.kind == ErrorKind::MissingCredentials {
                    let source = match &auth {
                        Auth::Bearer(_) => "a Bedrock API key".to_string(),
                        Auth::SigV4(c) => format!("AWS credentials from {}", c.source),
                    };
                    e.message.push_str(&format!(" [used {source}]"));
                }
                e
            })?;
        let is_event_stream = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| {
                t.to_ascii_lowercase()
                    .starts_with(event_stream::CONTENT_TYPE)
            });
        if !(request.stream && is_event_stream) {
            return self.http.response(resp, &url, request.stream).await;
        }
        let events = event_stream::events(&self.name, self.http.bytes(resp, &url));
        if !claude {
            return Ok(ProviderResponse::Events(events));
        }
        let name = self.name.clone();
        Ok(ProviderResponse::Events(Box::pin(
            events.map(move |r| r.and_then(|ev| claude_chunk(&name, ev))),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_ids_and_arns_are_one_path_segment() {
        assert_eq!(
            model_path("anthropic.claude-3-haiku-20240307-v1:0", "converse"),
            "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse"
        );
        assert_eq!(
            model_path(
                "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-haiku-20241022-v1:0",
                "converse-stream"
            ),
            "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-3-5-haiku-20241022-v1%3A0/converse-stream"
        );
    }

    #[test]
    fn claude_bodies_get_the_bedrock_envelope() {
        let b = claude_invoke_body(&serde_json::json!({
            "model": "claude-x", "stream": true, "max_tokens": 10, "messages": []
        }));
        assert_eq!(
            b,
            serde_json::json!({"anthropic_version": "bedrock-2023-05-31", "max_tokens": 10, "messages": []})
        );
        let b = claude_invoke_body(&serde_json::json!({
            "model": "m", "anthropic_version": "bedrock-2099-01-01", "anthropic_beta": ["x"]
        }));
        assert_eq!(
            b,
            serde_json::json!({"anthropic_version": "bedrock-2099-01-01", "anthropic_beta": ["x"]})
        );
    }

    #[test]
    fn claude_chunks_become_the_sse_events_they_carry() {
        let inner =
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#;
        let b64 = base64::engine::general_purpose::STANDARD.encode(inner);
        let ev = StreamEvent {
            event: Some("chunk".into()),
            data: format!(r#"{{"bytes":"{b64}"}}"#),
        };
        let out = claude_chunk("bedrock", ev).unwrap();
        assert_eq!(out.event.as_deref(), Some("content_block_delta"));
        assert_eq!(out.data, inner);
        let bad = StreamEvent {
            event: Some("chunk".into()),
            data: r#"{"bytes":"@@"}"#.into(),
        };
        assert!(claude_chunk("bedrock", bad)
            .unwrap_err()
            .message
            .contains("not base64"));
    }

    #[tokio::test]
    async fn other_formats_are_refused() {
        let p = BedrockProvider::from_config(
            "b",
            &ProviderConfig {
                kind: KIND.into(),
                ..Default::default()
            },
        )
        .unwrap();
        let e = p
            .send_request(&ModelRequest {
                format: "openai-chat",
                model: "m".into(),
                body: Value::Null,
                stream: false,
            })
            .await
            .err()
            .unwrap();
        assert_eq!(e.kind, ErrorKind::IncompatibleComponents);
    }
}
