//! `genai serve` as a gateway in OpenAI's Responses API: `POST /v1/responses` on a real
//! `genai serve` process, its turns run by the core on the fake OpenAI chat provider. A whole
//! response with its usage and the request's instructions and settings upstream; a streamed
//! one as the API's numbered events, reasoning included; a function-call round trip (the call,
//! then its `function_call_output`) whole and streamed; a `json_schema` text format; the
//! errors (400 naming the field for an unknown field, `previous_response_id`, a tool only
//! OpenAI runs, with nothing sent upstream; 502 when the upstream fails, without genai's key);
//! and OpenAI's own Python client driving it.

use std::time::Duration;

use serde_json::{json, Value};

use crate::serve::Served;
use crate::support::fake_openai::{Behavior, FakeOpenAi, Mode};
use crate::support::gateway::{openai_error, typed_events};
use crate::support::python_sdk;

/// The key genai holds for the upstream; no answer may show it.
const UPSTREAM_KEY: &str = "sk-gateway-upstream-0123456789abcdef";

const WAIT: Duration = Duration::from_secs(20);

const CONFIG: &str = "[service_providers.openai]\nkind = \"openai\"\nmax_retries = 0\n\n\
     [agents.terse]\nprovider = \"openai\"\nmodel = \"gpt-terse\"\nsystem_prompt = \"You are terse.\"\n";

fn serve(fake: &FakeOpenAi) -> Served {
    let url = fake.base_url();
    Served::start_with(
        CONFIG,
        &[
            ("OPENAI_BASE_URL", url.as_str()),
            ("OPENAI_API_KEY", UPSTREAM_KEY),
        ],
        &[],
    )
}

/// A Responses request with the token; its status and body as text.
async fn post(served: &Served, body: &Value) -> (u16, String) {
    let r = reqwest::Client::builder()
        .timeout(WAIT)
        .build()
        .unwrap()
        .post(format!("{}/v1/responses", served.http_base()))
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

async fn whole(served: &Served, body: &Value) -> (u16, Value) {
    let (status, text) = post(served, body).await;
    let v = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    (status, v)
}

/// The (event, data) of each server-sent event, each event's name its data's type and the
/// sequence numbers counting from 0.
fn events(text: &str) -> Vec<(String, Value)> {
    let events = typed_events(text);
    for (i, (_, data)) in events.iter().enumerate() {
        assert_eq!(data["sequence_number"], i, "{text}");
    }
    events
}

/// The events' data of one kind.
fn of<'a>(events: &'a [(String, Value)], kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|(n, _)| n == kind)
        .map(|(_, d)| d)
        .collect()
}

#[tokio::test]
async fn a_whole_response_carries_the_instructions_input_and_settings() {
    let fake = FakeOpenAi::start(0, Behavior::text("Bonjour.")).unwrap();
    let served = serve(&fake);
    let (status, v) = whole(
        &served,
        &json!({
            "model": "terse",
            "instructions": "Answer in French.",
            "input": [
                {"role": "developer", "content": "Use one word."},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Say hi."}]}
            ],
            "temperature": 0.2,
            "max_output_tokens": 50,
            "store": false,
            "metadata": {"run": "1"},
            "user": "u1",
            "prompt_cache_key": "k",
            "include": ["reasoning.encrypted_content"],
            "truncation": "disabled"
        }),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["object"], "response");
    assert!(v["id"].as_str().unwrap().starts_with("resp_"), "{v}");
    assert!(v["created_at"].as_u64().unwrap() > 0);
    assert_eq!(v["status"], "completed");
    assert_eq!(v["model"], "terse");
    assert_eq!(v["instructions"], "Answer in French.");
    let output = v["output"].as_array().unwrap();
    assert_eq!(output.len(), 1, "{v}");
    assert_eq!(output[0]["type"], "message");
    assert_eq!(output[0]["role"], "assistant");
    assert!(output[0]["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(output[0]["content"][0]["type"], "output_text");
    assert_eq!(output[0]["content"][0]["text"], "Bonjour.");
    let usage = &v["usage"];
    assert!(usage["input_tokens"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(
        usage["total_tokens"].as_u64().unwrap(),
        usage["input_tokens"].as_u64().unwrap() + usage["output_tokens"].as_u64().unwrap()
    );
    assert!(usage["input_tokens_details"]["cached_tokens"].is_u64());
    assert!(usage["output_tokens_details"]["reasoning_tokens"].is_u64());

    // Upstream: the agent's model, the instructions and developer message as the system
    // message, the request's settings, genai's own key.
    let sent = fake.last();
    assert_eq!(sent.body["model"], "gpt-terse");
    let messages = sent.body["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages[0]["content"], "Answer in French.\n\nUse one word.");
    assert_eq!(messages[1]["content"], "Say hi.");
    assert_eq!(sent.body["temperature"], 0.2);
    assert_eq!(sent.body["max_tokens"], 50);
    let auth = sent.header("authorization").unwrap_or_default();
    assert!(auth.contains(UPSTREAM_KEY), "{auth}");
    assert!(!auth.contains(&served.token));
}

#[tokio::test]
async fn a_streamed_response_sends_the_apis_events_with_reasoning_and_text() {
    let reply = Behavior::reply("One two three four.", 4).thinking("Count up.");
    let fake = FakeOpenAi::start(0, reply).unwrap();
    let served = serve(&fake);
    let (status, text) = post(
        &served,
        &json!({"model": "openai:gpt-stream", "input": "Count.", "stream": true,
                "reasoning": {"effort": "low", "summary": "auto"}}),
    )
    .await;
    assert_eq!(status, 200, "{text}");
    let events = events(&text);
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names[..2], ["response.created", "response.in_progress"]);
    assert_eq!(events[0].1["response"]["status"], "in_progress");
    assert_eq!(names.last(), Some(&"response.completed"), "{text}");
    // The reasoning item first, then the message.
    let added = of(&events, "response.output_item.added");
    assert_eq!(added.len(), 2, "{text}");
    assert_eq!(added[0]["item"]["type"], "reasoning");
    assert_eq!(added[1]["item"]["type"], "message");
    assert_eq!(added[1]["output_index"], 1);
    let thought: String = of(&events, "response.reasoning_summary_text.delta")
        .iter()
        .map(|d| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(thought, "Count up.");
    let deltas = of(&events, "response.output_text.delta");
    assert!(deltas.len() > 1, "the text came in one piece: {text}");
    let streamed: String = deltas
        .iter()
        .map(|d| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(streamed, "One two three four.");
    let message_id = &added[1]["item"]["id"];
    assert!(deltas.iter().all(|d| d["item_id"] == *message_id));
    assert_eq!(
        of(&events, "response.output_text.done")[0]["text"],
        "One two three four."
    );
    assert_eq!(of(&events, "response.content_part.added").len(), 1);
    assert_eq!(of(&events, "response.content_part.done").len(), 1);
    let done = of(&events, "response.output_item.done");
    assert_eq!(done[0]["item"]["summary"][0]["text"], "Count up.");
    assert_eq!(done[1]["item"]["content"][0]["text"], "One two three four.");
    let completed = &events.last().unwrap().1["response"];
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["output"].as_array().unwrap().len(), 2);
    // The upstream's reasoning tokens ("Count up.": 2) are part of the output tokens.
    let usage = &completed["usage"];
    assert_eq!(
        usage["output_tokens_details"]["reasoning_tokens"], 2,
        "{usage}"
    );
    assert_eq!(usage["output_tokens"], 4 + 2, "{usage}");
    let sent = fake.last().body;
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["reasoning_effort"], "low", "{sent}");
}

#[tokio::test]
async fn a_function_call_round_trip_whole_and_streamed() {
    let fake = FakeOpenAi::start(0, Behavior::text("unused")).unwrap();
    let served = serve(&fake);
    let tools = json!([{
        "type": "function",
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        "strict": false
    }]);
    let question = json!({"role": "user", "content": "Weather in Paris?"});
    for stream in [false, true] {
        fake.push(Behavior::calls(
            "",
            &[("get_weather", "{\"city\":\"Paris\"}")],
        ));
        let request = json!({
            "model": "openai:gpt-tools", "input": [question], "tools": tools,
            "tool_choice": "auto", "parallel_tool_calls": true, "stream": stream
        });
        let (status, text) = post(&served, &request).await;
        assert_eq!(status, 200, "{text}");
        let call = if stream {
            let events = events(&text);
            let arguments: String = of(&events, "response.function_call_arguments.delta")
                .iter()
                .map(|d| d["delta"].as_str().unwrap())
                .collect();
            let done = of(&events, "response.function_call_arguments.done");
            assert_eq!(done[0]["arguments"], arguments.as_str());
            assert_eq!(done[0]["name"], "get_weather");
            let items = of(&events, "response.output_item.done");
            let completed = &events.last().unwrap().1["response"];
            assert_eq!(completed["output"][0], items[0]["item"]);
            items[0]["item"].clone()
        } else {
            let v: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(v["status"], "completed");
            v["output"][0].clone()
        };
        assert_eq!(call["type"], "function_call", "{text}");
        assert_eq!(call["name"], "get_weather");
        assert_eq!(call["status"], "completed");
        assert!(call["id"].as_str().unwrap().starts_with("fc_"));
        let call_id = call["call_id"].as_str().unwrap().to_string();
        assert!(!call_id.is_empty());
        let arguments: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(arguments, json!({"city": "Paris"}));
        let sent = fake.last().body;
        assert_eq!(sent["tools"][0]["function"]["name"], "get_weather");
        assert_eq!(sent["tool_choice"], "auto");

        // The client ran the call; its output goes back with the call item as it came.
        fake.push(Behavior::text("It is sunny in Paris."));
        let (status, v) = whole(
            &served,
            &json!({
                "model": "openai:gpt-tools",
                "input": [question, call, {"type": "function_call_output", "call_id": call_id, "output": "sunny, 24 C"}],
                "tools": tools
            }),
        )
        .await;
        assert_eq!(status, 200, "{v}");
        assert_eq!(
            v["output"][0]["content"][0]["text"],
            "It is sunny in Paris."
        );
        let sent = fake.last().body;
        let messages = sent["messages"].as_array().unwrap();
        assert_eq!(messages[1]["tool_calls"][0]["id"], call_id.as_str());
        assert_eq!(
            messages[1]["tool_calls"][0]["function"]["name"],
            "get_weather"
        );
        assert_eq!(messages[2]["role"], "tool");
        assert_eq!(messages[2]["tool_call_id"], call_id.as_str());
        assert!(
            messages[2]["content"].to_string().contains("sunny, 24 C"),
            "{sent}"
        );
    }
}

#[tokio::test]
async fn a_json_schema_text_format_is_structured_output() {
    let fake = FakeOpenAi::start(0, Behavior::text("{\"city\":\"Paris\",\"sunny\":true}")).unwrap();
    let served = serve(&fake);
    let schema = json!({
        "type": "object",
        "properties": {"city": {"type": "string"}, "sunny": {"type": "boolean"}},
        "required": ["city", "sunny"],
        "additionalProperties": false
    });
    for stream in [false, true] {
        let (status, text) = post(
            &served,
            &json!({
                "model": "openai:gpt-json",
                "input": "Paris weather as JSON.",
                "text": {"format": {"type": "json_schema", "name": "weather", "schema": schema, "strict": true}},
                "stream": stream
            }),
        )
        .await;
        assert_eq!(status, 200, "{text}");
        let content = if stream {
            let events = events(&text);
            of(&events, "response.output_text.delta")
                .iter()
                .map(|d| d["delta"].as_str().unwrap().to_string())
                .collect::<String>()
        } else {
            let v: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(v["text"]["format"]["name"], "weather");
            v["output"][0]["content"][0]["text"]
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

#[tokio::test]
async fn bad_requests_are_400s_naming_the_field_and_nothing_goes_upstream() {
    let fake = FakeOpenAi::start(0, Behavior::text("hi")).unwrap();
    let served = serve(&fake);
    let cases = [
        (
            json!({"model": "terse", "input": "hi", "no_such_setting": 1}),
            "no_such_setting",
        ),
        (
            json!({"model": "terse", "input": "hi", "previous_response_id": "resp_123"}),
            "previous_response_id",
        ),
        (
            json!({"model": "terse", "input": "hi", "tools": [{"type": "file_search", "vector_store_ids": ["vs_1"]}]}),
            "tools[0].type",
        ),
        (
            json!({"model": "terse", "input": "hi", "tools": [{"type": "code_interpreter", "container": {"type": "auto"}}]}),
            "tools[0].type",
        ),
        (
            json!({"model": "terse", "input": "hi", "store": true}),
            "store",
        ),
        (
            json!({"model": "terse", "input": [{"type": "item_reference", "id": "msg_1"}]}),
            "input[0].type",
        ),
        (
            json!({"model": "terse", "input": [{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]}),
            "input[0].content[0].type",
        ),
        (json!({"model": "terse"}), "input"),
        (json!({"input": "hi"}), "model"),
        (
            json!({"model": "terse", "input": "hi", "temperature": "hot"}),
            "temperature",
        ),
    ];
    for (body, param) in cases {
        let (status, v) = whole(&served, &body).await;
        assert_eq!(status, 400, "{body} -> {v}");
        let e = openai_error(&v);
        assert_eq!(e["type"], "invalid_request_error", "{v}");
        assert_eq!(e["param"], param, "{body} -> {v}");
        assert!(e["message"].as_str().unwrap().contains(param), "{v}");
    }
    let (status, v) = whole(&served, &json!({"model": "nosuch", "input": "hi"})).await;
    assert_eq!(status, 404, "{v}");
    assert_eq!(openai_error(&v)["code"], "model_not_found");
    let r = reqwest::Client::new()
        .get(format!("{}/v1/responses", served.http_base()))
        .bearer_auth(&served.token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 405);
    let r = reqwest::Client::new()
        .post(format!("{}/v1/responses", served.http_base()))
        .json(&json!({"model": "terse", "input": "hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    assert!(
        fake.requests().is_empty(),
        "a refused request went upstream"
    );
}

#[tokio::test]
async fn an_upstream_failure_is_a_502_without_genais_key() {
    let fake = FakeOpenAi::start(
        0,
        Behavior::mode(Mode::Error {
            status: 500,
            message: format!("internal failure for key {UPSTREAM_KEY}"),
            code: String::new(),
        }),
    )
    .unwrap();
    let served = serve(&fake);
    for stream in [false, true] {
        let (status, v) = whole(
            &served,
            &json!({"model": "terse", "input": "hi", "stream": stream}),
        )
        .await;
        assert_eq!(status, 502, "{v}");
        assert_eq!(openai_error(&v)["type"], "upstream_error");
    }
    assert_eq!(fake.requests().len(), 2);
}

/// OpenAI's own Python client on the Responses API: a whole response, a streamed one, and a
/// function call whose output goes back in the next request; a refused field as its error.
const SDK_SCRIPT: &str = r#"
import json, sys
from openai import OpenAI

client = OpenAI(base_url=sys.argv[1] + "/v1", api_key=sys.argv[2], max_retries=0)
out = {}
r = client.responses.create(model="terse", input="hi", instructions="Be kind.")
out["whole"] = [r.status, r.output_text, r.usage.total_tokens]
text, kinds, final = "", [], None
for event in client.responses.create(model="terse", input="hi", stream=True):
    kinds.append(event.type)
    if event.type == "response.output_text.delta":
        text += event.delta
    if event.type == "response.completed":
        final = event.response.output_text
out["streamed"] = [text, final, kinds[0], kinds[-1]]
tools = [{"type": "function", "name": "get_weather", "description": "Weather.",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]
history = [{"role": "user", "content": "Weather in Paris?"}]
r = client.responses.create(model="terse", input=history, tools=tools)
call = [item for item in r.output if item.type == "function_call"][0]
out["call"] = [call.name, json.loads(call.arguments)]
history += [item.model_dump(exclude_none=True) for item in r.output]
history.append({"type": "function_call_output", "call_id": call.call_id, "output": "sunny"})
r = client.responses.create(model="terse", input=history, tools=tools)
out["after_tool"] = r.output_text
try:
    client.responses.create(model="terse", input="hi", previous_response_id="resp_1")
except Exception as e:
    out["error"] = [type(e).__name__, getattr(e, "status_code", None)]
print(json.dumps(out))
"#;

#[tokio::test]
async fn openais_python_sdk_creates_responses_whole_streamed_and_with_a_tool() {
    let Some(sdk) = python_sdk::find("openai", "GENAI_TEST_OPENAI_SDK") else {
        return;
    };
    let fake = FakeOpenAi::start(0, Behavior::reply("Hello from upstream.", 3)).unwrap();
    let served = serve(&fake);
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
    assert_eq!(v["whole"][0], "completed");
    assert_eq!(v["whole"][1], "Hello from upstream.");
    assert!(v["whole"][2].as_u64().unwrap() > 0, "{v}");
    assert_eq!(
        v["streamed"],
        json!([
            "Hello from upstream.",
            "Hello from upstream.",
            "response.created",
            "response.completed"
        ])
    );
    assert_eq!(v["call"], json!(["get_weather", {"city": "Paris"}]));
    assert_eq!(v["after_tool"], "It is sunny.");
    assert_eq!(v["error"], json!(["BadRequestError", 400]));
    let sent = fake.last().body;
    // The agent's system prompt first, then the client's history with the call's output.
    assert_eq!(sent["messages"][0]["content"], "You are terse.");
    assert_eq!(sent["messages"][3]["role"], "tool", "{sent}");
    assert!(
        sent["messages"][3]["content"].to_string().contains("sunny"),
        "{sent}"
    );
}
