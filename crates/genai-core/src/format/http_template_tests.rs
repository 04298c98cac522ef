//! Tests of the `http-template` format: placeholders, escaping and defaults, credentials as
//! markers, response filters, streams, images and the response schema.

use super::*;
use crate::format::testing::*;
use crate::format::ModelConfiguration;

fn model(params: Value) -> ModelConfiguration {
    let mut m = ModelConfiguration::new(&HttpTemplate, "command-r");
    for (k, v) in params.as_object().unwrap() {
        m.set_parameter(k, v.clone()).unwrap();
    }
    m
}

fn values(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

#[test]
fn strings_are_escaped_inside_quotes_and_raw_elsewhere() {
    let t = r#"{"q": "say ${parameters.q}", "n": ${parameters.n}, "obj": ${parameters.o}, "s": ${parameters.s}}"#;
    let out = render(
        t,
        &values(json!({"q": "\"hi\"\n\\", "n": "42", "o": {"a": [1]}, "s": "plain"})),
    )
    .unwrap();
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["q"], "say \"hi\"\n\\");
    assert_eq!(v["n"], 42, "a string holding JSON goes in raw");
    assert_eq!(v["obj"], json!({"a": [1]}));
    assert_eq!(v["s"], "plain", "other strings are quoted");
}

#[test]
fn defaults_fill_missing_values_and_missing_ones_are_all_named() {
    let t = r#"{"t": ${parameters.temperature:-0.3}, "u": "${parameters.user:-anon \"x\"}", "a": ${parameters.a}, "b": "${parameters.b}"}"#;
    let e = render(t, &Map::new()).unwrap_err();
    assert_mentions(&e, "${parameters.a}, ${parameters.b}");
    let out = render(t, &values(json!({"a": 1, "b": 2}))).unwrap();
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v, json!({"t": 0.3, "u": "anon \"x\"", "a": 1, "b": "2"}));
}

#[test]
fn unknown_and_unclosed_placeholders_are_refused() {
    let e = render(r#"{"a": "${env.HOME}"}"#, &Map::new()).unwrap_err();
    assert_mentions(&e, "unknown placeholder `${env.HOME}`");
    let e = render(r#"{"a": 1} ${parameters.x"#, &Map::new()).unwrap_err();
    assert_mentions(&e, "unclosed");
    let e = render(r#"{"a": ${credential.key}}"#, &Map::new()).unwrap_err();
    assert_mentions(&e, "inside a JSON string");
}

#[test]
fn credentials_become_markers_that_a_prompt_cannot_forge() {
    let out = render(
        r#"{"auth": "Bearer ${credential.key}", "p": "${parameters.p}"}"#,
        &values(json!({"p": "\u{1}credential:key\u{1}"})),
    )
    .unwrap();
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["auth"], "Bearer \u{1}credential:key\u{1}");
    assert_eq!(
        v["p"], "credential:key",
        "the delimiter is scrubbed from values"
    );
}

#[test]
fn a_cohere_style_body_from_the_conversation() {
    // After Cohere's v2 chat request (docs.cohere.com/reference/chat): model, messages,
    // temperature, stream.
    let m = model(json!({
        "request_body": r#"{"model": "${parameters.model}", "messages": ${parameters.messages},
                "temperature": ${parameters.temperature:-0.3}, "stream": ${parameters.stream}}"#,
        "response_filter": "$.message.content[0].text",
        "temperature": "0.7",
    }));
    let msgs = vec![Message::system("Be brief."), Message::user("Hi \"there\"")];
    let r = m.prepare_request(&msgs, true).unwrap();
    assert!(!r.stream, "no stream_filter: never streamed");
    assert_eq!(
        r.body,
        json!({"model": "command-r", "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi \"there\""}],
            "temperature": 0.7, "stream": false})
    );
}

#[test]
fn parameters_the_template_does_not_use_are_refused_with_the_accepted_names() {
    let mut m = model(
        json!({"request_body": r#"{"p": "${parameters.prompt}", "k": ${parameters.top_k:-5}}"#}),
    );
    let e = m.set_parameter("temprature", json!(1)).unwrap_err();
    assert_mentions(
        &e,
        "accepted: request_body, response_filter, stream_filter, stream_done, top_k",
    );
    let e = m.set_parameter("messages", json!("x")).unwrap_err();
    assert_mentions(&e, "filled by genai");
    m.set_parameter("TOP_K", json!(3)).unwrap_err(); // names of the template are exact
    m.set_parameter("top_k", json!(3)).unwrap();
    let e = m.set_parameter("response_filter", json!("$[")).unwrap_err();
    assert_mentions(&e, "not a JSONPath");
    // A parameter set before the template (config order) is checked when sending.
    let mut early = ModelConfiguration::new(&HttpTemplate, "m");
    early.set_parameter("extra", json!(1)).unwrap();
    early
        .set_parameter("request_body", json!({"p": "${parameters.prompt}"}))
        .unwrap();
    let e = early
        .prepare_request(&[Message::user("x")], false)
        .unwrap_err();
    assert_mentions(&e, "`extra` is set");
}

#[test]
fn invalid_rendered_json_points_at_the_place() {
    let m = model(json!({"request_body": r#"{"p": ${parameters.prompt}}"#}));
    let ok = m.prepare_request(&[Message::user("hello")], false).unwrap();
    assert_eq!(
        ok.body,
        json!({"p": "hello"}),
        "a plain string outside quotes is quoted"
    );
    let ok = m.prepare_request(&[Message::user("42")], false).unwrap();
    assert_eq!(ok.body, json!({"p": "42"}), "a prompt stays text");
    let m = model(json!({"request_body": r#"{"p": "${parameters.prompt}" "x": 1}"#}));
    let e = m
        .prepare_request(&[Message::user("hello")], false)
        .unwrap_err();
    assert_mentions(&e, "not valid JSON once rendered");
    assert_mentions(&e, "\"x\": 1");
    let e = ModelConfiguration::new(&HttpTemplate, "m")
        .prepare_request(&[Message::user("x")], false)
        .unwrap_err();
    assert_mentions(&e, "needs a `request_body`");
}

#[test]
fn the_response_filter_picks_the_reply() {
    // Cohere v2 chat response (docs.cohere.com/reference/chat).
    let body = br#"{"id":"c14c80c3","finish_reason":"COMPLETE","message":{"role":"assistant",
            "content":[{"type":"text","text":"LLMs are neural networks."}]},
            "usage":{"billed_units":{"input_tokens":17,"output_tokens":5},"tokens":{"input_tokens":71,"output_tokens":5}}}"#;
    let m = model(json!({"request_body": "{}", "response_filter": "$.message.content[0].text"}));
    let r = m.extract(body).unwrap();
    assert_eq!(r.message.text(), "LLMs are neural networks.");
    assert_eq!(r.finish_reason.as_deref(), Some("COMPLETE"));
    // OpenSearch-style inference result with a non-string value.
    let m = model(
        json!({"request_body": "{}", "response_filter": "$.inference_results[0].output[0].dataAsMap.n"}),
    );
    let r = m
        .extract(br#"{"inference_results":[{"output":[{"dataAsMap":{"n":3}}]}]}"#)
        .unwrap();
    assert_eq!(r.message.text(), "3");
    let e = m.extract(br#"{"other": true}"#).unwrap_err();
    assert_mentions(&e, "matched nothing");
    assert_mentions(&e, r#"{"other":true}"#);
    let e = m.extract(b"<html>oops").unwrap_err();
    assert_mentions(&e, "invalid JSON");
    let e = m
        .extract(br#"{"error":{"message":"quota","code":"q"}}"#)
        .unwrap_err();
    assert_mentions(&e, "quota [q]");
}

fn feed_all(m: &ModelConfiguration, events: &[&str]) -> (Vec<String>, Result<ModelReply>) {
    let mut d = m.decoder();
    let mut deltas = Vec::new();
    for e in events {
        match d.feed(&StreamEvent::data(*e)) {
            Ok(ds) => deltas.extend(ds),
            Err(e) => return (deltas, Err(e)),
        }
    }
    (deltas, d.finish())
}

#[test]
fn streams_with_a_done_marker_or_a_done_path() {
    let sse = model(json!({"request_body": "{}",
        "stream_filter": "$.choices[0].delta.content", "stream_done": "[DONE]"}));
    let (deltas, r) = feed_all(
        &sse,
        &[
            r#"{"choices":[{"delta":{"role":"assistant"}}]}"#,
            r#"{"choices":[{"delta":{"content":"Hel"}}]}"#,
            r#"{"choices":[{"delta":{"content":"lo"}}],"usage":{"prompt_tokens":3,"completion_tokens":2}}"#,
            "[DONE]",
        ],
    );
    assert_eq!(deltas, ["Hel", "lo"]);
    let r = r.unwrap();
    assert_eq!(r.message.text(), "Hello");
    assert_eq!(r.usage.unwrap().output_tokens, 2);
    let (_, cut) = feed_all(&sse, &[r#"{"choices":[{"delta":{"content":"Hel"}}]}"#]);
    assert!(cut
        .unwrap_err()
        .message
        .contains("ended before the reply was complete"));

    // Ollama-style NDJSON lines end with "done": true.
    let nd = model(
        json!({"request_body": "{}", "stream_filter": "$.message.content", "stream_done": "$.done"}),
    );
    let (deltas, r) = feed_all(
        &nd,
        &[
            r#"{"message":{"content":"a"},"done":false}"#,
            r#"{"message":{"content":"b"},"done":true}"#,
        ],
    );
    assert_eq!(
        (deltas.join(""), r.unwrap().message.text()),
        ("ab".into(), "ab".into())
    );
    let (_, r) = feed_all(&nd, &[r#"{"message":{"content":"a"},"done":false}"#]);
    assert!(r.is_err());
    let (_, r) = feed_all(&nd, &["{not json"]);
    assert!(r.unwrap_err().message.contains("not JSON"));
    let (_, r) = feed_all(&nd, &[r#"{"error":"model overloaded"}"#]);
    assert!(r.unwrap_err().message.contains("model overloaded"));
}

#[test]
fn images_go_only_where_the_template_places_them() {
    let plain = model(json!({"request_body": r#"{"p": "${parameters.prompt}"}"#}));
    assert_eq!(plain.images(), ImageSupport::NONE);
    let m = model(json!({"request_body":
        r#"{"prompt": "${parameters.prompt}", "images": ${parameters.images}, "urls": ${parameters.image_urls}}"#}));
    assert_eq!(m.images(), ImageSupport::INLINE);
    let mut msg = Message::user("what is it?");
    msg.content.push(image("image/png", "iVBORw0KGgo="));
    let r = m.prepare_request(&[msg], false).unwrap();
    assert_eq!(
        r.body,
        json!({"prompt": "what is it?", "images": ["iVBORw0KGgo="],
               "urls": ["data:image/png;base64,iVBORw0KGgo="]})
    );
}

#[test]
fn streaming_is_asked_only_with_a_stream_filter() {
    let m = model(
        json!({"request_body": r#"{"stream": ${parameters.stream}}"#,
        "stream_filter": "$.text"}),
    );
    let r = m.prepare_request(&[Message::user("x")], true).unwrap();
    assert!(r.stream);
    assert_eq!(r.body, json!({"stream": true}));
}

#[test]
fn the_response_schema_fills_its_placeholder() {
    let mut m = ModelConfiguration::new(&HttpTemplate, "m");
    m.set_parameter(
        "request_body",
        json!(r#"{"prompt": "${parameters.prompt}", "format": ${parameters.response_schema}}"#),
    )
    .unwrap();
    let schema = crate::format::ResponseSchema::new(None, json!({"type": "object"})).unwrap();
    let options = crate::format::RequestOptions {
        schema: Some(&schema),
        ..Default::default()
    };
    let body = m.prepare(&[Message::user("hi")], &options).unwrap().body;
    assert_eq!(body, json!({"prompt": "hi", "format": {"type": "object"}}));
    let plain = m
        .prepare_request(&[Message::user("hi")], false)
        .unwrap()
        .body;
    assert_eq!(plain["format"], Value::Null);
}
