//! `genai serve` as a gateway in Anthropic's Messages API: `POST /v1/messages` (as Claude Code
//! sends it, `?beta=true`) answered by the fake OpenAI provider, whole and streamed, with a
//! tool_use/tool_result round trip; Claude Code's request for a model name it does not know (a
//! `system` message, adaptive thinking, an effort) on the OpenAI, Anthropic and Gemini fakes;
//! `count_tokens`; and Anthropic's own Python SDK. Claude as the upstream is in
//! `gateway_anthropic_upstream.rs`, the errors in `gateway_anthropic_errors.rs`; both use the
//! helpers here.

use std::time::Duration;

use serde_json::{json, Value};

use crate::serve::Served;
use crate::support::fake_anthropic::{self, FakeAnthropic};
use crate::support::fake_gemini;
use crate::support::fake_openai::{Behavior, FakeOpenAi};
use crate::support::gateway::typed_events;
use crate::support::python_sdk;

pub(crate) const WAIT: Duration = Duration::from_secs(20);

/// Retries off, so an upstream's 429 comes back at once.
const CONFIG: &str = "[service_providers.openai]\nkind = \"openai\"\nmax_retries = 0\n\n\
     [service_providers.anthropic]\nkind = \"anthropic\"\nmax_retries = 0\n";

pub(crate) fn serve_openai(fake: &FakeOpenAi) -> Served {
    let url = fake.base_url();
    Served::start_with(
        CONFIG,
        &[
            ("OPENAI_BASE_URL", url.as_str()),
            ("OPENAI_API_KEY", "sk-gateway-upstream-0123456789abcdef"),
        ],
        &[],
    )
}

pub(crate) fn serve_anthropic(fake: &FakeAnthropic) -> Served {
    let url = fake.base_url();
    Served::start_with(
        CONFIG,
        &[
            ("ANTHROPIC_BASE_URL", url.as_str()),
            ("ANTHROPIC_API_KEY", fake_anthropic::KEY),
        ],
        &[],
    )
}

/// A POST to `path` with the token as `x-api-key`, as Anthropic's clients send it.
pub(crate) async fn post(served: &Served, path: &str, body: &Value) -> (u16, String) {
    let r = reqwest::Client::builder()
        .timeout(WAIT)
        .build()
        .unwrap()
        .post(format!("{}{path}", served.http_base()))
        .header("x-api-key", &served.token)
        .header("anthropic-version", "2023-06-01")
        .json(body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

pub(crate) async fn messages(served: &Served, body: &Value) -> (u16, Value) {
    let (status, text) = post(served, "/v1/messages?beta=true", body).await;
    let v = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    (status, v)
}

/// The error of an answer, checked to be Anthropic's shape; its type.
pub(crate) fn error_type(v: &Value) -> &str {
    assert_eq!(v["type"], "error", "{v}");
    assert!(v["error"]["message"].is_string(), "{v}");
    v["error"]["type"].as_str().unwrap()
}

#[tokio::test]
async fn an_anthropic_request_runs_on_an_openai_upstream_whole_and_streamed() {
    let fake = FakeOpenAi::start(0, Behavior::reply("Hello from upstream.", 3)).unwrap();
    let served = serve_openai(&fake);
    let request = json!({
        "model": "openai:gpt-gw",
        "max_tokens": 300,
        "temperature": 0.5,
        "stop_sequences": ["END"],
        "metadata": {"user_id": "someone"},
        "system": [{"type": "text", "text": "Answer in French.", "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Say hi."}]}]
    });
    let (status, v) = messages(&served, &request).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["type"], "message");
    assert_eq!(v["role"], "assistant");
    assert_eq!(v["model"], "openai:gpt-gw");
    assert!(v["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(
        v["content"],
        json!([{"type": "text", "text": "Hello from upstream."}])
    );
    assert_eq!(v["stop_reason"], "end_turn");
    assert!(v["usage"]["input_tokens"].as_u64().unwrap() > 0, "{v}");
    assert!(v["usage"]["output_tokens"].as_u64().unwrap() > 0, "{v}");
    let sent = fake.last().body;
    assert_eq!(sent["model"], "gpt-gw");
    assert_eq!(sent["messages"][0]["role"], "system");
    assert_eq!(sent["messages"][0]["content"], "Answer in French.");
    assert_eq!(sent["messages"][1]["content"], "Say hi.");
    assert_eq!(sent["max_tokens"], 300);
    assert_eq!(sent["temperature"], 0.5);
    assert_eq!(sent["stop"], json!(["END"]));

    let mut streamed = request.clone();
    streamed["stream"] = json!(true);
    let (status, text) = post(&served, "/v1/messages?beta=true", &streamed).await;
    assert_eq!(status, 200, "{text}");
    let events = typed_events(&text);
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names[..3],
        ["message_start", "ping", "content_block_start"],
        "{text}"
    );
    assert_eq!(
        names[names.len() - 3..],
        ["content_block_stop", "message_delta", "message_stop"]
    );
    assert_eq!(events[0].1["message"]["role"], "assistant");
    assert_eq!(events[2].1["content_block"]["type"], "text");
    let deltas: Vec<&str> = events
        .iter()
        .filter(|(n, _)| n == "content_block_delta")
        .map(|(_, d)| {
            assert_eq!(d["index"], 0);
            assert_eq!(d["delta"]["type"], "text_delta");
            d["delta"]["text"].as_str().unwrap()
        })
        .collect();
    assert!(deltas.len() > 1, "the reply came in one piece: {text}");
    assert_eq!(deltas.concat(), "Hello from upstream.");
    let delta = &events[events.len() - 2].1;
    assert_eq!(delta["delta"]["stop_reason"], "end_turn");
    assert!(
        delta["usage"]["output_tokens"].as_u64().unwrap() > 0,
        "{delta}"
    );
    assert_eq!(fake.last().body["stream"], true);
}

/// The text of a Claude request's `system`: a string, or text blocks (genai may mark a
/// prompt-cache breakpoint on them).
fn system_of(body: &Value) -> String {
    match &body["system"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n\n"),
        other => panic!("no system prompt: {other}"),
    }
}

#[tokio::test]
async fn claude_codes_request_for_a_model_name_it_does_not_know_runs_on_each_upstream() {
    // What Claude Code 2.1.332 sends for `--model PROVIDER:MODEL` (cut short): its
    // environment note as a `system` message after the first user message, adaptive
    // thinking and an effort.
    let openai = FakeOpenAi::start(0, Behavior::text("Hi from OpenAI.")).unwrap();
    let claude = FakeAnthropic::start(fake_anthropic::Behavior::text("Hi from Claude.")).unwrap();
    let gemini = fake_gemini::start(fake_gemini::Behavior::text("Hi from Gemini."));
    let (openai_url, claude_url, gemini_url) = (openai.base_url(), claude.base_url(), gemini.url());
    let served = Served::start_with(
        CONFIG,
        &[
            ("OPENAI_BASE_URL", openai_url.as_str()),
            ("OPENAI_API_KEY", "sk-gateway-upstream-0123456789abcdef"),
            ("ANTHROPIC_BASE_URL", claude_url.as_str()),
            ("ANTHROPIC_API_KEY", fake_anthropic::KEY),
            ("GEMINI_BASE_URL", gemini_url.as_str()),
            ("GEMINI_API_KEY", fake_gemini::KEY),
        ],
        &[],
    );
    let request = |model: &str| {
        json!({
            "model": model,
            "max_tokens": 32000,
            "thinking": {"type": "adaptive", "display": "omitted"},
            "output_config": {"effort": "high"},
            "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
            "system": [{"type": "text", "text": "You are a Claude agent.", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Say hi."}]},
                {"role": "system", "content": [{"type": "text", "text": "# Environment\nPlatform: linux", "cache_control": {"type": "ephemeral"}}]}
            ]
        })
    };
    let joined = "You are a Claude agent.\n\n# Environment\nPlatform: linux";

    let (status, v) = messages(&served, &request("openai:gpt-gw")).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["content"][0]["text"], "Hi from OpenAI.", "{v}");
    let sent = openai.last().body;
    let roles: Vec<&str> = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user"], "{sent}");
    assert_eq!(sent["messages"][0]["content"], joined, "{sent}");
    // Neither the thinking nor the effort is a setting every OpenAI model takes.
    for field in ["reasoning_effort", "thinking", "output_config"] {
        assert!(sent.get(field).is_none(), "{field} went upstream: {sent}");
    }

    let (status, v) = messages(&served, &request("anthropic:claude-fake")).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["content"][0]["text"], "Hi from Claude.", "{v}");
    let sent = claude.last().body;
    assert_eq!(
        sent["thinking"],
        json!({"type": "adaptive", "display": "omitted"})
    );
    assert_eq!(system_of(&sent), joined, "{sent}");
    assert_eq!(sent["messages"].as_array().unwrap().len(), 1, "{sent}");
    assert!(sent.get("output_config").is_none(), "{sent}");

    let (status, v) = messages(&served, &request("gemini:gemini-fake")).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["content"][0]["text"], "Hi from Gemini.", "{v}");
    let sent = gemini.last().body;
    let config = &sent["generationConfig"]["thinkingConfig"];
    assert_eq!(config["thinkingBudget"], -1, "{sent}");
    assert_eq!(config["includeThoughts"], true, "{sent}");
    assert_eq!(
        sent["systemInstruction"]["parts"][0]["text"], joined,
        "{sent}"
    );
}

#[tokio::test]
async fn a_tool_use_round_trip_on_an_openai_upstream_whole_and_streamed() {
    let fake = FakeOpenAi::start(0, Behavior::text("unused")).unwrap();
    let served = serve_openai(&fake);
    let tools = json!([{
        "name": "get_weather",
        "description": "The weather in a city.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    }]);
    let question = json!({"role": "user", "content": "Weather in Paris?"});
    for stream in [false, true] {
        fake.push(Behavior::calls(
            "",
            &[("get_weather", "{\"city\":\"Paris\"}")],
        ));
        let request = json!({
            "model": "openai:gpt-tools", "max_tokens": 100, "messages": [question],
            "tools": tools, "tool_choice": {"type": "auto"}, "stream": stream
        });
        let (status, text) = post(&served, "/v1/messages", &request).await;
        assert_eq!(status, 200, "{text}");
        let (id, name, input, stop) = if stream {
            let events = typed_events(&text);
            let start = events
                .iter()
                .find(|(n, d)| {
                    n == "content_block_start" && d["content_block"]["type"] == "tool_use"
                })
                .unwrap_or_else(|| panic!("no tool_use block: {text}"));
            let index = start.1["index"].clone();
            let json: String = events
                .iter()
                .filter(|(n, d)| n == "content_block_delta" && d["index"] == index)
                .map(|(_, d)| {
                    assert_eq!(d["delta"]["type"], "input_json_delta");
                    d["delta"]["partial_json"].as_str().unwrap().to_string()
                })
                .collect();
            let stop = events[events.len() - 2].1["delta"]["stop_reason"].clone();
            let block = &start.1["content_block"];
            (
                block["id"].clone(),
                block["name"].clone(),
                serde_json::from_str(&json).unwrap(),
                stop,
            )
        } else {
            let v: Value = serde_json::from_str(&text).unwrap();
            let block = v["content"]
                .as_array()
                .unwrap()
                .iter()
                .find(|b| b["type"] == "tool_use")
                .unwrap_or_else(|| panic!("no tool_use block: {v}"))
                .clone();
            (
                block["id"].clone(),
                block["name"].clone(),
                block["input"].clone(),
                v["stop_reason"].clone(),
            )
        };
        assert_eq!(stop, "tool_use", "{text}");
        assert_eq!(name, "get_weather");
        assert_eq!(input, json!({"city": "Paris"}));
        let id = id.as_str().unwrap().to_string();
        assert!(!id.is_empty());
        let sent = fake.last().body;
        assert_eq!(sent["tools"][0]["function"]["name"], "get_weather");
        assert_eq!(sent["tool_choice"], "auto");

        // The client ran the tool; its result goes back with the call.
        fake.push(Behavior::text("It is sunny in Paris."));
        let (status, v) = messages(
            &served,
            &json!({
                "model": "openai:gpt-tools", "max_tokens": 100, "tools": tools,
                "messages": [
                    question,
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "Let me look."},
                        {"type": "tool_use", "id": id, "name": "get_weather", "input": {"city": "Paris"}}
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": id, "content": [{"type": "text", "text": "sunny, 24 C"}]}
                    ]}
                ]
            }),
        )
        .await;
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["content"][0]["text"], "It is sunny in Paris.");
        let sent = fake.last().body;
        let sent = sent["messages"].as_array().unwrap();
        assert_eq!(sent[1]["content"], "Let me look.");
        assert_eq!(sent[1]["tool_calls"][0]["id"], id.as_str());
        assert_eq!(sent[2]["role"], "tool");
        assert_eq!(sent[2]["tool_call_id"], id.as_str());
        assert!(
            sent[2]["content"].to_string().contains("sunny, 24 C"),
            "{sent:?}"
        );
    }
}

#[tokio::test]
async fn count_tokens_estimates_without_asking_the_upstream() {
    let fake = FakeOpenAi::start(0, Behavior::text("unused")).unwrap();
    let served = serve_openai(&fake);
    let count = |text: String| json!({"model": "openai:gpt-gw", "system": "Be brief.", "messages": [{"role": "user", "content": text}]});
    let (status, text) = post(
        &served,
        "/v1/messages/count_tokens?beta=true",
        &count("hi".into()),
    )
    .await;
    assert_eq!(status, 200, "{text}");
    let small: Value = serde_json::from_str(&text).unwrap();
    let small = small["input_tokens"].as_u64().unwrap();
    assert!(small > 0);
    let (_, text) = post(
        &served,
        "/v1/messages/count_tokens",
        &count("word ".repeat(400)),
    )
    .await;
    let large: Value = serde_json::from_str(&text).unwrap();
    let large = large["input_tokens"].as_u64().unwrap();
    assert!(large >= small + 400, "{small} then {large}");
    let (status, text) = post(
        &served,
        "/v1/messages/count_tokens",
        &json!({"model": "nosuch", "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(status, 404, "{text}");
    assert!(
        fake.requests().is_empty(),
        "count_tokens asked the upstream"
    );
}

/// Anthropic's own Python client, as a user's script drives it: a whole reply, a streamed one
/// read through the SDK's own stream helper (which checks every event), a tool call whose
/// result goes back, a token count, and an unknown model.
const SDK_SCRIPT: &str = r#"
import json, sys
from anthropic import Anthropic

client = Anthropic(base_url=sys.argv[1], api_key=sys.argv[2], max_retries=0)
out = {}
hi = [{"role": "user", "content": "hi"}]
r = client.messages.create(model="openai:gpt-sdk", max_tokens=100, system="Be brief.", messages=hi)
out["whole"] = [r.content[0].text, r.stop_reason, r.usage.output_tokens > 0]
with client.messages.stream(model="openai:gpt-sdk", max_tokens=100, messages=hi) as stream:
    text = "".join(stream.text_stream)
    final = stream.get_final_message()
out["streamed"] = [text, final.stop_reason, final.usage.output_tokens > 0]
tools = [{"name": "get_weather", "description": "Weather.",
          "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]
messages = [{"role": "user", "content": "Weather in Paris?"}]
with client.messages.stream(model="openai:gpt-sdk", max_tokens=100, messages=messages, tools=tools) as stream:
    r = stream.get_final_message()
call = [b for b in r.content if b.type == "tool_use"][0]
out["call"] = [call.name, call.input, r.stop_reason]
messages += [{"role": "assistant", "content": r.content},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "sunny"}]}]
r = client.messages.create(model="openai:gpt-sdk", max_tokens=100, messages=messages, tools=tools)
out["after_tool"] = r.content[0].text
out["count"] = client.messages.count_tokens(model="openai:gpt-sdk", messages=hi).input_tokens
try:
    client.messages.create(model="nosuch", max_tokens=10, messages=hi)
except Exception as e:
    out["error"] = [type(e).__name__, getattr(e, "status_code", None)]
print(json.dumps(out))
"#;

#[tokio::test]
async fn anthropics_python_sdk_gets_whole_and_streamed_replies_a_tool_round_trip_and_a_count() {
    let Some(sdk) = python_sdk::find("anthropic", "GENAI_TEST_ANTHROPIC_SDK") else {
        return;
    };
    let fake = FakeOpenAi::start(0, Behavior::reply("Hello from upstream.", 3)).unwrap();
    let served = serve_openai(&fake);
    fake.push(Behavior::reply("Hello from upstream.", 3));
    fake.push(Behavior::reply("Hello from upstream.", 3));
    fake.push(Behavior::calls(
        "",
        &[("get_weather", "{\"city\":\"Paris\"}")],
    ));
    fake.push(Behavior::text("It is sunny."));
    let stdout = python_sdk::run(SDK_SCRIPT, sdk, served.http_base(), served.token.clone()).await;
    let v: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(
        v["whole"],
        json!(["Hello from upstream.", "end_turn", true])
    );
    assert_eq!(
        v["streamed"],
        json!(["Hello from upstream.", "end_turn", true])
    );
    assert_eq!(
        v["call"],
        json!(["get_weather", {"city": "Paris"}, "tool_use"])
    );
    assert_eq!(v["after_tool"], "It is sunny.");
    assert!(v["count"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["error"], json!(["NotFoundError", 404]));
    let sent = fake.last().body;
    assert_eq!(sent["messages"][2]["role"], "tool", "{sent}");
    assert!(
        sent["messages"][2]["content"].to_string().contains("sunny"),
        "{sent}"
    );
}
