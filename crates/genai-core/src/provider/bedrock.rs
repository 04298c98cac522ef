//! The hooks of the `bedrock` provider kind: Amazon Bedrock Runtime at
//! `https://bedrock-runtime.{region}.amazonaws.com`, carrying `bedrock-converse` (Converse,
//! ConverseStream) and `claude-messages` (InvokeModel, InvokeModelWithResponseStream).
//!
//! Its row in the kinds table gives the paths and defaults. It owns the endpoint, the
//! authentication (a Bedrock API key as a
//! bearer token, else SigV4 signed afresh for every attempt) and the event-stream framing of
//! streamed answers. It must never build or read the body of a format, except the Claude
//! envelope Bedrock requires (`anthropic_version` in, `model` and `stream` out, the `chunk`
//! events' base64 unwrapped), and never log or show a credential.

use std::time::SystemTime;

use async_trait::async_trait;
use base64::Engine;
use futures::StreamExt;
use serde_json::Value;

use super::aws::credentials::{self, AwsCredentials, AwsEnv};
use super::aws::{event_stream, sigv4};
use super::kinds::BEDROCK;
use super::remote::{self, Call, Endpoint, Hooks, HttpProvider};
use super::{ProviderResponse, StreamEvent};
use crate::config::BedrockSettings;
use crate::error::{Error, ErrorKind, Result};
use crate::secrets::Secret;

pub(crate) const KIND: &str = BEDROCK.name;
/// The SigV4 service name of Bedrock Runtime.
pub(crate) const SIGNING_SERVICE: &str = "bedrock";
/// The `anthropic_version` Bedrock requires in a Claude InvokeModel body.
pub(crate) const ANTHROPIC_VERSION: &str = "bedrock-2023-05-31";
/// The format sent with InvokeModel; the other, `bedrock-converse`, goes to Converse.
pub(crate) const CLAUDE_FORMAT: &str = crate::format::claude_messages::FORMAT;

/// How a request is authenticated.
enum Auth {
    Bearer(Secret),
    SigV4(AwsCredentials),
}

/// The region and profile of an instance; its endpoint, key and headers are the shared ones.
struct Signing {
    region: Option<String>,
    profile: Option<String>,
}

/// An instance; nothing is looked up yet (no region or credentials needed to start).
pub(crate) fn create(name: &str, s: &BedrockSettings) -> Result<HttpProvider> {
    // Only a configured base URL is known now; the environment is read per request.
    let base_url = remote::base_url(&BEDROCK, name, &s.http)?.unwrap_or_default();
    let hooks = Signing {
        region: s.region.clone(),
        profile: s.profile.clone(),
    };
    Ok(HttpProvider::new(
        Endpoint::new(&BEDROCK, name, &s.http, base_url)?,
        hooks,
    ))
}

impl Signing {
    fn region(&self, env: &AwsEnv) -> Result<Option<String>> {
        credentials::region(env, self.region.as_deref(), self.profile.as_deref())
    }

    fn no_region(&self, e: &Endpoint) -> Error {
        Error::new(
            ErrorKind::Config,
            format!(
                "no AWS region for provider `{}`: set `region` in its config, or AWS_REGION",
                e.name
            ),
        )
    }

    /// The base URL: the config's, else `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`, else
    /// `AWS_ENDPOINT_URL`, else the region's public endpoint.
    fn base_url(&self, e: &Endpoint, env: &AwsEnv, region: Option<&str>) -> Result<String> {
        if !e.base_url.is_empty() {
            return Ok(e.base_url.clone());
        }
        if let Some(u) = env
            .var("AWS_ENDPOINT_URL_BEDROCK_RUNTIME")
            .or_else(|| env.var("AWS_ENDPOINT_URL"))
        {
            return remote::checked_url(&e.name, &u);
        }
        let region = region.ok_or_else(|| self.no_region(e))?;
        Ok(format!("https://bedrock-runtime.{region}.amazonaws.com"))
    }

    /// The Bedrock API key, else SigV4 credentials; with the endpoint and the signing region.
    async fn auth(&self, e: &Endpoint) -> Result<(Auth, String, Option<String>)> {
        let bearer = e.key.get().await?.cloned();
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
        let auth = creds.map_err(|err| {
            Error::new(err.kind, format!("provider `{}`: {}", e.name, err.message))
        })?;
        let region = self.region(&env)?;
        let base = self.base_url(e, &env, region.as_deref())?;
        if matches!(auth, Auth::SigV4(_)) && region.is_none() {
            return Err(self.no_region(e));
        }
        Ok((auth, base, region))
    }
}

/// The InvokeModel body for Claude: the Messages body without `model` and `stream` (the model
/// is in the path, streaming in the action), with `anthropic_version` (Bedrock's
/// `bedrock-2023-05-31` unless the parameter was set) and `anthropic_beta` kept in the body.
pub(crate) fn claude_invoke_body(body: &Value) -> Value {
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
pub(crate) fn claude_chunk(provider: &str, ev: StreamEvent) -> Result<StreamEvent> {
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
impl Hooks for Signing {
    /// A Bedrock API key, else AWS credentials as a request would find them.
    fn key_status(&self, e: &Endpoint) -> super::KeyStatus {
        let found = e.key.source().has_key()
            || credentials::resolve(&AwsEnv::process(), self.profile.as_deref()).is_ok();
        if found {
            super::KeyStatus::Found
        } else {
            super::KeyStatus::Missing
        }
    }

    /// Signs every attempt afresh (SigV4 dates it), and unwraps event streams.
    async fn send(&self, call: &Call<'_>) -> Result<ProviderResponse> {
        let (e, route, request) = (call.endpoint, call.route, call.request);
        let claude = route.format == CLAUDE_FORMAT;
        let body = if claude {
            serde_json::to_vec(&claude_invoke_body(request.body()))
        } else {
            serde_json::to_vec(request.body())
        }
        .map_err(|e| Error::internal(format!("cannot encode the request: {e}")))?;
        let (auth, base, region) = self.auth(e).await?;
        let url = call.url(&base)?;
        let accept = if request.stream {
            route.stream_accept
        } else {
            "application/json"
        };
        let signed: [(&str, &str); 2] = [("content-type", "application/json"), ("accept", accept)];
        let resp = e
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
                for (k, v) in &e.headers {
                    req = req.header(k, v);
                }
                Ok(req.body(body.clone()))
            })
            .await
            .map_err(|mut err| {
                // A refusal names where the credentials came from (never what they are).
                if err.kind == ErrorKind::MissingCredentials {
                    let source = match &auth {
                        Auth::Bearer(_) => "a Bedrock API key".to_string(),
                        Auth::SigV4(c) => format!("AWS credentials from {}", c.source),
                    };
                    err.message.push_str(&format!(" [used {source}]"));
                }
                err
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
            return e.http.response(resp, &url, request.stream).await;
        }
        let events = event_stream::events(&e.name, e.http.bytes(resp, &url));
        if !claude {
            return Ok(ProviderResponse::Events(events));
        }
        let name = e.name.clone();
        Ok(ProviderResponse::Events(Box::pin(
            events.map(move |r| r.and_then(|ev| claude_chunk(&name, ev))),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::ModelRequest;
    use crate::provider::ServiceProvider;

    /// The path of a request, with the model id in it.
    fn model_path(model: &str, stream: bool) -> String {
        let p = create("b", &BedrockSettings::default()).unwrap();
        let format = crate::format::bedrock_converse::FORMAT;
        let request = ModelRequest {
            format,
            model: model.into(),
            body: crate::format::Body::Tree(Value::Null),
            stream,
        };
        let route = BEDROCK.route(format).unwrap();
        p.endpoint().url("", route, &request).unwrap()
    }

    #[test]
    fn model_ids_and_arns_are_one_path_segment() {
        assert_eq!(
            model_path("anthropic.claude-3-haiku-20240307-v1:0", false),
            "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse"
        );
        assert_eq!(
            model_path(
                "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-haiku-20241022-v1:0",
                true
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
        let p = create("b", &BedrockSettings::default()).unwrap();
        let e = p
            .send_request(&ModelRequest {
                format: "openai-chat",
                model: "m".into(),
                body: crate::format::Body::Tree(Value::Null),
                stream: false,
            })
            .await
            .err()
            .unwrap();
        assert_eq!(e.kind, ErrorKind::IncompatibleComponents);
    }
}
