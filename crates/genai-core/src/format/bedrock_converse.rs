//! The `bedrock-converse` format: Amazon Bedrock's Converse and ConverseStream API, one shape
//! for every chat model on Bedrock, with its stream decoder beside it.
//!
//! Request (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html):
//! `{messages: [{role, content: [{text} | {image: {format, source: {bytes}}} | {toolUse} |
//! {toolResult}]}], system: [{text}], inferenceConfig: {maxTokens, temperature, topP,
//! stopSequences}, additionalModelRequestFields}`; the model id travels in the URL path.
//! Stream (API_runtime_ConverseStreamOutput.html): events named by the event stream's
//! `:event-type`: `messageStart`, `contentBlockStart`, `contentBlockDelta`, `contentBlockStop`,
//! `messageStop`, and `metadata` last (usage, metrics).
//! Tools (userguide/tool-use-inference-call.html): `toolConfig: {tools: [{toolSpec: {name,
//! description, inputSchema: {json}}}]}`, `toolUse` blocks from the model (streamed as a
//! `contentBlockStart` with the id and name, then `contentBlockDelta`s with pieces of the input
//! JSON), every `toolResult` of a reply in one user message.
//!
//! It owns the JSON of that API and nothing else: no HTTP, no signing, no event-stream framing
//! (the provider hands it decoded events).

use serde_json::{json, Map, Value};

use super::cache;
use super::parameters::{self, with_stops};
use super::reply::body_json;
use super::sampling;
use super::schema::{ToolChoice, TOOL_CHOICE};
use super::wire::{content_blocks, items, str_field, BlockShapes, ImageFields};
use super::{
    EventReader, Format, FormatSpec, ImageSupport, ModelReply, ModelRequest, ParameterSpec,
    ReplyBuilder, Request, StreamDecoder, StreamEvent,
};
use crate::error::{Error, Result};
use crate::message::{Message, Part, Role, Usage};

pub(crate) const FORMAT: &str = "bedrock-converse";

/// The parameters that go into `inferenceConfig`.
const INFERENCE: &[&str] = &["maxTokens", "temperature", "topP", "stopSequences"];

pub(crate) const PARAMETERS: &[ParameterSpec] = &[
    sampling::MAX_TOKENS.named("maxTokens").described(
        "inferenceConfig.maxTokens: the most tokens the reply may \
         have.",
    ),
    sampling::TEMPERATURE.numbers_between(0.0, 1.0).described(
        "inferenceConfig.temperature: sampling temperature; higher is \
         more random.",
    ),
    sampling::TOP_P.named("topP").described(
        "inferenceConfig.topP: nucleus sampling, the probability mass \
         to sample from.",
    ),
    sampling::STOP.named("stopSequences").described(
        "inferenceConfig.stopSequences: sequences where generation \
         stops.",
    ),
    ParameterSpec::object(
        "additionalModelRequestFields",
        "Fields of the model's own API, such as {\"top_k\": 200} for \
         Claude.",
    ),
    ParameterSpec::object(
        "guardrailConfig",
        "A guardrail: {\"guardrailIdentifier\": ..., \"guardrailVersion\": ..., \"trace\": \"enabled\"}.",
    ),
    ParameterSpec::object("performanceConfig", "Such as {\"latency\": \"optimized\"}."),
    TOOL_CHOICE,
    cache::CACHE_SPEC,
    cache::CACHE_TTL_SPEC,
];

/// The `bedrock-converse` format.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BedrockConverse;

/// What the `bedrock-converse` format is.
pub(crate) const SPEC: FormatSpec = FormatSpec {
    name: FORMAT,
    description: "Amazon Bedrock Converse API (one shape for every Bedrock chat model)",
    parameters: PARAMETERS,
    images: ImageSupport::INLINE,
    native_tools: true,
    special: &[],
};

impl Format for BedrockConverse {
    fn spec(&self) -> &'static FormatSpec {
        &SPEC
    }

    fn prepare(&self, request: &Request<'_>) -> Result<ModelRequest> {
        let (model, parameters, messages, options) = request.parts();
        let mut system = Vec::new();
        let mut wire: Vec<Value> = Vec::new();
        for m in messages {
            if m.role == Role::System {
                let text = m.text();
                if !text.is_empty() {
                    system.push(json!({ "text": text }));
                }
                continue;
            }
            let role = if m.role == Role::Assistant {
                "assistant"
            } else {
                "user"
            };
            let blocks = message_blocks(m)?;
            if blocks.is_empty() {
                continue;
            }
            // Converse wants user and assistant turns to alternate: consecutive messages of one
            // role (a user message after tool results) become one message.
            match wire.last_mut() {
                Some(last) if last["role"] == role => {
                    if let Some(content) = last["content"].as_array_mut() {
                        content.extend(blocks);
                    }
                }
                _ => wire.push(json!({ "role": role, "content": blocks })),
            }
        }
        let mut body = Map::new();
        body.insert("messages".into(), Value::Array(wire));
        if !system.is_empty() {
            body.insert("system".into(), Value::Array(system));
        }
        let mut inference = Map::new();
        for (k, v) in with_stops(PARAMETERS, parameters, options.stop).iter() {
            if parameters::is_genai_setting(k) {
                continue;
            }
            if INFERENCE.contains(&k.as_str()) {
                inference.insert(k.clone(), v.clone());
            } else {
                body.insert(k.clone(), v.clone());
            }
        }
        if !inference.is_empty() {
            body.insert("inferenceConfig".into(), Value::Object(inference));
        }
        let answer = options.schema.map(|s| s.forced_tool()).transpose()?;
        let choice = ToolChoice::of(parameters, options.tools)?;
        let choice = ToolChoice::with_answer(answer.as_ref(), options.tools, choice);
        // Converse has no "none": the tools are then not offered.
        let offered = match choice {
            Some(ToolChoice::None) => &[][..],
            _ => options.tools,
        };
        if !offered.is_empty() || answer.is_some() {
            let tools: Vec<Value> = offered
                .iter()
                .chain(answer.as_ref())
                .map(|t| {
                    json!({"toolSpec": {
                        "name": t.name,
                        "description": t.description,
                        "inputSchema": {"json": t.input_schema}
                    }})
                })
                .collect();
            let mut config = json!({ "tools": tools });
            if let Some(c) = choice.as_ref().and_then(ToolChoice::bedrock) {
                config["toolChoice"] = c;
            }
            body.insert("toolConfig".into(), config);
        }
        cache::mark_converse(&mut body, model, parameters);
        Ok(request.prepared(FORMAT, body))
    }

    fn extract(&self, _: &Map<String, Value>, body: &[u8]) -> Result<ModelReply> {
        let v = body_json(body)?;
        let Some(message) = v.pointer("/output/message") else {
            let why = v
                .get("message")
                .or_else(|| v.get("Message"))
                .and_then(Value::as_str)
                .unwrap_or("the answer has no output.message");
            return Err(Error::provider(why.to_string()));
        };
        let mut content = Vec::new();
        let mut text = String::new();
        let mut reasoning = Vec::new();
        for block in items(message, "/content") {
            if let Some(t) = block.get("text").and_then(Value::as_str) {
                text.push_str(t);
            } else if let Some(r) = block.get("reasoningContent") {
                reasoning.extend(reasoning_part(r));
            } else if let Some(u) = block.get("toolUse") {
                content.push(Part::ToolCall {
                    id: str_field(u, "toolUseId"),
                    name: str_field(u, "name"),
                    arguments: u.get("input").cloned().unwrap_or_else(|| json!({})),
                    signature: None,
                });
            }
        }
        if !text.is_empty() {
            content.insert(0, Part::text(text));
        }
        reasoning.append(&mut content);
        let content = reasoning;
        Ok(ModelReply::assistant(
            content,
            v.get("usage").and_then(usage_of),
            v.get("stopReason")
                .and_then(Value::as_str)
                .map(str::to_string),
            None,
        ))
    }

    fn decoder(&self, _: &Map<String, Value>) -> StreamDecoder {
        StreamDecoder::new(Events::default(), ReplyBuilder::new())
    }
}

fn usage_of(u: &Value) -> Option<Usage> {
    if !u.is_object() {
        return None;
    }
    let n = |k: &str| u.get(k).and_then(Value::as_u64);
    let (read, write) = (n("cacheReadInputTokens"), n("cacheWriteInputTokens"));
    Some(Usage {
        // Converse's `inputTokens` leaves the cached ones out (its `totalTokens` counts them);
        // genai's input counts them all.
        input_tokens: n("inputTokens").unwrap_or(0) + read.unwrap_or(0) + write.unwrap_or(0),
        output_tokens: n("outputTokens").unwrap_or(0),
        cache_read_tokens: read,
        cache_write_tokens: write,
        reasoning_tokens: None,
    })
}

/// The Converse image format of a media type.
fn image_format(media_type: &str) -> Result<&'static str> {
    match media_type.trim().to_ascii_lowercase().as_str() {
        "image/png" => Ok("png"),
        "image/jpeg" | "image/jpg" => Ok("jpeg"),
        "image/gif" => Ok("gif"),
        "image/webp" => Ok("webp"),
        other => Err(Error::invalid_params(format!(
            "the {FORMAT} format takes png, jpeg, gif and webp images, not {other}"
        ))),
    }
}

/// The reasoning of a `reasoningContent` block: `reasoningText` (text and signature) or
/// `redactedContent` (encrypted, base64).
fn reasoning_part(r: &Value) -> Option<Part> {
    if let Some(t) = r.get("reasoningText") {
        return Some(Part::reasoning(
            str_field(t, "text"),
            t.get("signature")
                .and_then(Value::as_str)
                .map(str::to_string),
        ));
    }
    let data = r.get("redactedContent").and_then(Value::as_str)?;
    Some(Part::Reasoning {
        text: String::new(),
        signature: Some(data.to_string()),
        redacted: true,
    })
}

/// The content blocks of one message. Signed reasoning goes back only in a message that uses
/// tools, where Claude's extended thinking requires it before the `toolUse`.
fn message_blocks(m: &Message) -> Result<Vec<Value>> {
    content_blocks(&m.content, m.has_tool_calls(), &Blocks)
}

/// The shapes of the Converse API's content blocks.
struct Blocks;

impl BlockShapes for Blocks {
    fn reasoning(&self, text: &str, signature: &str, redacted: bool) -> Value {
        if redacted {
            json!({"reasoningContent": {"redactedContent": signature}})
        } else {
            json!({"reasoningContent": {"reasoningText": {"text": text, "signature": signature}}})
        }
    }

    fn text(&self, text: &str) -> Value {
        json!({ "text": text })
    }

    /// Inline bytes only: Converse takes no image URL.
    fn image(&self, (url, media_type, data): ImageFields<'_>) -> Result<Value> {
        match (url, media_type, data) {
            (_, Some(mt), Some(data)) => Ok(json!({
                "image": {"format": image_format(mt)?, "source": {"bytes": data}}
            })),
            (Some(_), _, _) => Err(Error::invalid_params(format!(
                "the {FORMAT} format cannot take images by URL: send the image's bytes instead (`genai ask -a` downloads URLs)"
            ))),
            _ => Err(Error::invalid_params(
                "an image part needs `mediaType` and `data`",
            )),
        }
    }

    fn tool_call(&self, id: &str, name: &str, arguments: &Value) -> Value {
        let input = if arguments.is_object() {
            arguments.clone()
        } else {
            json!({})
        };
        json!({"toolUse": {"toolUseId": id, "name": name, "input": input}})
    }

    fn tool_result(&self, tool_call_id: &str, content: &[Part], is_error: bool) -> Result<Value> {
        let mut inner = Vec::new();
        for p in content {
            match p {
                Part::Text { text } => inner.push(json!({ "text": text })),
                Part::Json { value } => inner.push(json!({ "json": value })),
                Part::Image {
                    url,
                    media_type,
                    data,
                } => inner.push(self.image((url, media_type, data))?),
                _ => {}
            }
        }
        let mut result = json!({"toolUseId": tool_call_id, "content": inner});
        // `status` is documented for Claude and Nova models only: it is sent when it
        // matters, for a failed call, and left to its default (success) otherwise.
        if is_error {
            result["status"] = Value::from("error");
        }
        Ok(json!({ "toolResult": result }))
    }
}

/// Reads the events of a ConverseStream answer. The stream is complete once both
/// `messageStop` (the stop reason) and `metadata` (the last event) arrived.
#[derive(Default)]
struct Events {
    /// The content block index of each tool use, in order: a use's key is its place here.
    uses: Vec<usize>,
    /// `metadata`, the last event, arrived.
    metadata: bool,
}

impl Events {
    /// The place of the tool use of content block `index` among the reply's uses.
    fn place(&mut self, index: usize) -> usize {
        if let Some(i) = self.uses.iter().position(|u| *u == index) {
            return i;
        }
        self.uses.push(index);
        self.uses.len() - 1
    }
}

impl EventReader for Events {
    fn read(&mut self, event: &StreamEvent, reply: &mut ReplyBuilder) -> Result<()> {
        let kind = event.event.as_deref().unwrap_or("");
        let data = event.data.trim();
        let v: Value = if data.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(data).map_err(|e| {
                Error::provider(format!(
                    "the provider's stream carried invalid JSON in a {kind} event: {e}"
                ))
            })?
        };
        if kind.ends_with("Exception") {
            let message = v
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("no details");
            return Err(Error::provider(format!(
                "the stream stopped with {kind}: {message}"
            )));
        }
        let index = v
            .get("contentBlockIndex")
            .and_then(Value::as_u64)
            .unwrap_or(0) as usize;
        match kind {
            "contentBlockStart" => {
                if let Some(u) = v.pointer("/start/toolUse") {
                    let (id, name) = (str_field(u, "toolUseId"), str_field(u, "name"));
                    let i = self.place(index);
                    reply.call_piece(i, Some(&id), Some(&name), "");
                }
            }
            "contentBlockDelta" => {
                if let Some(t) = v.pointer("/delta/text").and_then(Value::as_str) {
                    reply.text(t);
                }
                if let Some(r) = v.pointer("/delta/reasoningContent") {
                    if let Some(t) = r.get("text").and_then(Value::as_str) {
                        reply.reasoning(t);
                    }
                    if let Some(s) = r.get("signature").and_then(Value::as_str) {
                        reply.reasoning_signature(s);
                    }
                    if let Some(data) = r.get("redactedContent").and_then(Value::as_str) {
                        reply.redacted_leading(data);
                    }
                }
                if let Some(input) = v.pointer("/delta/toolUse/input").and_then(Value::as_str) {
                    let i = self.place(index);
                    if input.is_empty() {
                        reply.open_call(i);
                    } else {
                        reply.call_piece(i, None, None, input);
                    }
                }
            }
            "messageStop" => {
                reply.finish_reason = v
                    .get("stopReason")
                    .and_then(Value::as_str)
                    .map(str::to_string);
            }
            "metadata" => {
                reply.usage = v.get("usage").and_then(usage_of);
                self.metadata = true;
            }
            // messageStart, contentBlockStop, and events added later carry nothing we keep.
            _ => {}
        }
        if self.metadata && reply.finish_reason.is_some() {
            reply.complete();
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "bedrock_converse_tests.rs"]
mod tests;
