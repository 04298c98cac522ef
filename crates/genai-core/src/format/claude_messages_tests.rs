//! Tests of the `claude-messages` format: golden requests, the documented responses and streams,
//! tool use, thinking and its signatures.

use super::*;
use crate::format::testing::*;
use crate::format::ModelConfiguration;

// https://docs.anthropic.com/en/api/messages: the documented minimal request.
#[test]
fn golden_basic_request() {
    let mut m = ModelConfiguration::new(&ClaudeMessages, "claude-sonnet-4-5");
    m.set_parameter("max_tokens", json!(1024)).unwrap();
    let req = m
        .prepare_request(&[Message::user("Hello, world")], false)
        .unwrap();
    assert_eq!(
        req.body,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 1024,
            "messages": [{"role": "user", "content": "Hello, world"}]
        })
    );
    assert!(!req.stream);
    assert_eq!(req.format, FORMAT);
}

#[test]
fn defaults_system_parameters_and_stream() {
    let mut m = ModelConfiguration::new(&ClaudeMessages, "claude-sonnet-4-5");
    m.set_parameter("Temperature", json!("0.5")).unwrap();
    m.set_parameter("TOP_K", json!(40)).unwrap();
    m.set_parameter("top_p", json!(0.9)).unwrap();
    m.set_parameter("stop_sequences", json!("END")).unwrap();
    m.set_parameter("anthropic_version", json!("2023-06-01"))
        .unwrap();
    m.set_parameter("metadata", json!("{\"user_id\":\"U-1\"}"))
        .unwrap();
    let req = m
        .prepare_request(
            &[
                Message::system("You are a pirate."),
                Message::user("Hi"),
                Message::user("Who are you?"),
                Message::assistant("Arr,"),
            ],
            true,
        )
        .unwrap();
    assert_eq!(
        req.body,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 4096,
            "system": "You are a pirate.",
            "messages": [
                {"role": "user", "content": [
                    {"type": "text", "text": "Hi"},
                    {"type": "text", "text": "Who are you?"}
                ]},
                {"role": "assistant", "content": "Arr,"}
            ],
            "temperature": 0.5,
            "top_k": 40,
            "top_p": 0.9,
            "stop_sequences": ["END"],
            "anthropic_version": "2023-06-01",
            "metadata": {"user_id": "U-1"},
            "stream": true
        })
    );
    // Values keep their case; out-of-range values are refused with the accepted names.
    let e = m.set_parameter("temperature", json!(1.5)).unwrap_err();
    assert_mentions(&e, "outside");
    let e = m.set_parameter("stop", json!("x")).unwrap_err();
    assert_mentions(&e, "stop_sequences");
}

#[test]
fn thinking_takes_a_budget_false_or_the_object_and_leaves_room_for_the_reply() {
    let mut m = ModelConfiguration::new(&ClaudeMessages, "claude-sonnet-4-5");
    m.set_parameter("thinking", json!("2048")).unwrap();
    let body = m
        .prepare_request(&[Message::user("Hi")], false)
        .unwrap()
        .body;
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert_eq!(body["max_tokens"], 2048 + DEFAULT_MAX_TOKENS);
    m.set_parameter("max_tokens", json!(2000)).unwrap();
    let e = m
        .prepare_request(&[Message::user("Hi")], false)
        .unwrap_err();
    assert_mentions(&e, "must be more than the thinking budget (2048)");
    m.set_parameter("max_tokens", json!(8000)).unwrap();
    assert_eq!(
        m.prepare_request(&[Message::user("Hi")], false)
            .unwrap()
            .body["max_tokens"],
        8000
    );
    m.set_parameter("Thinking", json!(false)).unwrap();
    assert_eq!(m.parameters["thinking"], json!({"type": "disabled"}));
    m.set_parameter(
        "thinking",
        json!("{\"type\":\"enabled\",\"budget_tokens\":4000}"),
    )
    .unwrap();
    assert_eq!(m.parameters["thinking"]["budget_tokens"], 4000);
    for bad in [
        json!(100),
        json!({"budget_tokens": 2048}),
        json!("lots"),
        json!([1]),
    ] {
        let e = m.set_parameter("thinking", bad.clone()).unwrap_err();
        assert_mentions(&e, "parameter `thinking`");
    }
    m.set_parameter("thinking", Value::Null).unwrap();
    assert!(!m.parameters.contains_key("thinking"));
}

// https://docs.anthropic.com/en/docs/build-with-claude/vision: base64 and URL sources.
#[test]
fn golden_image_request() {
    let m = ModelConfiguration::new(&ClaudeMessages, "claude-sonnet-4-5");
    let msg = said(Role::User, vec![
        image("image/jpeg", "/9j/4AAQSkZJRg=="),
        image_url("https://upload.wikimedia.org/wikipedia/commons/a/a7/Camponotus_flavomarginatus_ant.jpg"),
        image_url("data:image/png;base64,iVBORw0KGgo="),
        Part::text("Describe this image."),
    ]);
    let body = m.prepare_request(&[msg], false).unwrap().body;
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4AAQSkZJRg=="}},
            {"type": "image", "source": {"type": "url", "url": "https://upload.wikimedia.org/wikipedia/commons/a/a7/Camponotus_flavomarginatus_ant.jpg"}},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
            {"type": "text", "text": "Describe this image."}
        ]}])
    );
    assert_eq!(m.images(), ImageSupport::ALL);
    let bad = said(
        Role::User,
        vec![Part::Image {
            url: None,
            media_type: None,
            data: Some("AAAA".into()),
        }],
    );
    assert!(m.prepare_request(&[bad], false).is_err());
}

// https://docs.anthropic.com/en/docs/build-with-claude/tool-use: a tool_use turn and the
// tool_result that answers it.
#[test]
fn golden_tool_round_trip() {
    let m = ModelConfiguration::new(&ClaudeMessages, "claude-sonnet-4-5");
    let messages = [
        Message::user("What's the weather like in San Francisco?"),
        said(
            Role::Assistant,
            vec![
                Part::text("I'll check the weather."),
                call(
                    "toolu_01A09q90qw90lq917835lq9",
                    "get_weather",
                    json!({"location": "San Francisco, CA", "unit": "celsius"}),
                ),
            ],
        ),
        Message {
            role: Role::Tool,
            content: vec![result(
                "toolu_01A09q90qw90lq917835lq9",
                vec![Part::text("15 degrees")],
                false,
            )],
            from: Some("get_weather".into()),
        },
        Message::user("And tomorrow?"),
    ];
    let body = m.prepare_request(&messages, false).unwrap().body;
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": "What's the weather like in San Francisco?"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "I'll check the weather."},
                {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather",
                 "input": {"location": "San Francisco, CA", "unit": "celsius"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01A09q90qw90lq917835lq9",
                 "content": [{"type": "text", "text": "15 degrees"}]},
                {"type": "text", "text": "And tomorrow?"}
            ]}
        ])
    );
}

// https://docs.anthropic.com/en/api/messages: the documented response.
#[test]
fn extracts_the_documented_response() {
    let body = br#"{
          "content": [{"text": "Hi! My name is Claude.", "type": "text"}],
          "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF",
          "model": "claude-sonnet-4-5-20250929",
          "role": "assistant",
          "stop_reason": "end_turn",
          "stop_sequence": null,
          "type": "message",
          "usage": {"input_tokens": 2095, "output_tokens": 503,
                    "cache_creation_input_tokens": 10, "cache_read_input_tokens": 2000}
        }"#;
    let r = ModelConfiguration::new(&ClaudeMessages, "m")
        .extract(body)
        .unwrap();
    assert_eq!(r.message.text(), "Hi! My name is Claude.");
    assert_eq!(r.message.role, Role::Assistant);
    assert_eq!(
        r.usage,
        Some(Usage {
            // 2095 uncached + 2000 read + 10 written.
            input_tokens: 4105,
            output_tokens: 503,
            cache_read_tokens: Some(2000),
            cache_write_tokens: Some(10),
            reasoning_tokens: None,
        })
    );
    assert_eq!(r.finish_reason.as_deref(), Some("end_turn"));
    assert_eq!(r.model.as_deref(), Some("claude-sonnet-4-5-20250929"));
}

#[test]
fn extracts_tool_use_and_errors() {
    let body = br#"{"id":"msg_01Aq9w938a90dw8q","model":"claude-sonnet-4-5","stop_reason":"tool_use","role":"assistant","type":"message",
          "content":[{"type":"text","text":"<thinking>I need to use get_weather.</thinking>"},
                     {"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"get_weather","input":{"location":"San Francisco, CA","unit":"celsius"}}],
          "usage":{"input_tokens":10,"output_tokens":20}}"#;
    let r = ModelConfiguration::new(&ClaudeMessages, "m")
        .extract(body)
        .unwrap();
    assert_eq!(r.finish_reason.as_deref(), Some("tool_use"));
    assert_eq!(
        r.message.content[1],
        call(
            "toolu_01A09q90qw90lq917835lq9",
            "get_weather",
            json!({"location": "San Francisco, CA", "unit": "celsius"})
        )
    );
    // https://docs.anthropic.com/en/api/errors
    let e = ModelConfiguration::new(&ClaudeMessages, "m")
        .extract(br#"{"type":"error","error":{"type":"not_found_error","message":"The requested resource could not be found."}}"#)
        .unwrap_err();
    assert_eq!(
        e.message,
        "not_found_error: The requested resource could not be found."
    );
    assert!(ModelConfiguration::new(&ClaudeMessages, "m")
        .extract(b"{oops")
        .is_err());
}

// https://docs.anthropic.com/en/docs/build-with-claude/streaming: "Basic streaming request".
const DOC_STREAM: &str = include_str!("testdata/claude-basic-stream.sse");

#[test]
fn decodes_the_documented_stream() {
    let mut d = ModelConfiguration::new(&ClaudeMessages, "m").decoder();
    assert_eq!(feed_sse(&mut d, DOC_STREAM).unwrap(), vec!["Hello", "!"]);
    let r = d.finish().unwrap();
    assert_eq!(r.message.text(), "Hello!");
    assert_eq!(r.finish_reason.as_deref(), Some("end_turn"));
    assert_eq!(r.model.as_deref(), Some("claude-opus-4-20250514"));
    let u = r.usage.unwrap();
    assert_eq!((u.input_tokens, u.output_tokens), (25, 15));
}

#[test]
fn the_stop_sequence_it_stopped_at_is_kept_whole_and_streamed() {
    let body = br#"{"id":"msg_1","type":"message","role":"assistant","model":"m",
          "content":[{"type":"text","text":"One two "}],"stop_reason":"stop_sequence",
          "stop_sequence":"STOP","usage":{"input_tokens":3,"output_tokens":2}}"#;
    let r = ModelConfiguration::new(&ClaudeMessages, "m")
        .extract(body)
        .unwrap();
    assert_eq!(
        (r.finish_reason.as_deref(), r.stop_sequence.as_deref()),
        (Some("stop_sequence"), Some("STOP"))
    );
    let stopped = DOC_STREAM.replace(
        r#""stop_reason": "end_turn", "stop_sequence":null"#,
        r#""stop_reason": "stop_sequence", "stop_sequence": "STOP""#,
    );
    assert_ne!(stopped, DOC_STREAM);
    let mut d = ModelConfiguration::new(&ClaudeMessages, "m").decoder();
    feed_sse(&mut d, &stopped).unwrap();
    let r = d.finish().unwrap();
    assert_eq!(
        (r.finish_reason.as_deref(), r.stop_sequence.as_deref()),
        (Some("stop_sequence"), Some("STOP"))
    );
    // The documented stream, which ended at its end, names none.
    let mut d = ModelConfiguration::new(&ClaudeMessages, "m").decoder();
    feed_sse(&mut d, DOC_STREAM).unwrap();
    assert_eq!(d.finish().unwrap().stop_sequence, None);
}

#[test]
fn a_stream_without_message_stop_is_cut() {
    let cut = DOC_STREAM.split("event: message_delta").next().unwrap();
    let mut d = ModelConfiguration::new(&ClaudeMessages, "m").decoder();
    assert_eq!(feed_sse(&mut d, cut).unwrap(), vec!["Hello", "!"]);
    let e = d.finish().unwrap_err();
    assert!(e.message.contains("ended before the reply was complete"));
    // Even with the stop reason, the terminal event is message_stop.
    let almost = DOC_STREAM.split("event: message_stop").next().unwrap();
    let mut d = ModelConfiguration::new(&ClaudeMessages, "m").decoder();
    feed_sse(&mut d, almost).unwrap();
    assert!(d.finish().is_err());
}

// https://docs.anthropic.com/en/docs/build-with-claude/streaming: "Streaming request with
// tool use" (abridged), with the cache counts of prompt caching in message_start.
#[test]
fn decodes_tool_use_streams_and_cache_usage() {
    let sse = include_str!("testdata/claude-tool-use-stream.sse");
    let mut d = ModelConfiguration::new(&ClaudeMessages, "m").decoder();
    assert_eq!(
        feed_sse(&mut d, sse).unwrap(),
        vec!["Okay, let's check the weather."]
    );
    let r = d.finish().unwrap();
    assert_eq!(r.finish_reason.as_deref(), Some("tool_use"));
    assert_eq!(
        r.message.content[1],
        call(
            "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
            "get_weather",
            json!({"location": "San Francisco, CA", "unit": "fahrenheit"})
        )
    );
    assert_eq!(
        r.usage,
        Some(Usage {
            // 472 uncached + 300 read + 100 written.
            input_tokens: 872,
            output_tokens: 89,
            cache_read_tokens: Some(300),
            cache_write_tokens: Some(100),
            reasoning_tokens: None,
        })
    );
}

// https://docs.anthropic.com/en/docs/build-with-claude/streaming: "Error events".
#[test]
fn error_events_and_bad_json_are_errors() {
    let mut d = ModelConfiguration::new(&ClaudeMessages, "m").decoder();
    feed_sse(
        &mut d,
        DOC_STREAM
            .split("event: content_block_stop")
            .next()
            .unwrap(),
    )
    .unwrap();
    let e = feed_sse(
        &mut d,
        "event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n",
    )
    .unwrap_err();
    assert_eq!(
        e.message,
        "the stream reported an error: overloaded_error: Overloaded"
    );
    let mut d = ModelConfiguration::new(&ClaudeMessages, "m").decoder();
    let e = d
        .feed(&StreamEvent::data(
            r#"{"type":"error","error":{"type":"api_error","message":"Internal server error"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}"#,
        ))
        .unwrap_err();
    assert_eq!(
        e.message,
        "the stream reported an error: api_error: Internal server error [request req_011CSHoEeqs5C35K2UUqR7Fy]"
    );
    let mut d = ModelConfiguration::new(&ClaudeMessages, "m").decoder();
    let e = d
        .feed(&StreamEvent {
            event: Some("content_block_delta".into()),
            data: "{\"type\": \"content_bl".into(),
        })
        .unwrap_err();
    assert_mentions(&e, "invalid JSON");
}

// https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking: "Streaming
// thinking" (abridged): a thinking block, its signature_delta, then the text.
const THINKING_STREAM: &str = include_str!("testdata/claude-thinking-stream.sse");

#[test]
fn thinking_streams_apart_with_its_signature_and_redacted_blocks() {
    let mut d = ModelConfiguration::new(&ClaudeMessages, "m").decoder();
    let mut reasoning = Vec::new();
    let mut text = Vec::new();
    let mut signatures = Vec::new();
    for chunk in THINKING_STREAM.split("\n\n") {
        text.extend(feed_sse(&mut d, &format!("{chunk}\n\n")).unwrap());
        reasoning.extend(d.take_reasoning_deltas());
        // The signature is handed over when it arrives, before the text.
        signatures.extend(d.take_signature_deltas());
        if !text.is_empty() {
            assert!(!signatures.is_empty(), "the text came before the signature");
        }
    }
    assert_eq!(text, vec!["27 * 453 = 12,231"]);
    assert_eq!(reasoning.len(), 2);
    assert_eq!(
        signatures,
        vec!["EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"]
    );
    let r = d.finish().unwrap();
    assert_eq!(r.message.text(), "27 * 453 = 12,231");
    assert_eq!(
        r.message.content[0],
        Part::reasoning(
            "Let me solve this step by step:\n\n1. First break down 27 * 453\n2. 453 = 400 + 50 + 3",
            Some("EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds".into())
        )
    );
    assert_eq!(
        r.message.content[1],
        Part::Reasoning {
            text: String::new(),
            signature: Some("EmwKAhgBEgy3va3pzix".into()),
            redacted: true
        }
    );
}

#[test]
fn extracts_thinking_and_redacted_thinking() {
    let body = br#"{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","stop_reason":"tool_use",
          "content":[{"type":"thinking","thinking":"I should look it up.","signature":"WaUjzkypQ2mUEVM36O2T"},
                     {"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix"},
                     {"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"location":"Paris"}}],
          "usage":{"input_tokens":10,"output_tokens":20}}"#;
    let r = ModelConfiguration::new(&ClaudeMessages, "m")
        .extract(body)
        .unwrap();
    assert_eq!(r.message.reasoning(), "I should look it up.");
    assert!(
        matches!(&r.message.content[1], Part::Reasoning { redacted: true, signature: Some(s), .. } if s == "EmwKAhgBEgy3va3pzix")
    );
    assert_eq!(r.message.text(), "");
}

// https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking: "Extended thinking
// with tool use": the thinking blocks go back, unchanged and first, in the assistant turn
// whose tool_use the next user turn answers; elsewhere they are left out.
#[test]
fn signed_thinking_goes_back_before_tool_use_and_nowhere_else() {
    let m = ModelConfiguration::new(&ClaudeMessages, "claude-sonnet-4-5");
    let messages = [
        Message::user("Hi"),
        said(
            Role::Assistant,
            vec![
                Part::reasoning("Greet.", Some("sig0".into())),
                Part::text("Hello!"),
            ],
        ),
        Message::user("Weather in Paris?"),
        said(
            Role::Assistant,
            vec![
                Part::reasoning("I should look it up.", Some("sig1".into())),
                Part::Reasoning {
                    text: String::new(),
                    signature: Some("enc".into()),
                    redacted: true,
                },
                Part::reasoning("unsigned, from another model", None),
                call("toolu_01", "get_weather", json!({"location": "Paris"})),
            ],
        ),
        Message {
            role: Role::Tool,
            content: vec![result("toolu_01", vec![Part::text("18°C")], false)],
            from: None,
        },
    ];
    let body = m.prepare_request(&messages, false).unwrap().body;
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello!"},
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "I should look it up.", "signature": "sig1"},
                {"type": "redacted_thinking", "data": "enc"},
                {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"location": "Paris"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01", "content": [{"type": "text", "text": "18°C"}]}
            ]}
        ])
    );
}

#[test]
fn events_without_sse_names_decode_by_their_type() {
    // Bedrock's event stream carries the same JSON without `event:` lines.
    let mut d = ModelConfiguration::new(&ClaudeMessages, "m").decoder();
    for line in DOC_STREAM.lines().filter_map(|l| l.strip_prefix("data: ")) {
        d.feed(&StreamEvent::data(line)).unwrap();
    }
    assert_eq!(d.finish().unwrap().message.text(), "Hello!");
}
