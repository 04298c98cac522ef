//! `POST /v1/embeddings` on a real `genai serve` in front of the fake OpenAI provider: OpenAI's
//! Python SDK's `client.embeddings.create` with a virtual key (its default base64 vectors,
//! floats, `dimensions`, a batch), the vectors and usage it reads, a token array refused with
//! a 400 naming `input`, the key's requests, tokens and spend in `genai usage --by key`; and
//! the key's limits as for chat: a model outside its patterns 403, its rpm 429, its budget 429.

use std::time::Duration;

use serde_json::{json, Value};

use crate::serve::Served;
use crate::support::fake_openai::{Behavior, FakeOpenAi};
use crate::support::gateway::openai_error;
use crate::support::poll::wait_until;
use crate::support::python_sdk;

const UPSTREAM_KEY: &str = "sk-embed-upstream-0123456789abcdef";
const WAIT: Duration = Duration::from_secs(20);

/// A dollar a token for every `openai` model (a word of the fake is a token).
const CONFIG: &str = "[pricing.\"openai:*\"]\ninput = 1000000.0\noutput = 1000000.0\n";

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

/// A new virtual key `name` with these options, made by `genai serve keys create`.
fn create_key(served: &Served, name: &str, options: &[&str]) -> String {
    let mut args = vec!["serve", "keys", "create", name];
    args.extend_from_slice(options);
    let o = served
        .genai(&args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

/// Key `name`'s group in `genai usage --by key --json`, once it counts `requests`.
fn usage_of(served: &Served, name: &str, requests: u64) -> Value {
    let mut found = Value::Null;
    wait_until(&format!("{requests} requests of {name}"), WAIT, || {
        let o = served
            .genai(&["usage", "--by", "key", "--json"])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let all: Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
        found = all["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|g| g["key"] == name)
            .cloned()
            .unwrap_or(Value::Null);
        found["requests"].as_u64() >= Some(requests)
    });
    found
}

const SDK_SCRIPT: &str = r#"
import json, sys
from openai import OpenAI, BadRequestError
client = OpenAI(base_url=sys.argv[1] + "/v1", api_key=sys.argv[2])
out = {}
r = client.embeddings.create(model="openai:text-embedding-3-small", input=["hello world", "abc"])
out["default"] = [d.embedding for d in r.data]
out["default_usage"] = [r.usage.prompt_tokens, r.usage.total_tokens]
out["object"] = [r.object, r.data[0].object, r.data[1].index, r.model]
r = client.embeddings.create(model="openai:text-embedding-3-small", input="four", dimensions=2, encoding_format="float")
out["float"] = [d.embedding for d in r.data]
try:
    client.embeddings.create(model="openai:text-embedding-3-small", input=[[1, 2, 3]])
except BadRequestError as e:
    out["tokens"] = [e.status_code, e.body.get("param"), e.body.get("message")]
print(json.dumps(out))
"#;

#[tokio::test]
async fn openais_sdk_embeds_through_a_virtual_key_whose_spend_is_counted() {
    let Some(sdk) = python_sdk::find("openai", "GENAI_TEST_OPENAI_SDK") else {
        return;
    };
    let fake = FakeOpenAi::start(0, Behavior::default()).unwrap();
    let served = serve(&fake);
    let key = create_key(
        &served,
        "embedder",
        &["--models", "openai:text-embedding-*"],
    );
    let stdout = python_sdk::run(SDK_SCRIPT, sdk, served.http_base(), key.clone()).await;
    assert!(!stdout.contains(UPSTREAM_KEY) && !stdout.contains(&key));
    let v: Value = serde_json::from_str(stdout.trim()).unwrap();
    // The SDK asks for base64 unless told otherwise, and decodes it: the fake's floats.
    assert_eq!(
        v["default"],
        json!([[11.0, 0.5, 0.5, 0.5], [3.0, 0.5, 0.5, 0.5]])
    );
    assert_eq!(v["default_usage"], json!([3, 3]));
    assert_eq!(
        v["object"],
        json!(["list", "embedding", 1, "openai:text-embedding-3-small"])
    );
    assert_eq!(v["float"], json!([[4.0, 0.5]]));
    assert_eq!(v["tokens"][0], 400);
    assert_eq!(v["tokens"][1], "input");
    assert!(
        v["tokens"][2].as_str().unwrap().contains("token arrays"),
        "{v}"
    );
    // genai asked the provider for floats, the batch whole, dimensions passed on.
    let sent: Vec<Value> = fake.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(sent.len(), 2, "the token array never went upstream");
    assert_eq!(sent[0]["input"], json!(["hello world", "abc"]));
    assert_eq!(sent[0]["encoding_format"], "float");
    assert_eq!(sent[1]["dimensions"], 2);

    let usage = usage_of(&served, "embedder", 3);
    assert_eq!(usage["failed"], 1, "{usage}");
    assert_eq!(usage["inputTokens"], 4, "{usage}");
    assert_eq!(usage["outputTokens"], 0, "{usage}");
    assert!(
        (usage["cost"].as_f64().unwrap() - 4.0).abs() < 1e-9,
        "{usage}"
    );
    assert_eq!(usage["servedBy"], json!(["openai:text-embedding-3-small"]));
}

async fn post(served: &Served, key: &str, body: &Value) -> (u16, Value) {
    let r = reqwest::Client::new()
        .post(format!("{}/v1/embeddings", served.http_base()))
        .bearer_auth(key)
        .timeout(WAIT)
        .json(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or_default())
}

#[tokio::test]
async fn a_keys_models_rate_and_budget_hold_for_embeddings_as_for_chat() {
    let fake = FakeOpenAi::start(0, Behavior::default()).unwrap();
    let served = serve(&fake);
    let body = |model: &str| json!({"model": model, "input": "one two three"});

    let chat_only = create_key(&served, "chat-only", &["--models", "openai:gpt-*"]);
    let (status, answer) = post(&served, &chat_only, &body("openai:text-embedding-3-small")).await;
    assert_eq!(status, 403, "{answer}");
    assert!(openai_error(&answer)["message"]
        .as_str()
        .unwrap()
        .contains("may not use model"));

    let slow = create_key(&served, "slow", &["--rpm", "1"]);
    let (status, answer) = post(&served, &slow, &body("openai:text-embedding-3-small")).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["usage"]["prompt_tokens"], 3);
    let (status, answer) = post(&served, &slow, &body("openai:text-embedding-3-small")).await;
    assert_eq!(status, 429, "{answer}");
    assert_eq!(openai_error(&answer)["code"], "rate_limit_exceeded");

    // Three tokens at a dollar each: a budget of $0.000001 is spent by the first.
    let thrifty = create_key(&served, "thrifty", &["--budget", "0.000001"]);
    let (status, _) = post(&served, &thrifty, &body("openai:text-embedding-3-small")).await;
    assert_eq!(status, 200);
    let (status, answer) = post(&served, &thrifty, &body("openai:text-embedding-3-small")).await;
    assert_eq!(status, 429, "{answer}");
    assert_eq!(openai_error(&answer)["code"], "insufficient_quota");

    let spent = usage_of(&served, "thrifty", 2);
    assert!(
        (spent["cost"].as_f64().unwrap() - 3.0).abs() < 1e-9,
        "{spent}"
    );
    assert_eq!(
        fake.requests().len(),
        2,
        "refused requests never went upstream"
    );
}
