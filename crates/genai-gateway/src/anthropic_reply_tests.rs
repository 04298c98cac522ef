//! Tests of the Messages API's replies, whole and streamed ([`super`]).

use super::*;
use serde_json::json;

fn parse(frames: &[Bytes]) -> Vec<(String, Value)> {
    frames
        .iter()
        .map(|f| {
            let text = std::str::from_utf8(f).unwrap();
            let (head, data) = text.trim_end().split_once('\n').unwrap();
            let name = head.strip_prefix("event: ").unwrap().to_string();
            let data = data.strip_prefix("data: ").unwrap();
            (name, serde_json::from_str(data).unwrap())
        })
        .collect()
}

#[test]
fn a_stream_of_thinking_text_and_a_call_is_three_blocks_with_their_indices() {
    let mut e = Events::new("msg_1".into(), "m".into());
    let mut frames = e.start();
    for p in [
        Piece::Reasoning("hmm".into()),
        Piece::Text("Let me look.".into()),
        Piece::Call(ToolCallDelta {
            index: 7,
            id: Some("call_1".into()),
            name: Some("read".into()),
            arguments: "{\"path\":".into(),
        }),
        Piece::Call(ToolCallDelta {
            index: 7,
            arguments: "\"a\"}".into(),
            ..ToolCallDelta::default()
        }),
    ] {
        frames.extend(e.piece(p));
    }
    let reply = ModelReply::assistant(
        vec![
            Part::reasoning("hmm", None),
            Part::text("Let me look."),
            Part::ToolCall {
                id: "call_1".into(),
                name: "read".into(),
                arguments: json!({"path": "a"}),
                signature: None,
            },
        ],
        Some(Usage {
            input_tokens: 10,
            output_tokens: 5,
            cache_read_tokens: Some(4),
            cache_write_tokens: None,
            reasoning_tokens: None,
        }),
        Some("tool_calls".into()),
        None,
    );
    frames.extend(e.piece(Piece::Done(Ok(reply))));
    let events = parse(&frames);
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(events[2].1["content_block"]["type"], "thinking");
    assert_eq!(events[3].1["delta"]["type"], "thinking_delta");
    assert_eq!(events[6].1["index"], 1);
    assert_eq!(events[8].1["content_block"]["id"], "call_1");
    assert_eq!(events[8].1["index"], 2);
    assert_eq!(events[10].1["delta"]["partial_json"], "\"a\"}");
    let delta = &events[12].1;
    assert_eq!(delta["delta"]["stop_reason"], "tool_use");
    assert_eq!(delta["usage"]["input_tokens"], 6);
    assert_eq!(delta["usage"]["cache_read_input_tokens"], 4);
    assert_eq!(delta["usage"]["output_tokens"], 5);
}

#[test]
fn a_whole_message_carries_signed_and_redacted_thinking_and_the_stop_reason() {
    let e = Events::new("msg_1".into(), "m".into());
    let reply = ModelReply::assistant(
        vec![
            Part::reasoning("hmm", Some("sig".into())),
            Part::Reasoning {
                text: String::new(),
                signature: Some("enc".into()),
                redacted: true,
            },
            Part::text("Hi."),
        ],
        None,
        Some("max_tokens".into()),
        None,
    );
    let v: Value = serde_json::from_slice(&e.body(&reply)).unwrap();
    assert_eq!(
        v["content"],
        json!([
            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
            {"type": "redacted_thinking", "data": "enc"},
            {"type": "text", "text": "Hi."}
        ])
    );
    assert_eq!(v["stop_reason"], "max_tokens");
    assert_eq!(v["usage"]["output_tokens"], 0);
}

#[test]
fn the_events_are_written_byte_for_byte_as_the_api_writes_them() {
    let mut e = Events::new("msg_1".into(), "m".into());
    let mut frames = e.start();
    frames.extend(e.piece(Piece::Text("Hi".into())));
    let text: Vec<String> = frames
        .iter()
        .map(|f| String::from_utf8(f.to_vec()).unwrap())
        .collect();
    assert_eq!(
        text,
        [
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":0,\"output_tokens\":0}}}\n\n",
            "event: ping\ndata: {\"type\":\"ping\"}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n",
        ]
    );
    let reply = ModelReply::assistant(
        vec![
            Part::text("Hi"),
            Part::ToolCall {
                id: "toolu_1".into(),
                name: "read".into(),
                arguments: json!({"path": "a"}),
                signature: None,
            },
        ],
        None,
        Some("tool_calls".into()),
        None,
    );
    assert_eq!(
        std::str::from_utf8(&e.whole(&reply)).unwrap(),
        "{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"Hi\"},{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"read\",\"input\":{\"path\":\"a\"}}],\"stop_reason\":\"tool_use\",\"stop_sequence\":null,\"usage\":{\"input_tokens\":0,\"output_tokens\":0,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0}}"
    );
}
