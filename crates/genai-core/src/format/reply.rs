//! The reply of a streamed answer, built up as a format's decoder reads its events: text,
//! reasoning, tool calls put together from their pieces, usage, finish reason, model id,
//! signatures, and the pieces not yet handed to the caller.
//!
//! Every format's stream decoder is an [`EventReader`] that feeds one [`ReplyBuilder`];
//! [`StreamDecoder`] runs the two. The builder owns what every stream has in common (putting
//! calls together by key, the check that the stream was complete, reading the arguments'
//! JSON); it must never parse an event itself.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::{ModelReply, StreamEvent, ToolCallDelta};
use crate::error::{Error, Result};
use crate::message::{Part, Usage};

/// The error of a stream that stopped before its terminal event; `detail` names what was
/// missing (may be empty).
pub(crate) fn ended_early(detail: &str) -> Error {
    Error::provider(format!(
        "the provider's stream ended before the reply was complete{detail}"
    ))
}

/// The JSON of a complete answer.
pub(crate) fn body_json(body: &[u8]) -> Result<Value> {
    serde_json::from_slice(body)
        .map_err(|e| Error::provider(format!("the provider answered with invalid JSON: {e}")))
}

/// The JSON an event carries, `None` when its data is blank.
pub(crate) fn event_json(event: &StreamEvent) -> Result<Option<Value>> {
    let data = event.data.trim();
    if data.is_empty() {
        return Ok(None);
    }
    serde_json::from_str(data).map(Some).map_err(invalid_json)
}

/// The error of a stream event whose data is not the JSON expected.
pub(crate) fn invalid_json(e: serde_json::Error) -> Error {
    Error::provider(format!("the provider's stream carried invalid JSON: {e}"))
}

/// One keyed piece of a reply after its text.
enum Block {
    Text(String),
    Call(Call),
    Reasoning(Reasoning),
    /// A block that is not part of the chat reply (server tools and the like).
    Other,
}

/// Reasoning as it is put together.
#[derive(Default)]
struct Reasoning {
    text: String,
    signature: Option<String>,
    redacted: bool,
}

impl Reasoning {
    fn into_part(self) -> Option<Part> {
        if self.text.is_empty() && self.signature.is_none() {
            return None;
        }
        Some(Part::Reasoning {
            text: self.text,
            signature: self.signature,
            redacted: self.redacted,
        })
    }
}

/// A tool call as it is put together.
#[derive(Default)]
struct Call {
    id: String,
    name: String,
    /// The JSON text of the arguments so far.
    arguments: String,
    /// Arguments given whole (or the value to use when no text came).
    whole: Option<Value>,
    signature: Option<String>,
}

/// A reply as a stream builds it. The text pieces and tool-call pieces read since the caller
/// last took them wait in the builder.
#[derive(Default)]
pub struct ReplyBuilder {
    /// Reasoning that came outside blocks, placed first (a redacted one starts another).
    reasoning: Vec<Reasoning>,
    /// The reply's text, placed after that reasoning and before the blocks.
    text: String,
    /// Calls (and, for formats with content blocks, text blocks) by key, in key order.
    blocks: BTreeMap<usize, Block>,
    text_deltas: Vec<String>,
    reasoning_deltas: Vec<String>,
    /// Pieces of a reasoning block's signature, as they arrive (before the block ends).
    signature_deltas: Vec<String>,
    call_deltas: Vec<ToolCallDelta>,
    pub(crate) usage: Option<Usage>,
    pub(crate) finish_reason: Option<String>,
    pub(crate) model: Option<String>,
    /// The stop sequence the reply ended at (formats that say which).
    pub(crate) stop_sequence: Option<String>,
    /// The stream's terminal event arrived.
    complete: bool,
    /// Arguments that are not JSON are an error (else they are kept as a string).
    strict_arguments: bool,
}

impl ReplyBuilder {
    pub(crate) fn new() -> ReplyBuilder {
        ReplyBuilder::default()
    }

    /// A builder for which tool-call arguments that are not JSON make the reply an error.
    pub(crate) fn with_strict_arguments() -> ReplyBuilder {
        ReplyBuilder {
            strict_arguments: true,
            ..ReplyBuilder::default()
        }
    }

    /// Appends a piece of the reply's text.
    pub(crate) fn text(&mut self, piece: &str) {
        if !piece.is_empty() {
            self.text.push_str(piece);
            self.text_deltas.push(piece.to_string());
        }
    }

    /// Appends a piece of the reasoning that comes before the reply's text.
    pub(crate) fn reasoning(&mut self, piece: &str) {
        if !piece.is_empty() {
            self.leading().text.push_str(piece);
            self.reasoning_deltas.push(piece.to_string());
        }
    }

    /// The readable reasoning outside blocks being written.
    fn leading(&mut self) -> &mut Reasoning {
        if self.reasoning.last().is_none_or(|r| r.redacted) {
            self.reasoning.push(Reasoning::default());
        }
        let last = self.reasoning.len() - 1;
        &mut self.reasoning[last]
    }

    /// Redacted reasoning outside blocks: no text to show, `data` to send back.
    pub(crate) fn redacted_leading(&mut self, data: &str) {
        self.reasoning.push(Reasoning {
            signature: Some(data.to_string()),
            redacted: true,
            ..Reasoning::default()
        });
    }

    /// Sets the signature of the reasoning that comes before the reply's text (signatures
    /// outside blocks come whole).
    pub(crate) fn reasoning_signature(&mut self, signature: &str) {
        if !signature.is_empty() {
            self.leading().signature = Some(signature.to_string());
        }
    }

    /// Starts reasoning block `key` with `text` and its signature so far.
    pub(crate) fn start_reasoning(&mut self, key: usize, text: &str, signature: Option<&str>) {
        if !text.is_empty() {
            self.reasoning_deltas.push(text.to_string());
        }
        let reasoning = Reasoning {
            text: text.to_string(),
            signature: signature.filter(|s| !s.is_empty()).map(str::to_string),
            redacted: false,
        };
        self.blocks.insert(key, Block::Reasoning(reasoning));
    }

    /// A block of redacted (encrypted) reasoning: no text to show, `data` to send back.
    pub(crate) fn redacted_reasoning(&mut self, key: usize, data: &str) {
        let reasoning = Reasoning {
            signature: Some(data.to_string()),
            redacted: true,
            ..Reasoning::default()
        };
        self.blocks.insert(key, Block::Reasoning(reasoning));
    }

    /// Reasoning that arrived whole, after the blocks so far.
    pub fn whole_reasoning(&mut self, text: &str, signature: Option<&str>) {
        let key = self.blocks.keys().next_back().map_or(0, |k| k + 1);
        self.start_reasoning(key, text, signature);
    }

    fn reasoning_block(&mut self, key: usize) -> &mut Reasoning {
        let block = self
            .blocks
            .entry(key)
            .or_insert_with(|| Block::Reasoning(Reasoning::default()));
        if !matches!(block, Block::Reasoning(_)) {
            *block = Block::Reasoning(Reasoning::default());
        }
        match block {
            Block::Reasoning(r) => r,
            _ => unreachable!("the block was just made reasoning"),
        }
    }

    /// Appends to reasoning block `key` (started if new).
    pub(crate) fn block_reasoning(&mut self, key: usize, piece: &str) {
        if !piece.is_empty() {
            self.reasoning_block(key).text.push_str(piece);
            self.reasoning_deltas.push(piece.to_string());
        }
    }

    /// Appends to the signature of reasoning block `key` (started if new).
    pub(crate) fn block_signature(&mut self, key: usize, piece: &str) {
        push_signature(&mut self.reasoning_block(key).signature, piece);
        if !piece.is_empty() {
            self.signature_deltas.push(piece.to_string());
        }
    }

    /// Starts text block `key` with `text`.
    pub(crate) fn start_text(&mut self, key: usize, text: &str) {
        if !text.is_empty() {
            self.text_deltas.push(text.to_string());
        }
        self.blocks.insert(key, Block::Text(text.to_string()));
    }

    /// Appends to text block `key` (started if new); ignored when block `key` is no text.
    pub(crate) fn block_text(&mut self, key: usize, piece: &str) {
        let block = self
            .blocks
            .entry(key)
            .or_insert_with(|| Block::Text(String::new()));
        if let Block::Text(so_far) = block {
            if !piece.is_empty() {
                so_far.push_str(piece);
                self.text_deltas.push(piece.to_string());
            }
        }
    }

    /// Marks block `key` as not part of the reply.
    pub(crate) fn skip_block(&mut self, key: usize) {
        self.blocks.insert(key, Block::Other);
    }

    /// Starts tool call `key` with its id and name; `arguments` is the value used when no
    /// argument text follows.
    pub fn start_call(&mut self, key: usize, id: &str, name: &str, arguments: Option<Value>) {
        self.call_deltas.push(ToolCallDelta {
            index: key,
            id: Some(id.to_string()),
            name: Some(name.to_string()),
            arguments: String::new(),
        });
        let call = Call {
            id: id.to_string(),
            name: name.to_string(),
            whole: arguments,
            ..Call::default()
        };
        self.blocks.insert(key, Block::Call(call));
    }

    /// Whether block `key` is a tool call.
    pub(crate) fn has_call(&self, key: usize) -> bool {
        matches!(self.blocks.get(&key), Some(Block::Call(_)))
    }

    /// Opens tool call `key` if it is new, with nothing in it yet.
    pub(crate) fn open_call(&mut self, key: usize) {
        self.call(key);
    }

    fn call(&mut self, key: usize) -> &mut Call {
        let block = self
            .blocks
            .entry(key)
            .or_insert_with(|| Block::Call(Call::default()));
        if !matches!(block, Block::Call(_)) {
            *block = Block::Call(Call::default());
        }
        match block {
            Block::Call(call) => call,
            _ => unreachable!("the block was just made a call"),
        }
    }

    /// A piece of tool call `key` (opened if new): its id when given (replacing), the next
    /// characters of its name and of its JSON arguments.
    pub fn call_piece(&mut self, key: usize, id: Option<&str>, name: Option<&str>, args: &str) {
        let call = self.call(key);
        if let Some(id) = id {
            call.id = id.to_string();
        }
        if let Some(name) = name {
            call.name.push_str(name);
        }
        call.arguments.push_str(args);
        self.call_deltas.push(ToolCallDelta {
            index: key,
            id: id.map(str::to_string),
            name: name.map(str::to_string),
            arguments: args.to_string(),
        });
    }

    /// A tool call that arrived whole, after the calls so far.
    pub(crate) fn whole_call(
        &mut self,
        id: String,
        name: String,
        arguments: Value,
        signature: Option<String>,
    ) {
        let key = self.blocks.keys().next_back().map_or(0, |k| k + 1);
        self.call_deltas.push(ToolCallDelta {
            index: key,
            id: Some(id.clone()),
            name: Some(name.clone()),
            arguments: arguments.to_string(),
        });
        let call = Call {
            id,
            name,
            whole: Some(arguments),
            signature,
            ..Call::default()
        };
        self.blocks.insert(key, Block::Call(call));
    }

    /// How many tool calls the reply has so far.
    pub(crate) fn calls(&self) -> usize {
        self.blocks
            .values()
            .filter(|b| matches!(b, Block::Call(_)))
            .count()
    }

    /// Whether the reply has neither text nor tool calls.
    pub(crate) fn is_empty(&self) -> bool {
        self.text.is_empty()
            && self.blocks.values().all(|b| match b {
                Block::Text(t) => t.is_empty(),
                Block::Call(_) => false,
                Block::Reasoning(_) | Block::Other => true,
            })
    }

    /// The stream's terminal event arrived.
    pub(crate) fn complete(&mut self) {
        self.complete = true;
    }

    pub(crate) fn is_complete(&self) -> bool {
        self.complete
    }

    /// The text pieces read since the last call.
    pub(crate) fn take_text_deltas(&mut self) -> Vec<String> {
        std::mem::take(&mut self.text_deltas)
    }

    /// The reasoning pieces read since the last call.
    pub(crate) fn take_reasoning_deltas(&mut self) -> Vec<String> {
        std::mem::take(&mut self.reasoning_deltas)
    }

    /// The pieces of reasoning blocks' signatures read since the last call.
    pub(crate) fn take_signature_deltas(&mut self) -> Vec<String> {
        std::mem::take(&mut self.signature_deltas)
    }

    /// The tool-call pieces read since the last call, in order.
    pub(crate) fn take_tool_call_deltas(&mut self) -> Vec<ToolCallDelta> {
        std::mem::take(&mut self.call_deltas)
    }

    /// The reply, or an error when the stream stopped before its terminal event.
    pub(crate) fn finish(self) -> Result<ModelReply> {
        if !self.complete {
            return Err(ended_early(""));
        }
        self.into_reply()
    }

    /// The reply as it stands: the reasoning outside blocks, the text, then the blocks in key
    /// order (empty text left out); arguments are parsed as JSON (blank: the start value, else
    /// `{}`).
    pub(crate) fn into_reply(self) -> Result<ModelReply> {
        let mut content = Vec::new();
        content.extend(self.reasoning.into_iter().filter_map(Reasoning::into_part));
        if !self.text.is_empty() {
            content.push(Part::text(self.text));
        }
        for block in self.blocks.into_values() {
            match block {
                Block::Text(text) if !text.is_empty() => content.push(Part::text(text)),
                Block::Call(call) => content.push(Part::ToolCall {
                    arguments: arguments(&call, self.strict_arguments)?,
                    id: call.id,
                    name: call.name,
                    signature: call.signature,
                }),
                Block::Reasoning(r) => content.extend(r.into_part()),
                _ => {}
            }
        }
        let mut reply = ModelReply::assistant(content, self.usage, self.finish_reason, self.model);
        reply.stop_sequence = self.stop_sequence;
        Ok(reply)
    }
}

/// Adds a piece to a signature (streams may send it in pieces).
fn push_signature(signature: &mut Option<String>, piece: &str) {
    if !piece.is_empty() {
        signature.get_or_insert_with(String::new).push_str(piece);
    }
}

/// The arguments of a call put together: its JSON text parsed, or the value it came with.
fn arguments(call: &Call, strict: bool) -> Result<Value> {
    if call.arguments.trim().is_empty() {
        return Ok(call.whole.clone().unwrap_or_else(|| json!({})));
    }
    if !strict {
        return Ok(parse_arguments(&call.arguments));
    }
    serde_json::from_str(&call.arguments).map_err(|e| {
        Error::provider(format!(
            "the arguments of tool call {} are not JSON: {e}",
            call.name
        ))
    })
}

/// Arguments as JSON text read leniently: blank is `{}`, text that is not JSON is kept as a
/// string (the tool then reports it).
pub(crate) fn parse_arguments(text: &str) -> Value {
    if text.trim().is_empty() {
        return json!({});
    }
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

/// What a format reads from the events of its stream.
pub trait EventReader: Send {
    /// Reads one event (the provider removed the framing) into `reply`.
    fn read(&mut self, event: &StreamEvent, reply: &mut ReplyBuilder) -> Result<()>;
    /// The reply once the stream ended (by default: an error unless it was complete).
    fn finish(self: Box<Self>, reply: ReplyBuilder) -> Result<ModelReply> {
        reply.finish()
    }
}

/// Turns a streamed response, one event at a time, into text deltas, tool-call pieces and a
/// final reply.
pub struct StreamDecoder {
    reader: Box<dyn EventReader>,
    reply: ReplyBuilder,
}

impl StreamDecoder {
    pub(crate) fn new(reader: impl EventReader + 'static, reply: ReplyBuilder) -> StreamDecoder {
        StreamDecoder {
            reader: Box::new(reader),
            reply,
        }
    }

    /// Takes one event and returns the text deltas it carries.
    pub fn feed(&mut self, event: &StreamEvent) -> Result<Vec<String>> {
        self.reader.read(event, &mut self.reply)?;
        Ok(self.reply.take_text_deltas())
    }

    /// The pieces of reasoning read since the last call, in order.
    pub(crate) fn take_reasoning_deltas(&mut self) -> Vec<String> {
        self.reply.take_reasoning_deltas()
    }

    /// The pieces of reasoning blocks' signatures read since the last call (Claude's
    /// `signature_delta`, which ends a thinking block).
    pub(crate) fn take_signature_deltas(&mut self) -> Vec<String> {
        self.reply.take_signature_deltas()
    }

    /// The pieces of tool calls read since the last call, in order (a format that delivers
    /// calls whole gives one piece per call).
    pub fn take_tool_call_deltas(&mut self) -> Vec<ToolCallDelta> {
        self.reply.take_tool_call_deltas()
    }

    /// Ends the stream; an error when the stream stopped before the reply was complete.
    pub fn finish(self) -> Result<ModelReply> {
        self.reader.finish(self.reply)
    }
}

#[cfg(test)]
#[path = "reply_tests.rs"]
mod tests;
