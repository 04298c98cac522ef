//! The answers of `POST /v1/chat/completions`: the core's [`ModelReply`] as a whole
//! `chat.completion`, or the turn's pieces as `chat.completion.chunk` events (the role first;
//! text, reasoning as `reasoning_content` and tool calls as they come; the finish reason, the
//! usage when asked, and `data: [DONE]` last).
//!
//! It owns what of the reply goes where in the API; the JSON shapes it fills are
//! [`openai_chat_reply`](genai_core::format::openai_chat_reply)'s, which the local engine writes
//! too. It must never read a request nor run a turn (`openai_chat.rs` does), and never say
//! more than the reply holds: a usage the provider did not report is zero in the usage chunk,
//! absent (`null`) in a whole answer.

use bytes::Bytes;
use serde_json::{json, Value};

use super::respond::{reply_text, Finish};
use super::turn::Piece;
use super::{sse, ApiError};
use genai_core::format::openai_chat_reply::{
    tool_call, AssistantMessage, Delta, Envelope, WholeCall,
};
use genai_core::format::{ModelReply, StreamEvent, ToolCallDelta};

/// The whole `chat.completion` of `reply` in `envelope`, its JSON written.
fn completion(envelope: &Envelope, reply: &ModelReply) -> Bytes {
    let text = reply_text(reply);
    let reasoning = reply.message.reasoning();
    let calls: Vec<WholeCall> = (reply.message.calls())
        .map(|(id, name, arguments)| WholeCall::new(id, name, arguments))
        .collect();
    let shown = !text.is_empty() || calls.is_empty();
    let mut message = AssistantMessage::new(shown.then_some(text.as_str()));
    message.reasoning_content = (!reasoning.is_empty()).then_some(reasoning.as_str());
    message.tool_calls = calls;
    let whole = envelope.completion(message, finish_reason(reply), reply.usage.as_ref());
    whole.to_vec().into()
}

/// The reply's tool calls, each whole, in Chat Completions' shape.
fn whole_calls(reply: &ModelReply) -> Vec<Value> {
    (reply.message.calls())
        .map(|(id, name, arguments)| tool_call(id, name, arguments))
        .collect()
}

/// The reply's finish reason in Chat Completions' words.
fn finish_reason(reply: &ModelReply) -> &'static str {
    match Finish::of(reply) {
        Finish::Stop | Finish::StopSequence => "stop",
        Finish::Length => "length",
        Finish::ToolCalls => "tool_calls",
        Finish::Filtered => "content_filter",
    }
}

/// The events of a streamed reply, from the turn's pieces.
pub(crate) struct Chunks {
    envelope: Envelope,
    include_usage: bool,
    /// The core's key of each tool call streamed so far, in order: its place is the call's
    /// `index`.
    calls: Vec<usize>,
    sent_text: bool,
}

impl super::respond::Shape for Chunks {
    fn whole(&self, reply: &ModelReply) -> Bytes {
        completion(&self.envelope, reply)
    }

    fn start(&mut self) -> Vec<Bytes> {
        Chunks::start(self)
    }

    fn piece(&mut self, piece: Piece) -> Vec<Bytes> {
        Chunks::piece(self, piece)
    }
}

impl Chunks {
    pub(crate) fn new(envelope: Envelope, include_usage: bool) -> Chunks {
        Chunks {
            envelope,
            include_usage,
            calls: Vec::new(),
            sent_text: false,
        }
    }

    /// The first event: the assistant's role.
    pub(crate) fn start(&self) -> Vec<Bytes> {
        vec![self.chunk(Delta::role(), None)]
    }

    fn chunk(&self, delta: Delta<'_>, finish: Option<&str>) -> Bytes {
        let chunk = self.envelope.chunk(delta, finish);
        if self.include_usage {
            sse::json_frame(None, &chunk.with_usage_to_come())
        } else {
            sse::json_frame(None, &chunk)
        }
    }

    /// The events of one piece of the turn.
    pub(crate) fn piece(&mut self, piece: Piece) -> Vec<Bytes> {
        match piece {
            Piece::Text(t) if t.is_empty() => Vec::new(),
            Piece::Text(t) => {
                self.sent_text = true;
                vec![self.chunk(Delta::text(&t), None)]
            }
            Piece::Reasoning(r) => vec![self.chunk(Delta::reasoning(&r), None)],
            // Chat Completions has no place for a reasoning signature.
            Piece::Signature(_) => Vec::new(),
            Piece::Call(d) => vec![self.call(&d)],
            Piece::Done(Ok(reply)) => self.end(&reply),
            // Once streaming, an error can only be an event; the stream ends without [DONE].
            Piece::Done(Err(e)) => vec![sse::json_frame(None, &ApiError::of(&e, None).body())],
        }
    }

    fn call(&mut self, d: &ToolCallDelta) -> Bytes {
        let index = match self.calls.iter().position(|k| *k == d.index) {
            Some(i) => i,
            None => {
                self.calls.push(d.index);
                self.calls.len() - 1
            }
        };
        let mut call = json!({"index": index, "function": {"arguments": d.arguments}});
        if let Some(id) = &d.id {
            call["id"] = json!(id);
            call["type"] = json!("function");
        }
        if let Some(name) = &d.name {
            call["function"]["name"] = json!(name);
        }
        self.chunk(Delta::calls(std::slice::from_ref(&call)), None)
    }

    /// The last events: what the model did not stream (a structured reply comes whole), the
    /// finish reason, the usage when asked, and `[DONE]`.
    fn end(&mut self, reply: &ModelReply) -> Vec<Bytes> {
        let mut out = Vec::new();
        let text = reply_text(reply);
        if !self.sent_text && !text.is_empty() {
            out.push(self.chunk(Delta::text(&text), None));
        }
        let mut calls = whole_calls(reply);
        for (i, call) in calls.iter_mut().enumerate() {
            call["index"] = json!(i);
        }
        if self.calls.is_empty() && !calls.is_empty() {
            out.push(self.chunk(Delta::calls(&calls), None));
        }
        out.push(self.chunk(Delta::default(), Some(finish_reason(reply))));
        if self.include_usage {
            let usage = reply.usage.unwrap_or_default();
            out.push(sse::json_frame(None, &self.envelope.usage_chunk(&usage)));
        }
        out.push(sse::frame(&StreamEvent::data("[DONE]")));
        out
    }
}
