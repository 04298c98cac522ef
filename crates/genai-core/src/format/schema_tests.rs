//! Tests of structured output: replies parsed and validated, each format's strictness and
//! subset, and `tool_choice`.

use super::*;

fn schema() -> ResponseSchema {
    ResponseSchema::new(
        Some("city"),
        json!({"type": "object", "properties": {"name": {"type": "string"},
               "population": {"type": "integer", "minimum": 0}},
               "required": ["name", "population"], "additionalProperties": false}),
    )
    .unwrap()
}

#[test]
fn replies_are_parsed_and_validated() {
    let s = schema();
    let ok = Message::assistant("```json\n{\"name\": \"Paris\", \"population\": 2100000}\n```");
    assert_eq!(s.check(&ok).unwrap()["name"], "Paris");
    let bad = Message::assistant(r#"{"name": "Paris", "population": -1}"#);
    let errors = s.check(&bad).unwrap_err();
    assert!(errors[0].contains("/population"), "{errors:?}");
    let prose = Message::assistant("Paris has 2.1 million people.");
    assert!(s.check(&prose).unwrap_err()[0].contains("not JSON"));
    let by_tool = Message {
        role: crate::message::Role::Assistant,
        content: vec![Part::ToolCall {
            id: "1".into(),
            name: "city".into(),
            arguments: json!({"name": "Oslo", "population": 700000}),
            signature: None,
        }],
        from: None,
    };
    assert!(s.answered_by_tool(&by_tool));
    assert_eq!(s.check(&by_tool).unwrap()["name"], "Oslo");
}

#[test]
fn strictness_follows_openai_rules() {
    assert!(schema().strict_ok());
    let loose = ResponseSchema::new(
        None,
        json!({"type": "object", "properties": {"a": {"type": "string"}}}),
    )
    .unwrap();
    assert!(!loose.strict_ok());
    assert_eq!(loose.name, DEFAULT_NAME);
    assert!(ResponseSchema::new(Some("a b"), json!({})).is_err());
    assert!(ResponseSchema::new(None, json!([1])).is_err());
    assert!(ResponseSchema::new(None, json!({"type": 12})).is_err());
}

#[test]
fn gemini_gets_its_subset_and_the_rest_is_named() {
    let s = ResponseSchema::new(
        None,
        json!({"type": "object", "additionalProperties": false, "$comment": "x",
               "properties": {"tag": {"const": "a"}, "n": {"type": ["integer", "null"]}}}),
    )
    .unwrap();
    let (v, dropped) = s.gemini();
    assert_eq!(
        v,
        json!({"type": "object", "properties": {"tag": {"enum": ["a"]},
               "n": {"type": "integer", "nullable": true}}})
    );
    assert_eq!(dropped, vec!["$comment", "additionalProperties"]);
}

#[test]
fn tool_choice_names_an_offered_tool() {
    let tools = [ToolSpec {
        name: "calc__add".into(),
        description: String::new(),
        input_schema: json!({"type": "object"}),
    }];
    let mut p = Parameters::new();
    assert_eq!(ToolChoice::of(&p, &tools).unwrap(), None);
    p.insert("tool_choice".into(), json!("calc.add"));
    assert_eq!(
        ToolChoice::of(&p, &tools).unwrap(),
        Some(ToolChoice::Tool("calc__add".into()))
    );
    assert_eq!(ToolChoice::of(&p, &[]).unwrap(), None);
    p.insert("tool_choice".into(), json!("REQUIRED"));
    assert_eq!(
        ToolChoice::of(&p, &tools).unwrap(),
        Some(ToolChoice::Required)
    );
    p.insert("tool_choice".into(), json!("other"));
    assert!(ToolChoice::of(&p, &tools).is_err());
}

/// The request fields each format sends for a tool choice and for a schema.
#[test]
fn each_format_maps_tool_choice_and_the_schema_natively() {
    use crate::format::{
        bedrock_converse::BedrockConverse, claude_messages::ClaudeMessages, gemini::Gemini,
        ollama_chat::OllamaChat, openai_chat::OpenAiChat, Format, ModelConfiguration,
        RequestOptions,
    };
    let tools = [
        ToolSpec {
            name: "calc__add".into(),
            description: "Adds.".into(),
            input_schema: json!({"type": "object"}),
        },
        ToolSpec {
            name: "calc__mul".into(),
            description: "Multiplies.".into(),
            input_schema: json!({"type": "object"}),
        },
    ];
    let body = |f: &'static dyn Format,
                choice: &str,
                schema: Option<&ResponseSchema>,
                tools: &[ToolSpec]| {
        let mut m = ModelConfiguration::new(f, "m");
        m.set_parameter("tool_choice", json!(choice)).unwrap();
        let options = RequestOptions {
            tools,
            schema,
            ..RequestOptions::default()
        };
        m.prepare(&[Message::user("hi")], &options)
            .unwrap()
            .body()
            .clone()
    };
    let named = json!({"type": "function", "function": {"name": "calc__add"}});
    assert_eq!(
        body(&OpenAiChat, "calc.add", None, &tools)["tool_choice"],
        named
    );
    assert_eq!(
        body(&OpenAiChat, "required", None, &tools)["tool_choice"],
        "required"
    );
    assert!(body(&OpenAiChat, "required", None, &[])
        .get("tool_choice")
        .is_none());
    assert_eq!(
        body(&ClaudeMessages, "required", None, &tools)["tool_choice"],
        json!({"type": "any"})
    );
    assert_eq!(
        body(&ClaudeMessages, "none", None, &tools)["tool_choice"],
        json!({"type": "none"})
    );
    assert_eq!(
        body(&Gemini, "calc__mul", None, &tools)["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["calc__mul"]}})
    );
    assert_eq!(
        body(&BedrockConverse, "auto", None, &tools)["toolConfig"]["toolChoice"],
        json!({"auto": {}})
    );
    assert_eq!(
        body(&BedrockConverse, "calc__add", None, &tools)["toolConfig"]["toolChoice"],
        json!({"tool": {"name": "calc__add"}})
    );
    assert!(body(&BedrockConverse, "none", None, &tools)
        .get("toolConfig")
        .is_none());
    let b = body(&OllamaChat, "calc__mul", None, &tools);
    assert_eq!(b["tools"].as_array().unwrap().len(), 1);
    assert_eq!(b["tools"][0]["function"]["name"], "calc__mul");
    assert!(
        b.get("tool_choice").is_none() && b.get("options").is_none(),
        "{b}"
    );
    assert!(body(&OllamaChat, "none", None, &tools)
        .get("tools")
        .is_none());

    // A schema on Bedrock: the forced answer tool; with other tools, some call.
    let s = schema();
    let b = body(&BedrockConverse, "auto", Some(&s), &[]);
    assert_eq!(
        b["toolConfig"]["toolChoice"],
        json!({"tool": {"name": "city"}})
    );
    assert_eq!(
        b["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"],
        s.schema
    );
    let b = body(&ClaudeMessages, "auto", Some(&s), &tools);
    assert_eq!(b["tool_choice"], json!({"type": "any"}));
    assert_eq!(b["tools"].as_array().unwrap().len(), 3);
    let list = ResponseSchema::new(None, json!({"type": "array"})).unwrap();
    let mut m = ModelConfiguration::new(&ClaudeMessages, "m");
    m.set_parameter("max_tokens", json!(10)).unwrap();
    let options = RequestOptions {
        schema: Some(&list),
        ..RequestOptions::default()
    };
    assert!(m.prepare(&[Message::user("hi")], &options).is_err());
}
