//! Tests of the message model: parts round-tripping, reasoning, file parts, masked secrets and
//! usage counts.

use super::*;

#[test]
fn reasoning_tokens_add_up_and_are_described_as_part_of_the_output() {
    let thought = Usage {
        input_tokens: 10,
        output_tokens: 30,
        reasoning_tokens: Some(20),
        ..Default::default()
    };
    let plain = Usage {
        input_tokens: 5,
        output_tokens: 2,
        ..Default::default()
    };
    assert_eq!(plain.plus(plain).reasoning_tokens, None);
    let both = thought.plus(plain);
    assert_eq!((both.output_tokens, both.reasoning_tokens), (32, Some(20)));
    assert_eq!(
        both.describe(),
        "usage: 15 input + 32 output (20 reasoning) = 47 tokens"
    );
    assert_eq!(plain.describe(), "usage: 5 input + 2 output = 7 tokens");
    let v = serde_json::to_value(both).unwrap();
    assert_eq!(v["reasoningTokens"], 20, "{v}");
    assert!(serde_json::to_value(plain)
        .unwrap()
        .get("reasoningTokens")
        .is_none());
}

#[test]
fn bare_strings_are_text_parts() {
    let m: Message = serde_json::from_str(r#"{"role":"user","content":["hello"]}"#).unwrap();
    assert_eq!(m.content, vec![Part::text("hello")]);
    let m: Message = serde_json::from_str(r#"{"role":"user","content":"hi"}"#).unwrap();
    assert_eq!(m.text(), "hi");
}

#[test]
fn parts_round_trip() {
    let json = r#"{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"image","mediaType":"image/png","data":"AA=="},{"type":"toolCall","id":"1","name":"f","arguments":{"x":1}},{"type":"toolResult","toolCallId":"1","content":["ok"],"isError":false}]}"#;
    let m: Message = serde_json::from_str(json).unwrap();
    let back = serde_json::to_value(&m).unwrap();
    let again: Message = serde_json::from_value(back).unwrap();
    assert_eq!(m, again);
    assert!(
        matches!(&m.content[3], Part::ToolResult { content, .. } if content == &vec![Part::text("ok")])
    );
}

#[test]
fn reasoning_parts_round_trip_and_stay_out_of_the_text() {
    let json = r#"{"role":"assistant","content":[{"type":"reasoning","text":"Let me think.","signature":"EqQB"},{"type":"reasoning","text":"","signature":"enc","redacted":true},{"type":"text","text":"4"}]}"#;
    let m: Message = serde_json::from_str(json).unwrap();
    assert_eq!(m.text(), "4");
    assert_eq!(m.reasoning(), "Let me think.");
    assert_eq!(
        m.content[0],
        Part::reasoning("Let me think.", Some("EqQB".into()))
    );
    assert!(matches!(
        &m.content[1],
        Part::Reasoning { redacted: true, .. }
    ));
    assert_eq!(serde_json::to_string(&m).unwrap(), json);
}

#[test]
fn a_file_part_becomes_the_text_the_model_reads() {
    let m: Message = serde_json::from_str(
        r#"{"role":"user","content":["Review this.",{"type":"file","name":"src/a.rs","text":"fn a() {}\n"}]}"#,
    )
    .unwrap();
    assert_eq!(
        m.content,
        vec![
            Part::text("Review this."),
            Part::text(crate::file_context::fenced("src/a.rs", "fn a() {}\n"))
        ]
    );
    // A file part without its text is refused, not taken for another part.
    assert!(serde_json::from_str::<Message>(
        r#"{"role":"user","content":[{"type":"file","name":"a.rs"}]}"#
    )
    .is_err());
    // A secret file attached by name is refused, saying how a client sends it on purpose.
    for name in [".env", "conf/server.key", "/home/u/.ssh/id_rsa"] {
        let json = serde_json::json!({"role": "user", "content": [
            {"type": "file", "name": name, "text": "SECRET=1"}
        ]});
        let e = serde_json::from_value::<Message>(json).unwrap_err();
        assert!(e.to_string().contains("holds secrets"), "{name}: {e}");
    }
}

#[test]
fn known_secrets_are_masked_in_every_kind_of_part() {
    crate::redact::remember("sk-message-test-0123456789");
    let mut m = Message {
        role: Role::Assistant,
        content: vec![
            Part::text("key sk-message-test-0123456789"),
            Part::reasoning("I saw sk-message-test-0123456789", Some("sig".into())),
            Part::reasoning("nothing here", Some("kept".into())),
            Part::ToolCall {
                id: "c".into(),
                name: "t".into(),
                arguments: serde_json::json!({"k": ["sk-message-test-0123456789"]}),
                signature: None,
            },
            Part::ToolResult {
                tool_call_id: "c".into(),
                content: vec![Part::text("out sk-message-test-0123456789")],
                is_error: false,
            },
        ],
        from: None,
    };
    m.mask_secrets();
    let json = serde_json::to_string(&m).unwrap();
    assert!(!json.contains("sk-message-test"), "{json}");
    assert_eq!(json.matches("********").count(), 4, "{json}");
    // A changed reasoning loses its signature; an unchanged one keeps it.
    assert!(matches!(
        &m.content[1],
        Part::Reasoning {
            signature: None,
            ..
        }
    ));
    assert!(matches!(&m.content[2], Part::Reasoning { signature: Some(s), .. } if s == "kept"));
}

#[test]
fn unknown_role_is_refused() {
    assert!(serde_json::from_str::<Message>(r#"{"role":"robot","content":"x"}"#).is_err());
}
