//! Tests of the `gemini` format: the documented request and answer shapes, function calls,
//! thought signatures, streams and blocked prompts.
//!
//! Shapes from https://ai.google.dev/api/generate-content and
//! https://ai.google.dev/gemini-api/docs/text-generation (REST examples).

use super::*;
use crate::format::testing::*;
use crate::format::ModelConfiguration;

#[test]
fn request_matches_the_documented_shape() {
    let mut m = ModelConfiguration::new(&Gemini, "gemini-2.0-flash");
    m.set_parameter("temperature", json!(1)).unwrap();
    m.set_parameter("top_k", json!(40)).unwrap();
    m.set_parameter("TOP_P", json!("0.95")).unwrap();
    m.set_parameter("max_tokens", json!(8192)).unwrap();
    m.set_parameter("response_mime_type", json!("text/plain"))
        .unwrap();
    let msgs = [
        Message::system("You are a cat. Your name is Neko."),
        Message::user("Hello"),
        said(
            Role::Assistant,
            vec![Part::text(
                "Great to meet you. What would you like to know?",
            )],
        ),
        Message::user("I have two dogs in my house. How many paws are in my house?"),
    ];
    let req = m.prepare_request(&msgs, false).unwrap();
    assert_eq!(
        req.body,
        json!({
          "systemInstruction": {"parts": [{"text": "You are a cat. Your name is Neko."}]},
          "contents": [
            {"role": "user", "parts": [{"text": "Hello"}]},
            {"role": "model", "parts": [{"text": "Great to meet you. What would you like to know?"}]},
            {"role": "user", "parts": [{"text": "I have two dogs in my house. How many paws are in my house?"}]}
          ],
          "generationConfig": {
            "temperature": 1.0, "topK": 40, "topP": 0.95,
            "maxOutputTokens": 8192, "responseMimeType": "text/plain"
          }
        })
    );
}

#[test]
fn images_tools_and_config_objects() {
    let msgs = [
        said(
            Role::User,
            vec![
                image("image/jpeg", "/9j/4AAQ"),
                image_url("https://generativelanguage.googleapis.com/v1beta/files/abc.png"),
                Part::text("Caption this image."),
            ],
        ),
        calling("call_0", "get_weather", json!({"location": "Paris"})),
        answered("call_0", "22 C"),
    ];
    let mut m = ModelConfiguration::new(&Gemini, "gemini-2.5-flash");
    m.set_parameter(
        "generation_config",
        json!({"topK": 3, "responseModalities": ["TEXT"]}),
    )
    .unwrap();
    m.set_parameter("top_k", json!(10)).unwrap();
    m.set_parameter("thinking_budget", json!(0)).unwrap();
    m.set_parameter("include_thoughts", json!("true")).unwrap();
    m.set_parameter("stop", json!("END")).unwrap();
    m.set_parameter(
        "safety_settings",
        json!(r#"{"HARM_CATEGORY_HARASSMENT":"BLOCK_ONLY_HIGH"}"#),
    )
    .unwrap();
    let b = m.prepare_request(&msgs, true).unwrap().body;
    assert_eq!(
        b["contents"][0]["parts"],
        json!([
            {"inlineData": {"mimeType": "image/jpeg", "data": "/9j/4AAQ"}},
            {"fileData": {"mimeType": "image/png", "fileUri": "https://generativelanguage.googleapis.com/v1beta/files/abc.png"}},
            {"text": "Caption this image."}
        ])
    );
    assert_eq!(
        b["contents"][1],
        json!({"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"location": "Paris"}}}]})
    );
    assert_eq!(
        b["contents"][2],
        json!({"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {"output": "22 C"}}}]})
    );
    assert_eq!(
        b["generationConfig"],
        json!({"topK": 10, "responseModalities": ["TEXT"], "stopSequences": ["END"], "thinkingConfig": {"thinkingBudget": 0, "includeThoughts": true}})
    );
    assert_eq!(
        b["safetySettings"],
        json!([{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_ONLY_HIGH"}])
    );
    assert!(m.set_parameter("safety_settings", json!(3)).is_err());
    assert!(m.set_parameter("topP", json!(1)).is_err());
}

#[test]
fn extracts_the_documented_answer() {
    let body = br#"{
  "candidates": [
    {
      "content": {
        "parts": [
          {
            "text": "Coca-Cola is a carbonated soft drink.\n"
          }
        ],
        "role": "model"
      },
      "finishReason": "STOP",
      "avgLogprobs": -0.08664150799022001
    }
  ],
  "usageMetadata": {
    "promptTokenCount": 26,
    "candidatesTokenCount": 68,
    "totalTokenCount": 94,
    "cachedContentTokenCount": 4
  },
  "modelVersion": "gemini-1.5-flash"
}"#;
    let r = ModelConfiguration::new(&Gemini, "m").extract(body).unwrap();
    assert_eq!(r.message.text(), "Coca-Cola is a carbonated soft drink.\n");
    let u = r.usage.unwrap();
    assert_eq!(
        (u.input_tokens, u.output_tokens, u.cache_read_tokens),
        (26, 68, Some(4))
    );
    assert_eq!(r.finish_reason.as_deref(), Some("STOP"));
    assert_eq!(r.model.as_deref(), Some("gemini-1.5-flash"));
}

#[test]
fn function_calls_and_thoughts_in_answers() {
    // https://ai.google.dev/gemini-api/docs/function-calling (REST response shape).
    let body = br#"{"candidates":[{"content":{"role":"model","parts":[
            {"text":"thinking it over","thought":true},
            {"functionCall":{"name":"schedule_meeting","args":{"attendees":["Bob","Alice"],"date":"2025-03-27"}}}
          ]},"finishReason":"STOP","index":0}],
          "usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"thoughtsTokenCount":7}}"#;
    let r = ModelConfiguration::new(&Gemini, "m").extract(body).unwrap();
    assert_eq!(
        r.message.content,
        vec![
            Part::reasoning("thinking it over", None),
            call(
                "call_0",
                "schedule_meeting",
                json!({"attendees": ["Bob", "Alice"], "date": "2025-03-27"})
            )
        ]
    );
    let u = r.usage.unwrap();
    assert_eq!((u.output_tokens, u.reasoning_tokens), (12, Some(7)));
    let mut d = ModelConfiguration::new(&Gemini, "m").decoder();
    let event = std::str::from_utf8(body).unwrap().replace('\n', " ");
    assert!(d.feed(&StreamEvent::data(event)).unwrap().is_empty());
    assert_eq!(d.take_reasoning_deltas(), vec!["thinking it over"]);
    let r = d.finish().unwrap();
    assert!(
        matches!(&r.message.content[..], [Part::Reasoning { .. }, Part::ToolCall { name, .. }] if name == "schedule_meeting")
    );
    // The thoughts are not sent back.
    let m = ModelConfiguration::new(&Gemini, "m");
    let body = m
        .prepare_request(&[Message::user("x"), r.message], false)
        .unwrap()
        .body;
    assert_eq!(body["contents"][1]["parts"].as_array().unwrap().len(), 1);
}

#[test]
fn thought_signatures_of_calls_go_back_with_them() {
    // A thinking model's reply: the signature sits beside `functionCall` in its part.
    let body = br#"{"candidates":[{"content":{"role":"model","parts":[
            {"functionCall":{"name":"get_weather","args":{"location":"Paris"}},"thoughtSignature":"CiQBVKhc7oK3"}]},
            "finishReason":"STOP"}]}"#;
    let m = ModelConfiguration::new(&Gemini, "gemini-3-pro-preview");
    let reply = m.extract(body).unwrap();
    let Part::ToolCall { signature, .. } = &reply.message.content[0] else {
        panic!("{:?}", reply.message);
    };
    assert_eq!(signature.as_deref(), Some("CiQBVKhc7oK3"));
    let mut messages = vec![Message::user("Weather in Paris?"), reply.message.clone()];
    messages.push(answered("call_0", "18°C"));
    let body = m.prepare_request(&messages, false).unwrap().body;
    assert_eq!(
        body["contents"][1]["parts"][0],
        json!({"functionCall": {"name": "get_weather", "args": {"location": "Paris"}}, "thoughtSignature": "CiQBVKhc7oK3"})
    );
}

// The Gemini cookbook's "Function calling with REST"
// (github.com/google-gemini/cookbook, quickstarts/rest/Function_calling_REST.ipynb) and
// https://ai.google.dev/gemini-api/docs/function-calling: declarations, the model's
// functionCall turn (two calls), the functionResponses in one user turn, then a second
// round whose made-up ids repeat the first one's.
#[test]
fn golden_tool_round_trip() {
    let m = ModelConfiguration::new(&Gemini, "gemini-2.0-flash");
    let tools = [
        ToolSpec {
            name: "find_theaters".into(),
            description: "find theaters based on location and optionally movie title which are is currently playing in theaters".into(),
            input_schema: json!({
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA or a zip code e.g. 95616"},
                    "movie": {"type": ["string", "null"], "description": "Any movie title"}
                },
                "required": ["location"]
            }),
        },
        ToolSpec {
            name: "list_cities".into(),
            description: "List the cities with theaters.".into(),
            input_schema: json!({"type": "object", "properties": {}, "additionalProperties": false}),
        },
    ];
    let barbie = json!({"movie": "Barbie", "theaters": [
        {"name": "AMC Mountain View 16", "address": "2000 W El Camino Real, Mountain View, CA 94040"},
        {"name": "Regal Edwards 14", "address": "245 Castro St, Mountain View, CA 94040"}
    ]});
    let msgs = [
        Message::user("Which theaters in Mountain View show Barbie movie?"),
        said(
            Role::Assistant,
            vec![
                call(
                    "call_0",
                    "find_theaters",
                    json!({"location": "Mountain View, CA", "movie": "Barbie"}),
                ),
                call("call_1", "list_cities", json!({})),
            ],
        ),
        said(
            Role::Tool,
            vec![
                result(
                    "call_0",
                    vec![Part::Json {
                        value: barbie.clone(),
                    }],
                    false,
                ),
                result("call_1", vec![Part::text("the city list is offline")], true),
            ],
        ),
        said(
            Role::Assistant,
            vec![call("call_0", "list_cities", json!({}))],
        ),
        said(
            Role::Tool,
            vec![result("call_0", vec![Part::text("Mountain View")], false)],
        ),
    ];
    let b = m.prepare_with_tools(&msgs, &tools).unwrap().body;
    assert_eq!(
        b["tools"],
        json!([{"functionDeclarations": [
            {"name": "find_theaters",
             "description": "find theaters based on location and optionally movie title which are is currently playing in theaters",
             "parameters": {"type": "object",
                 "properties": {
                     "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA or a zip code e.g. 95616"},
                     "movie": {"type": "string", "nullable": true, "description": "Any movie title"}
                 },
                 "required": ["location"]}},
            {"name": "list_cities", "description": "List the cities with theaters."}
        ]}])
    );
    assert_eq!(
        b["contents"],
        json!([
            {"role": "user", "parts": [{"text": "Which theaters in Mountain View show Barbie movie?"}]},
            {"role": "model", "parts": [
                {"functionCall": {"name": "find_theaters", "args": {"location": "Mountain View, CA", "movie": "Barbie"}}},
                {"functionCall": {"name": "list_cities", "args": {}}}
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "find_theaters", "response": barbie}},
                {"functionResponse": {"name": "list_cities", "response": {"error": "the city list is offline"}}}
            ]},
            {"role": "model", "parts": [{"functionCall": {"name": "list_cities", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "list_cities", "response": {"output": "Mountain View"}}}]}
        ])
    );
}

// https://ai.google.dev/api/caching#FunctionCall: newer models give each call an `id`, which
// goes back with the call and its response; made-up ids never do.
#[test]
fn call_ids_of_the_api_are_kept_and_sent_back() {
    let body = br#"{"candidates":[{"content":{"role":"model","parts":[
            {"functionCall":{"id":"fc-7f3a","name":"find_theaters","args":{"location":"Mountain View, CA","movie":"Barbie"}}},
            {"functionCall":{"name":"list_cities","args":{}}}
          ]},"finishReason":"STOP","index":0}]}"#;
    let m = ModelConfiguration::new(&Gemini, "m");
    let r = m.extract(body).unwrap();
    let ids: Vec<String> = r.message.tool_calls().into_iter().map(|c| c.0).collect();
    assert_eq!(ids, ["fc-7f3a", "call_1"]);
    let msgs = [
        Message::user("Barbie?"),
        r.message.clone(),
        said(
            Role::Tool,
            vec![
                result("fc-7f3a", vec![Part::text("AMC")], false),
                result("call_1", vec![Part::text("Mountain View")], false),
            ],
        ),
    ];
    let b = m.prepare_request(&msgs, false).unwrap().body;
    assert_eq!(
        b["contents"][1]["parts"][0]["functionCall"]["id"],
        "fc-7f3a"
    );
    assert!(b["contents"][1]["parts"][1]["functionCall"]
        .get("id")
        .is_none());
    assert_eq!(
        b["contents"][2]["parts"][0]["functionResponse"],
        json!({"id": "fc-7f3a", "name": "find_theaters", "response": {"output": "AMC"}})
    );
    assert!(b["contents"][2]["parts"][1]["functionResponse"]
        .get("id")
        .is_none());
    assert!(b.get("tools").is_none(), "no tools were set");
}

// The cookbook's functionCall answer, streamed as SSE events (one call per event, as
// `streamGenerateContent?alt=sse` sends them): each call is one whole delta.
#[test]
fn streamed_calls_are_whole_deltas() {
    let events = [
        r#"{"candidates":[{"content":{"parts":[{"text":"Let me look."}],"role":"model"},"index":0}]}"#,
        r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"find_theaters","args":{"movie":"Barbie","location":"Mountain View, CA"}}}],"role":"model"},"index":0}]}"#,
        r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"find_movies","args":{"location":"Mountain View, CA","description":"comedy"}}}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":4}}"#,
    ];
    let mut d = ModelConfiguration::new(&Gemini, "m").decoder();
    assert_eq!(
        d.feed(&StreamEvent::data(events[0])).unwrap(),
        vec!["Let me look."]
    );
    assert!(d.take_tool_call_deltas().is_empty());
    assert!(d.feed(&StreamEvent::data(events[1])).unwrap().is_empty());
    let first = d.take_tool_call_deltas();
    assert_eq!(first.len(), 1);
    assert_eq!(
        (
            first[0].index,
            first[0].id.as_deref(),
            first[0].name.as_deref()
        ),
        (0, Some("call_0"), Some("find_theaters"))
    );
    let args: Value = serde_json::from_str(&first[0].arguments).unwrap();
    assert_eq!(
        args,
        json!({"movie": "Barbie", "location": "Mountain View, CA"})
    );
    d.feed(&StreamEvent::data(events[2])).unwrap();
    let second = d.take_tool_call_deltas();
    assert_eq!(
        (second[0].index, second[0].name.as_deref()),
        (1, Some("find_movies"))
    );
    let r = d.finish().unwrap();
    assert_eq!(r.message.text(), "Let me look.");
    let calls = r.message.tool_calls();
    assert_eq!(
        calls,
        vec![
            (
                "call_0".into(),
                "find_theaters".into(),
                json!({"movie": "Barbie", "location": "Mountain View, CA"})
            ),
            (
                "call_1".into(),
                "find_movies".into(),
                json!({"location": "Mountain View, CA", "description": "comedy"})
            ),
        ]
    );
}

#[test]
fn blocked_prompts_and_replies_are_clear_errors() {
    let blocked = br#"{"promptFeedback":{"blockReason":"SAFETY","safetyRatings":[{"category":"HARM_CATEGORY_DANGEROUS_CONTENT","probability":"HIGH"}]},"usageMetadata":{"promptTokenCount":8,"totalTokenCount":8},"modelVersion":"gemini-2.0-flash"}"#;
    let e = ModelConfiguration::new(&Gemini, "m")
        .extract(blocked)
        .unwrap_err();
    assert_mentions(&e, "blocked the prompt (SAFETY)");
    let reply = br#"{"candidates":[{"finishReason":"SAFETY","index":0}]}"#;
    let e = ModelConfiguration::new(&Gemini, "m")
        .extract(reply)
        .unwrap_err();
    assert_mentions(&e, "finishReason SAFETY");
    let mut d = ModelConfiguration::new(&Gemini, "m").decoder();
    let e = d
        .feed(&StreamEvent::data(std::str::from_utf8(blocked).unwrap()))
        .unwrap_err();
    assert_mentions(&e, "blocked the prompt");
}

#[test]
fn stream_decodes_partial_responses_and_detects_a_cut() {
    let events = [
        r#"{"candidates": [{"content": {"parts": [{"text": "Hello"}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 3,"totalTokenCount": 3},"modelVersion": "gemini-2.0-flash"}"#,
        r#"{"candidates": [{"content": {"parts": [{"text": " there"}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 3,"totalTokenCount": 3},"modelVersion": "gemini-2.0-flash"}"#,
        r#"{"candidates": [{"content": {"parts": [{"text": "!"}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 3,"candidatesTokenCount": 3,"totalTokenCount": 6},"modelVersion": "gemini-2.0-flash"}"#,
    ];
    let m = ModelConfiguration::new(&Gemini, "m");
    let mut d = m.decoder();
    assert_eq!(
        d.feed(&StreamEvent::data(events[0])).unwrap(),
        vec!["Hello"]
    );
    assert_eq!(
        d.feed(&StreamEvent::data(events[1])).unwrap(),
        vec![" there"]
    );
    let mut cut = m.decoder();
    cut.feed(&StreamEvent::data(events[0])).unwrap();
    let e = cut.finish().unwrap_err();
    assert!(e.message.contains("ended before the reply was complete"));
    assert_eq!(d.feed(&StreamEvent::data(events[2])).unwrap(), vec!["!"]);
    let r = d.finish().unwrap();
    assert_eq!(r.message.text(), "Hello there!");
    assert_eq!(r.usage.unwrap().output_tokens, 3);
    assert_eq!(r.model.as_deref(), Some("gemini-2.0-flash"));
    let mut bad = m.decoder();
    let e = bad
        .feed(&StreamEvent::data(
            r#"{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}"#,
        ))
        .unwrap_err();
    assert_eq!(e.message, "UNAVAILABLE: The model is overloaded.");
    assert!(bad.feed(&StreamEvent::data("{\"candidates\":")).is_err());
}
