//! Tests of the `ReplyBuilder`: calls gathered by key, the order of blocks, and reasoning with
//! its signature.

use super::*;
use crate::format::testing::*;

#[test]
fn calls_come_together_by_key_after_the_text() {
    let mut r = ReplyBuilder::new();
    r.text("Hel");
    r.call_piece(1, Some("b"), Some("two"), "{\"x\":");
    r.call_piece(0, Some("a"), Some("one"), "");
    r.text("lo");
    r.call_piece(1, None, None, "1}");
    assert_eq!(r.take_text_deltas(), vec!["Hel", "lo"]);
    assert_eq!(r.take_tool_call_deltas().len(), 3);
    assert!(r.take_tool_call_deltas().is_empty());
    let e = r.finish().unwrap_err();
    assert!(e.message.contains("ended before the reply was complete"));
}

#[test]
fn a_complete_reply_keeps_its_order_and_parses_arguments() {
    let mut r = ReplyBuilder::new();
    r.text("Hi");
    r.call_piece(1, Some("b"), Some("two"), "{\"x\":1}");
    r.call_piece(0, Some("a"), Some("one"), "not json");
    r.complete();
    let reply = r.finish().unwrap();
    let calls = reply.message.tool_calls();
    assert_eq!(reply.message.text(), "Hi");
    assert_eq!(calls[0].2, Value::from("not json"));
    assert_eq!(calls[1].2, json!({"x": 1}));

    let mut strict = ReplyBuilder::with_strict_arguments();
    strict.start_call(0, "a", "one", None);
    strict.call_piece(0, None, None, "{oops");
    strict.complete();
    let e = strict.finish().unwrap_err();
    assert_mentions(&e, "tool call one are not JSON");
}

#[test]
fn blocks_interleave_text_and_calls_and_skip_others() {
    let mut r = ReplyBuilder::new();
    r.start_text(0, "A");
    r.skip_block(1);
    r.block_text(1, "hidden");
    r.start_call(2, "id", "f", Some(json!({"k": 1})));
    r.block_text(3, "B");
    r.whole_call("w".into(), "g".into(), json!([1]), Some("sig".into()));
    assert_eq!(r.calls(), 2);
    assert_eq!(r.take_text_deltas(), vec!["A", "B"]);
    let content = r.into_reply().unwrap().message.content;
    assert_eq!(content.len(), 4);
    assert_eq!(content[1], call("id", "f", json!({"k": 1})));
    assert_eq!(content[2], Part::text("B"));
    assert!(matches!(&content[3], Part::ToolCall { signature: Some(s), .. } if s == "sig"));
}

#[test]
fn reasoning_keeps_its_place_its_signature_and_its_own_deltas() {
    let mut r = ReplyBuilder::new();
    r.start_reasoning(0, "Let", None);
    r.block_reasoning(0, " me think.");
    r.block_signature(0, "Eq");
    r.block_signature(0, "QB");
    r.redacted_reasoning(1, "enc");
    r.start_text(2, "4");
    assert_eq!(r.take_reasoning_deltas(), vec!["Let", " me think."]);
    assert_eq!(r.take_text_deltas(), vec!["4"]);
    assert!(!r.is_empty());
    let content = r.into_reply().unwrap().message.content;
    assert_eq!(
        content[0],
        Part::reasoning("Let me think.", Some("EqQB".into()))
    );
    assert!(
        matches!(&content[1], Part::Reasoning { redacted: true, signature: Some(s), .. } if s == "enc")
    );
    assert_eq!(content[2], Part::text("4"));

    // Reasoning outside blocks comes before the text.
    let mut r = ReplyBuilder::new();
    r.text("answer");
    r.reasoning("thought");
    assert!(!r.is_empty());
    let content = r.into_reply().unwrap().message.content;
    assert_eq!(
        content,
        vec![Part::reasoning("thought", None), Part::text("answer")]
    );

    // Reasoning alone is no answer.
    let mut r = ReplyBuilder::new();
    r.reasoning("thought");
    assert!(r.is_empty());
}
