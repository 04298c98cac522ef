//! The answers of `POST /v1/responses`: the core's [`ModelReply`] as a whole `response` object
//! (its `output` items: `reasoning` with its text as the summary, a `message` with its
//! `output_text`, `function_call`s with their `call_id`; `status` completed, or incomplete with
//! the reason; the usage), or the turn's pieces as the API's stream events, each with its
//! `sequence_number`: `response.created` and `response.in_progress`, then per output item
//! `response.output_item.added`, its content part, its deltas (`response.output_text.delta`,
//! `response.reasoning_summary_text.delta`, `response.function_call_arguments.delta`), their
//! `.done` events and `response.output_item.done`; `response.completed` (or
//! `response.incomplete`) last, or `response.failed` when the turn fails once streaming.
//!
//! It owns the reply's side of this API. It must never read a request nor run a turn
//! (`responses.rs` does), and never say more than the reply holds: a usage the provider did
//! not report is `null`, a reasoning signature it did not give no `encrypted_content`.

use bytes::Bytes;
use serde_json::{json, Map, Value};

use super::respond::{Finish, Shape};
use super::turn::Piece;
use super::{sse, ApiError};
use genai_core::format::{ModelReply, ToolCallDelta};
use genai_core::message::{Part, Usage};

/// The output item being streamed.
enum Open {
    Message {
        id: String,
        text: String,
    },
    Reasoning {
        id: String,
        text: String,
        signature: String,
    },
    Call {
        /// The core's key of the call.
        key: usize,
        id: String,
        call_id: String,
        name: String,
        arguments: String,
    },
}

/// The answer of one request, whole or as stream events.
pub(crate) struct Events {
    id: String,
    created_at: u64,
    /// What the response says back of the request (`model`, `tools`, settings).
    echo: Map<String, Value>,
    /// The next event's `sequence_number`.
    sequence: u64,
    /// The output items streamed whole so far, as sent.
    done: Vec<Value>,
    open: Option<Open>,
    sent_text: bool,
    sent_calls: bool,
    /// The request's tool namespaces: a call of `NS__NAME` goes back as `NAME` in `NS`.
    namespaces: Vec<String>,
}

impl Events {
    pub(crate) fn new(id: String, created_at: u64, echo: Map<String, Value>) -> Events {
        Events {
            id,
            created_at,
            echo,
            sequence: 0,
            done: Vec::new(),
            open: None,
            sent_text: false,
            sent_calls: false,
            namespaces: Vec::new(),
        }
    }

    /// The tool namespaces of the request, whose calls go back with their `namespace`.
    pub(crate) fn with_namespaces(mut self, namespaces: Vec<String>) -> Events {
        self.namespaces = namespaces;
        self
    }

    /// The `response` object with this status, output and usage.
    fn response(&self, status: &str, output: Vec<Value>, usage: Value) -> Value {
        let echoed = |key: &str, default: Value| self.echo.get(key).cloned().unwrap_or(default);
        json!({
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "background": false,
            "error": null,
            "incomplete_details": null,
            "instructions": echoed("instructions", Value::Null),
            "max_output_tokens": echoed("max_output_tokens", Value::Null),
            "metadata": echoed("metadata", json!({})),
            "model": echoed("model", Value::Null),
            "output": output,
            "parallel_tool_calls": echoed("parallel_tool_calls", json!(true)),
            "previous_response_id": null,
            "reasoning": echoed("reasoning", json!({"effort": null, "summary": null})),
            "service_tier": echoed("service_tier", json!("default")),
            // genai keeps no response on the server, whatever the request asked.
            "store": false,
            "temperature": echoed("temperature", Value::Null),
            "text": echoed("text", json!({"format": {"type": "text"}})),
            "tool_choice": echoed("tool_choice", json!("auto")),
            "tools": echoed("tools", json!([])),
            "top_p": echoed("top_p", Value::Null),
            "truncation": echoed("truncation", json!("disabled")),
            "usage": usage,
            "user": echoed("user", Value::Null),
        })
    }

    /// The whole response of a finished reply with these output items.
    fn finished(&self, reply: &ModelReply, output: Vec<Value>) -> Value {
        let (status, reason) = match Finish::of(reply) {
            Finish::Length => ("incomplete", Some("max_output_tokens")),
            Finish::Filtered => ("incomplete", Some("content_filter")),
            _ => ("completed", None),
        };
        let mut r = self.response(status, output, reply.usage.map_or(Value::Null, usage));
        if let Some(reason) = reason {
            r["incomplete_details"] = json!({"reason": reason});
        }
        r
    }

    /// One event of the stream, numbered.
    fn event(&mut self, kind: &str, mut data: Value) -> Bytes {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        sse::json_frame(Some(kind), &data)
    }

    /// The output index of the open item.
    fn index(&self) -> usize {
        self.done.len()
    }

    /// Opens an item (closing the one open), its first events in `out`.
    fn open(&mut self, open: Open, out: &mut Vec<Bytes>) {
        self.close(out);
        let index = self.index();
        let item = match &open {
            Open::Message { id, .. } => json!({
                "id": id, "type": "message", "status": "in_progress", "role": "assistant", "content": []
            }),
            Open::Reasoning { id, .. } => json!({"id": id, "type": "reasoning", "summary": []}),
            Open::Call {
                id, call_id, name, ..
            } => call_item(id, call_id, name, "", "in_progress", &self.namespaces),
        };
        out.push(self.event(
            "response.output_item.added",
            json!({"output_index": index, "item": item}),
        ));
        match &open {
            Open::Message { id, .. } => {
                let data = json!({"item_id": id, "output_index": index, "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []}});
                out.push(self.event("response.content_part.added", data));
            }
            Open::Reasoning { id, .. } => {
                let data = json!({"item_id": id, "output_index": index, "summary_index": 0,
                    "part": {"type": "summary_text", "text": ""}});
                out.push(self.event("response.reasoning_summary_part.added", data));
            }
            Open::Call { .. } => {}
        }
        self.open = Some(open);
    }

    /// Closes the open item: its last events, then `response.output_item.done`.
    fn close(&mut self, out: &mut Vec<Bytes>) {
        let Some(open) = self.open.take() else {
            return;
        };
        let index = self.index();
        let item = match open {
            Open::Message { id, text } => {
                let data = json!({"item_id": id, "output_index": index, "content_index": 0,
                    "text": text, "logprobs": []});
                out.push(self.event("response.output_text.done", data));
                let data = json!({"item_id": id, "output_index": index, "content_index": 0,
                    "part": output_text(&text)});
                out.push(self.event("response.content_part.done", data));
                message_item(&id, &text)
            }
            Open::Reasoning {
                id,
                text,
                signature,
            } => {
                let data =
                    json!({"item_id": id, "output_index": index, "summary_index": 0, "text": text});
                out.push(self.event("response.reasoning_summary_text.done", data));
                let data = json!({"item_id": id, "output_index": index, "summary_index": 0,
                    "part": {"type": "summary_text", "text": text}});
                out.push(self.event("response.reasoning_summary_part.done", data));
                reasoning_item(&id, &text, Some(signature).filter(|s| !s.is_empty()))
            }
            Open::Call {
                id,
                call_id,
                name,
                arguments,
                ..
            } => {
                let data = json!({"item_id": id, "output_index": index, "name": name, "arguments": arguments});
                out.push(self.event("response.function_call_arguments.done", data));
                call_item(
                    &id,
                    &call_id,
                    &name,
                    &arguments,
                    "completed",
                    &self.namespaces,
                )
            }
        };
        out.push(self.event(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        ));
        self.done.push(item);
    }

    fn text(&mut self, t: &str, out: &mut Vec<Bytes>) {
        if !matches!(self.open, Some(Open::Message { .. })) {
            let id = item_id("msg");
            self.open(
                Open::Message {
                    id,
                    text: String::new(),
                },
                out,
            );
        }
        let index = self.index();
        let Some(Open::Message { id, text }) = &mut self.open else {
            return;
        };
        text.push_str(t);
        let data = json!({"item_id": id.clone(), "output_index": index, "content_index": 0, "delta": t, "logprobs": []});
        self.sent_text = true;
        out.push(self.event("response.output_text.delta", data));
    }

    fn reasoning(&mut self, r: &str, out: &mut Vec<Bytes>) {
        if !matches!(self.open, Some(Open::Reasoning { .. })) {
            let open = Open::Reasoning {
                id: item_id("rs"),
                text: String::new(),
                signature: String::new(),
            };
            self.open(open, out);
        }
        let index = self.index();
        let Some(Open::Reasoning { id, text, .. }) = &mut self.open else {
            return;
        };
        text.push_str(r);
        let data =
            json!({"item_id": id.clone(), "output_index": index, "summary_index": 0, "delta": r});
        out.push(self.event("response.reasoning_summary_text.delta", data));
    }

    fn call(&mut self, d: &ToolCallDelta, out: &mut Vec<Bytes>) {
        if !matches!(self.open, Some(Open::Call { key, .. }) if key == d.index) {
            let open = Open::Call {
                key: d.index,
                id: item_id("fc"),
                call_id: d.id.clone().unwrap_or_else(|| item_id("call")),
                name: d.name.clone().unwrap_or_default(),
                arguments: String::new(),
            };
            self.open(open, out);
            self.sent_calls = true;
        }
        let index = self.index();
        let Some(Open::Call {
            id,
            name,
            arguments,
            ..
        }) = &mut self.open
        else {
            return;
        };
        if name.is_empty() {
            name.clone_from(&d.name.clone().unwrap_or_default());
        }
        if d.arguments.is_empty() {
            return;
        }
        arguments.push_str(&d.arguments);
        let data = json!({"item_id": id.clone(), "output_index": index, "delta": d.arguments});
        out.push(self.event("response.function_call_arguments.delta", data));
    }

    /// The last events: what the model did not stream (a structured reply comes whole; an
    /// open reasoning item gets its signature), then the finished response.
    fn end(&mut self, reply: &ModelReply) -> Vec<Bytes> {
        let mut out = Vec::new();
        if let Some(Open::Reasoning { signature, .. }) = &mut self.open {
            if signature.is_empty() {
                if let Some(s) = reply.message.content.iter().find_map(reasoning_signature) {
                    signature.push_str(s);
                }
            }
        }
        let text = super::respond::reply_text(reply);
        if !self.sent_text && !text.is_empty() {
            self.text(&text, &mut out);
        }
        if !self.sent_calls {
            for (key, (id, name, arguments)) in reply.message.calls().enumerate() {
                let d = ToolCallDelta {
                    index: key,
                    id: Some(id.to_string()),
                    name: Some(name.to_string()),
                    arguments: arguments.to_string(),
                };
                self.call(&d, &mut out);
            }
        }
        self.close(&mut out);
        let response = self.finished(reply, self.done.clone());
        let kind = match response["status"] == "completed" {
            true => "response.completed",
            false => "response.incomplete",
        };
        out.push(self.event(kind, json!({"response": response})));
        out
    }

    /// The `response.failed` event of a turn that failed once streaming.
    fn failed(&mut self, e: &ApiError) -> Bytes {
        let mut response = self.response("failed", self.done.clone(), Value::Null);
        response["error"] = json!({"code": e.code.unwrap_or(e.kind), "message": e.message});
        self.event("response.failed", json!({"response": response}))
    }
}

impl Events {
    /// The whole answer's JSON.
    fn body(&self, reply: &ModelReply) -> Value {
        let mut output: Vec<Value> = Vec::new();
        let mut text: Option<String> = None;
        let flush = |text: &mut Option<String>, output: &mut Vec<Value>| {
            if let Some(t) = text.take() {
                output.push(message_item(&item_id("msg"), &t));
            }
        };
        for p in &reply.message.content {
            match p {
                Part::Text { text: t } if !t.is_empty() => {
                    text.get_or_insert_with(String::new).push_str(t)
                }
                Part::Json { value } => text
                    .get_or_insert_with(String::new)
                    .push_str(&value.to_string()),
                Part::Reasoning {
                    text: t,
                    signature,
                    redacted,
                } => {
                    flush(&mut text, &mut output);
                    let t = if *redacted { "" } else { t.as_str() };
                    output.push(reasoning_item(&item_id("rs"), t, signature.clone()));
                }
                Part::ToolCall {
                    id,
                    name,
                    arguments,
                    ..
                } => {
                    flush(&mut text, &mut output);
                    let args = arguments.to_string();
                    let item = call_item(
                        &item_id("fc"),
                        id,
                        name,
                        &args,
                        "completed",
                        &self.namespaces,
                    );
                    output.push(item);
                }
                _ => {}
            }
        }
        flush(&mut text, &mut output);
        self.finished(reply, output)
    }
}

impl Shape for Events {
    fn whole(&self, reply: &ModelReply) -> Bytes {
        super::json_bytes(&self.body(reply))
    }

    fn start(&mut self) -> Vec<Bytes> {
        let response = self.response("in_progress", Vec::new(), Value::Null);
        vec![
            self.event("response.created", json!({"response": response})),
            self.event("response.in_progress", json!({"response": response})),
        ]
    }

    fn piece(&mut self, piece: Piece) -> Vec<Bytes> {
        let mut out = Vec::new();
        match piece {
            Piece::Text(t) if t.is_empty() => {}
            Piece::Text(t) => self.text(&t, &mut out),
            Piece::Reasoning(r) if r.is_empty() => {}
            Piece::Reasoning(r) => self.reasoning(&r, &mut out),
            Piece::Signature(s) => {
                if let Some(Open::Reasoning { signature, .. }) = &mut self.open {
                    signature.push_str(&s);
                }
            }
            Piece::Call(d) => self.call(&d, &mut out),
            Piece::Done(Ok(reply)) => out = self.end(&reply),
            // Once streaming, an error can only be an event, the last one.
            Piece::Done(Err(e)) => out.push(self.failed(&ApiError::of(&e, None))),
        }
        out
    }
}

/// A new item's id, as OpenAI's: its kind's prefix and a unique suffix.
fn item_id(prefix: &str) -> String {
    format!("{prefix}_{}", ulid::Ulid::new().to_string().to_lowercase())
}

fn output_text(text: &str) -> Value {
    json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
}

fn message_item(id: &str, text: &str) -> Value {
    json!({"id": id, "type": "message", "status": "completed", "role": "assistant",
        "content": [output_text(text)]})
}

fn reasoning_item(id: &str, text: &str, signature: Option<String>) -> Value {
    let summary = match text.is_empty() {
        true => json!([]),
        false => json!([{"type": "summary_text", "text": text}]),
    };
    json!({"id": id, "type": "reasoning", "summary": summary, "encrypted_content": signature})
}

/// What separates a namespace from its tool's name in the name offered to the model (a name
/// OpenAI's and others' function names allow).
pub(super) const NAMESPACE_SEPARATOR: &str = "__";

/// `NS__NAME` as (`NS`, `NAME`) when `NS` is one of the request's tool namespaces.
pub(super) fn split_namespaced<'a>(
    name: &'a str,
    namespaces: &'a [String],
) -> Option<(&'a str, &'a str)> {
    namespaces.iter().find_map(|ns| {
        name.strip_prefix(ns.as_str())?
            .strip_prefix(NAMESPACE_SEPARATOR)
            .map(|short| (ns.as_str(), short))
    })
}

fn call_item(
    id: &str,
    call_id: &str,
    name: &str,
    arguments: &str,
    status: &str,
    namespaces: &[String],
) -> Value {
    let mut item = json!({"id": id, "type": "function_call", "status": status,
        "call_id": call_id, "name": name, "arguments": arguments});
    if let Some((ns, short)) = split_namespaced(name, namespaces) {
        item["name"] = json!(short);
        item["namespace"] = json!(ns);
    }
    item
}

/// The signature of a readable reasoning part.
fn reasoning_signature(p: &Part) -> Option<&str> {
    match p {
        Part::Reasoning {
            signature: Some(s),
            redacted: false,
            ..
        } => Some(s),
        _ => None,
    }
}

/// The usage in this API's words.
fn usage(u: Usage) -> Value {
    json!({
        "input_tokens": u.input_tokens,
        "input_tokens_details": {"cached_tokens": u.cache_read_tokens.unwrap_or(0)},
        "output_tokens": u.output_tokens,
        "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens.unwrap_or(0)},
        "total_tokens": u.total(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(frames: &[Bytes]) -> Vec<(String, Value)> {
        frames
            .iter()
            .map(|f| {
                let text = std::str::from_utf8(f).unwrap();
                let (head, data) = text.trim_end().split_once('\n').unwrap();
                let name = head.strip_prefix("event: ").unwrap().to_string();
                let data: Value =
                    serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
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
        let v = e.body(&reply(vec![Part::text("Cut sh")], "length"));
        assert_eq!(v["object"], "response");
        assert_eq!(v["status"], "incomplete");
        assert_eq!(v["incomplete_details"]["reason"], "max_output_tokens");
        assert_eq!(v["output"][0]["type"], "message");
        assert_eq!(v["output"][0]["content"][0]["text"], "Cut sh");
        assert!(v["output"][0]["id"].as_str().unwrap().starts_with("msg_"));
    }
}
