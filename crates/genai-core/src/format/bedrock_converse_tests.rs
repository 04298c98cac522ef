//! Tests of the `bedrock-converse` format: golden requests and responses, tool use blocks,
//! streams (whole and cut) and reasoning content.

use super::*;
use crate::format::testing::*;
use crate::format::{ModelConfiguration, ToolCallDelta, ToolSpec};

/// A ConverseStream answer as its events (API_runtime_ConverseStreamOutput.html):
/// `messageStart`, the events of its content `blocks`, `messageStop` (a tool use), and the
/// `metadata` event with this JSON.
fn answer(blocks: Vec<Vec<StreamEvent>>, metadata: &str) -> Vec<StreamEvent> {
    let mut events = vec![event("messageStart", r#"{"role":"assistant"}"#)];
    events.extend(blocks.into_iter().flatten());
    events.push(event("messageStop", r#"{"stopReason":"tool_use"}"#));
    events.push(event("metadata", metadata));
    events
}

/// A ContentBlockDeltaEvent of content block `index`.
fn delta(index: usize, delta: Value) -> StreamEvent {
    let data = json!({"contentBlockIndex": index, "delta": delta});
    event("contentBlockDelta", &data.to_string())
}

/// The ContentBlockStopEvent of content block `index`.
fn block_stop(index: usize) -> StreamEvent {
    event(
        "contentBlockStop",
        &json!({ "contentBlockIndex": index }).to_string(),
    )
}

/// Content block `index` as text deltas, then its stop.
fn text_block(index: usize, pieces: &[&str]) -> Vec<StreamEvent> {
    let mut events: Vec<StreamEvent> = pieces
        .iter()
        .map(|t| delta(index, json!({ "text": t })))
        .collect();
    events.push(block_stop(index));
    events
}

/// Content block `index` as a `top_song` tool use: its start (`start.toolUse` with the id
/// and name), its input in `pieces` (`delta.toolUse.input`), then its stop.
fn tool_use_block(index: usize, id: &str, pieces: &[&str]) -> Vec<StreamEvent> {
    let start = json!({"contentBlockIndex": index,
                       "start": {"toolUse": {"toolUseId": id, "name": "top_song"}}});
    let mut events = vec![event("contentBlockStart", &start.to_string())];
    events.extend(
        pieces
            .iter()
            .map(|p| delta(index, json!({"toolUse": {"input": p}}))),
    );
    events.push(block_stop(index));
    events
}

/// The request shape of the Converse API reference's Request Syntax
/// (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html) and of the
/// user guide's image example (docs.aws.amazon.com/bedrock/latest/userguide/
/// conversation-inference-examples.html).
#[test]
fn golden_request_body() {
    let mut m = ModelConfiguration::new(&BedrockConverse, "anthropic.claude-3-haiku-20240307-v1:0");
    m.set_parameter("MAXTOKENS", json!("512")).unwrap();
    m.set_parameter("temperature", json!(0.5)).unwrap();
    m.set_parameter("topP", json!(0.9)).unwrap();
    m.set_parameter("stopSequences", json!("END")).unwrap();
    m.set_parameter("additionalModelRequestFields", json!("{\"top_k\": 200}"))
        .unwrap();
    let messages = vec![
        Message::system("You are an app that creates playlists for a radio station."),
        said(
            Role::User,
            vec![
                Part::text("What's in this image?"),
                image("image/png", "iVBORw0KGgo="),
            ],
        ),
        Message::assistant("A cat."),
        Message::user("Create a list of 3 pop songs."),
    ];
    let req = m.prepare_request(&messages, false).unwrap();
    assert_eq!(req.model, "anthropic.claude-3-haiku-20240307-v1:0");
    assert_eq!(
        req.body,
        json!({
            "messages": [
                {"role": "user", "content": [
                    {"text": "What's in this image?"},
                    {"image": {"format": "png", "source": {"bytes": "iVBORw0KGgo="}}}
                ]},
                {"role": "assistant", "content": [{"text": "A cat."}]},
                {"role": "user", "content": [{"text": "Create a list of 3 pop songs."}]}
            ],
            "system": [{"text": "You are an app that creates playlists for a radio station."}],
            "inferenceConfig": {"maxTokens": 512, "temperature": 0.5, "topP": 0.9, "stopSequences": ["END"]},
            "additionalModelRequestFields": {"top_k": 200}
        })
    );
    assert!(req.body["additionalModelRequestFields"].is_object());
}

#[test]
fn tool_calls_and_results_become_tool_use_blocks_in_alternating_turns() {
    let m = ModelConfiguration::new(&BedrockConverse, "m");
    let messages = vec![
        Message::user("Weather in Paris?"),
        calling("tooluse_1", "weather", json!({"city": "Paris"})),
        said(
            Role::Tool,
            vec![result(
                "tooluse_1",
                vec![Part::Json {
                    value: json!({"c": 21}),
                }],
                false,
            )],
        ),
        Message::user("Thanks"),
    ];
    let body = m.prepare_request(&messages, true).unwrap().body;
    assert_eq!(
        body["messages"][1]["content"][0],
        json!({"toolUse": {"toolUseId": "tooluse_1", "name": "weather", "input": {"city": "Paris"}}})
    );
    assert_eq!(body["messages"].as_array().unwrap().len(), 3);
    assert_eq!(
        body["messages"][2],
        json!({"role": "user", "content": [
            {"toolResult": {"toolUseId": "tooluse_1", "content": [{"json": {"c": 21}}]}},
            {"text": "Thanks"}
        ]})
    );
    let bad = vec![said(Role::User, vec![image_url("https://x/y.png")])];
    assert!(m.prepare_request(&bad, false).is_err());
    let tiff = vec![said(Role::User, vec![image("image/tiff", "AA==")])];
    let e = m.prepare_request(&tiff, false).unwrap_err();
    assert_mentions(&e, "not image/tiff");
}

/// The user guide's tool example (docs.aws.amazon.com/bedrock/latest/userguide/
/// tool-use-inference-call.html): the `top_song` tool in `toolConfig`, the model's `toolUse`
/// (here two of them, as parallel calls), and both `toolResult`s in one user message, the
/// failed one with `status: "error"`.
#[test]
fn golden_tool_round_trip() {
    let m = ModelConfiguration::new(&BedrockConverse, "anthropic.claude-3-sonnet-20240229-v1:0");
    let schema = json!({
        "type": "object",
        "properties": {"sign": {"type": "string", "description": "The call sign for the radio station for which you want the most popular song. Example calls signs are WZPZ and WKRP."}},
        "required": ["sign"]
    });
    let tools = [ToolSpec {
        name: "top_song".into(),
        description: "Get the most popular song played on a radio station.".into(),
        input_schema: schema.clone(),
    }];
    let use_of = |id: &str, sign: &str| Part::ToolCall {
        id: id.into(),
        name: "top_song".into(),
        arguments: json!({ "sign": sign }),
        signature: None,
    };
    let messages = vec![
        Message::user("What is the most popular song on WZPZ and on WKRP?"),
        said(
            Role::Assistant,
            vec![
                use_of("tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "WZPZ"),
                use_of("tooluse_2", "WKRP"),
            ],
        ),
        said(
            Role::Tool,
            vec![
                result(
                    "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q",
                    vec![Part::Json {
                        value: json!({"song": "Elemental Hotel", "artist": "8 Storey Hike"}),
                    }],
                    false,
                ),
                result(
                    "tooluse_2",
                    vec![Part::text("Station WKRP not found.")],
                    true,
                ),
            ],
        ),
    ];
    let body = m.prepare_with_tools(&messages, &tools).unwrap().body;
    assert_eq!(
        body,
        json!({
            "messages": [
                {"role": "user", "content": [{"text": "What is the most popular song on WZPZ and on WKRP?"}]},
                {"role": "assistant", "content": [
                    {"toolUse": {"toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "name": "top_song", "input": {"sign": "WZPZ"}}},
                    {"toolUse": {"toolUseId": "tooluse_2", "name": "top_song", "input": {"sign": "WKRP"}}}
                ]},
                {"role": "user", "content": [
                    {"toolResult": {"toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q",
                                    "content": [{"json": {"song": "Elemental Hotel", "artist": "8 Storey Hike"}}]}},
                    {"toolResult": {"toolUseId": "tooluse_2", "content": [{"text": "Station WKRP not found."}],
                                    "status": "error"}}
                ]}
            ],
            "toolConfig": {"tools": [{"toolSpec": {
                "name": "top_song",
                "description": "Get the most popular song played on a radio station.",
                "inputSchema": {"json": schema}
            }}]}
        })
    );
    // The documented answer that asks for the tool.
    let answer = br#"{"output": {"message": {"role": "assistant", "content": [
            {"toolUse": {"toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "name": "top_song", "input": {"sign": "WZPZ"}}}
          ]}}, "stopReason": "tool_use"}"#;
    let r = m.extract(answer).unwrap();
    assert_eq!(r.finish_reason.as_deref(), Some("tool_use"));
    assert_eq!(
        r.message.content,
        vec![use_of("tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "WZPZ")]
    );
}

/// ConverseStream tool uses (ContentBlockStartEvent with `start.toolUse`, then
/// ContentBlockDeltaEvents with `delta.toolUse.input` pieces): the id and name come as one
/// delta, the input pieces as the next ones, keyed by the use's place in the reply.
#[test]
fn streamed_tool_uses_become_deltas() {
    let events = answer(
        vec![
            text_block(0, &["Checking both."]),
            tool_use_block(1, "tooluse_a", &["{\"sign\": ", "\"WZPZ\"}"]),
            tool_use_block(2, "tooluse_b", &["{\"sign\": \"WKRP\"}"]),
        ],
        r#"{"usage":{"inputTokens":30,"outputTokens":20,"totalTokens":50},"metrics":{"latencyMs":100}}"#,
    );
    let mut d = ModelConfiguration::new(&BedrockConverse, "m").decoder();
    let mut deltas = Vec::new();
    for e in &events {
        d.feed(e).unwrap();
        deltas.extend(d.take_tool_call_deltas());
    }
    assert_eq!(
        deltas,
        vec![
            ToolCallDelta {
                index: 0,
                id: Some("tooluse_a".into()),
                name: Some("top_song".into()),
                arguments: String::new()
            },
            ToolCallDelta {
                index: 0,
                arguments: "{\"sign\": ".into(),
                ..Default::default()
            },
            ToolCallDelta {
                index: 0,
                arguments: "\"WZPZ\"}".into(),
                ..Default::default()
            },
            ToolCallDelta {
                index: 1,
                id: Some("tooluse_b".into()),
                name: Some("top_song".into()),
                arguments: String::new()
            },
            ToolCallDelta {
                index: 1,
                arguments: "{\"sign\": \"WKRP\"}".into(),
                ..Default::default()
            },
        ]
    );
    let r = d.finish().unwrap();
    assert_eq!(r.message.text(), "Checking both.");
    assert_eq!(
        r.message.tool_calls(),
        vec![
            (
                "tooluse_a".into(),
                "top_song".into(),
                json!({"sign": "WZPZ"})
            ),
            (
                "tooluse_b".into(),
                "top_song".into(),
                json!({"sign": "WKRP"})
            ),
        ]
    );
}

/// The response shape of the Converse API reference (API_runtime_Converse.html, Response
/// Syntax) and of the user guide's example answer.
#[test]
fn golden_response() {
    let body = br#"{
            "output": {"message": {"role": "assistant", "content": [
                {"text": "Why don't scientists trust atoms? Because they make up everything!"}
            ]}},
            "stopReason": "end_turn",
            "usage": {"inputTokens": 22, "outputTokens": 16, "totalTokens": 38, "cacheReadInputTokens": 4, "cacheWriteInputTokens": 9},
            "metrics": {"latencyMs": 740}
        }"#;
    let r = ModelConfiguration::new(&BedrockConverse, "m")
        .extract(body)
        .unwrap();
    assert_eq!(
        r.message.text(),
        "Why don't scientists trust atoms? Because they make up everything!"
    );
    assert_eq!(
        r.usage,
        Some(Usage {
            // 22 uncached + 4 read + 9 written.
            input_tokens: 35,
            output_tokens: 16,
            cache_read_tokens: Some(4),
            cache_write_tokens: Some(9),
            reasoning_tokens: None,
        })
    );
    assert_eq!(r.finish_reason.as_deref(), Some("end_turn"));

    let tool = br#"{"output":{"message":{"role":"assistant","content":[{"text":"Let me look."},{"toolUse":{"toolUseId":"tooluse_kZJMlvQmRJ6eAyJE5GIl7Q","name":"top_song","input":{"sign":"WZPZ"}}}]}},"stopReason":"tool_use","usage":{"inputTokens":375,"outputTokens":75,"totalTokens":450}}"#;
    let r = ModelConfiguration::new(&BedrockConverse, "m")
        .extract(tool)
        .unwrap();
    assert_eq!(r.message.text(), "Let me look.");
    assert!(
        matches!(&r.message.content[1], Part::ToolCall { name, arguments, .. } if name == "top_song" && arguments["sign"] == "WZPZ")
    );

    let e = ModelConfiguration::new(&BedrockConverse, "m")
        .extract(br#"{"message":"The provided model identifier is invalid."}"#)
        .unwrap_err();
    assert_eq!(e.message, "The provided model identifier is invalid.");
}

/// A ConverseStream answer as its events (API_runtime_ConverseStreamOutput.html and the
/// event types it links: MessageStartEvent, ContentBlockDeltaEvent, MessageStopEvent,
/// ConverseStreamMetadataEvent).
#[test]
fn golden_stream_and_a_cut_one() {
    let events = answer(
        vec![
            text_block(0, &["Hello", " there"]),
            tool_use_block(1, "tooluse_1", &["{\"sign\":", "\"WZPZ\"}"]),
        ],
        r#"{"usage":{"inputTokens":12,"outputTokens":7,"totalTokens":19},"metrics":{"latencyMs":321}}"#,
    );
    let m = ModelConfiguration::new(&BedrockConverse, "m");
    let mut d = m.decoder();
    let mut deltas = Vec::new();
    for e in &events {
        deltas.extend(d.feed(e).unwrap());
    }
    assert_eq!(deltas, vec!["Hello", " there"]);
    let r = d.finish().unwrap();
    assert_eq!(r.message.text(), "Hello there");
    assert_eq!(r.finish_reason.as_deref(), Some("tool_use"));
    assert_eq!(r.usage.unwrap().output_tokens, 7);
    assert!(
        matches!(&r.message.content[1], Part::ToolCall { id, arguments, .. } if id == "tooluse_1" && arguments["sign"] == "WZPZ")
    );

    // Cut before `metadata`, the terminal event.
    let mut cut = m.decoder();
    for e in &events[..9] {
        cut.feed(e).unwrap();
    }
    let e = cut.finish().unwrap_err();
    assert_mentions(&e, "ended before the reply was complete");

    let mut bad = m.decoder();
    assert!(bad
        .feed(&event("contentBlockDelta", "{\"delta\":"))
        .is_err());
    let e = bad
        .feed(&event(
            "validationException",
            r#"{"message":"Malformed input request"}"#,
        ))
        .unwrap_err();
    assert_eq!(
        e.message,
        "the stream stopped with validationException: Malformed input request"
    );
}

// https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ReasoningContentBlock.html
// and ReasoningContentBlockDelta: reasoning text and its signature stream in deltas; the
// signed reasoning goes back before the toolUse of the same turn, nowhere else.
#[test]
fn reasoning_content_streams_and_goes_back_with_tool_use() {
    let reasoning = [
        json!({"reasoningContent": {"text": "The user wants "}}),
        json!({"reasoningContent": {"text": "a song."}}),
        json!({"reasoningContent": {"signature": "ErcBCkgIAhABGAIiQ"}}),
    ];
    let mut thinking: Vec<StreamEvent> = reasoning.into_iter().map(|r| delta(0, r)).collect();
    thinking.push(block_stop(0));
    let events = answer(
        vec![
            thinking,
            tool_use_block(1, "tooluse_1", &["{\"sign\":\"WZPZ\"}"]),
        ],
        r#"{"usage":{"inputTokens":12,"outputTokens":7}}"#,
    );
    let m = ModelConfiguration::new(&BedrockConverse, "m");
    let mut d = m.decoder();
    let mut reasoning = Vec::new();
    for e in &events {
        assert!(d.feed(e).unwrap().is_empty());
        reasoning.extend(d.take_reasoning_deltas());
    }
    assert_eq!(reasoning, vec!["The user wants ", "a song."]);
    let r = d.finish().unwrap();
    assert_eq!(
        r.message.content[0],
        Part::reasoning("The user wants a song.", Some("ErcBCkgIAhABGAIiQ".into()))
    );
    let messages = [
        Message::user("Top song?"),
        r.message,
        answered("tooluse_1", "Elemental Hotel"),
    ];
    let body = m.prepare_request(&messages, false).unwrap().body;
    assert_eq!(
        body["messages"][1]["content"],
        json!([
            {"reasoningContent": {"reasoningText": {"text": "The user wants a song.", "signature": "ErcBCkgIAhABGAIiQ"}}},
            {"toolUse": {"toolUseId": "tooluse_1", "name": "top_song", "input": {"sign": "WZPZ"}}}
        ])
    );
    // A whole answer: reasoning text and redacted content; without a tool use, none of it
    // goes back.
    let body = br#"{"output":{"message":{"role":"assistant","content":[
            {"reasoningContent":{"reasoningText":{"text":"Easy.","signature":"sig"}}},
            {"reasoningContent":{"redactedContent":"ZW5j"}},
            {"text":"4"}]}},"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":1}}"#;
    let r = m.extract(body).unwrap();
    assert_eq!(r.message.reasoning(), "Easy.");
    assert!(matches!(
        &r.message.content[1],
        Part::Reasoning { redacted: true, .. }
    ));
    assert_eq!(r.message.content[2], Part::text("4"));
    let body = m
        .prepare_request(&[Message::user("2+2"), r.message], false)
        .unwrap()
        .body;
    assert_eq!(body["messages"][1]["content"], json!([{"text": "4"}]));
}
