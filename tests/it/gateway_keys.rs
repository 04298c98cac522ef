//! The gateway's virtual keys and limits on a real `genai serve` in front of the fake OpenAI
//! provider: keys made, listed and revoked by the real binary (`genai serve keys ...`) while
//! the serve runs, taken as a bearer token or `x-api-key`; a key over its budget or its rate
//! refused (429, with retry-after for a rate), one outside its models forbidden (403), in each
//! API's shape; `[serve.models]` aliases (Claude's names onto the fake's models); every
//! request recorded with its key, client and served model (`genai usage --by key`), bodies
//! only for the key kept with them, and neither a key nor the serve token in the history or
//! the log.

use std::time::Duration;

use serde_json::{json, Value};

use crate::serve::Served;
use crate::support::fake_openai::{Behavior, FakeOpenAi};
use crate::support::poll::wait_until;

const UPSTREAM_KEY: &str = "sk-keys-upstream-0123456789abcdef";

const WAIT: Duration = Duration::from_secs(20);

/// A dollar a token, so that one request spends any small budget.
const CONFIG: &str = "[defaults]\nmodel = \"openai:gpt-keys\"\n\n\
     [pricing.\"openai:*\"]\ninput = 1000000.0\noutput = 1000000.0\n\n\
     [serve.models]\n\"claude-sonnet-4-5\" = \"openai:gpt-exact\"\n\"claude-*\" = \"openai:gpt-any\"\n";

fn serve(fake: &FakeOpenAi) -> Served {
    let base_url = fake.base_url();
    Served::start_with(
        CONFIG,
        &[
            ("OPENAI_BASE_URL", base_url.as_str()),
            ("OPENAI_API_KEY", UPSTREAM_KEY),
        ],
        &[],
    )
}

/// `genai serve keys ARGS` on the serve's folders: its stdout, checked to succeed.
fn keys(served: &Served, args: &[&str]) -> String {
    let mut all = vec!["serve", "keys"];
    all.extend_from_slice(args);
    let o = served
        .genai(&all)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "genai serve keys {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// A new key named `name` with these options.
fn create(served: &Served, name: &str, options: &[&str]) -> String {
    let mut args = vec!["create", name];
    args.extend_from_slice(options);
    let key = keys(served, &args).trim().to_string();
    assert!(key.starts_with("gk-") && key.len() >= 35, "{key}");
    key
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(WAIT)
        .user_agent("keys-test-client/1.0")
        .build()
        .unwrap()
}

/// How a request carries its key.
#[derive(Clone, Copy)]
enum Header {
    Bearer,
    ApiKey,
}

/// A request's answer: status, retry-after, body.
struct Answer {
    status: u16,
    retry_after: Option<u64>,
    body: Value,
}

async fn post(served: &Served, path: &str, key: &str, header: Header, body: &Value) -> Answer {
    let r = client()
        .post(format!("{}{path}", served.http_base()))
        .json(body);
    let r = match header {
        Header::Bearer => r.bearer_auth(key),
        Header::ApiKey => r.header("x-api-key", key),
    };
    let r = r.send().await.unwrap();
    let status = r.status().as_u16();
    let retry_after = r
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().parse().unwrap());
    let text = r.text().await.unwrap();
    assert!(!text.contains(UPSTREAM_KEY), "the upstream key leaked");
    assert!(!text.contains(key), "the client's key came back: {text}");
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    Answer {
        status,
        retry_after,
        body,
    }
}

fn chat_body(model: &str) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": "hello there"}]})
}

async fn chat(served: &Served, key: &str, model: &str) -> Answer {
    post(
        served,
        "/v1/chat/completions",
        key,
        Header::Bearer,
        &chat_body(model),
    )
    .await
}

async fn messages(served: &Served, key: &str, model: &str) -> Answer {
    let body = json!({"model": model, "max_tokens": 50, "messages": [{"role": "user", "content": "hello there"}]});
    post(served, "/v1/messages", key, Header::ApiKey, &body).await
}

fn list(served: &Served) -> Vec<Value> {
    serde_json::from_str(&keys(served, &["list", "--json"])).unwrap()
}

/// `genai usage --by key --json` on the serve's history.
fn usage_by_key(served: &Served) -> Value {
    let o = served
        .genai(&["usage", "--by", "key", "--json"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The group of key `name` in `genai usage --by key`, once it counts `requests` or more.
fn usage_of(served: &Served, name: &str, requests: u64) -> Value {
    let mut found = Value::Null;
    wait_until(
        &format!("{requests} requests of {name} are stored"),
        WAIT,
        || {
            let all = usage_by_key(served);
            found = all["groups"]
                .as_array()
                .unwrap()
                .iter()
                .find(|g| g["key"] == name)
                .cloned()
                .unwrap_or(Value::Null);
            found["requests"].as_u64() >= Some(requests)
        },
    );
    found
}

/// Every byte of the history (its file and its write-ahead log) as text.
fn history_bytes(served: &Served) -> String {
    let mut all = Vec::new();
    for name in ["history.db", "history.db-wal"] {
        if let Ok(b) = std::fs::read(served.data_dir().join(name)) {
            all.extend(b);
        }
    }
    String::from_utf8_lossy(&all).into_owned()
}

#[tokio::test]
async fn keys_are_made_listed_and_revoked_by_the_cli_while_serve_runs() {
    let fake = FakeOpenAi::start(0, Behavior::text("Hi from upstream.")).unwrap();
    let served = serve(&fake);
    // Made after the serve started: taken at once, both ways a client sends a key.
    let key = create(&served, "ci", &["--rpm", "100", "--models", "openai:*"]);
    let a = chat(&served, &key, "openai:gpt-one").await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(
        a.body["choices"][0]["message"]["content"],
        "Hi from upstream."
    );
    let a = messages(&served, &key, "openai:gpt-two").await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["type"], "message");
    // The client's key never goes upstream.
    for r in fake.requests() {
        let auth = r.header("authorization").unwrap_or_default();
        assert!(
            !auth.contains(&key) && auth.contains(UPSTREAM_KEY),
            "{auth}"
        );
    }
    // Wrong keys are 401 in each API's shape.
    let a = chat(&served, "gk-not-a-key", "openai:gpt-one").await;
    assert_eq!(a.status, 401);
    assert_eq!(a.body["error"]["type"], "authentication_error");
    let a = messages(&served, "gk-not-a-key", "openai:gpt-one").await;
    assert_eq!(a.status, 401);
    assert_eq!(a.body["error"]["type"], "authentication_error");

    let listed = list(&served);
    assert_eq!(listed.len(), 1);
    let ci = &listed[0];
    assert_eq!(ci["name"], "ci");
    assert_eq!(ci["rpm"], 100);
    assert_eq!(ci["models"], json!(["openai:*"]));
    assert_eq!(ci["revoked"], Value::Null);
    assert!(ci["created"].as_str().unwrap().starts_with("20"), "{ci}");
    let table = keys(&served, &["list"]);
    assert!(table.contains("ci") && !table.contains(&key), "{table}");

    let o = served
        .genai(&["serve", "keys", "create", "ci"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "a name is taken once");

    keys(&served, &["revoke", "ci"]);
    // The running serve notices without a restart.
    let mut status = 0;
    let deadline = std::time::Instant::now() + WAIT;
    while status != 401 {
        assert!(
            std::time::Instant::now() < deadline,
            "the revoked key still passes"
        );
        status = chat(&served, &key, "openai:gpt-one").await.status;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(list(&served)[0]["revoked"].is_string());
    // The serve token still passes.
    let a = chat(&served, &served.token, "openai:gpt-one").await;
    assert_eq!(a.status, 200);

    usage_of(&served, "ci", 2);
    let stored = history_bytes(&served);
    assert!(!stored.contains(&key), "the key is in the history");
    assert!(
        !stored.contains(&served.token),
        "the serve token is in the history"
    );
    let log = served.log();
    assert!(!log.contains(&key) && !log.contains(&served.token), "{log}");
}

#[tokio::test]
async fn a_key_over_its_budget_or_rate_is_429_and_outside_its_models_403() {
    let fake = FakeOpenAi::start(0, Behavior::text("Priced.")).unwrap();
    let served = serve(&fake);
    let capped = create(&served, "capped", &["--budget", "0.5"]);
    let a = chat(&served, &capped, "openai:gpt-priced").await;
    assert_eq!(a.status, 200, "{}", a.body);
    let upstream_calls = fake.requests().len();
    // Its first request spent more than $0.5 (a dollar a token).
    let a = chat(&served, &capped, "openai:gpt-priced").await;
    assert_eq!(a.status, 429, "{}", a.body);
    assert_eq!(a.body["error"]["type"], "insufficient_quota");
    let message = a.body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("key capped has spent $") && message.contains("of its $0.5000 budget"),
        "{message}"
    );
    let a = messages(&served, &capped, "openai:gpt-priced").await;
    assert_eq!(a.status, 429);
    assert_eq!(a.body["type"], "error");
    assert_eq!(a.body["error"]["type"], "rate_limit_error");
    assert_eq!(
        fake.requests().len(),
        upstream_calls,
        "refused before any upstream call"
    );
    // The rows are stored in the background, within a moment.
    wait_until("keys list shows what it spent", WAIT, || {
        list(&served)[0]["spent"].as_f64().unwrap() > 0.5
    });

    let slow = create(&served, "slow", &["--rpm", "2"]);
    for _ in 0..2 {
        assert_eq!(chat(&served, &slow, "openai:gpt-rated").await.status, 200);
    }
    let a = chat(&served, &slow, "openai:gpt-rated").await;
    assert_eq!(a.status, 429, "{}", a.body);
    assert_eq!(a.body["error"]["code"], "rate_limit_exceeded");
    let message = a.body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("key slow made its 2 requests per minute"),
        "{message}"
    );
    let retry = a.retry_after.expect("a retry-after header");
    assert!((1..=60).contains(&retry), "{retry}");

    let claude_only = create(&served, "claude-only", &["--models", "claude-*"]);
    let a = chat(&served, &claude_only, "openai:gpt-direct").await;
    assert_eq!(a.status, 403, "{}", a.body);
    assert_eq!(a.body["error"]["type"], "permission_error");
    let message = a.body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("key claude-only") && message.contains("openai:gpt-direct"),
        "{message}"
    );
    let a = messages(&served, &claude_only, "openai:gpt-direct").await;
    assert_eq!(a.status, 403);
    assert_eq!(a.body["error"]["type"], "permission_error");
    // Claude's own names pass, and run on the models their aliases name.
    let a = messages(&served, &claude_only, "claude-sonnet-4-5").await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(
        a.body["model"], "claude-sonnet-4-5",
        "the name the client sent"
    );
    assert_eq!(fake.last().body["model"], "gpt-exact");

    let usage = usage_of(&served, "claude-only", 3);
    assert_eq!(usage["failed"], 2, "{usage}");
    let slow_usage = usage_of(&served, "slow", 3);
    assert_eq!(slow_usage["failed"], 1, "{slow_usage}");
}

#[tokio::test]
async fn aliases_map_claude_names_onto_any_model_and_are_listed() {
    let fake = FakeOpenAi::start(0, Behavior::text("Aliased.")).unwrap();
    let served = serve(&fake);
    let token = served.token.clone();
    let a = messages(&served, &token, "claude-haiku-4-5").await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(fake.last().body["model"], "gpt-any", "the pattern's target");
    let a = chat(&served, &token, "claude-sonnet-4-5").await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(
        fake.last().body["model"],
        "gpt-exact",
        "the exact name wins"
    );
    let a = chat(&served, &token, "openai:gpt-plain").await;
    assert_eq!(a.status, 200);
    assert_eq!(fake.last().body["model"], "gpt-plain", "no alias: as sent");

    let r = client()
        .get(format!("{}/v1/models", served.http_base()))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    let list: Value = r.json().await.unwrap();
    let ids: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"claude-sonnet-4-5"), "{ids:?}");
    assert!(!ids.contains(&"claude-*"), "a pattern is no model: {ids:?}");
}

#[tokio::test]
async fn usage_by_key_names_key_client_and_model_and_bodies_are_kept_only_where_asked() {
    let fake = FakeOpenAi::start(0, Behavior::reply("Kept reply words.", 3)).unwrap();
    let served = serve(&fake);
    let kept = create(&served, "kept", &["--keep-bodies"]);
    let plain = create(&served, "plain", &[]);
    let whole = json!({"model": "openai:gpt-usage", "messages": [{"role": "user", "content": "whole-kept-question"}]});
    let a = post(
        &served,
        "/v1/chat/completions",
        &kept,
        Header::Bearer,
        &whole,
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let streamed = json!({"model": "openai:gpt-usage", "stream": true, "messages": [{"role": "user", "content": "streamed-kept-question"}]});
    let a = post(
        &served,
        "/v1/chat/completions",
        &kept,
        Header::Bearer,
        &streamed,
    )
    .await;
    assert_eq!(a.status, 200);
    let secret = json!({"model": "openai:gpt-usage", "messages": [{"role": "user", "content": "plain-secret-question"}]});
    let a = post(
        &served,
        "/v1/chat/completions",
        &plain,
        Header::ApiKey,
        &secret,
    )
    .await;
    assert_eq!(a.status, 200);
    let token = served.token.clone();
    let by_token = json!({"model": "openai:gpt-usage", "messages": [{"role": "user", "content": "token-secret-question"}]});
    let a = post(
        &served,
        "/v1/chat/completions",
        &token,
        Header::Bearer,
        &by_token,
    )
    .await;
    assert_eq!(a.status, 200);

    let usage = usage_of(&served, "kept", 2);
    assert_eq!(usage["servedBy"], json!(["openai:gpt-usage"]));
    assert_eq!(usage["clients"], json!(["keys-test-client/1.0"]));
    assert_eq!(usage["failed"], 0);
    assert!(usage["inputTokens"].as_u64().unwrap() > 0, "{usage}");
    assert!(usage["cost"].as_f64().unwrap() > 0.0, "{usage}");
    assert_eq!(
        usage_of(&served, "plain", 1)["servedBy"],
        json!(["openai:gpt-usage"])
    );
    assert_eq!(usage_of(&served, "serve-token", 1)["requests"], 1);

    let o = served
        .genai(&["usage", "--by", "key"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let table = String::from_utf8(o.stdout).unwrap();
    // The spending a plain `genai usage` shows holds the gateway's requests too.
    let o = served
        .genai(&["usage", "--json"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let all: Value = serde_json::from_slice(&o.stdout).unwrap();
    let model = all["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["key"] == "gpt-usage")
        .unwrap_or_else(|| panic!("no group of gpt-usage: {all}"));
    assert_eq!(
        (model["turns"].as_u64(), model["gatewayRequests"].as_u64()),
        (Some(4), Some(4)),
        "{all}"
    );
    assert_eq!(all["total"]["cost"], model["cost"], "{all}");
    assert!(all["total"]["cost"].as_f64().unwrap() > 0.0, "{all}");
    assert!(
        table.contains("kept")
            && table.contains("openai:gpt-usage")
            && table.contains("keys-test-client/1.0"),
        "{table}"
    );

    let stored = history_bytes(&served);
    assert!(
        stored.contains("whole-kept-question"),
        "the kept key's request body"
    );
    assert!(stored.contains("streamed-kept-question"));
    assert!(
        stored.contains("Kept reply words."),
        "the kept key's replies"
    );
    assert!(
        !stored.contains("plain-secret-question"),
        "another key's body is stored"
    );
    assert!(
        !stored.contains("token-secret-question"),
        "the serve token's body is stored"
    );
    for secret in [&kept, &plain, &token] {
        assert!(!stored.contains(secret.as_str()), "a key is in the history");
    }
    let log = served.log();
    assert!(!log.contains(&kept) && !log.contains(&plain) && !log.contains(&token));
}

// Two workers: the wait below blocks one, and the client's connection must still close.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_the_client_drops_is_recorded_cancelled_without_its_reply() {
    let slow = Behavior {
        delay: Duration::from_millis(300),
        ..Behavior::reply("first-piece then-more words never-stored-tail", 20)
    };
    let fake = FakeOpenAi::start(0, slow).unwrap();
    let served = serve(&fake);
    let kept = create(&served, "dropper", &["--keep-bodies"]);
    let mut r = client()
        .post(format!("{}/v1/chat/completions", served.http_base()))
        .bearer_auth(&kept)
        .json(&json!({"model": "openai:gpt-drop", "stream": true, "messages": [{"role": "user", "content": "go"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    // Read until the first piece of text (a few characters), then leave.
    let mut seen = String::new();
    while !seen.contains("\"content\":\"f") {
        let chunk = tokio::time::timeout(WAIT, r.chunk())
            .await
            .expect("a chunk in time")
            .unwrap()
            .expect("the stream went on");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    drop(r);
    let usage = usage_of(&served, "dropper", 1);
    assert_eq!(usage["failed"], 1, "cancelled: {usage}");
    let stored = history_bytes(&served);
    assert!(stored.contains("cancelled"));
    assert!(
        !stored.contains("never-stored-tail"),
        "half a reply is stored"
    );
}
