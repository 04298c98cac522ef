//! The errors of `genai serve`'s Anthropic Messages API, in Anthropic's shape: requests refused
//! before anything goes upstream (401, malformed JSON, a missing `max_tokens`, an unknown
//! model, a server tool, an unknown field, a role it does not take), an upstream's 429 in each
//! API's shape without a retry, and Claude's overload as a 529 `overloaded_error`.

use serde_json::{json, Value};

use crate::gateway_anthropic::{error_type, messages, serve_anthropic, serve_openai, WAIT};
use crate::support::fake_anthropic::{self, FakeAnthropic};
use crate::support::fake_openai::{Behavior, FakeOpenAi, Mode};

#[tokio::test]
async fn bad_requests_get_anthropic_errors_and_nothing_goes_upstream() {
    let fake = FakeOpenAi::start(0, Behavior::text("hi")).unwrap();
    let served = serve_openai(&fake);
    let url = format!("{}/v1/messages?beta=true", served.http_base());
    let client = reqwest::Client::builder().timeout(WAIT).build().unwrap();
    let r = client.post(&url).json(&json!({})).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 401);
    assert_eq!(error_type(&r.json().await.unwrap()), "authentication_error");
    let r = client
        .post(&url)
        .header("x-api-key", &served.token)
        .header("content-type", "application/json")
        .body("{\"model\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(error_type(&v), "invalid_request_error");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not valid JSON"),
        "{v}"
    );

    let user = json!([{"role": "user", "content": "hi"}]);
    let cases = [
        (
            json!({"model": "openai:x", "messages": user}),
            400,
            "invalid_request_error",
            "max_tokens",
        ),
        (
            json!({"model": "nosuch", "max_tokens": 10, "messages": user}),
            404,
            "not_found_error",
            "nosuch",
        ),
        (
            json!({"model": "openai:x", "max_tokens": 10, "messages": user,
                   "tools": [{"type": "web_search_20250305", "name": "web_search", "max_uses": 2}]}),
            400,
            "invalid_request_error",
            "server tools",
        ),
        (
            json!({"model": "openai:x", "max_tokens": 10, "messages": user, "mcp_servers": []}),
            400,
            "invalid_request_error",
            "mcp_servers",
        ),
        (
            json!({"model": "openai:x", "max_tokens": 10, "messages": user, "inference_geo": "us"}),
            400,
            "invalid_request_error",
            "inference_geo",
        ),
        (
            json!({"model": "openai:x", "max_tokens": 10, "messages": user, "no_such_setting": 1}),
            400,
            "invalid_request_error",
            "no_such_setting",
        ),
        (
            json!({"model": "openai:x", "max_tokens": 10, "messages": [{"role": "developer", "content": "x"}]}),
            400,
            "invalid_request_error",
            "messages[0].role",
        ),
        (
            json!({"model": "openai:x", "max_tokens": 10, "messages": [{"role": "system", "content": "x"}]}),
            400,
            "invalid_request_error",
            "messages: must hold a user or assistant message",
        ),
    ];
    for (body, status, kind, mentions) in cases {
        let (got, v) = messages(&served, &body).await;
        assert_eq!(got, status, "{body} -> {v}");
        assert_eq!(error_type(&v), kind, "{body} -> {v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains(mentions), "{body} -> {v}");
    }
    assert!(
        fake.requests().is_empty(),
        "a refused request went upstream"
    );
}

#[tokio::test]
async fn an_upstream_rate_limit_is_a_429_in_each_apis_shape() {
    let limited = || {
        Behavior::mode(Mode::Error {
            status: 429,
            message: "slow down".into(),
            code: "rate_limit_exceeded".into(),
        })
    };
    let fake = FakeOpenAi::start(0, limited()).unwrap();
    let served = serve_openai(&fake);
    let user = json!([{"role": "user", "content": "hi"}]);
    for stream in [false, true] {
        let (status, v) = messages(
            &served,
            &json!({"model": "openai:x", "max_tokens": 10, "messages": user, "stream": stream}),
        )
        .await;
        assert_eq!(status, 429, "{v}");
        assert_eq!(error_type(&v), "rate_limit_error");
    }
    let r = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", served.http_base()))
        .bearer_auth(&served.token)
        .json(&json!({"model": "openai:x", "messages": user}))
        .timeout(WAIT)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 429);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "rate_limit_exceeded", "{v}");
    assert_eq!(fake.requests().len(), 3, "one request each, no retry");
}

#[tokio::test]
async fn claudes_overload_is_a_529_overloaded_error() {
    let fake = FakeAnthropic::start(fake_anthropic::Behavior::mode(
        fake_anthropic::Mode::Error {
            status: 529,
            error_type: "overloaded_error".into(),
            message: "Overloaded".into(),
        },
    ))
    .unwrap();
    let served = serve_anthropic(&fake);
    let (status, v) = messages(
        &served,
        &json!({"model": "anthropic:claude-fake", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(status, 529, "{v}");
    assert_eq!(error_type(&v), "overloaded_error");
    assert_eq!(fake.requests().len(), 1, "no retry");
}
