//! `genai serve` as a gateway: OpenAI's `GET /v1/models` and `POST /v1/chat/completions` on a
//! real `genai serve` process, its turns run by the core on the fake OpenAI provider. Whole and
//! streamed replies with their usage, a tool-call round trip, a `response_format` schema, a
//! client that leaves a stream cancelling the upstream request, more clients at once than
//! other front-ends allow, and OpenAI's Python SDK. The errors are in `gateway_errors.rs`, on
//! the helpers here.

use std::time::Duration;

use serde_json::{json, Value};

use crate::serve::Served;
use crate::support::fake_openai::{Behavior, FakeOpenAi, Mode};
use crate::support::gateway::openai_error;
use crate::support::python_sdk;

/// The key genai holds for the upstream; no answer may show it.
pub(crate) const UPSTREAM_KEY: &str = "sk-gateway-upstream-0123456789abcdef";

const WAIT: Duration = Duration::from_secs(20);

pub(crate) const CONFIG: &str = "[defaults]\nmodel = \"openai:gpt-gw\"\n\n\
     [agents.terse]\nprovider = \"openai\"\nmodel = \"gpt-terse\"\nsystem_prompt = \"You are terse.\"\n";

pub(crate) fn serve(fake: &FakeOpenAi, extra: &[&str]) -> Served {
    let base_url = fake.base_url();
    Served::start_with(
        CONFIG,
        &[
            ("OPENAI_BASE_URL", base_url.as_str()),
            ("OPENAI_API_KEY", UPSTREAM_KEY),
        ],
        extra,
    )
}

pub(crate) fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(WAIT).build().unwrap()
}

/// A chat request with the token; its status and body as text.
async fn chat(served: &Served, body: &Value) -> (u16, String) {
    let r = client()
        .post(format!("{}/v1/chat/completions", served.http_base()))
        .bearer_auth(&served.token)
        .json(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    assert!(
        !text.contains(UPSTREAM_KEY),
        "the upstream key leaked: {text}"
    );
    (status, text)
}

pub(crate) async fn chat_json(served: &Served, body: &Value) -> (u16, Value) {
    let (status, text) = chat(served, body).await;
    let v = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    (status, v)
}

/// The data of each server-sent event of a streamed answer.
fn events(text: &str) -> Vec<String> {
    text.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            e.strip_prefix("data: ")
                .unwrap_or_else(|| panic!("not a data event: {e:?}"))
                .to_string()
        })
        .collect()
}

#[tokio::test]
async fn models_lists_the_agents_and_provider_models_and_every_route_needs_the_token() {
    let fake = FakeOpenAi::start(0, Behavior::text("hi")).unwrap();
    let served = serve(&fake, &[]);
    let url = format!("{}/v1/models", served.http_base());
    let r = client().get(&url).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 401);
    let body: Value = r.json().await.unwrap();
    assert_eq!(openai_error(&body)["type"], "authentication_error");
    let r = client()
        .get(&url)
        .header("x-api-key", "not-the-token")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    let r = client()
        .post(format!("{}/v1/chat/completions", served.http_base()))
        .json(&json!({"model": "terse", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    assert!(
        fake.requests().is_empty(),
        "a refused request went upstream"
    );

    let r = client()
        .get(&url)
        .header("x-api-key", &served.token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let list: Value = r.json().await.unwrap();
    assert_eq!(list["object"], "list");
    let ids: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            assert_eq!(m["object"], "model");
            assert!(m["created"].is_u64() && m["owned_by"].is_string(), "{m}");
            m["id"].as_str().unwrap()
        })
        .collect();
    assert!(ids.contains(&"terse"), "{ids:?}");
    assert!(ids.contains(&"openai:gpt-gw"), "the default model: {ids:?}");
    assert!(
        !ids.iter().any(|id| id.starts_with("anthropic:")),
        "a provider with no key is not offered: {ids:?}"
    );
}

#[tokio::test]
async fn a_whole_reply_runs_through_the_core_with_the_agents_model_and_settings() {
    let fake = FakeOpenAi::start(0, Behavior::text("Hello from upstream.")).unwrap();
    let served = serve(&fake, &[]);
    let (status, v) = chat_json(
        &served,
        &json!({
            "model": "terse",
            "messages": [
                {"role": "system", "content": "Answer in French."},
                {"role": "user", "content": [{"type": "text", "text": "Say hi."}]}
            ],
            "temperature": 0.2,
            "max_completion_tokens": 50,
            "stop": "END"
        }),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["model"], "terse");
    assert!(v["id"].as_str().unwrap().starts_with("chatcmpl-"));
    let choice = &v["choices"][0];
    assert_eq!(choice["message"]["role"], "assistant");
    assert_eq!(choice["message"]["content"], "Hello from upstream.");
    assert_eq!(choice["finish_reason"], "stop");
    let usage = &v["usage"];
    assert!(usage["prompt_tokens"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(
        usage["total_tokens"].as_u64().unwrap(),
        usage["prompt_tokens"].as_u64().unwrap() + usage["completion_tokens"].as_u64().unwrap()
    );

    // Upstream: the agent's model, the request's system message in place of the agent's,
    // its settings, and genai's own key (never the client's token).
    let sent = fake.last();
    assert_eq!(sent.body["model"], "gpt-terse");
    assert_eq!(sent.body["messages"][0]["role"], "system");
    assert_eq!(sent.body["messages"][0]["content"], "Answer in French.");
    assert_eq!(sent.body["messages"][1]["content"], "Say hi.");
    assert_eq!(sent.body["temperature"], 0.2);
    assert_eq!(sent.body["max_completion_tokens"], 50);
    assert_eq!(sent.body["stop"], json!(["END"]));
    let auth = sent.header("authorization").unwrap_or_default();
    assert!(auth.contains(UPSTREAM_KEY), "{auth}");
    assert!(!auth.contains(&served.token));
}

#[tokio::test]
async fn a_streamed_reply_sends_reasoning_and_text_chunks_a_usage_chunk_and_done() {
    let reply = Behavior::reply("One two three four.", 4).thinking("Count up.");
    let fake = FakeOpenAi::start(0, reply).unwrap();
    let served = serve(&fake, &[]);
    let (status, text) = chat(
        &served,
        &json!({
            "model": "openai:gpt-stream",
            "messages": [{"role": "user", "content": "Count."}],
            "stream": true,
            "stream_options": {"include_usage": true}
        }),
    )
    .await;
    assert_eq!(status, 200, "{text}");
    let events = events(&text);
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"), "{text}");
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    assert!(chunks
        .iter()
        .all(|c| c["object"] == "chat.completion.chunk"));
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let content: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(content, "One two three four.");
    let reasoning: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["reasoning_content"].as_str())
        .collect();
    assert_eq!(reasoning, "Count up.");
    let pieces = chunks
        .iter()
        .filter(|c| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .is_some_and(|t| !t.is_empty())
        })
        .count();
    assert!(pieces > 1, "the reply came in one piece: {text}");
    let finish = &chunks[chunks.len() - 2];
    assert_eq!(finish["choices"][0]["finish_reason"], "stop");
    let usage = chunks.last().unwrap();
    assert_eq!(usage["choices"], json!([]));
    // The upstream's reasoning tokens ("Count up.": 2) are part of the completion's.
    assert_eq!(usage["usage"]["completion_tokens"], 4 + 2, "{usage}");
    assert_eq!(
        usage["usage"]["completion_tokens_details"]["reasoning_tokens"], 2,
        "{usage}"
    );
    assert_eq!(fake.last().body["stream"], true);
}

#[tokio::test]
async fn a_tool_call_round_trip_whole_and_streamed() {
    let fake = FakeOpenAi::start(0, Behavior::text("unused")).unwrap();
    let served = serve(&fake, &[]);
    let tools = json!([{
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false},
            // As OpenAI's SDK writes a tool from a typed function: accepted, not enforced.
            "strict": true
        }
    }]);
    let question = json!({"role": "user", "content": "Weather in Paris?"});
    for stream in [false, true] {
        fake.push(Behavior::calls(
            "",
            &[("get_weather", "{\"city\":\"Paris\"}")],
        ));
        let request = json!({
            "model": "openai:gpt-tools",
            "messages": [question],
            "tools": tools,
            "tool_choice": "auto",
            "stream": stream
        });
        let (status, text) = chat(&served, &request).await;
        assert_eq!(status, 200, "{text}");
        let (id, name, arguments, finish) = if stream {
            let chunks: Vec<Value> = events(&text)
                .iter()
                .filter(|e| *e != "[DONE]")
                .map(|e| serde_json::from_str(e).unwrap())
                .collect();
            let (mut id, mut name, mut args) = (String::new(), String::new(), String::new());
            for c in &chunks {
                for call in c["choices"][0]["delta"]["tool_calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    assert_eq!(call["index"], 0);
                    id.push_str(call["id"].as_str().unwrap_or(""));
                    name.push_str(call["function"]["name"].as_str().unwrap_or(""));
                    args.push_str(call["function"]["arguments"].as_str().unwrap_or(""));
                }
            }
            let finish = chunks.last().unwrap()["choices"][0]["finish_reason"].clone();
            (id, name, args, finish)
        } else {
            let v: Value = serde_json::from_str(&text).unwrap();
            let call = &v["choices"][0]["message"]["tool_calls"][0];
            assert_eq!(call["type"], "function");
            (
                call["id"].as_str().unwrap().to_string(),
                call["function"]["name"].as_str().unwrap().to_string(),
                call["function"]["arguments"].as_str().unwrap().to_string(),
                v["choices"][0]["finish_reason"].clone(),
            )
        };
        assert_eq!(finish, "tool_calls", "{text}");
        assert_eq!(name, "get_weather");
        assert!(!id.is_empty());
        let arguments: Value = serde_json::from_str(&arguments).unwrap();
        assert_eq!(arguments, json!({"city": "Paris"}));
        let sent = fake.last();
        assert_eq!(sent.body["tools"][0]["function"]["name"], "get_weather");
        assert_eq!(sent.body["tool_choice"], "auto");

        // The client ran the tool; its result goes back with the call.
        fake.push(Behavior::text("It is sunny in Paris."));
        let (status, v) = chat_json(
            &served,
            &json!({
                "model": "openai:gpt-tools",
                "messages": [
                    question,
                    {"role": "assistant", "content": null, "tool_calls": [{
                        "id": id, "type": "function",
                        "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}
                    }]},
                    {"role": "tool", "tool_call_id": id, "content": "sunny, 24 C"}
                ],
                "tools": tools
            }),
        )
        .await;
        assert_eq!(status, 200, "{v}");
        assert_eq!(
            v["choices"][0]["message"]["content"],
            "It is sunny in Paris."
        );
        let sent = fake.last().body;
        let messages = sent["messages"].as_array().unwrap();
        let call = &messages[1]["tool_calls"][0];
        assert_eq!(call["id"], id.as_str());
        assert_eq!(call["function"]["name"], "get_weather");
        assert_eq!(messages[2]["role"], "tool");
        assert_eq!(messages[2]["tool_call_id"], id.as_str());
        assert!(
            messages[2]["content"].to_string().contains("sunny, 24 C"),
            "{sent}"
        );
    }
}

#[tokio::test]
async fn a_response_format_schema_is_sent_and_the_reply_checked() {
    let fake = FakeOpenAi::start(0, Behavior::text("{\"city\":\"Paris\",\"sunny\":true}")).unwrap();
    let served = serve(&fake, &[]);
    let schema = json!({
        "type": "object",
        "properties": {"city": {"type": "string"}, "sunny": {"type": "boolean"}},
        "required": ["city", "sunny"],
        "additionalProperties": false
    });
    for stream in [false, true] {
        let (status, text) = chat(
            &served,
            &json!({
                "model": "openai:gpt-json",
                "messages": [{"role": "user", "content": "Paris weather as JSON."}],
                "response_format": {"type": "json_schema", "json_schema": {"name": "weather", "schema": schema}},
                "stream": stream
            }),
        )
        .await;
        assert_eq!(status, 200, "{text}");
        let content: String = if stream {
            events(&text)
                .iter()
                .filter(|e| *e != "[DONE]")
                .filter_map(|e| {
                    let c: Value = serde_json::from_str(e).unwrap();
                    c["choices"][0]["delta"]["content"]
                        .as_str()
                        .map(str::to_string)
                })
                .collect()
        } else {
            let v: Value = serde_json::from_str(&text).unwrap();
            v["choices"][0]["message"]["content"]
                .as_str()
                .unwrap()
                .to_string()
        };
        let answer: Value = serde_json::from_str(&content).unwrap();
        assert_eq!(answer, json!({"city": "Paris", "sunny": true}));
        let sent = fake.last().body;
        assert_eq!(sent["response_format"]["type"], "json_schema", "{sent}");
        assert_eq!(sent["response_format"]["json_schema"]["name"], "weather");
    }
}

// Two workers: the wait below blocks one, and the client's connection must still close.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_leaving_a_stream_cancels_the_upstream_request() {
    let slow = Behavior {
        delay: Duration::from_millis(300),
        ..Behavior::reply("a b c d e f g h i j k l m n o p q r s t", 20)
    };
    let fake = FakeOpenAi::start(0, slow).unwrap();
    let served = serve(&fake, &[]);
    let mut r = client()
        .post(format!("{}/v1/chat/completions", served.http_base()))
        .bearer_auth(&served.token)
        .json(&json!({"model": "terse", "messages": [{"role": "user", "content": "go"}], "stream": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    // Read until the first piece of text, then leave.
    let mut seen = String::new();
    while !seen.contains("\"content\":\"a") {
        let chunk = tokio::time::timeout(WAIT, r.chunk())
            .await
            .expect("a chunk in time")
            .unwrap()
            .expect("the stream went on");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    drop(r);
    crate::support::poll::wait_until("the upstream request is dropped", WAIT, || {
        fake.disconnects() >= 1
    });
}

/// The gateway relays for many clients: with no `max_concurrent_requests` in the config, more
/// requests than the 32 other front-ends keep in flight reach a slow provider at once.
// Two threads: the clients' requests go on while this one waits, polling.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_clients_than_other_front_ends_allow_reach_a_slow_provider_at_once() {
    const CLIENTS: usize = 40;
    let fake = FakeOpenAi::start(0, Behavior::mode(Mode::Stall)).unwrap();
    let served = serve(&fake, &[]);
    let (url, token) = (
        format!("{}/v1/chat/completions", served.http_base()),
        served.token.clone(),
    );
    let body = json!({"model": "terse", "messages": [{"role": "user", "content": "hi"}]});
    let waiting: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let request = client().post(&url).bearer_auth(&token).json(&body).send();
            tokio::spawn(request)
        })
        .collect();
    crate::support::poll::wait_until("every client's request reaches the provider", WAIT, || {
        fake.requests().len() >= CLIENTS
    });
    waiting.iter().for_each(|w| w.abort());
}

/// OpenAI's own Python client, as a user's script drives it: a whole reply, a streamed one
/// with its usage, and a tool call whose result goes back in the next request.
const SDK_SCRIPT: &str = r#"
import json, sys
from openai import OpenAI

client = OpenAI(base_url=sys.argv[1] + "/v1", api_key=sys.argv[2], max_retries=0)
out = {}
r = client.chat.completions.create(model="terse", messages=[{"role": "user", "content": "hi"}])
out["whole"] = r.choices[0].message.content
out["whole_tokens"] = r.usage.total_tokens
stream = client.chat.completions.create(
    model="terse", messages=[{"role": "user", "content": "hi"}], stream=True,
    stream_options={"include_usage": True})
text, tokens = "", None
for chunk in stream:
    if chunk.choices and chunk.choices[0].delta.content:
        text += chunk.choices[0].delta.content
    if chunk.usage:
        tokens = chunk.usage.total_tokens
out["streamed"], out["streamed_tokens"] = text, tokens
tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather.",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
messages = [{"role": "user", "content": "Weather in Paris?"}]
r = client.chat.completions.create(model="terse", messages=messages, tools=tools)
call = r.choices[0].message.tool_calls[0]
out["call"] = [call.function.name, json.loads(call.function.arguments), r.choices[0].finish_reason]
messages += [r.choices[0].message, {"role": "tool", "tool_call_id": call.id, "content": "sunny"}]
r = client.chat.completions.create(model="terse", messages=messages, tools=tools)
out["after_tool"] = r.choices[0].message.content
try:
    client.chat.completions.create(model="nosuch", messages=[{"role": "user", "content": "hi"}])
except Exception as e:
    out["error"] = [type(e).__name__, getattr(e, "status_code", None)]
print(json.dumps(out))
"#;

#[tokio::test]
async fn openais_python_sdk_gets_whole_and_streamed_replies_and_a_tool_round_trip() {
    let Some(sdk) = python_sdk::find("openai", "GENAI_TEST_OPENAI_SDK") else {
        return;
    };
    let fake = FakeOpenAi::start(0, Behavior::reply("Hello from upstream.", 3)).unwrap();
    let served = serve(&fake, &[]);
    fake.push(Behavior::reply("Hello from upstream.", 3));
    fake.push(Behavior::reply("Hello from upstream.", 3));
    fake.push(Behavior::calls(
        "",
        &[("get_weather", "{\"city\":\"Paris\"}")],
    ));
    fake.push(Behavior::text("It is sunny."));
    let stdout = python_sdk::run(SDK_SCRIPT, sdk, served.http_base(), served.token.clone()).await;
    assert!(!stdout.contains(UPSTREAM_KEY));
    let v: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(v["whole"], "Hello from upstream.");
    assert!(v["whole_tokens"].as_u64().unwrap() > 0);
    assert_eq!(v["streamed"], "Hello from upstream.");
    assert!(v["streamed_tokens"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(
        v["call"],
        json!(["get_weather", {"city": "Paris"}, "tool_calls"])
    );
    assert_eq!(v["after_tool"], "It is sunny.");
    assert_eq!(v["error"], json!(["NotFoundError", 404]));
    let sent = fake.last().body;
    // The agent's system prompt first, then the client's history.
    assert_eq!(sent["messages"][0]["content"], "You are terse.");
    assert_eq!(sent["messages"][3]["role"], "tool", "{sent}");
    assert!(
        sent["messages"][3]["content"].to_string().contains("sunny"),
        "{sent}"
    );
}
