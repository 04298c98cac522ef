//! The answers of `POST /v1/messages`: the core's [`ModelReply`] as a whole `message`, or the
//! turn's pieces as Anthropic's stream events (`message_start`, `ping`, then per content block
//! `content_block_start`, its `text_delta`s, `thinking_delta`s or `input_json_delta`s and
//! `content_block_stop`, a thinking block's `signature_delta` as the provider streams it;
//! `message_delta` with the stop reason and usage, `message_stop` last,
//! or an `error` event when the turn fails once streaming), each written from serde types
//! straight to bytes.
//!
//! It owns the reply's side of this API. It must never read a request nor run a turn
//! (`anthropic.rs` does), and never say more than the reply holds: a signature the provider
//! did not give is an empty string, a usage it did not report zeros.

use std::borrow::Cow;

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;

use super::respond::{reply_text, Finish, Shape};
use super::turn::Piece;
use super::{sse, Api, ApiError};
use genai_core::format::{ModelReply, ToolCallDelta};
use genai_core::message::{Part, Usage};

/// A content block as this API writes it.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        /// Borrowed, or a JSON part's text.
        text: Cow<'a, str>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Input<'a>,
    },
}

/// A tool call's input: whole, or `{}` at the start of a streamed one.
#[derive(Serialize)]
#[serde(untagged)]
enum Input<'a> {
    Whole(&'a Value),
    Streamed(Empty),
}

/// `{}`.
#[derive(Serialize)]
struct Empty {}

/// A piece of the open block.
#[derive(Serialize)]
#[serde(tag = "type")]
enum BlockDelta<'a> {
    #[serde(rename = "text_delta")]
    Text { text: &'a str },
    #[serde(rename = "thinking_delta")]
    Thinking { thinking: &'a str },
    #[serde(rename = "signature_delta")]
    Signature { signature: &'a str },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: &'a str },
}

/// A `message` object: the whole answer, or the empty one a stream starts with.
#[derive(Serialize)]
struct Message<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    role: &'static str,
    model: &'a str,
    content: Vec<Block<'a>>,
    stop_reason: Option<&'static str>,
    stop_sequence: Option<&'a str>,
    usage: UsageOut,
}

/// The usage in this API's words: `input_tokens` without the cache's reads and writes, which
/// have their own counts (none at a stream's start).
#[derive(Serialize)]
struct UsageOut {
    input_tokens: u64,
    output_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_creation_input_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_read_input_tokens: Option<u64>,
}

/// `message_delta`'s delta.
#[derive(Serialize)]
struct StopDelta<'a> {
    stop_reason: &'static str,
    stop_sequence: Option<&'a str>,
}

/// One stream event; its `type` is the event's name.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event<'a> {
    MessageStart {
        message: Message<'a>,
    },
    Ping,
    ContentBlockStart {
        index: usize,
        content_block: Block<'a>,
    },
    ContentBlockDelta {
        index: usize,
        delta: BlockDelta<'a>,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        delta: StopDelta<'a>,
        usage: UsageOut,
    },
    MessageStop,
}

impl Event<'_> {
    fn name(&self) -> &'static str {
        match self {
            Event::MessageStart { .. } => "message_start",
            Event::Ping => "ping",
            Event::ContentBlockStart { .. } => "content_block_start",
            Event::ContentBlockDelta { .. } => "content_block_delta",
            Event::ContentBlockStop { .. } => "content_block_stop",
            Event::MessageDelta { .. } => "message_delta",
            Event::MessageStop => "message_stop",
        }
    }

    fn frame(&self) -> Bytes {
        sse::json_frame(Some(self.name()), self)
    }
}

/// The content block being streamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Text,
    Thinking,
    /// A tool call: the core's key of the call.
    Call(usize),
}

/// The answer of one request, whole or as stream events.
pub(crate) struct Events {
    id: String,
    /// As the request named it.
    model: String,
    /// The index of the next content block.
    next: usize,
    open: Option<Open>,
    sent_text: bool,
    sent_calls: bool,
    /// Whether a signature was streamed (then the whole reply's is not sent again).
    sent_signature: bool,
}

impl Events {
    pub(crate) fn new(id: String, model: String) -> Events {
        Events {
            id,
            model,
            next: 0,
            open: None,
            sent_text: false,
            sent_calls: false,
            sent_signature: false,
        }
    }

    /// Opens a block (closing the one open), its start event first in `out`.
    fn open(&mut self, open: Open, block: Block<'_>, out: &mut Vec<Bytes>) {
        self.close(out);
        out.push(
            Event::ContentBlockStart {
                index: self.next,
                content_block: block,
            }
            .frame(),
        );
        self.open = Some(open);
    }

    fn close(&mut self, out: &mut Vec<Bytes>) {
        if self.open.take().is_some() {
            out.push(Event::ContentBlockStop { index: self.next }.frame());
            self.next += 1;
        }
    }

    fn delta(&self, delta: BlockDelta<'_>) -> Bytes {
        Event::ContentBlockDelta {
            index: self.next,
            delta,
        }
        .frame()
    }

    fn call(&mut self, d: &ToolCallDelta, out: &mut Vec<Bytes>) {
        if self.open != Some(Open::Call(d.index)) {
            let id = d.id.clone().unwrap_or_else(tool_use_id);
            let block = Block::ToolUse {
                id: &id,
                name: d.name.as_deref().unwrap_or_default(),
                input: Input::Streamed(Empty {}),
            };
            self.open(Open::Call(d.index), block, out);
            self.sent_calls = true;
        }
        if !d.arguments.is_empty() {
            out.push(self.delta(BlockDelta::InputJson {
                partial_json: &d.arguments,
            }));
        }
    }

    /// The last events: what the model did not stream (a structured reply comes whole; a
    /// thinking block still open gets its signature), the stop reason and usage.
    fn end(&mut self, reply: &ModelReply) -> Vec<Bytes> {
        let mut out = Vec::new();
        if self.open == Some(Open::Thinking) && !self.sent_signature {
            if let Some(signature) = reply.message.content.iter().find_map(signature) {
                out.push(self.delta(BlockDelta::Signature { signature }));
            }
        }
        let text = reply_text(reply);
        if !self.sent_text && !text.is_empty() {
            self.open(Open::Text, Block::Text { text: "".into() }, &mut out);
            out.push(self.delta(BlockDelta::Text { text: &text }));
        }
        if !self.sent_calls {
            for (key, (id, name, arguments)) in reply.message.calls().enumerate() {
                let block = Block::ToolUse {
                    id,
                    name,
                    input: Input::Streamed(Empty {}),
                };
                self.open(Open::Call(key), block, &mut out);
                let partial_json = arguments.to_string();
                out.push(self.delta(BlockDelta::InputJson {
                    partial_json: &partial_json,
                }));
            }
        }
        self.close(&mut out);
        out.push(
            Event::MessageDelta {
                delta: StopDelta {
                    stop_reason: stop_reason(reply),
                    stop_sequence: reply.stop_sequence.as_deref(),
                },
                usage: usage(reply.usage.unwrap_or_default()),
            }
            .frame(),
        );
        out.push(Event::MessageStop.frame());
        out
    }

    /// A `message` of this answer with these parts.
    fn message<'a>(
        &'a self,
        content: Vec<Block<'a>>,
        stop_reason: Option<&'static str>,
        stop_sequence: Option<&'a str>,
        usage: UsageOut,
    ) -> Message<'a> {
        Message {
            id: &self.id,
            kind: "message",
            role: "assistant",
            model: &self.model,
            content,
            stop_reason,
            stop_sequence,
            usage,
        }
    }

    /// The whole answer's JSON.
    fn body(&self, reply: &ModelReply) -> Bytes {
        let content = (reply.message.content.iter())
            .filter_map(|p| match p {
                Part::Reasoning {
                    signature: Some(data),
                    redacted: true,
                    ..
                } => Some(Block::RedactedThinking { data }),
                Part::Reasoning {
                    text, signature, ..
                } => Some(Block::Thinking {
                    thinking: text,
                    signature: signature.as_deref().unwrap_or_default(),
                }),
                Part::Text { text } if !text.is_empty() => Some(Block::Text { text: text.into() }),
                Part::Json { value } => Some(Block::Text {
                    text: value.to_string().into(),
                }),
                Part::ToolCall {
                    id,
                    name,
                    arguments,
                    ..
                } => Some(Block::ToolUse {
                    id,
                    name,
                    input: Input::Whole(arguments),
                }),
                _ => None,
            })
            .collect();
        let message = self.message(
            content,
            Some(stop_reason(reply)),
            reply.stop_sequence.as_deref(),
            usage(reply.usage.unwrap_or_default()),
        );
        super::json_bytes(&message)
    }
}

impl Shape for Events {
    fn whole(&self, reply: &ModelReply) -> Bytes {
        self.body(reply)
    }

    fn start(&mut self) -> Vec<Bytes> {
        vec![
            Event::MessageStart {
                // Empty, and with no cache counts yet.
                message: self.message(
                    Vec::new(),
                    None,
                    None,
                    UsageOut {
                        input_tokens: 0,
                        output_tokens: 0,
                        cache_creation_input_tokens: None,
                        cache_read_input_tokens: None,
                    },
                ),
            }
            .frame(),
            Event::Ping.frame(),
        ]
    }

    fn piece(&mut self, piece: Piece) -> Vec<Bytes> {
        let mut out = Vec::new();
        match piece {
            Piece::Text(t) if t.is_empty() => {}
            Piece::Text(t) => {
                if self.open != Some(Open::Text) {
                    self.open(Open::Text, Block::Text { text: "".into() }, &mut out);
                }
                self.sent_text = true;
                out.push(self.delta(BlockDelta::Text { text: &t }));
            }
            Piece::Reasoning(r) => {
                if self.open != Some(Open::Thinking) {
                    let block = Block::Thinking {
                        thinking: "",
                        signature: "",
                    };
                    self.open(Open::Thinking, block, &mut out);
                    self.sent_signature = false;
                }
                out.push(self.delta(BlockDelta::Thinking { thinking: &r }));
            }
            // It ends the thinking block it signs, which is still the open one.
            Piece::Signature(s) if self.open == Some(Open::Thinking) => {
                self.sent_signature = true;
                out.push(self.delta(BlockDelta::Signature { signature: &s }));
            }
            Piece::Signature(_) => {}
            Piece::Call(d) => self.call(&d, &mut out),
            Piece::Done(Ok(reply)) => out = self.end(&reply),
            // Once streaming, an error can only be an event, the last one.
            Piece::Done(Err(e)) => out.push(sse::json_frame(
                Some("error"),
                &ApiError::of(&e, None).body_in(Api::Anthropic),
            )),
        }
        out
    }
}

/// The signature of a readable reasoning part.
fn signature(p: &Part) -> Option<&str> {
    match p {
        Part::Reasoning {
            signature: Some(s),
            redacted: false,
            ..
        } => Some(s),
        _ => None,
    }
}

/// A tool call's id when the provider streamed none.
fn tool_use_id() -> String {
    format!("toolu_{}", ulid::Ulid::new().to_string().to_lowercase())
}

/// The reply's stop reason in this API's words.
fn stop_reason(reply: &ModelReply) -> &'static str {
    match Finish::of(reply) {
        Finish::Stop => "end_turn",
        Finish::StopSequence => "stop_sequence",
        Finish::Length => "max_tokens",
        Finish::ToolCalls => "tool_use",
        Finish::Filtered => "refusal",
    }
}

/// The usage in this API's words.
fn usage(u: Usage) -> UsageOut {
    UsageOut {
        input_tokens: u.uncached_input_tokens(),
        output_tokens: u.output_tokens,
        cache_creation_input_tokens: Some(u.cache_write_tokens.unwrap_or(0)),
        cache_read_input_tokens: Some(u.cache_read_tokens.unwrap_or(0)),
    }
}

#[cfg(test)]
#[path = "anthropic_reply_tests.rs"]
mod tests;
