//! Tests of the HTTP kinds: keys sent only where they belong, headers, URLs, the formats a kind
//! sends, and bad base URLs.

use serde_json::json;

use super::testing::first_request;
use super::*;
use crate::provider::kinds::{GEMINI, OPENAI};

fn plain(kind: &'static HttpKind, base_url: Option<&str>) -> HttpProvider {
    let s = HttpSettings {
        base_url: base_url.map(str::to_string),
        api_key_env: Some("GENAI_TEST_NO_SUCH_VAR".into()),
        ..Default::default()
    };
    HttpProvider::from_settings(kind, "p", &s, Plain).unwrap()
}

fn url(p: &HttpProvider, format: &'static str, model: &str, stream: bool) -> Result<String> {
    Ok(first_request(p, format, model, stream, json!({}))?
        .url()
        .to_string())
}

#[test]
fn openai_sends_a_bearer_key_to_chat_completions() {
    let p = plain(&OPENAI, Some("https://api.openai.com/v1/"));
    let r = first_request(&p, "openai-chat", "m", true, json!({"model": "m"})).unwrap();
    assert_eq!(
        r.url().as_str(),
        "https://api.openai.com/v1/chat/completions"
    );
    assert_eq!(r.headers()["authorization"], "Bearer test-key");
    assert_eq!(r.headers()["accept"], "text/event-stream");
    assert_eq!(r.headers()["content-type"], "application/json");
    assert_eq!(p.default_model(), Some("gpt-4o-mini"));
    assert_eq!(p.max_image_bytes(), Some(20_000_000));
    assert!(!p.endpoint().other_server());

    // Another server speaking the API: no key needed, no image limit known.
    let p = plain(&OPENAI, Some("http://127.0.0.1:9/v1"));
    assert!(p.endpoint().other_server());
    assert_eq!(p.max_image_bytes(), None);
    // OpenAI's default model and prices are not another server's.
    assert_eq!(p.default_model(), None);
    assert!(!p.vendor_prices());
    let r = first_request(&p, "openai-chat", "m", false, json!({})).unwrap();
    assert_eq!(r.url().as_str(), "http://127.0.0.1:9/v1/chat/completions");
    assert!(r.headers().get("accept").is_none());
}

#[test]
fn a_kinds_well_known_key_goes_only_where_its_variables_point() {
    use crate::provider::kinds::HTTP_KINDS;
    let other = HttpSettings {
        base_url: Some("http://127.0.0.1:9/v1".into()),
        ..Default::default()
    };
    for kind in HTTP_KINDS.iter().filter(|k| k.key_env.is_some()) {
        let name = kind.name;
        let own = HttpSettings::default();
        assert_eq!(key_env(kind, &own).as_deref(), kind.key_env, "{name}");
        assert_eq!(key_env(kind, &other), None, "{name}");
        let named = HttpSettings {
            api_key_env: Some("MY_KEY".into()),
            ..other.clone()
        };
        assert_eq!(key_env(kind, &named).as_deref(), Some("MY_KEY"), "{name}");
        for suffix in kind.own_hosts {
            let at = |url: String| HttpSettings {
                base_url: Some(url),
                ..Default::default()
            };
            let own = at(format!("https://my-resource{suffix}/"));
            assert_eq!(key_env(kind, &own).as_deref(), kind.key_env, "{name}");
            // Only over https, and only a host that ends with the suffix.
            let plain = at(format!("http://my-resource{suffix}/"));
            assert_eq!(key_env(kind, &plain), None, "{name}");
            let lookalike = at(format!("https://my-resource{suffix}.example.com/"));
            assert_eq!(key_env(kind, &lookalike), None, "{name}");
        }
        if let Some(default) = kind.default_base_url {
            let at_default = HttpSettings {
                base_url: Some(format!("{}/", default.to_uppercase())),
                ..Default::default()
            };
            assert_eq!(
                key_env(kind, &at_default).as_deref(),
                kind.key_env,
                "{name}"
            );
        }
    }
}

#[test]
fn configured_headers_are_sent_and_the_kinds_own_win() {
    let s = HttpSettings {
        base_url: Some("http://127.0.0.1:9/v1".into()),
        headers: [("X-Team".to_string(), "blue".to_string())].into(),
        ..Default::default()
    };
    let p = HttpProvider::from_settings(&OPENAI, "p", &s, Plain).unwrap();
    let r = first_request(&p, "openai-chat", "m", false, json!({})).unwrap();
    assert_eq!(r.headers()["x-team"], "blue");
}

#[test]
fn gemini_urls_name_the_model_and_never_the_key() {
    let p = plain(&GEMINI, Some("https://generativelanguage.googleapis.com/"));
    assert_eq!(
        url(&p, "gemini", "gemini-2.0-flash", false).unwrap(),
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:generateContent"
    );
    assert_eq!(
        url(&p, "gemini", "models/gemini-2.0-flash", true).unwrap(),
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse"
    );
    let v1 = plain(&GEMINI, Some("http://127.0.0.1:9/v1"));
    assert_eq!(
        url(&v1, "gemini", "m", false).unwrap(),
        "http://127.0.0.1:9/v1/models/m:generateContent"
    );
    assert!(url(&p, "gemini", "a/b", false).is_err());
    assert!(url(&p, "gemini", "m?key=x", false).is_err());
    let r = first_request(&p, "gemini", "m", false, json!({})).unwrap();
    assert_eq!(r.headers()["x-goog-api-key"], "test-key");
    assert!(r.headers().get("authorization").is_none());
    assert!(!r.url().as_str().contains("test-key"));
    assert_eq!(p.default_model(), Some("gemini-2.5-flash"));
    assert_eq!(p.max_image_bytes(), Some(15_000_000));
}

#[test]
fn a_format_the_kind_does_not_send_is_refused_once_for_every_kind() {
    let e = OPENAI.route("claude-messages").unwrap_err();
    assert_eq!(e.kind, ErrorKind::IncompatibleComponents);
    assert_eq!(
        e.message,
        "provider kind openai cannot send the claude-messages format; it sends openai-chat"
    );
}

#[test]
fn every_kind_is_registered_in_order_with_its_formats() {
    let kinds = crate::provider::build::registrations();
    let names: Vec<&str> = kinds.iter().map(|k| k.name).collect();
    assert_eq!(names, crate::config::ProviderConfig::KINDS);
    let ollama = &kinds[2];
    assert_eq!(ollama.formats, ["ollama-chat", "openai-chat"]);
    assert_eq!(ollama.default_format, "ollama-chat");
    let bedrock = &kinds[6];
    assert_eq!(bedrock.formats, ["bedrock-converse", "claude-messages"]);
    assert_eq!(kinds[7].formats, ["openai-chat"]);
}

#[test]
fn bad_base_urls_are_config_errors() {
    let s = HttpSettings {
        base_url: Some("not a url".into()),
        ..Default::default()
    };
    let e = HttpProvider::from_settings(&OPENAI, "w", &s, Plain)
        .err()
        .unwrap();
    assert_eq!(e.kind, ErrorKind::Config);
    assert!(
        e.message
            .contains("service_providers.w.base_url `not a url` is not a URL"),
        "{}",
        e.message
    );
}
