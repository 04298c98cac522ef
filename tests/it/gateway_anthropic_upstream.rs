//! Any API in, the Anthropic provider out, through `genai serve`'s gateway: OpenAI's Chat
//! Completions answered by the fake Anthropic provider, whole and streamed; the stop sequence
//! Claude stopped at, in Anthropic's Messages API; and Claude's signed thinking carried back,
//! streamed, and sent again with a tool call's result.

use serde_json::{json, Value};

use crate::gateway_anthropic::{messages, post, serve_anthropic, WAIT};
use crate::support::fake_anthropic::{self, FakeAnthropic};
use crate::support::gateway::typed_events;

#[tokio::test]
async fn an_openai_request_runs_on_the_anthropic_upstream_whole_and_streamed() {
    let fake =
        FakeAnthropic::start(fake_anthropic::Behavior::reply("Bonjour from Claude.", 3)).unwrap();
    let served = serve_anthropic(&fake);
    for stream in [false, true] {
        let options = match stream {
            true => json!({"include_usage": true}),
            false => Value::Null,
        };
        let r = reqwest::Client::new()
            .post(format!("{}/v1/chat/completions", served.http_base()))
            .bearer_auth(&served.token)
            .json(&json!({
                "model": "anthropic:claude-fake",
                "max_tokens": 200,
                "messages": [
                    {"role": "system", "content": "Be French."},
                    {"role": "user", "content": "Hi."}
                ],
                "stream": stream,
                "stream_options": options
            }))
            .timeout(WAIT)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
        let text = r.text().await.unwrap();
        let content = if stream {
            text.split("\n\n")
                .filter_map(|e| e.strip_prefix("data: "))
                .filter(|d| *d != "[DONE]")
                .filter_map(|d| {
                    let c: Value = serde_json::from_str(d).unwrap();
                    c["choices"][0]["delta"]["content"]
                        .as_str()
                        .map(str::to_string)
                })
                .collect::<String>()
        } else {
            let v: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(v["choices"][0]["finish_reason"], "stop");
            assert!(v["usage"]["prompt_tokens"].as_u64().unwrap() > 0, "{v}");
            v["choices"][0]["message"]["content"]
                .as_str()
                .unwrap()
                .to_string()
        };
        assert_eq!(content, "Bonjour from Claude.", "{text}");
        let sent = fake.last().body;
        assert_eq!(sent["model"], "claude-fake");
        assert_eq!(sent["max_tokens"], 200);
        assert_eq!(sent["stream"].as_bool().unwrap_or(false), stream);
        assert!(sent["system"].to_string().contains("Be French."), "{sent}");
        assert_eq!(sent["messages"][0]["role"], "user");
    }
}

#[tokio::test]
async fn the_stop_sequence_claude_stopped_at_comes_back_whole_and_streamed() {
    let reply = fake_anthropic::Behavior::reply("One two STOP three.", 3);
    let fake = FakeAnthropic::start(reply).unwrap();
    let served = serve_anthropic(&fake);
    let body = |stream: bool| {
        json!({"model": "anthropic:claude-fake", "max_tokens": 100, "stream": stream,
               "stop_sequences": ["NEVER", "STOP"],
               "messages": [{"role": "user", "content": "Count."}]})
    };
    let (status, v) = messages(&served, &body(false)).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["content"][0]["text"], "One two ", "{v}");
    assert_eq!(
        (&v["stop_reason"], &v["stop_sequence"]),
        (&json!("stop_sequence"), &json!("STOP")),
        "{v}"
    );
    assert_eq!(fake.last().body["stop_sequences"], json!(["NEVER", "STOP"]));

    let (status, text) = post(&served, "/v1/messages", &body(true)).await;
    assert_eq!(status, 200, "{text}");
    let events = typed_events(&text);
    let delta = events
        .iter()
        .find(|(name, _)| name == "message_delta")
        .map(|(_, d)| &d["delta"])
        .unwrap_or_else(|| panic!("no message_delta: {text}"));
    assert_eq!(
        delta,
        &json!({"stop_reason": "stop_sequence", "stop_sequence": "STOP"}),
        "{text}"
    );
    // Before the end, no one knows where the reply stops.
    assert_eq!(events[0].1["message"]["stop_sequence"], Value::Null);
}

#[tokio::test]
async fn claudes_signed_thinking_comes_back_and_goes_back_with_a_tool_call() {
    let fake = FakeAnthropic::start(
        fake_anthropic::Behavior::calls("", &[("get_weather", "{\"city\":\"Paris\"}")])
            .thinking("The user wants Paris."),
    )
    .unwrap();
    let served = serve_anthropic(&fake);
    let tools = json!([{"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]);
    let question = json!({"role": "user", "content": "Weather in Paris?"});
    let (status, v) = messages(
        &served,
        &json!({
            "model": "anthropic:claude-fake", "max_tokens": 4000, "tools": tools,
            "thinking": {"type": "enabled", "budget_tokens": 2048},
            "messages": [question]
        }),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        fake.last().body["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    let thinking = &v["content"][0];
    assert_eq!(thinking["type"], "thinking", "{v}");
    assert_eq!(thinking["thinking"], "The user wants Paris.");
    assert_eq!(
        thinking["signature"],
        fake_anthropic::signature_of("The user wants Paris.")
    );
    let call = &v["content"][1];
    assert_eq!(call["type"], "tool_use");
    assert_eq!(v["stop_reason"], "tool_use");

    // Streamed, the signature ends the thinking block, before the call's block opens.
    fake.push(
        fake_anthropic::Behavior::calls("", &[("get_weather", "{\"city\":\"Paris\"}")])
            .thinking("The user wants Paris."),
    );
    let (status, text) = post(
        &served,
        "/v1/messages",
        &json!({
            "model": "anthropic:claude-fake", "max_tokens": 4000, "tools": tools, "stream": true,
            "thinking": {"type": "enabled", "budget_tokens": 2048},
            "messages": [question]
        }),
    )
    .await;
    assert_eq!(status, 200, "{text}");
    let events = typed_events(&text);
    let in_block_0: Vec<&Value> = events
        .iter()
        .filter(|(_, d)| d["index"] == 0)
        .map(|(_, d)| d)
        .collect();
    assert_eq!(in_block_0[0]["content_block"]["type"], "thinking", "{text}");
    let thought: String = in_block_0
        .iter()
        .filter_map(|d| d["delta"]["thinking"].as_str())
        .collect();
    assert_eq!(thought, "The user wants Paris.");
    let n = in_block_0.len();
    assert_eq!(
        in_block_0[n - 2]["delta"]["type"],
        "signature_delta",
        "{text}"
    );
    assert_eq!(
        in_block_0[n - 2]["delta"]["signature"],
        fake_anthropic::signature_of("The user wants Paris.")
    );
    assert_eq!(in_block_0[n - 1]["type"], "content_block_stop");
    let signatures = events
        .iter()
        .filter(|(_, d)| d["delta"]["type"] == "signature_delta")
        .count();
    assert_eq!(signatures, 1, "{text}");

    // The fake refuses the next turn unless the call's turn starts with its signed thinking.
    fake.push(fake_anthropic::Behavior::text("Sunny."));
    let content = v["content"].clone();
    let (status, v) = messages(
        &served,
        &json!({
            "model": "anthropic:claude-fake", "max_tokens": 4000, "tools": tools,
            "thinking": {"type": "enabled", "budget_tokens": 2048},
            "messages": [
                question,
                {"role": "assistant", "content": content},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": "sunny", "is_error": false}]}
            ]
        }),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        v["content"].as_array().unwrap().last().unwrap()["text"],
        "Sunny.",
        "{v}"
    );
    let sent = fake.last().body;
    assert_eq!(
        sent["messages"][1]["content"][0]["type"], "thinking",
        "{sent}"
    );
    assert_eq!(
        sent["messages"][2]["content"][0]["type"], "tool_result",
        "{sent}"
    );
}
