//! A fake Ollama server on loopback, for tests only: `POST /api/chat` answered as Ollama does
//! (https://github.com/ollama/ollama/blob/main/docs/api.md#generate-a-chat-completion).
//!
//! Streaming answers are `application/x-ndjson`, chunked, one JSON record per line and per
//! chunk, the last with `done: true`, `done_reason` and the counts; a whole answer is one
//! `application/json` object. Errors are `{"error": "..."}` with the status. The fake checks what
//! Ollama would refuse: a body that is not JSON, a non-JSON content type, no `model`, message
//! `content` that is not a string, `images` that are not plain base64 strings, and `options`
//! that is not an object (Ollama answers those with 400 and the Go decoding error). With
//! [`FakeServer::expect_key`] it also wants `Authorization: Bearer KEY` (a proxy in front of
//! Ollama), else 401. Tokens are counted as words. The HTTP/1.1 server is `server.rs`.
//!
//! Tools: a behavior's `tool_calls` become `message.tool_calls` (no ids, arguments as an object;
//! streamed one call per record after the text). `tools` that is not a list and call arguments
//! that are not an object are refused as Ollama's Go decoder refuses them.

use std::io;

use serde_json::{json, Value};

pub use super::behavior::Mode;

/// How the fake answers one model call.
pub type Behavior = super::behavior::Behavior<Mode>;
use super::http1::{count_words, split_reply};
use super::server::{Exchange, RecordedRequest, Wire};

/// A running fake Ollama server.
pub type FakeServer = super::server::FakeServer<Ollama>;

/// The `created_at` every record carries.
const CREATED_AT: &str = "2023-08-04T19:22:45.499127Z";

pub fn start(default: Behavior) -> FakeServer {
    FakeServer::start(Ollama::default(), default).expect("start the fake Ollama server")
}

impl FakeServer {
    /// Starts `wire` on any free loopback port.
    pub fn start(wire: Ollama, default: Behavior) -> io::Result<FakeServer> {
        FakeServer::listen(0, wire, default)
    }
}

/// Ollama's wire format.
#[derive(Default)]
pub struct Ollama {
    /// Every stream fails after its first line (see [`error_line_wire`]).
    error_line: bool,
}

impl Wire for Ollama {
    type Behavior = Behavior;
    type Record = RecordedRequest;
    const NAME: &'static str = "ollama";

    fn inspect(&self, r: &RecordedRequest, _: Option<&str>) -> (RecordedRequest, bool) {
        let call = r.method == "POST" && r.route() == "/api/chat" && problem(r).is_none();
        (r.clone(), call)
    }

    async fn answer(ex: Exchange<Self>) {
        if ex.wire().error_line {
            error_line(ex).await
        } else {
            answer(ex).await
        }
    }
}

/// Why Ollama would refuse this request, with its status.
fn problem(r: &RecordedRequest) -> Option<(u16, String)> {
    if r.method != "POST" || r.route() != "/api/chat" {
        return Some((404, "404 page not found".into()));
    }
    if !r
        .header("content-type")
        .is_some_and(|t| t.starts_with("application/json"))
    {
        return Some((400, "content type must be application/json".into()));
    }
    let Some(body) = r.body.as_object() else {
        return Some((
            400,
            "invalid character looking for beginning of value".into(),
        ));
    };
    if !body.get("model").is_some_and(Value::is_string) {
        return Some((400, "model is required".into()));
    }
    if let Some(t) = body.get("tools").filter(|t| !t.is_array()) {
        return Some(cannot_unmarshal(t, "ChatRequest.tools", "api.Tools"));
    }
    if let Some(o) = body.get("options").filter(|o| !o.is_object()) {
        return Some(cannot_unmarshal(
            o,
            "ChatRequest.options",
            "map[string]interface {}",
        ));
    }
    for m in body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(c) = m.get("content").filter(|c| !c.is_string()) {
            return Some(cannot_unmarshal(c, "Message.messages.content", "string"));
        }
        for call in m
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let args = &call["function"]["arguments"];
            if !args.is_object() {
                return Some(cannot_unmarshal(
                    args,
                    "ToolCallFunction.messages.tool_calls.function.arguments",
                    "api.ToolCallFunctionArguments",
                ));
            }
        }
        for image in m
            .get("images")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            match image.as_str() {
                Some(s) if !s.starts_with("data:") && !s.contains(',') => {}
                _ => return Some((400, "illegal base64 data at input byte 4".into())),
            }
        }
    }
    None
}

/// Ollama's 400 for a field of the wrong JSON type, in the words of Go's decoder.
fn cannot_unmarshal(value: &Value, field: &str, type_name: &str) -> (u16, String) {
    (
        400,
        format!(
            "json: cannot unmarshal {} into Go struct field {field} of type {type_name}",
            go_type(value)
        ),
    )
}

fn go_type(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        _ => "object",
    }
}

fn prompt_words(body: &Value) -> u64 {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_str())
        .map(count_words)
        .sum()
}

fn error_body(message: &str) -> Vec<u8> {
    json!({ "error": message }).to_string().into_bytes()
}

async fn answer(mut ex: Exchange<Ollama>) {
    if ex.request.method == "POST" && ex.request.route() == "/api/embed" {
        let (status, body) = super::fake_embeddings::ollama(&ex.request.body);
        let body = serde_json::to_vec(&body).unwrap_or_default();
        return ex
            .respond(status, "application/json; charset=utf-8", &[], &body)
            .await;
    }
    if let Some((status, message)) = problem(&ex.request) {
        return ex
            .respond(
                status,
                "application/json; charset=utf-8",
                &[],
                &error_body(&message),
            )
            .await;
    }
    if let Some(key) = ex.expected_key.clone() {
        if ex.request.header("authorization") != Some(format!("Bearer {key}").as_str()) {
            return ex
                .respond(
                    401,
                    "application/json; charset=utf-8",
                    &[],
                    &error_body("unauthorized"),
                )
                .await;
        }
    }
    let behavior = ex.behavior.clone().unwrap_or_default();
    let body = ex.request.body.clone();
    let model = behavior.model_or(body["model"].as_str().unwrap_or("llama3.2"));
    let streaming = body.get("stream").and_then(Value::as_bool).unwrap_or(true);
    let calls: Vec<Value> = behavior
        .calls_with_json_arguments()
        .map(|(_, name, args)| json!({"function": {"name": name, "arguments": args}}))
        .collect();
    let record = |content: &str| {
        json!({"model": model, "created_at": CREATED_AT,
               "message": {"role": "assistant", "content": content}, "done": false})
    };
    // A thinking model thinks when `think` is on (true or a level), in `message.thinking`.
    let think_on = !matches!(body.get("think"), None | Some(Value::Bool(false)));
    let thinking = (think_on && !behavior.reasoning.is_empty()).then_some(&behavior.reasoning);
    let last = json!({
        "model": model, "created_at": CREATED_AT,
        "message": {"role": "assistant", "content": ""},
        "done_reason": "stop", "done": true,
        "total_duration": 4883583458u64, "load_duration": 1334875,
        "prompt_eval_count": prompt_words(&body), "prompt_eval_duration": 342546000,
        "eval_count": count_words(&behavior.reply).max(1), "eval_duration": 4535599000u64
    });
    match behavior.mode {
        Mode::Stall => ex.stall().await,
        Mode::Error {
            status,
            ref message,
        } => {
            if !ex.pause(behavior.delay).await {
                return;
            }
            ex.respond_error(
                status,
                "application/json; charset=utf-8",
                &[],
                status == 429,
                &error_body(message),
            )
            .await
        }
        _ if !streaming => {
            if !ex.pause(behavior.delay).await {
                return;
            }
            let mut whole = last.clone();
            whole["message"]["content"] = Value::from(behavior.reply.clone());
            if let Some(thinking) = thinking {
                whole["message"]["thinking"] = Value::from(thinking.clone());
            }
            if !calls.is_empty() {
                whole["message"]["tool_calls"] = Value::Array(calls.clone());
            }
            let bytes = whole.to_string().into_bytes();
            if matches!(behavior.mode, Mode::CutAfter { .. }) {
                return ex
                    .respond_cut("application/json; charset=utf-8", &[], &bytes)
                    .await;
            }
            ex.respond(200, "application/json; charset=utf-8", &[], &bytes)
                .await
        }
        _ => {
            if !ex.start_chunked("application/x-ndjson", &[]).await {
                return;
            }
            if let Some(thinking) = thinking {
                let mut record = record("");
                record["message"]["thinking"] = Value::from(thinking.clone());
                if !ex.chunk(format!("{record}\n").as_bytes()).await {
                    return;
                }
            }
            for (i, piece) in split_reply(&behavior.reply, behavior.chunks)
                .into_iter()
                .enumerate()
            {
                match behavior.mode {
                    Mode::CutAfter { after } if after == i => return,
                    Mode::Malformed { after }
                        if after == i
                            && !ex.chunk(b"{\"model\":\"x\",\"message\":{\"con\n").await =>
                    {
                        return
                    }
                    _ => {}
                }
                if !ex.pause(behavior.delay).await {
                    return;
                }
                let line = format!("{}\n", record(piece));
                if !ex.chunk(line.as_bytes()).await {
                    return;
                }
            }
            if matches!(behavior.mode, Mode::CutAfter { .. }) {
                return;
            }
            for call in &calls {
                let mut record = record("");
                record["message"]["tool_calls"] = json!([call]);
                if !ex.pause(behavior.delay).await
                    || !ex.chunk(format!("{record}\n").as_bytes()).await
                {
                    return;
                }
            }
            let line = format!("{last}\n");
            if ex.chunk(line.as_bytes()).await {
                ex.end_chunked().await;
            }
        }
    }
}

/// A stream whose lines carry an `{"error": ...}` record after `after` pieces, as Ollama does
/// when the model fails while generating (status 200 already sent).
pub fn error_line_wire() -> Ollama {
    Ollama { error_line: true }
}

async fn error_line(mut ex: Exchange<Ollama>) {
    if !ex.start_chunked("application/x-ndjson", &[]).await {
        return;
    }
    let first = json!({"model": "m", "created_at": CREATED_AT,
                       "message": {"role": "assistant", "content": "Partial"}, "done": false});
    let err = json!({"error": "an error was encountered while running the model: unexpected EOF"});
    for line in [first, err] {
        if !ex.chunk(format!("{line}\n").as_bytes()).await {
            return;
        }
    }
    ex.end_chunked().await;
}
