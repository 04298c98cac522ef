//! The answers of `POST /v1/responses`: the core's [`ModelReply`] as a whole `response` object
//! (its `output` items: `reasoning` with its text as the summary, a `message` with its
//! `output_text`, `function_call`s with their `call_id`; `status` completed, or incomplete with
//! the reason; the usage), or the turn's pieces as the API's stream events, each with its
//! `sequence_number`: `response.created` and `response.in_progress`, then per output item
//! `response.output_item.added`, its content part, its deltas (`response.output_text.delta`,
//! `response.reasoning_summary_text.delta`, `response.function_call_arguments.delta`), their
//! `.done` events and `response.output_item.done`; `response.completed` (or
//! `response.incomplete`) last, or `response.failed` when the turn fails once streaming. Each
//! is written from serde types straight to bytes; only what the request sent is echoed as
//! it came.
//!
//! It owns the reply's side of this API. It must never read a request nor run a turn
//! (`responses.rs` does), and never say more than the reply holds: a usage the provider did
//! not report is `null`, a reasoning signature it did not give no `encrypted_content`.

use bytes::Bytes;
use serde_json::{Map, Value};

use super::respond::{Finish, Shape};
use super::turn::Piece;
use super::{sse, ApiError};
use genai_core::format::{ModelReply, ToolCallDelta};
use genai_core::message::Part;

use super::responses_wire::*;

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
    done: Vec<Item>,
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

    /// The request's `key` as it came, else what the API says of it when it is not sent.
    fn echoed(&self, key: &str) -> &Value {
        static NULL: Value = Value::Null;
        (self.echo.get(key))
            .or_else(|| DEFAULTS.get(key))
            .unwrap_or(&NULL)
    }

    /// The `response` object with this status, output and usage.
    fn response<'a>(
        &'a self,
        status: &'static str,
        output: &'a [Item],
        usage: Option<UsageOut>,
    ) -> Response<'a> {
        Response {
            id: &self.id,
            object: "response",
            created_at: self.created_at,
            status,
            background: false,
            error: None,
            incomplete_details: None,
            instructions: self.echoed("instructions"),
            max_output_tokens: self.echoed("max_output_tokens"),
            metadata: self.echoed("metadata"),
            model: self.echoed("model"),
            output,
            parallel_tool_calls: self.echoed("parallel_tool_calls"),
            previous_response_id: None,
            reasoning: self.echoed("reasoning"),
            service_tier: self.echoed("service_tier"),
            store: false,
            temperature: self.echoed("temperature"),
            text: self.echoed("text"),
            tool_choice: self.echoed("tool_choice"),
            tools: self.echoed("tools"),
            top_p: self.echoed("top_p"),
            truncation: self.echoed("truncation"),
            usage,
            user: self.echoed("user"),
        }
    }

    /// The whole response of a finished reply with these output items.
    fn finished<'a>(&'a self, reply: &ModelReply, output: &'a [Item]) -> Response<'a> {
        let (status, reason) = match Finish::of(reply) {
            Finish::Length => ("incomplete", Some("max_output_tokens")),
            Finish::Filtered => ("incomplete", Some("content_filter")),
            _ => ("completed", None),
        };
        let mut r = self.response(status, output, reply.usage.map(usage));
        r.incomplete_details = reason.map(|reason| Incomplete { reason });
        r
    }

    /// The next event's number.
    fn number(&mut self) -> u64 {
        self.sequence += 1;
        self.sequence - 1
    }

    /// One event of the stream, numbered.
    fn event(&mut self, kind: &str, data: Event<'_>) -> Bytes {
        let sequence_number = self.number();
        frame(Event {
            kind,
            sequence_number,
            ..data
        })
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
            Open::Message { id, .. } => message_item(id, None, "in_progress"),
            Open::Reasoning { id, .. } => reasoning_item(id, "", None),
            Open::Call {
                id, call_id, name, ..
            } => call_item(id, call_id, name, "", "in_progress", &self.namespaces),
        };
        let added = Event {
            output_index: Some(index),
            item: Some(&item),
            ..Event::default()
        };
        out.push(self.event("response.output_item.added", added));
        match &open {
            Open::Message { id, .. } => {
                let data = Event {
                    item_id: Some(id),
                    output_index: Some(index),
                    content_index: Some(0),
                    part: Some(EventPart::Text(output_text("", false))),
                    ..Event::default()
                };
                out.push(self.event("response.content_part.added", data));
            }
            Open::Reasoning { id, .. } => {
                let data = Event {
                    item_id: Some(id),
                    output_index: Some(index),
                    summary_index: Some(0),
                    part: Some(EventPart::Summary(summary_text(""))),
                    ..Event::default()
                };
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
                let data = Event {
                    item_id: Some(&id),
                    output_index: Some(index),
                    content_index: Some(0),
                    text: Some(&text),
                    logprobs: Some([]),
                    ..Event::default()
                };
                out.push(self.event("response.output_text.done", data));
                let data = Event {
                    item_id: Some(&id),
                    output_index: Some(index),
                    content_index: Some(0),
                    part: Some(EventPart::Text(output_text(&text, true))),
                    ..Event::default()
                };
                out.push(self.event("response.content_part.done", data));
                message_item(&id, Some(&text), "completed")
            }
            Open::Reasoning {
                id,
                text,
                signature,
            } => {
                let data = Event {
                    item_id: Some(&id),
                    output_index: Some(index),
                    summary_index: Some(0),
                    text: Some(&text),
                    ..Event::default()
                };
                out.push(self.event("response.reasoning_summary_text.done", data));
                let data = Event {
                    item_id: Some(&id),
                    output_index: Some(index),
                    summary_index: Some(0),
                    part: Some(EventPart::Summary(summary_text(&text))),
                    ..Event::default()
                };
                out.push(self.event("response.reasoning_summary_part.done", data));
                let signature = Some(signature).filter(|s| !s.is_empty());
                reasoning_item(&id, &text, Some(signature))
            }
            Open::Call {
                id,
                call_id,
                name,
                arguments,
                ..
            } => {
                let data = Event {
                    item_id: Some(&id),
                    output_index: Some(index),
                    name: Some(&name),
                    arguments: Some(&arguments),
                    ..Event::default()
                };
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
        let done = Event {
            output_index: Some(index),
            item: Some(&item),
            ..Event::default()
        };
        out.push(self.event("response.output_item.done", done));
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
        let (index, sequence_number) = (self.index(), self.number());
        let Some(Open::Message { id, text }) = &mut self.open else {
            return;
        };
        text.push_str(t);
        self.sent_text = true;
        out.push(frame(Event {
            item_id: Some(id),
            output_index: Some(index),
            content_index: Some(0),
            delta: Some(t),
            logprobs: Some([]),
            kind: "response.output_text.delta",
            sequence_number,
            ..Event::default()
        }));
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
        let (index, sequence_number) = (self.index(), self.number());
        let Some(Open::Reasoning { id, text, .. }) = &mut self.open else {
            return;
        };
        text.push_str(r);
        out.push(frame(Event {
            item_id: Some(id),
            output_index: Some(index),
            summary_index: Some(0),
            delta: Some(r),
            kind: "response.reasoning_summary_text.delta",
            sequence_number,
            ..Event::default()
        }));
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
        // A name the call's first piece lacked may come with a later one.
        if let (Some(Open::Call { name, .. }), Some(given)) = (&mut self.open, &d.name) {
            if name.is_empty() {
                name.clone_from(given);
            }
        }
        if d.arguments.is_empty() {
            return;
        }
        let (index, sequence_number) = (self.index(), self.number());
        let Some(Open::Call { id, arguments, .. }) = &mut self.open else {
            return;
        };
        arguments.push_str(&d.arguments);
        out.push(frame(Event {
            item_id: Some(id),
            output_index: Some(index),
            delta: Some(&d.arguments),
            kind: "response.function_call_arguments.delta",
            sequence_number,
            ..Event::default()
        }));
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
        let sequence_number = self.number();
        let response = self.finished(reply, &self.done);
        let kind = match response.status {
            "completed" => "response.completed",
            _ => "response.incomplete",
        };
        out.push(frame(Event {
            response: Some(response),
            kind,
            sequence_number,
            ..Event::default()
        }));
        out
    }

    /// The `response.failed` event of a turn that failed once streaming.
    fn failed(&mut self, e: &ApiError) -> Bytes {
        let sequence_number = self.number();
        let mut response = self.response("failed", &self.done, None);
        response.error = Some(ErrorOut {
            code: e.code.unwrap_or(e.kind),
            message: &e.message,
        });
        frame(Event {
            response: Some(response),
            kind: "response.failed",
            sequence_number,
            ..Event::default()
        })
    }

    /// The whole answer's output items.
    fn output(&self, reply: &ModelReply) -> Vec<Item> {
        let mut output = Vec::new();
        let mut text: Option<String> = None;
        let flush = |text: &mut Option<String>, output: &mut Vec<Item>| {
            if let Some(t) = text.take() {
                output.push(message_item(&item_id("msg"), Some(&t), "completed"));
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
                    output.push(reasoning_item(&item_id("rs"), t, Some(signature.clone())));
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
        output
    }

    /// The whole answer's JSON.
    fn body(&self, reply: &ModelReply) -> Bytes {
        let output = self.output(reply);
        super::json_bytes(&self.finished(reply, &output))
    }
}

impl Shape for Events {
    fn whole(&self, reply: &ModelReply) -> Bytes {
        self.body(reply)
    }

    fn start(&mut self) -> Vec<Bytes> {
        let (created, in_progress) = (self.number(), self.number());
        let mut frames = Vec::with_capacity(2);
        for (kind, sequence_number) in [
            ("response.created", created),
            ("response.in_progress", in_progress),
        ] {
            frames.push(frame(Event {
                response: Some(self.response("in_progress", &[], None)),
                kind,
                sequence_number,
                ..Event::default()
            }));
        }
        frames
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

/// An event's frame, named by its type.
fn frame(event: Event<'_>) -> Bytes {
    sse::json_frame(Some(event.kind), &event)
}

/// A new item's id, as OpenAI's: its kind's prefix and a unique suffix.
fn item_id(prefix: &str) -> String {
    format!("{prefix}_{}", ulid::Ulid::new().to_string().to_lowercase())
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

#[cfg(test)]
#[path = "responses_reply_tests.rs"]
mod tests;
