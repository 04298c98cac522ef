//! Tests of the `ollama-chat` format: the documented requests and answers, tool calls, options,
//! the NDJSON stream and thinking.
//!
//! Fixtures are the examples of https://github.com/ollama/ollama/blob/main/docs/api.md
//! ("Generate a chat completion"), images shortened.

use super::*;
use crate::format::testing::*;
use crate::format::{ModelConfiguration, ToolSpec};
use crate::message::Role;

#[test]
fn request_matches_the_documented_chat_request() {
    // "Chat request (Reproducible outputs)".
    let mut m = ModelConfiguration::new(&OllamaChat, "llama3.2");
    m.set_parameter("seed", json!(101)).unwrap();
    m.set_parameter("Temperature", json!("0")).unwrap();
    let req = m.prepare_request(&[Message::user("Hello!")], true).unwrap();
    assert_eq!(
        req.body,
        json!({
          "model": "llama3.2",
          "messages": [{"role": "user", "content": "Hello!"}],
          "stream": true,
          "options": {"seed": 101, "temperature": 0.0}
        })
    );
    // "Chat request (No streaming)": `stream: false` must be said.
    let req = ModelConfiguration::new(&OllamaChat, "llama3.2")
        .prepare_request(&[Message::user("why is the sky blue?")], false)
        .unwrap();
    assert_eq!(
        req.body,
        json!({"model": "llama3.2", "messages": [{"role": "user", "content": "why is the sky blue?"}], "stream": false})
    );
}

#[test]
fn images_history_and_system_follow_the_documented_shapes() {
    // "Chat request (with images)" and "Chat request (With History)".
    let img = said(
        Role::User,
        vec![
            Part::text("what is in this image?"),
            image("image/png", "iVBORw0KGgoAAAANSUhEUgAAAG0AAABmCAYAAADBPx+V"),
        ],
    );
    let msgs = [
        Message::system("be brief"),
        Message::user("why is the sky blue?"),
        said(
            Role::Assistant,
            vec![Part::text("due to rayleigh scattering.")],
        ),
        img,
    ];
    let req = ModelConfiguration::new(&OllamaChat, "llava")
        .prepare_request(&msgs, true)
        .unwrap();
    assert_eq!(
        req.body["messages"],
        json!([
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "why is the sky blue?"},
            {"role": "assistant", "content": "due to rayleigh scattering."},
            {"role": "user", "content": "what is in this image?",
             "images": ["iVBORw0KGgoAAAANSUhEUgAAAG0AAABmCAYAAADBPx+V"]}
        ])
    );
    let by_url = said(Role::User, vec![image_url("https://x/y.png")]);
    assert!(ModelConfiguration::new(&OllamaChat, "llava")
        .prepare_request(&[by_url], false)
        .is_err());
}

#[test]
fn tool_calls_and_results_use_ollama_shapes() {
    let msgs = [
        Message::user("What is the weather today in Paris?"),
        calling(
            "call_0",
            "get_current_weather",
            json!({"format": "celsius", "location": "Paris, FR"}),
        ),
        answered("call_0", "22 degrees"),
    ];
    let req = ModelConfiguration::new(&OllamaChat, "llama3.2")
        .prepare_request(&msgs, false)
        .unwrap();
    assert_eq!(
        req.body["messages"][1],
        json!({"role": "assistant", "content": "",
               "tool_calls": [{"type": "function", "function": {"index": 0, "name": "get_current_weather",
                                            "arguments": {"format": "celsius", "location": "Paris, FR"}}}]})
    );
    assert_eq!(
        req.body["messages"][2],
        json!({"role": "tool", "content": "22 degrees", "tool_name": "get_current_weather"})
    );
    // "Chat request (with tools)" response.
    let body = br#"{
  "model": "llama3.2",
  "created_at": "2024-07-22T20:33:28.123648Z",
  "message": {
    "role": "assistant",
    "content": "",
    "tool_calls": [
      {
        "function": {
          "name": "get_current_weather",
          "arguments": {
            "format": "celsius",
            "location": "Paris, FR"
          }
        }
      }
    ]
  },
  "done_reason": "stop",
  "done": true,
  "total_duration": 885095291,
  "load_duration": 3753500,
  "prompt_eval_count": 122,
  "prompt_eval_duration": 328493000,
  "eval_count": 33,
  "eval_duration": 552222000
}"#;
    let r = ModelConfiguration::new(&OllamaChat, "m")
        .extract(body)
        .unwrap();
    assert_eq!(
        r.message.content,
        vec![call(
            "call_0",
            "get_current_weather",
            json!({"format": "celsius", "location": "Paris, FR"})
        )]
    );
    assert_eq!(r.usage.unwrap().input_tokens, 122);
}

fn city_tool(name: &str, description: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: description.into(),
        input_schema: json!({
            "type": "object",
            "required": ["city"],
            "properties": {"city": {"type": "string", "description": "The name of the city"}}
        }),
    }
}

fn city_call(id: &str, name: &str, city: &str) -> Part {
    call(id, name, json!({ "city": city }))
}

fn text_result(id: &str, text: &str) -> Part {
    result(id, vec![Part::text(text)], false)
}

// https://docs.ollama.com/capabilities/tool-calling, "Parallel tool calling" (cURL): the
// tools, the assistant's calls, one `tool` message per result with the tool's name; then a
// second round whose made-up ids repeat the first one's.
#[test]
fn golden_parallel_tool_calls() {
    let m = ModelConfiguration::new(&OllamaChat, "qwen3");
    let tools = [
        city_tool("get_temperature", "Get the current temperature for a city"),
        city_tool(
            "get_conditions",
            "Get the current weather conditions for a city",
        ),
    ];
    let msgs = [
        Message::user(
            "What are the current weather conditions and temperature in New York and London?",
        ),
        said(
            Role::Assistant,
            vec![
                city_call("call_0", "get_temperature", "New York"),
                city_call("call_1", "get_conditions", "New York"),
                city_call("call_2", "get_temperature", "London"),
                city_call("call_3", "get_conditions", "London"),
            ],
        ),
        said(
            Role::Tool,
            vec![
                text_result("call_0", "22°C"),
                text_result("call_1", "Partly cloudy"),
                text_result("call_2", "15°C"),
                text_result("call_3", "Rainy"),
            ],
        ),
        said(
            Role::Assistant,
            vec![city_call("call_0", "get_conditions", "Tokyo")],
        ),
        answered("call_0", "Sunny"),
    ];
    let b = m.prepare_with_tools(&msgs, &tools).unwrap().body;
    let tool = |name: &str, description: &str| {
        json!({"type": "function", "function": {
            "name": name, "description": description,
            "parameters": {"type": "object", "required": ["city"],
                           "properties": {"city": {"type": "string", "description": "The name of the city"}}}
        }})
    };
    assert_eq!(
        b["tools"],
        json!([
            tool("get_temperature", "Get the current temperature for a city"),
            tool(
                "get_conditions",
                "Get the current weather conditions for a city"
            )
        ])
    );
    let wire_call = |index: usize, name: &str, city: &str| json!({"type": "function", "function": {"index": index, "name": name, "arguments": {"city": city}}});
    assert_eq!(
        b["messages"],
        json!([
            {"role": "user", "content": "What are the current weather conditions and temperature in New York and London?"},
            {"role": "assistant", "content": "", "tool_calls": [
                wire_call(0, "get_temperature", "New York"),
                wire_call(1, "get_conditions", "New York"),
                wire_call(2, "get_temperature", "London"),
                wire_call(3, "get_conditions", "London")
            ]},
            {"role": "tool", "tool_name": "get_temperature", "content": "22°C"},
            {"role": "tool", "tool_name": "get_conditions", "content": "Partly cloudy"},
            {"role": "tool", "tool_name": "get_temperature", "content": "15°C"},
            {"role": "tool", "tool_name": "get_conditions", "content": "Rainy"},
            {"role": "assistant", "content": "", "tool_calls": [wire_call(0, "get_conditions", "Tokyo")]},
            {"role": "tool", "tool_name": "get_conditions", "content": "Sunny"}
        ])
    );
    assert_eq!(b["stream"], false);
}

// "Tool calling with streaming": records carry whole calls in `message.tool_calls`; each is
// one delta, and ids stay unique over the records of one reply.
#[test]
fn streamed_tool_calls_are_whole_deltas() {
    let lines = [
        r#"{"model":"qwen3","created_at":"2025-09-23T18:01:01.1Z","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_temperature","arguments":{"city":"New York"}}}]},"done":false}"#,
        r#"{"model":"qwen3","created_at":"2025-09-23T18:01:01.2Z","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_conditions","arguments":{"city":"New York"}}}]},"done":false}"#,
        r#"{"model":"qwen3","created_at":"2025-09-23T18:01:01.3Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":40,"eval_count":30}"#,
    ];
    let mut d = ModelConfiguration::new(&OllamaChat, "qwen3").decoder();
    let mut deltas = Vec::new();
    for line in lines {
        assert!(d.feed(&StreamEvent::data(line)).unwrap().is_empty());
        deltas.extend(d.take_tool_call_deltas());
    }
    let seen: Vec<(usize, Option<&str>, Option<&str>, &str)> = deltas
        .iter()
        .map(|d| {
            (
                d.index,
                d.id.as_deref(),
                d.name.as_deref(),
                d.arguments.as_str(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (
                0,
                Some("call_0"),
                Some("get_temperature"),
                r#"{"city":"New York"}"#
            ),
            (
                1,
                Some("call_1"),
                Some("get_conditions"),
                r#"{"city":"New York"}"#
            )
        ]
    );
    let r = d.finish().unwrap();
    assert_eq!(
        r.message.content,
        vec![
            city_call("call_0", "get_temperature", "New York"),
            city_call("call_1", "get_conditions", "New York")
        ]
    );
}

#[test]
fn options_is_an_object_and_parameters_override_it() {
    let mut m = ModelConfiguration::new(&OllamaChat, "llama3.2");
    m.set_parameter("options", json!("{\"num_batch\": 2, \"top_k\": 5}"))
        .unwrap();
    m.set_parameter("top_k", json!(20)).unwrap();
    m.set_parameter("max_tokens", json!(100)).unwrap();
    m.set_parameter("stop", json!(["\n", "user:"])).unwrap();
    m.set_parameter("num_ctx", json!("1024")).unwrap();
    m.set_parameter("format", json!("JSON")).unwrap();
    m.set_parameter("keep_alive", json!("5m")).unwrap();
    let b = m
        .prepare_request(&[Message::user("hi")], false)
        .unwrap()
        .body;
    assert_eq!(
        b["options"],
        json!({"num_batch": 2, "top_k": 20, "num_predict": 100, "stop": ["\n", "user:"], "num_ctx": 1024})
    );
    assert_eq!(b["format"], "json");
    assert_eq!(b["keep_alive"], "5m");
    // Structured outputs: a schema object, given as JSON text from a shell.
    m.set_parameter(
        "format",
        json!(r#"{"type":"object","properties":{"age":{"type":"integer"}},"required":["age"]}"#),
    )
    .unwrap();
    m.set_parameter("keep_alive", json!("0")).unwrap();
    let b = m
        .prepare_request(&[Message::user("hi")], false)
        .unwrap()
        .body;
    assert_eq!(b["format"]["properties"]["age"]["type"], "integer");
    assert_eq!(b["keep_alive"], 0);
    assert!(m.set_parameter("format", json!("yaml")).is_err());
    assert!(m.set_parameter("keep_alive", json!("soon")).is_err());
    assert!(m.set_parameter("options", json!("[1]")).is_err());
    let e = m.set_parameter("temp", json!(1)).unwrap_err();
    assert_mentions(&e, "num_ctx");
    m.set_parameter("format", Value::Null).unwrap();
    assert!(!m.parameters.contains_key("format"));
}

#[test]
fn extracts_the_documented_non_streaming_answer() {
    // "Chat request (Structured outputs)" response.
    let body = br#"{
  "model": "llama3.1",
  "created_at": "2024-12-06T00:46:58.265747Z",
  "message": { "role": "assistant", "content": "{\"age\": 22, \"available\": false}" },
  "done_reason": "stop",
  "done": true,
  "total_duration": 2254970291,
  "load_duration": 574751416,
  "prompt_eval_count": 34,
  "prompt_eval_duration": 1502000000,
  "eval_count": 12,
  "eval_duration": 175000000
}"#;
    let r = ModelConfiguration::new(&OllamaChat, "m")
        .extract(body)
        .unwrap();
    assert_eq!(r.message.text(), "{\"age\": 22, \"available\": false}");
    let u = r.usage.unwrap();
    assert_eq!((u.input_tokens, u.output_tokens), (34, 12));
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    assert_eq!(r.model.as_deref(), Some("llama3.1"));
    let e = ModelConfiguration::new(&OllamaChat, "m")
        .extract(br#"{"error":"model \"x\" not found, try pulling it first"}"#)
        .unwrap_err();
    assert_eq!(e.message, "model \"x\" not found, try pulling it first");
}

#[test]
fn stream_decodes_the_documented_records_and_detects_a_cut() {
    // "Chat Request (Streaming)": partial records, then the final one with the counts.
    let lines = [
        r#"{"model":"llama3.2","created_at":"2023-08-04T08:52:19.385406455-07:00","message":{"role":"assistant","content":"The","images":null},"done":false}"#,
        r#"{"model":"llama3.2","created_at":"2023-08-04T08:52:19.385406455-07:00","message":{"role":"assistant","content":" sky"},"done":false}"#,
        r#"{"model":"llama3.2","created_at":"2023-08-04T19:22:45.499127Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","total_duration":4883583458,"load_duration":1334875,"prompt_eval_count":26,"prompt_eval_duration":342546000,"eval_count":282,"eval_duration":4535599000}"#,
    ];
    let m = ModelConfiguration::new(&OllamaChat, "m");
    let mut d = m.decoder();
    assert_eq!(d.feed(&StreamEvent::data(lines[0])).unwrap(), vec!["The"]);
    assert_eq!(d.feed(&StreamEvent::data(lines[1])).unwrap(), vec![" sky"]);
    let mut cut = m.decoder();
    cut.feed(&StreamEvent::data(lines[0])).unwrap();
    let e = cut.finish().unwrap_err();
    assert!(e.message.contains("ended before the reply was complete"));
    assert!(d.feed(&StreamEvent::data(lines[2])).unwrap().is_empty());
    let r = d.finish().unwrap();
    assert_eq!(r.message.text(), "The sky");
    let u = r.usage.unwrap();
    assert_eq!((u.input_tokens, u.output_tokens), (26, 282));
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
}

#[test]
fn stream_errors_and_malformed_lines_are_errors() {
    let mut d = ModelConfiguration::new(&OllamaChat, "m").decoder();
    let e = d
        .feed(&StreamEvent::data(
            r#"{"error":"an error was encountered while running the model"}"#,
        ))
        .unwrap_err();
    assert_eq!(
        e.message,
        "an error was encountered while running the model"
    );
    let e = d.feed(&StreamEvent::data("{\"model\":")).unwrap_err();
    assert_mentions(&e, "invalid JSON");
}

// https://github.com/ollama/ollama/blob/main/docs/api.md (thinking): with `think`, the
// message carries `thinking` apart from `content`, streamed record by record.
#[test]
fn thinking_is_reasoning_and_think_is_sent() {
    let mut m = ModelConfiguration::new(&OllamaChat, "qwen3");
    m.set_parameter("think", json!("High")).unwrap();
    assert_eq!(m.parameters["think"], json!("high"));
    let e = m.set_parameter("think", json!("very")).unwrap_err();
    assert_mentions(&e, "low, medium or high");
    m.set_parameter("think", json!("true")).unwrap();
    let req = m.prepare_request(&[Message::user("2+2?")], true).unwrap();
    assert_eq!(req.body["think"], json!(true));
    let lines = [
        r#"{"model":"qwen3","message":{"role":"assistant","content":"","thinking":"Two plus "},"done":false}"#,
        r#"{"model":"qwen3","message":{"role":"assistant","content":"","thinking":"two."},"done":false}"#,
        r#"{"model":"qwen3","message":{"role":"assistant","content":"4"},"done":false}"#,
        r#"{"model":"qwen3","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop"}"#,
    ];
    let mut d = m.decoder();
    let mut reasoning = Vec::new();
    let mut text = Vec::new();
    for line in lines {
        text.extend(d.feed(&StreamEvent::data(line)).unwrap());
        reasoning.extend(d.take_reasoning_deltas());
    }
    assert_eq!(
        (reasoning, text),
        (
            vec!["Two plus ".to_string(), "two.".into()],
            vec!["4".to_string()]
        )
    );
    let r = d.finish().unwrap();
    assert_eq!(r.message.content[0], Part::reasoning("Two plus two.", None));
    let body = m
        .prepare_request(&[Message::user("2+2?"), r.message], false)
        .unwrap()
        .body;
    assert_eq!(
        body["messages"][1],
        json!({"role": "assistant", "content": "4"})
    );
    let whole = br#"{"model":"qwen3","message":{"role":"assistant","content":"4","thinking":"Easy."},"done":true}"#;
    assert_eq!(m.extract(whole).unwrap().message.reasoning(), "Easy.");
}
