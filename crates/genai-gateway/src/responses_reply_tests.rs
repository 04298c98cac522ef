//! Tests of the Responses API's replies, whole and streamed ([`super`]).

use super::*;
use genai_core::message::Usage;
use serde_json::json;

fn parse(frames: &[Bytes]) -> Vec<(String, Value)> {
    frames
        .iter()
        .map(|f| {
            let text = std::str::from_utf8(f).unwrap();
            let (head, data) = text.trim_end().split_once('\n').unwrap();
            let name = head.strip_prefix("event: ").unwrap().to_string();
            let data: Value = serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
            assert_eq!(data["type"], name.as_str());
            (name, data)
        })
        .collect()
}

fn reply(parts: Vec<Part>, finish: &str) -> ModelReply {
    let usage = Usage {
        input_tokens: 10,
        output_tokens: 5,
        cache_read_tokens: Some(4),
        cache_write_tokens: None,
        reasoning_tokens: None,
    };
    ModelReply::assistant(parts, Some(usage), Some(finish.into()), None)
}

#[test]
fn a_stream_of_reasoning_text_and_a_call_is_three_items_numbered_in_order() {
    let mut e = Events::new("resp_1".into(), 1, Map::new());
    let mut frames = e.start();
    for p in [
        Piece::Reasoning("hmm".into()),
        Piece::Signature("sig".into()),
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
    let call = Part::ToolCall {
        id: "call_1".into(),
        name: "read".into(),
        arguments: json!({"path": "a"}),
        signature: None,
    };
    let parts = vec![
        Part::reasoning("hmm", Some("sig".into())),
        Part::text("Let me look."),
        call,
    ];
    frames.extend(e.piece(Piece::Done(Ok(reply(parts, "tool_calls")))));
    let events = parse(&frames);
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.reasoning_summary_part.added",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.done",
            "response.reasoning_summary_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    for (i, (_, data)) in events.iter().enumerate() {
        assert_eq!(data["sequence_number"], i);
    }
    assert_eq!(events[7].1["item"]["encrypted_content"], "sig");
    assert_eq!(events[13].1["output_index"], 1);
    let call = &events[18].1["item"];
    assert_eq!(call["call_id"], "call_1");
    assert_eq!(call["arguments"], "{\"path\":\"a\"}");
    let done = &events[19].1["response"];
    assert_eq!(done["status"], "completed");
    assert_eq!(done["output"].as_array().unwrap().len(), 3);
    assert_eq!(done["output"][1]["content"][0]["text"], "Let me look.");
    assert_eq!(done["usage"]["input_tokens_details"]["cached_tokens"], 4);
    assert_eq!(done["usage"]["total_tokens"], 15);
}

#[test]
fn a_whole_response_at_its_token_limit_is_incomplete_with_the_reason() {
    let e = Events::new("resp_1".into(), 1, Map::new());
    let v: Value =
        serde_json::from_slice(&e.body(&reply(vec![Part::text("Cut sh")], "length"))).unwrap();
    assert_eq!(v["object"], "response");
    assert_eq!(v["status"], "incomplete");
    assert_eq!(v["incomplete_details"]["reason"], "max_output_tokens");
    assert_eq!(v["output"][0]["type"], "message");
    assert_eq!(v["output"][0]["content"][0]["text"], "Cut sh");
    assert!(v["output"][0]["id"].as_str().unwrap().starts_with("msg_"));
}

#[test]
fn the_events_are_written_byte_for_byte_as_the_api_writes_them() {
    let mut echo = Map::new();
    echo.insert("model".into(), json!("m"));
    let mut e = Events::new("resp_1".into(), 1, echo);
    let mut frames = e.start();
    frames.extend(e.piece(Piece::Text("Hi".into())));
    let whole = e.whole(&reply(vec![Part::text("Hi")], "stop"));
    let text: Vec<String> = frames
        .iter()
        .map(|f| String::from_utf8(f.to_vec()).unwrap())
        .collect();
    let response = r#"{"id":"resp_1","object":"response","created_at":1,"status":"in_progress","background":false,"error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"metadata":{},"model":"m","output":[],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"service_tier":"default","store":false,"temperature":null,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":null,"truncation":"disabled","usage":null,"user":null}"#;
    assert_eq!(
        text[0],
        format!("event: response.created\ndata: {{\"response\":{response},\"type\":\"response.created\",\"sequence_number\":0}}\n\n")
    );
    assert_eq!(
        text[1],
        format!("event: response.in_progress\ndata: {{\"response\":{response},\"type\":\"response.in_progress\",\"sequence_number\":1}}\n\n")
    );
    let id = parse(&frames[2..3])[0].1["item"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        text[2..],
        [
            format!("event: response.output_item.added\ndata: {{\"output_index\":0,\"item\":{{\"id\":\"{id}\",\"type\":\"message\",\"status\":\"in_progress\",\"role\":\"assistant\",\"content\":[]}},\"type\":\"response.output_item.added\",\"sequence_number\":2}}\n\n"),
            format!("event: response.content_part.added\ndata: {{\"item_id\":\"{id}\",\"output_index\":0,\"content_index\":0,\"part\":{{\"type\":\"output_text\",\"text\":\"\",\"annotations\":[]}},\"type\":\"response.content_part.added\",\"sequence_number\":3}}\n\n"),
            format!("event: response.output_text.delta\ndata: {{\"item_id\":\"{id}\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hi\",\"logprobs\":[],\"type\":\"response.output_text.delta\",\"sequence_number\":4}}\n\n"),
        ]
    );
    let whole = String::from_utf8(whole.to_vec()).unwrap();
    let msg = whole
        .split("\"id\":\"msg_")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    let expected = response
        .replace("\"in_progress\"", "\"completed\"")
        .replace(
            "\"output\":[]",
            &format!("\"output\":[{{\"id\":\"msg_{msg}\",\"type\":\"message\",\"status\":\"completed\",\"role\":\"assistant\",\"content\":[{{\"type\":\"output_text\",\"text\":\"Hi\",\"annotations\":[],\"logprobs\":[]}}]}}]"),
        )
        .replace(
            "\"usage\":null",
            "\"usage\":{\"input_tokens\":10,\"input_tokens_details\":{\"cached_tokens\":4},\"output_tokens\":5,\"output_tokens_details\":{\"reasoning_tokens\":0},\"total_tokens\":15}",
        );
    assert_eq!(whole, expected);
}
