//! A fake Amazon Bedrock Runtime on loopback, for tests only.
//!
//! It checks every request's authentication the way Bedrock does (a SigV4 signature
//! recomputed from the test credentials, or a Bedrock API key: `bedrock_auth.rs`); a bad one
//! gets Bedrock's 403.
//!
//! It answers `POST /model/{id}/converse` (JSON), `/converse-stream` (a binary AWS event
//! stream, each frame one HTTP chunk, encoded with `aws-smithy-eventstream`), `/invoke` (a
//! Claude Messages JSON body) and `/invoke-with-response-stream` (`chunk` events carrying
//! base64 Claude SSE events), with fault modes ([`Mode`]). Every request is recorded.
//! Converse answers may carry tool uses (a behaviour's `tool_calls`): `toolUse` blocks, streamed as
//! `contentBlockStart` with the id and name and the input JSON in two `contentBlockDelta`s, with
//! `stopReason: "tool_use"`. As Bedrock, the fake refuses `toolUse`/`toolResult` blocks without
//! a `toolConfig`, and a `toolResult` that answers no `toolUse` of the turn before.
//! It is never part of the shipped binary.

use std::io;

use aws_smithy_eventstream::frame::write_message_to;
use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use base64::Engine;
use bytes::Bytes;
use serde_json::{json, Value};

use super::bedrock_auth::verify;
pub use super::bedrock_auth::{Accept, AuthSeen, ACCESS_KEY, API_KEY, REGION, SECRET_KEY};
use super::behavior::Faults;
use super::prompt_cache::{claude_blocks, converse_blocks, PromptCache};
use super::server::{self, Exchange, FakeServer, Wire};

const EVENT_STREAM: &str = "application/vnd.amazon.eventstream";

/// How the fake answers one model request. Converse answers carry the tool calls as tool
/// uses; the model is the request's.
pub type Behavior = super::behavior::Behavior<Mode>;

impl Faults for Mode {
    const REPLY: &'static str = "Hello from the fake Bedrock.";
    const CHUNKS: usize = 3;
}

/// What Bedrock's Converse refuses in tool use: blocks without `toolConfig`, results that
/// answer no `toolUse` of the assistant turn just before.
fn tool_problem(body: &Value) -> Option<String> {
    let messages = body["messages"].as_array()?;
    let blocks = |m: &Value, key: &str| -> Vec<String> {
        m["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|b| b.get(key))
            .map(|b| b["toolUseId"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    let mut previous_uses: Vec<String> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let (uses, results) = (blocks(m, "toolUse"), blocks(m, "toolResult"));
        if (!uses.is_empty() || !results.is_empty()) && body.get("toolConfig").is_none() {
            return Some("The toolConfig field must be defined when using toolUse and toolResult content blocks.".into());
        }
        if results.iter().any(|r| !previous_uses.contains(r)) {
            return Some(format!(
                "messages.{i}.content: a toolResult does not match a toolUse of the previous turn."
            ));
        }
        previous_uses = uses;
    }
    None
}

fn tool_use_blocks(b: &Behavior) -> Vec<Value> {
    b.calls_with_json_arguments()
        .map(
            |(id, name, input)| json!({"toolUse": {"toolUseId": id, "name": name, "input": input}}),
        )
        .collect()
}

#[derive(Clone, Debug, Default)]
pub enum Mode {
    #[default]
    Ok,
    /// An HTTP error with Bedrock's body `{"message"}` and `x-amzn-ErrorType`; 429 also
    /// sends `retry-after: 1`.
    Error {
        status: u16,
        error_type: String,
        message: String,
    },
    /// Streaming: after `after` text deltas, an exception frame (`:message-type: exception`).
    Exception {
        after: usize,
        exception_type: String,
        message: String,
    },
    /// Streaming: after `after` text deltas, half of the next frame, then the connection
    /// closes. Non-streaming: half the body.
    CutAfter { after: usize },
    /// Streaming: a delta whose payload is not JSON. Non-streaming: a body that is not JSON.
    MalformedJson,
    /// Streaming: a frame whose message CRC is wrong.
    BadChecksum,
    /// Read the request and never answer.
    Stall,
}

#[derive(Clone, Debug)]
pub struct RecordedRequest {
    /// The request target as received (percent-encoding kept).
    pub path: String,
    /// The model id, percent-decoded from its one path segment.
    pub model: String,
    /// `converse`, `converse-stream`, `invoke` or `invoke-with-response-stream`.
    pub action: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    pub auth: AuthSeen,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        super::http1::header(&self.headers, name)
    }
}

/// A running fake Bedrock Runtime; dropping it stops it.
pub type FakeBedrock = FakeServer<Bedrock>;

impl FakeBedrock {
    /// Starts on a free loopback port in its own thread and runtime.
    pub fn start(accept: Accept) -> io::Result<FakeBedrock> {
        FakeServer::listen(
            0,
            Bedrock {
                accept,
                cache: PromptCache::default(),
            },
            Behavior::default(),
        )
    }
}

/// Bedrock Runtime's wire format, with the credentials it accepts and its prompt cache.
pub struct Bedrock {
    accept: Accept,
    cache: PromptCache,
}

impl Wire for Bedrock {
    type Behavior = Behavior;
    type Record = RecordedRequest;
    const NAME: &'static str = "bedrock";

    /// Verifies the authentication on arrival (a signature's age counts from then); a request
    /// of a known action that passes takes a behaviour.
    fn inspect(&self, r: &server::RecordedRequest, _: Option<&str>) -> (RecordedRequest, bool) {
        let segments: Vec<&str> = r.route().split('/').collect();
        let (model, action) = match segments.as_slice() {
            ["", "model", id, action] => (decode_segment(id), action.to_string()),
            _ => (String::new(), String::new()),
        };
        let auth = verify(&self.accept, &r.method, &r.path, &r.headers, &r.raw);
        let known = [
            "converse",
            "converse-stream",
            "invoke",
            "invoke-with-response-stream",
        ]
        .contains(&action.as_str());
        let takes = auth.is_ok() && known;
        let record = RecordedRequest {
            path: r.path.clone(),
            model,
            action,
            headers: r.headers.clone(),
            body: r.body.clone(),
            auth: auth.unwrap_or_else(AuthSeen::Refused),
        };
        (record, takes)
    }

    fn malformed(message: &str) -> Vec<u8> {
        error_body(message)
    }

    async fn answer(ex: Exchange<Self>) {
        answer(ex).await
    }
}

// ---------------------------------------------------------------------------
// Connections

fn decode_segment(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

async fn answer(mut ex: Exchange<Bedrock>) {
    let RecordedRequest {
        model,
        action,
        auth,
        ..
    } = ex.record.clone();
    if let AuthSeen::Refused(why) = auth {
        let (kind, message) = if why == "signature mismatch" {
            ("InvalidSignatureException", "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.".to_string())
        } else {
            (
                "UnrecognizedClientException",
                format!("The security token included in the request is invalid. ({why})"),
            )
        };
        return send_error(ex, 403, kind, &message).await;
    }
    let body = serde_json::from_slice::<Value>(&ex.request.raw).ok();
    let embedded = body
        .as_ref()
        .and_then(|b| super::fake_embeddings::bedrock(&model, b));
    if let (Some((status, answer)), "invoke") = (embedded, action.as_str()) {
        let answer = serde_json::to_vec(&answer).unwrap_or_default();
        return ex.respond(status, "application/json", &[], &answer).await;
    }
    let claude = action.starts_with("invoke");
    let tool_refusal = body.as_ref().and_then(tool_problem);
    if let (Some(why), false) = (&tool_refusal, claude) {
        return send_error(ex, 400, "ValidationException", why).await;
    }
    let (Some(behavior), Some(body)) = (ex.behavior.take(), body) else {
        return send_error(
            ex,
            400,
            "ValidationException",
            "Malformed input request, please reformat your input and try again.",
        )
        .await;
    };
    if let Mode::Stall = behavior.mode {
        return ex.stall().await;
    }
    if let Mode::Error {
        status,
        error_type,
        message,
    } = &behavior.mode
    {
        if ex.pause(behavior.delay).await {
            send_error(ex, *status, error_type, message).await;
        }
        return;
    }
    // The prompt cache: words read and written, Converse's cachePoint or Claude's
    // cache_control breakpoints.
    let cache = match claude {
        true => ex.wire().cache.serve(&claude_blocks(&body)),
        false => ex.wire().cache.serve(&converse_blocks(&body)),
    };
    if action.ends_with("stream") {
        let frames = if claude {
            claude_frames(&behavior, &model, cache)
        } else {
            converse_frames(&behavior, cache)
        };
        if send_stream(&mut ex, &behavior, frames).await {
            ex.end_chunked().await;
        }
        return;
    }
    if !ex.pause(behavior.delay).await {
        return;
    }
    let (read, write) = cache;
    let words = (prompt_words(&body) as u64).saturating_sub(read + write);
    let out = behavior.reply.split_whitespace().count().max(1);
    let answer = if claude {
        json!({
            "id": "msg_bdrk_01", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": behavior.reply}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": words, "output_tokens": out,
                      "cache_read_input_tokens": read, "cache_creation_input_tokens": write}
        })
    } else {
        let mut content = Vec::new();
        if !behavior.reasoning.is_empty() {
            content.push(json!({"reasoningContent": {"reasoningText": {
                "text": behavior.reasoning, "signature": REASONING_SIGNATURE}}}));
        }
        if !behavior.reply.is_empty() || behavior.tool_calls.is_empty() {
            content.push(json!({"text": behavior.reply}));
        }
        content.extend(tool_use_blocks(&behavior));
        let stop = if behavior.tool_calls.is_empty() {
            "end_turn"
        } else {
            "tool_use"
        };
        json!({
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": stop,
            "usage": {"inputTokens": words, "outputTokens": out,
                      "totalTokens": words + read + write + out as u64,
                      "cacheReadInputTokens": read, "cacheWriteInputTokens": write},
            "metrics": {"latencyMs": 42}
        })
    };
    let bytes = serde_json::to_vec(&answer).unwrap();
    let extra = [("x-amzn-requestid", "fake-request-1")];
    match behavior.mode {
        Mode::CutAfter { .. } => ex.respond_cut("application/json", &extra, &bytes).await,
        Mode::MalformedJson => {
            let bad = b"{\"output\": {\"message\": ";
            ex.respond(200, "application/json", &extra, bad).await
        }
        _ => ex.respond(200, "application/json", &extra, &bytes).await,
    }
}

/// Bedrock's error body.
fn error_body(message: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({ "message": message })).unwrap()
}

/// An error as Bedrock answers it (`x-amzn-ErrorType`), then a graceful close.
async fn send_error(ex: Exchange<Bedrock>, status: u16, kind: &str, message: &str) {
    let error_type = format!("{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/");
    let extra = [
        ("x-amzn-errortype", error_type.as_str()),
        ("x-amzn-requestid", "fake-request-err"),
    ];
    let body = error_body(message);
    ex.respond_error(status, "application/json", &extra, status == 429, &body)
        .await
}

fn prompt_words(body: &Value) -> usize {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .filter_map(|c| c["text"].as_str())
        .map(|t| t.split_whitespace().count())
        .sum()
}

// ---------------------------------------------------------------------------
// Event streams

/// One event-stream frame.
pub fn frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut m = Message::new(Bytes::copy_from_slice(payload));
    for (k, v) in headers {
        m = m.add_header(Header::new(
            k.to_string(),
            HeaderValue::String(v.to_string().into()),
        ));
    }
    let mut out = Vec::new();
    write_message_to(&m, &mut out).expect("encode a frame");
    out
}

/// An `event` frame as Bedrock sends it.
pub fn event(kind: &str, payload: &Value) -> Vec<u8> {
    frame(
        &[
            (":event-type", kind),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload.to_string().as_bytes(),
    )
}

fn exception(kind: &str, message: &str) -> Vec<u8> {
    frame(
        &[
            (":exception-type", kind),
            (":content-type", "application/json"),
            (":message-type", "exception"),
        ],
        json!({ "message": message }).to_string().as_bytes(),
    )
}

fn pieces(reply: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = reply.chars().collect();
    let n = n.max(1);
    let size = chars.len().div_ceil(n).max(1);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// What a stream sends: frames before the deltas, the deltas, and frames after.
struct Frames {
    head: Vec<Vec<u8>>,
    deltas: Vec<Vec<u8>>,
    tail: Vec<Vec<u8>>,
    /// A delta frame with a payload that is not JSON.
    malformed: Vec<u8>,
}

/// The signature the fake gives its reasoning.
pub const REASONING_SIGNATURE: &str = "ErcBCkgIAhABGAIiQFake";

/// A ConverseStream answer (API_runtime_ConverseStreamOutput).
fn converse_frames(b: &Behavior, (read, write): (u64, u64)) -> Frames {
    let parts = pieces(&b.reply, b.chunks);
    let out = b.reply.split_whitespace().count().max(1);
    // Reasoning is block 0 when there is any (its text, then its signature), then the text;
    // tool uses follow, the input in two pieces.
    let mut head = vec![event(
        "messageStart",
        &json!({"p": "abcd", "role": "assistant"}),
    )];
    let text_index = usize::from(!b.reasoning.is_empty());
    if !b.reasoning.is_empty() {
        for delta in [
            json!({"reasoningContent": {"text": b.reasoning}}),
            json!({"reasoningContent": {"signature": REASONING_SIGNATURE}}),
        ] {
            head.push(event(
                "contentBlockDelta",
                &json!({"contentBlockIndex": 0, "delta": delta, "p": "abcdefgh"}),
            ));
        }
        head.push(event(
            "contentBlockStop",
            &json!({"contentBlockIndex": 0, "p": "ab"}),
        ));
    }
    let mut tail = Vec::new();
    if !parts.is_empty() {
        tail.push(event(
            "contentBlockStop",
            &json!({"contentBlockIndex": text_index, "p": "ab"}),
        ));
    }
    let first = text_index + usize::from(!parts.is_empty());
    for (i, (id, name, input)) in b.tool_calls.iter().enumerate() {
        let index = first + i;
        tail.push(event(
            "contentBlockStart",
            &json!({"contentBlockIndex": index, "start": {"toolUse": {"toolUseId": id, "name": name}}, "p": "abc"}),
        ));
        let cut = input.len() / 2;
        let cut = (0..=cut)
            .rev()
            .find(|c| input.is_char_boundary(*c))
            .unwrap_or(0);
        for piece in [&input[..cut], &input[cut..]] {
            tail.push(event(
                "contentBlockDelta",
                &json!({"contentBlockIndex": index, "delta": {"toolUse": {"input": piece}}, "p": "abcd"}),
            ));
        }
        tail.push(event(
            "contentBlockStop",
            &json!({"contentBlockIndex": index, "p": "ab"}),
        ));
    }
    let stop = if b.tool_calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    };
    tail.push(event(
        "messageStop",
        &json!({"p": "abc", "stopReason": stop}),
    ));
    tail.push(event(
        "metadata",
        &json!({"metrics": {"latencyMs": 321}, "p": "abcdef",
                "usage": {"inputTokens": 5, "outputTokens": out, "totalTokens": 5 + read + write + out as u64,
                          "cacheReadInputTokens": read, "cacheWriteInputTokens": write}}),
    ));
    Frames {
        head,
        deltas: parts
            .iter()
            .map(|t| {
                event(
                    "contentBlockDelta",
                    &json!({"contentBlockIndex": text_index, "delta": {"text": t}, "p": "abcdefgh"}),
                )
            })
            .collect(),
        tail,
        malformed: frame(
            &[
                (":event-type", "contentBlockDelta"),
                (":content-type", "application/json"),
                (":message-type", "event"),
            ],
            b"{\"contentBlockIndex\":0,\"delta\":{\"text\":",
        ),
    }
}

/// A `chunk` event carrying one Claude SSE event.
fn chunk(inner: &Value) -> Vec<u8> {
    let b64 = base64::engine::general_purpose::STANDARD.encode(inner.to_string());
    event("chunk", &json!({ "bytes": b64, "p": "abcd" }))
}

/// An InvokeModelWithResponseStream answer of a Claude model: Anthropic's stream events, each
/// in a `chunk` event, the last with Bedrock's `amazon-bedrock-invocationMetrics`.
fn claude_frames(b: &Behavior, model: &str, (read, write): (u64, u64)) -> Frames {
    let parts = pieces(&b.reply, b.chunks);
    let out = b.reply.split_whitespace().count().max(1);
    Frames {
        head: vec![
            chunk(&json!({"type": "message_start", "message": {"id": "msg_bdrk_01", "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 5, "output_tokens": 1, "cache_read_input_tokens": read, "cache_creation_input_tokens": write}}})),
            chunk(&json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})),
        ],
        deltas: parts
            .iter()
            .map(|t| chunk(&json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}})))
            .collect(),
        tail: vec![
            chunk(&json!({"type": "content_block_stop", "index": 0})),
            chunk(&json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": out}})),
            chunk(&json!({"type": "message_stop", "amazon-bedrock-invocationMetrics": {"inputTokenCount": 5, "outputTokenCount": out, "invocationLatency": 321, "firstByteLatency": 100}})),
        ],
        malformed: event("chunk", &json!({"bytes": base64::engine::general_purpose::STANDARD.encode("{\"type\":\"content_block_delta\",")})),
    }
}

/// Streams the frames as a chunked event-stream body, with the behaviour's fault; true when
/// the body should end normally (with its terminating chunk and a graceful close).
async fn send_stream(ex: &mut Exchange<Bedrock>, b: &Behavior, frames: Frames) -> bool {
    if !ex
        .start_chunked(EVENT_STREAM, &[("x-amzn-requestid", "fake-request-2")])
        .await
    {
        return false;
    }
    for f in &frames.head {
        if !ex.chunk(f).await {
            return false;
        }
    }
    for (i, d) in frames.deltas.iter().enumerate() {
        match &b.mode {
            Mode::CutAfter { after } if *after == i => {
                ex.chunk(&d[..d.len() / 2]).await;
                return false; // dropping the socket cuts the body
            }
            Mode::Exception {
                after,
                exception_type,
                message,
            } if *after == i => {
                return ex.chunk(&exception(exception_type, message)).await;
            }
            Mode::MalformedJson if i == 1 => {
                return ex.chunk(&frames.malformed).await;
            }
            Mode::BadChecksum if i == 1 => {
                let mut bad = d.clone();
                let last = bad.len() - 1;
                bad[last] ^= 0x5a;
                return ex.chunk(&bad).await;
            }
            _ => {}
        }
        if !ex.pause(b.delay).await || !ex.chunk(d).await {
            return false;
        }
    }
    for f in &frames.tail {
        if !ex.chunk(f).await {
            return false;
        }
    }
    true
}
