//! Tests of the `openai-chat` format: the request's parts, the reply and its usage, stream
//! chunks, cuts and errors, reasoning.

use super::*;
use crate::format::schema::ToolChoice;
use crate::format::testing::*;
use crate::format::wire::chat_message;
use crate::format::ModelConfiguration;
use crate::message::Message;
use crate::message::Role;
use serde_json::json;

#[test]
fn request_has_text_as_string_and_images_as_parts() {
    let mut m = ModelConfiguration::new(&OpenAiChat, "gpt-4o-mini");
    m.set_parameter("Temperature", json!("0.3")).unwrap();
    let img = said(
        Role::User,
        vec![Part::text("what is it?"), image("image/png", "AAAA")],
    );
    let req = m
        .prepare_request(&[Message::system("be brief"), img], true)
        .unwrap();
    let b = &req.body;
    assert_eq!(
        b["messages"][0],
        json!({"role": "system", "content": "be brief"})
    );
    assert_eq!(
        b["messages"][1]["content"][1]["image_url"]["url"],
        "data:image/png;base64,AAAA"
    );
    assert_eq!(b["temperature"], 0.3);
    assert_eq!(b["stream_options"]["include_usage"], true);
}

#[test]
fn extracts_reply_usage_and_reason() {
    let body = br#"{"id":"x","object":"chat.completion","model":"m1","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}"#;
    let r = ModelConfiguration::new(&OpenAiChat, "m")
        .extract(body)
        .unwrap();
    assert_eq!(r.message.text(), "Hi");
    let u = r.usage.unwrap();
    assert_eq!((u.input_tokens, u.reasoning_tokens), (5, None));
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    assert_eq!(r.model.as_deref(), Some("m1"));
    // A reasoning model's usage, as OpenAI's API documents it.
    let body = br#"{"id":"x","object":"chat.completion","model":"o4-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":70,"total_tokens":75,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":64,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}"#;
    let u = ModelConfiguration::new(&OpenAiChat, "m")
        .extract(body)
        .unwrap()
        .usage
        .unwrap();
    assert_eq!((u.output_tokens, u.reasoning_tokens), (70, Some(64)));
}

#[test]
fn a_streamed_chunk_skips_null_and_other_choices_and_refuses_choices_that_are_no_list() {
    let m = ModelConfiguration::new(&OpenAiChat, "m");
    let mut d = m.decoder();
    let other = r#"{"choices":[null,{"index":1,"delta":{"content":"no"}},{"index":0,"delta":{"content":"yes"}}]}"#;
    assert_eq!(d.feed(&StreamEvent::data(other)).unwrap(), vec!["yes"]);
    let e = d
        .feed(&StreamEvent::data(r#"{"choices":"yes"}"#))
        .unwrap_err();
    assert_eq!(
        e.kind,
        crate::error::ErrorKind::ProviderError,
        "{}",
        e.message
    );
    assert!(e.message.contains("invalid JSON"), "{}", e.message);
}

#[test]
fn stream_decodes_and_detects_a_cut() {
    let m = ModelConfiguration::new(&OpenAiChat, "m");
    let mut d = m.decoder();
    assert_eq!(
        d.feed(&StreamEvent::data(
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#
        ))
        .unwrap(),
        Vec::<String>::new()
    );
    assert_eq!(
        d.feed(&StreamEvent::data(
            r#"{"choices":[{"index":0,"delta":{"content":"Hel"}}]}"#
        ))
        .unwrap(),
        vec!["Hel"]
    );
    d.feed(&StreamEvent::data(
        r#"{"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}"#,
    ))
    .unwrap();
    let mut cut = m.decoder();
    cut.feed(&StreamEvent::data(
        r#"{"choices":[{"index":0,"delta":{"content":"Hel"}}]}"#,
    ))
    .unwrap();
    assert!(cut.finish().is_err());
    d.feed(&StreamEvent::data(
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
    ))
    .unwrap();
    d.feed(&StreamEvent::data(
        r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}"#,
    ))
    .unwrap();
    d.feed(&StreamEvent::data("[DONE]")).unwrap();
    let r = d.finish().unwrap();
    assert_eq!(r.message.text(), "Hello");
    assert_eq!(r.usage.unwrap().output_tokens, 2);
}

#[test]
fn stream_error_events_are_errors() {
    let mut d = ModelConfiguration::new(&OpenAiChat, "m").decoder();
    let e = d
        .feed(&StreamEvent::data(
            r#"{"error":{"message":"overloaded","code":"server_error"}}"#,
        ))
        .unwrap_err();
    assert_eq!(e.message, "overloaded [server_error]");
}

// DeepSeek's reasoning model (api-docs.deepseek.com/guides/reasoning_model) streams
// `reasoning_content` before `content`; OpenRouter and newer vLLM call it `reasoning`. It
// is never sent back.
#[test]
fn reasoning_content_and_reasoning_deltas_are_reasoning() {
    let m = ModelConfiguration::new(&OpenAiChat, "deepseek-reasoner");
    let mut d = m.decoder();
    let chunk = |delta: Value| {
        StreamEvent::data(json!({"choices": [{"index": 0, "delta": delta}]}).to_string())
    };
    assert!(d
        .feed(&chunk(
            json!({"role": "assistant", "content": null, "reasoning_content": "9.11 vs 9.8"})
        ))
        .unwrap()
        .is_empty());
    d.feed(&chunk(json!({"reasoning": ": 9.8 is larger."})))
        .unwrap();
    assert_eq!(
        d.take_reasoning_deltas(),
        vec!["9.11 vs 9.8", ": 9.8 is larger."]
    );
    assert_eq!(
        d.feed(&chunk(json!({"content": "9.8", "reasoning_content": null})))
            .unwrap(),
        vec!["9.8"]
    );
    d.feed(&StreamEvent::data("[DONE]")).unwrap();
    let r = d.finish().unwrap();
    assert_eq!(
        r.message.content,
        vec![
            Part::reasoning("9.11 vs 9.8: 9.8 is larger.", None),
            Part::text("9.8")
        ]
    );
    let body = m
        .prepare_request(&[Message::user("9.11 or 9.8?"), r.message], false)
        .unwrap()
        .body;
    assert_eq!(
        body["messages"][1],
        json!({"role": "assistant", "content": "9.8"})
    );
    let whole = br#"{"model":"deepseek-reasoner","choices":[{"index":0,"message":{"role":"assistant","content":"9.8","reasoning_content":"Compare."},"finish_reason":"stop"}]}"#;
    let r = m.extract(whole).unwrap();
    assert_eq!(
        (r.message.reasoning().as_str(), r.message.text().as_str()),
        ("Compare.", "9.8")
    );
}

#[test]
fn the_written_body_is_the_trees_bytes() {
    use crate::format::{Body, RequestOptions, ResponseSchema, ToolSpec};
    let json_part = |value: Value| Part::Json { value };
    let tools = [ToolSpec {
        name: "read".into(),
        description: "Reads a file".into(),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }];
    let strict = json!({"type": "object", "properties": {"a": {"type": "integer"}},
        "required": ["a"], "additionalProperties": false});
    let schemas = [
        ResponseSchema::new(Some("answer"), strict).unwrap(),
        ResponseSchema::new(None, json!({"type": "object"})).unwrap(),
    ];
    let history = vec![
        Message::system("be \"brief\"\n\tnow"),
        said(
            Role::User,
            vec![Part::text("what is it?"), image("image/png", "AAAA")],
        ),
        said(
            Role::User,
            vec![Part::text("a"), json_part(json!({"k": [1, 2.5, -3]}))],
        ),
        said(Role::User, vec![image_url("https://x/y.png")]),
        said(
            Role::Assistant,
            vec![
                Part::reasoning("hmm", None),
                call("c1", "read", json!({"path": "é/✓"})),
                call("c2", "read", Value::Null),
            ],
        ),
        said(
            Role::Tool,
            vec![
                result("c1", vec![Part::text("one"), json_part(json!(2))], false),
                result("c2", vec![], true),
                Part::text("and then"),
            ],
        ),
        said(Role::Assistant, vec![Part::reasoning("only thought", None)]),
        answered("c3", "done"),
        Message::user("next"),
    ];
    let settings: &[&[(&str, Value)]] = &[
        &[],
        &[
            ("temperature", json!(0.7)),
            ("max_tokens", json!(32)),
            ("seed", json!(-4)),
        ],
        &[("stop", json!(["x"])), ("tool_choice", json!("required"))],
        &[
            ("response_format", json!({"type": "json_object"})),
            ("top_p", json!(1)),
        ],
        &[
            ("tool_choice", json!("read")),
            ("metadata", json!({"a": "b"})),
        ],
        // Named like the fields genai sets: no parameter spec takes them, so they are put in
        // the map as they are.
        &[
            ("stream", json!(false)),
            ("model", json!("other")),
            ("tools", json!([])),
            ("messages", json!([{"role": "user", "content": "x"}])),
            ("stream_options", json!({"x": 1})),
        ],
    ];
    const OWN: &[&str] = &["model", "messages", "tools", "stream", "stream_options"];
    let mut order = serde_json::Map::new();
    order.insert("b".into(), Value::Null);
    order.insert("a".into(), Value::Null);
    let keeps_order = order.keys().next().is_some_and(|k| k == "b");
    let mut compared = 0;
    for params in settings {
        let mut m = ModelConfiguration::new(&OpenAiChat, "gpt-4o-mini");
        for (k, v) in *params {
            if OWN.contains(k) {
                m.parameters.insert(k.to_string(), v.clone());
            } else {
                m.set_parameter(k, v.clone()).unwrap();
            }
        }
        for messages in [&history[..1], &history[1..2], &history[..]] {
            for stream in [false, true] {
                for tools in [&[][..], &tools[..]] {
                    for schema in [None, Some(&schemas[0]), Some(&schemas[1])] {
                        for stop in [&[][..], &["Observation:"][..]] {
                            let options = RequestOptions {
                                stream,
                                tools,
                                stop,
                                schema,
                            };
                            let request = Request {
                                model: &m.model,
                                parameters: &m.parameters,
                                messages,
                                options,
                            };
                            let tree = Value::Object(reference_tree(&request).unwrap());
                            let with_stops = with_stops(PARAMETERS, &m.parameters, stop);
                            let bytes = super::super::openai_chat_body::write(
                                &m.model,
                                &with_stops,
                                messages,
                                tools,
                                schema,
                                stream,
                            )
                            .unwrap();
                            let read: Value = serde_json::from_slice(&bytes).unwrap();
                            assert_eq!(read, tree);
                            let prepared = OpenAiChat.prepare(&request).unwrap();
                            let Body::Written { bytes, .. } = &prepared.body else {
                                panic!("an openai-chat body is written from its types")
                            };
                            // Where the tree keeps its keys' order (the workspace's build),
                            // the bytes are the tree's; either way it reads back as the tree.
                            if keeps_order {
                                assert_eq!(
                                    String::from_utf8_lossy(bytes),
                                    serde_json::to_string(&tree).unwrap()
                                );
                            }
                            assert_eq!(prepared.body(), &tree);
                            compared += 1;
                        }
                    }
                }
            }
        }
    }
    assert_eq!(compared, 6 * 3 * 2 * 2 * 3 * 2);
    // A bad image is refused alike.
    let bad = said(
        Role::User,
        vec![Part::Image {
            url: None,
            media_type: None,
            data: Some("AA".into()),
        }],
    );
    let m = ModelConfiguration::new(&OpenAiChat, "m");
    let e = m.prepare_request(&[bad], false).unwrap_err();
    assert_mentions(&e, "an image part needs");
}

/// The body as the `Value` tree genai built before it wrote bodies from types: the oracle the
/// written bytes are held to (keys in the order inserted, a parameter named like a field genai
/// sets taking that field's place).
fn reference_tree(request: &Request<'_>) -> Result<Map<String, Value>> {
    let (model, parameters, messages, options) = request.parts();
    let mut wire = Vec::with_capacity(messages.len());
    for m in messages {
        wire.extend(reference_wire(m)?);
    }
    let mut body = Map::new();
    body.insert("model".into(), Value::from(model));
    body.insert("messages".into(), Value::Array(wire));
    for (k, v) in with_stops(PARAMETERS, parameters, options.stop).iter() {
        if k != TOOL_CHOICE.name {
            body.insert(k.clone(), v.clone());
        }
    }
    if !options.tools.is_empty() {
        // Written out here, not `wire::function_tools`: that one shares the writer's shape.
        let tools = options.tools.iter().map(|t| {
            json!({"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.input_schema
            }})
        });
        body.insert("tools".into(), tools.collect());
    }
    if let Some(choice) = ToolChoice::of(parameters, options.tools)? {
        body.insert("tool_choice".into(), choice.openai());
    }
    if let Some(schema) = options.schema {
        let mut spec = json!({"name": schema.name, "schema": schema.schema});
        if schema.strict_ok() {
            spec["strict"] = Value::Bool(true);
        }
        body.insert(
            "response_format".into(),
            json!({"type": "json_schema", "json_schema": spec}),
        );
    }
    if options.stream {
        body.insert("stream".into(), Value::Bool(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Ok(body)
}

/// One message as that tree had it.
fn reference_wire(m: &Message) -> Result<Vec<Value>> {
    let mut parts = Vec::new();
    let mut tool_calls = Vec::new();
    let mut results = Vec::new();
    for part in &m.content {
        match part {
            Part::Reasoning { .. } => {}
            Part::Text { text } => parts.push(json!({"type": "text", "text": text})),
            Part::Json { value } => parts.push(json!({"type": "text", "text": value.to_string()})),
            Part::Image {
                url,
                media_type,
                data,
            } => {
                let url = match (url, media_type, data) {
                    (Some(url), _, _) => url.clone(),
                    (None, Some(mt), Some(data)) => format!("data:{mt};base64,{data}"),
                    _ => {
                        return Err(Error::invalid_params(
                            "an image part needs `url`, or `mediaType` and `data`",
                        ))
                    }
                };
                parts.push(json!({"type": "image_url", "image_url": {"url": url}}));
            }
            Part::ToolCall {
                id,
                name,
                arguments,
                ..
            } => tool_calls.push(json!({
                "id": id, "type": "function",
                "function": {"name": name, "arguments": arguments.to_string()}
            })),
            Part::ToolResult {
                tool_call_id,
                content,
                ..
            } => {
                let text: String = content
                    .iter()
                    .filter_map(|p| match p {
                        Part::Text { text } => Some(text.clone()),
                        Part::Json { value } => Some(value.to_string()),
                        _ => None,
                    })
                    .collect();
                results
                    .push(json!({"role": "tool", "tool_call_id": tool_call_id, "content": text}));
            }
        }
    }
    let mut out = Vec::new();
    if !parts.is_empty() || !tool_calls.is_empty() {
        // Plain text goes as a string: every OpenAI-compatible server accepts that form.
        let content = if parts.iter().all(|p| p["type"] == "text") {
            Value::String(
                parts
                    .iter()
                    .filter_map(|p| p["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
            )
        } else {
            Value::Array(parts)
        };
        out.push(chat_message(m.role, content, tool_calls));
    }
    out.extend(results);
    Ok(out)
}
