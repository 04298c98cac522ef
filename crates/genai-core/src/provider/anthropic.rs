//! The hooks of the `anthropic` provider kind (Anthropic's API, or a server speaking it;
//! `{base_url}/v1/messages` with an `x-api-key` header, as its row in the kinds table says):
//! the `anthropic-version` and `anthropic-beta` headers, which the `claude-messages` format
//! passes as the parameters `anthropic_version` and `anthropic_beta`.
//!
//! It must never build or read a request body beyond moving those two parameters out of it
//! into their headers, and never log or format the key.

use std::borrow::Cow;

use serde_json::Value;

use super::kinds::ANTHROPIC;
use super::remote::{Call, Hooks, HttpProvider, Prepared};
use crate::config::HttpSettings;
use crate::error::Result;
use crate::format::claude_messages::{BETA_PARAMETER, VERSION_PARAMETER};
use crate::format::Body;

pub(crate) const KIND: &str = ANTHROPIC.name;
/// The `anthropic-version` header sent when the model configuration sets none.
pub(crate) const DEFAULT_VERSION: &str = "2023-06-01";

/// An instance: without `base_url`, `ANTHROPIC_BASE_URL` or Anthropic's own. A base URL ending
/// in `/v1` is taken as the API root itself.
pub(crate) fn create(name: &str, s: &HttpSettings) -> Result<HttpProvider> {
    HttpProvider::from_settings(&ANTHROPIC, name, s, VersionHeaders)
}

/// The parameters that travel as headers.
struct VersionHeaders;

impl Hooks for VersionHeaders {
    fn prepare<'a>(&self, call: &Call<'a>) -> Result<Prepared<'a>> {
        let (body, version, beta) = split_headers(&call.request.body);
        // The parameter wins over a configured header, which wins over the default.
        let version = version.or_else(|| {
            (!call.endpoint.has_header("anthropic-version")).then(|| DEFAULT_VERSION.to_string())
        });
        let headers = [("anthropic-version", version), ("anthropic-beta", beta)]
            .into_iter()
            .filter_map(|(k, v)| Some((k, v?)))
            .collect();
        Ok(Prepared {
            url: call.url(&call.endpoint.base_url)?,
            body: Cow::Owned(Body::Tree(body)),
            headers,
        })
    }
}

/// Splits the header parameters off a `claude-messages` body: the body without them, the
/// `anthropic-version` value and the `anthropic-beta` value (comma-separated).
pub(crate) fn split_headers(body: &Value) -> (Value, Option<String>, Option<String>) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::provider::remote::testing::first_request;
    use crate::provider::ServiceProvider;

    fn provider(base_url: Option<&str>) -> HttpProvider {
        let s = HttpSettings {
            base_url: base_url.map(str::to_string),
            ..Default::default()
        };
        create("anthropic", &s).unwrap()
    }

    fn endpoint(p: &HttpProvider) -> String {
        let format = crate::format::claude_messages::FORMAT;
        first_request(p, format, "m", false, json!({}))
            .unwrap()
            .url()
            .to_string()
    }

    #[test]
    fn endpoint_and_defaults() {
        assert_eq!(
            endpoint(&provider(Some("https://api.anthropic.com/"))),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            endpoint(&provider(Some("http://127.0.0.1:9/v1"))),
            "http://127.0.0.1:9/v1/messages"
        );
        let p = provider(Some("http://proxy.local/anthropic"));
        assert_eq!(endpoint(&p), "http://proxy.local/anthropic/v1/messages");
        assert_eq!(p.default_model(), Some("claude-sonnet-4-5"));
        assert_eq!(p.max_image_bytes(), Some(3_932_160));
        let bad = HttpSettings {
            base_url: Some("not a url".into()),
            ..Default::default()
        };
        assert!(create("x", &bad).is_err());
    }

    #[test]
    fn the_key_and_version_travel_as_headers() {
        let p = provider(Some("http://127.0.0.1:9"));
        let format = crate::format::claude_messages::FORMAT;
        let body = json!({"model": "m", "anthropic_beta": ["a-1"], "stream": true});
        let r = first_request(&p, format, "m", true, body).unwrap();
        let h = r.headers();
        assert_eq!(h["x-api-key"], "test-key");
        assert_eq!(h["anthropic-version"], DEFAULT_VERSION);
        assert_eq!(h["anthropic-beta"], "a-1");
        assert_eq!(h["accept"], "text/event-stream");
        assert!(h.get("authorization").is_none());
        let sent: Value = serde_json::from_slice(r.body().unwrap().as_bytes().unwrap()).unwrap();
        assert_eq!(sent, json!({"model": "m", "stream": true}));

        // A configured version header stands when the parameter is not set.
        let s = HttpSettings {
            base_url: Some("http://127.0.0.1:9".into()),
            headers: [("Anthropic-Version".to_string(), "2099-01-01".to_string())].into(),
            ..Default::default()
        };
        let p = create("a", &s).unwrap();
        let r = first_request(&p, format, "m", false, json!({})).unwrap();
        assert_eq!(r.headers()["anthropic-version"], "2099-01-01");
        assert_eq!(r.headers().get_all("anthropic-version").iter().count(), 1);
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
