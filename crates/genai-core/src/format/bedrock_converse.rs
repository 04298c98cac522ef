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

pub const FORMAT: &str = "bedrock-converse";

/// The parameters that go into `inferenceConfig`.
const INFERENCE: &[&str] = &["maxTokens", "temperature", "topP", "stopSequences"];

pub const PARAMETERS: &[ParameterSpec] = &[
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
pub struct BedrockConverse;

/// What the `bedrock-converse` format is.
pub const SPEC: FormatSpec = FormatSpec {
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
mod tests {
    use super::*;
    use crate::format::testing::*;
    use crate::format::{ModelConfiguration, ToolCallDelta, ToolSpec};

    /// A ConverseStream answer as its events (API_runtime_ConverseStreamOutput.html):
    /// `messageStart`, the events of its content `blocks`, `messageStop` (a tool use), and the
    /// `metadata` event with this JSON.
    fn answer(blocks: Vec<Vec<StreamEvent>>, metadata: &str) -> Vec<StreamEvent> {
        let mut events = vec![event("messageStart", r#"{"role":"assistant"}"#)];
        events.extend(blocks.into_iter().flatten());
        events.push(event("messageStop", r#"{"stopReason":"tool_use"}"#));
        events.push(event("metadata", metadata));
        events
    }

    /// A ContentBlockDeltaEvent of content block `index`.
    fn delta(index: usize, delta: Value) -> StreamEvent {
        let data = json!({"contentBlockIndex": index, "delta": delta});
        event("contentBlockDelta", &data.to_string())
    }

    /// The ContentBlockStopEvent of content block `index`.
    fn block_stop(index: usize) -> StreamEvent {
        event(
            "contentBlockStop",
            &json!({ "contentBlockIndex": index }).to_string(),
        )
    }

    /// Content block `index` as text deltas, then its stop.
    fn text_block(index: usize, pieces: &[&str]) -> Vec<StreamEvent> {
        let mut events: Vec<StreamEvent> = pieces
            .iter()
            .map(|t| delta(index, json!({ "text": t })))
            .collect();
        events.push(block_stop(index));
        events
    }

    /// Content block `index` as a `top_song` tool use: its start (`start.toolUse` with the id
    /// and name), its input in `pieces` (`delta.toolUse.input`), then its stop.
    fn tool_use_block(index: usize, id: &str, pieces: &[&str]) -> Vec<StreamEvent> {
        let start = json!({"contentBlockIndex": index,
                           "start": {"toolUse": {"toolUseId": id, "name": "top_song"}}});
        let mut events = vec![event("contentBlockStart", &start.to_string())];
        events.extend(
            pieces
                .iter()
                .map(|p| delta(index, json!({"toolUse": {"input": p}}))),
        );
        events.push(block_stop(index));
        events
    }

    /// The request shape of the Converse API reference's Request Syntax
    /// (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html) and of the
    /// user guide's image example (docs.aws.amazon.com/bedrock/latest/userguide/
    /// conversation-inference-examples.html).
    #[test]
    fn golden_request_body() {
        let mut m =
            ModelConfiguration::new(&BedrockConverse, "anthropic.claude-3-haiku-20240307-v1:0");
        m.set_parameter("MAXTOKENS", json!("512")).unwrap();
        m.set_parameter("temperature", json!(0.5)).unwrap();
        m.set_parameter("topP", json!(0.9)).unwrap();
        m.set_parameter("stopSequences", json!("END")).unwrap();
        m.set_parameter("additionalModelRequestFields", json!("{\"top_k\": 200}"))
            .unwrap();
        let messages = vec![
            Message::system("You are an app that creates playlists for a radio station."),
            said(
                Role::User,
                vec![
                    Part::text("What's in this image?"),
                    image("image/png", "iVBORw0KGgo="),
                ],
            ),
            Message::assistant("A cat."),
            Message::user("Create a list of 3 pop songs."),
        ];
        let req = m.prepare_request(&messages, false).unwrap();
        assert_eq!(req.model, "anthropic.claude-3-haiku-20240307-v1:0");
        assert_eq!(
            req.body,
            json!({
                "messages": [
                    {"role": "user", "content": [
                        {"text": "What's in this image?"},
                        {"image": {"format": "png", "source": {"bytes": "iVBORw0KGgo="}}}
                    ]},
                    {"role": "assistant", "content": [{"text": "A cat."}]},
                    {"role": "user", "content": [{"text": "Create a list of 3 pop songs."}]}
                ],
                "system": [{"text": "You are an app that creates playlists for a radio station."}],
                "inferenceConfig": {"maxTokens": 512, "temperature": 0.5, "topP": 0.9, "stopSequences": ["END"]},
                "additionalModelRequestFields": {"top_k": 200}
            })
        );
        assert!(req.body["additionalModelRequestFields"].is_object());
    }

    #[test]
    fn tool_calls_and_results_become_tool_use_blocks_in_alternating_turns() {
        let m = ModelConfiguration::new(&BedrockConverse, "m");
        let messages = vec![
            Message::user("Weather in Paris?"),
            calling("tooluse_1", "weather", json!({"city": "Paris"})),
            said(
                Role::Tool,
                vec![result(
                    "tooluse_1",
                    vec![Part::Json {
                        value: json!({"c": 21}),
                    }],
                    false,
                )],
            ),
            Message::user("Thanks"),
        ];
        let body = m.prepare_request(&messages, true).unwrap().body;
        assert_eq!(
            body["messages"][1]["content"][0],
            json!({"toolUse": {"toolUseId": "tooluse_1", "name": "weather", "input": {"city": "Paris"}}})
        );
        assert_eq!(body["messages"].as_array().unwrap().len(), 3);
        assert_eq!(
            body["messages"][2],
            json!({"role": "user", "content": [
                {"toolResult": {"toolUseId": "tooluse_1", "content": [{"json": {"c": 21}}]}},
                {"text": "Thanks"}
            ]})
        );
        let bad = vec![said(Role::User, vec![image_url("https://x/y.png")])];
        assert!(m.prepare_request(&bad, false).is_err());
        let tiff = vec![said(Role::User, vec![image("image/tiff", "AA==")])];
        let e = m.prepare_request(&tiff, false).unwrap_err();
        assert_mentions(&e, "not image/tiff");
    }

    /// The user guide's tool example (docs.aws.amazon.com/bedrock/latest/userguide/
    /// tool-use-inference-call.html): the `top_song` tool in `toolConfig`, the model's `toolUse`
    /// (here two of them, as parallel calls), and both `toolResult`s in one user message, the
    /// failed one with `status: "error"`.
    #[test]
    fn golden_tool_round_trip() {
        let m =
            ModelConfiguration::new(&BedrockConverse, "anthropic.claude-3-sonnet-20240229-v1:0");
        let schema = json!({
            "type": "object",
            "properties": {"sign": {"type": "string", "description": "The call sign for the radio station for which you want the most popular song. Example calls signs are WZPZ and WKRP."}},
            "required": ["sign"]
        });
        let tools = [ToolSpec {
            name: "top_song".into(),
            description: "Get the most popular song played on a radio station.".into(),
            input_schema: schema.clone(),
        }];
        let use_of = |id: &str, sign: &str| Part::ToolCall {
            id: id.into(),
            name: "top_song".into(),
            arguments: json!({ "sign": sign }),
            signature: None,
        };
        let messages = vec![
            Message::user("What is the most popular song on WZPZ and on WKRP?"),
            said(
                Role::Assistant,
                vec![
                    use_of("tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "WZPZ"),
                    use_of("tooluse_2", "WKRP"),
                ],
            ),
            said(
                Role::Tool,
                vec![
                    result(
                        "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q",
                        vec![Part::Json {
                            value: json!({"song": "Elemental Hotel", "artist": "8 Storey Hike"}),
                        }],
                        false,
                    ),
                    result(
                        "tooluse_2",
                        vec![Part::text("Station WKRP not found.")],
                        true,
                    ),
                ],
            ),
        ];
        let body = m.prepare_with_tools(&messages, &tools).unwrap().body;
        assert_eq!(
            body,
            json!({
                "messages": [
                    {"role": "user", "content": [{"text": "What is the most popular song on WZPZ and on WKRP?"}]},
                    {"role": "assistant", "content": [
                        {"toolUse": {"toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "name": "top_song", "input": {"sign": "WZPZ"}}},
                        {"toolUse": {"toolUseId": "tooluse_2", "name": "top_song", "input": {"sign": "WKRP"}}}
                    ]},
                    {"role": "user", "content": [
                        {"toolResult": {"toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q",
                                        "content": [{"json": {"song": "Elemental Hotel", "artist": "8 Storey Hike"}}]}},
                        {"toolResult": {"toolUseId": "tooluse_2", "content": [{"text": "Station WKRP not found."}],
                                        "status": "error"}}
                    ]}
                ],
                "toolConfig": {"tools": [{"toolSpec": {
                    "name": "top_song",
                    "description": "Get the most popular song played on a radio station.",
                    "inputSchema": {"json": schema}
                }}]}
            })
        );
        // The documented answer that asks for the tool.
        let answer = br#"{"output": {"message": {"role": "assistant", "content": [
            {"toolUse": {"toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "name": "top_song", "input": {"sign": "WZPZ"}}}
          ]}}, "stopReason": "tool_use"}"#;
        let r = m.extract(answer).unwrap();
        assert_eq!(r.finish_reason.as_deref(), Some("tool_use"));
        assert_eq!(
            r.message.content,
            vec![use_of("tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "WZPZ")]
        );
    }

    /// ConverseStream tool uses (ContentBlockStartEvent with `start.toolUse`, then
    /// ContentBlockDeltaEvents with `delta.toolUse.input` pieces): the id and name come as one
    /// delta, the input pieces as the next ones, keyed by the use's place in the reply.
    #[test]
    fn streamed_tool_uses_become_deltas() {
        let events = answer(
            vec![
                text_block(0, &["Checking both."]),
                tool_use_block(1, "tooluse_a", &["{\"sign\": ", "\"WZPZ\"}"]),
                tool_use_block(2, "tooluse_b", &["{\"sign\": \"WKRP\"}"]),
            ],
            r#"{"usage":{"inputTokens":30,"outputTokens":20,"totalTokens":50},"metrics":{"latencyMs":100}}"#,
        );
        let mut d = ModelConfiguration::new(&BedrockConverse, "m").decoder();
        let mut deltas = Vec::new();
        for e in &events {
            d.feed(e).unwrap();
            deltas.extend(d.take_tool_call_deltas());
        }
        assert_eq!(
            deltas,
            vec![
                ToolCallDelta {
                    index: 0,
                    id: Some("tooluse_a".into()),
                    name: Some("top_song".into()),
                    arguments: String::new()
                },
                ToolCallDelta {
                    index: 0,
                    arguments: "{\"sign\": ".into(),
                    ..Default::default()
                },
                ToolCallDelta {
                    index: 0,
                    arguments: "\"WZPZ\"}".into(),
                    ..Default::default()
                },
                ToolCallDelta {
                    index: 1,
                    id: Some("tooluse_b".into()),
                    name: Some("top_song".into()),
                    arguments: String::new()
                },
                ToolCallDelta {
                    index: 1,
                    arguments: "{\"sign\": \"WKRP\"}".into(),
                    ..Default::default()
                },
            ]
        );
        let r = d.finish().unwrap();
        assert_eq!(r.message.text(), "Checking both.");
        assert_eq!(
            r.message.tool_calls(),
            vec![
                (
                    "tooluse_a".into(),
                    "top_song".into(),
                    json!({"sign": "WZPZ"})
                ),
                (
                    "tooluse_b".into(),
                    "top_song".into(),
                    json!({"sign": "WKRP"})
                ),
            ]
        );
    }

    /// The response shape of the Converse API reference (API_runtime_Converse.html, Response
    /// Syntax) and of the user guide's example answer.
    #[test]
    fn golden_response() {
        let body = br#"{
            "output": {"message": {"role": "assistant", "content": [
                {"text": "Why don't scientists trust atoms? Because they make up everything!"}
            ]}},
            "stopReason": "end_turn",
            "usage": {"inputTokens": 22, "outputTokens": 16, "totalTokens": 38, "cacheReadInputTokens": 4, "cacheWriteInputTokens": 9},
            "metrics": {"latencyMs": 740}
        }"#;
        let r = ModelConfiguration::new(&BedrockConverse, "m")
            .extract(body)
            .unwrap();
        assert_eq!(
            r.message.text(),
            "Why don't scientists trust atoms? Because they make up everything!"
        );
        assert_eq!(
            r.usage,
            Some(Usage {
                // 22 uncached + 4 read + 9 written.
                input_tokens: 35,
                output_tokens: 16,
                cache_read_tokens: Some(4),
                cache_write_tokens: Some(9),
                reasoning_tokens: None,
            })
        );
        assert_eq!(r.finish_reason.as_deref(), Some("end_turn"));

        let tool = br#"{"output":{"message":{"role":"assistant","content":[{"text":"Let me look."},{"toolUse":{"toolUseId":"tooluse_kZJMlvQmRJ6eAyJE5GIl7Q","name":"top_song","input":{"sign":"WZPZ"}}}]}},"stopReason":"tool_use","usage":{"inputTokens":375,"outputTokens":75,"totalTokens":450}}"#;
        let r = ModelConfiguration::new(&BedrockConverse, "m")
            .extract(tool)
            .unwrap();
        assert_eq!(r.message.text(), "Let me look.");
        assert!(
            matches!(&r.message.content[1], Part::ToolCall { name, arguments, .. } if name == "top_song" && arguments["sign"] == "WZPZ")
        );

        let e = ModelConfiguration::new(&BedrockConverse, "m")
            .extract(br#"{"message":"The provided model identifier is invalid."}"#)
            .unwrap_err();
        assert_eq!(e.message, "The provided model identifier is invalid.");
    }

    /// A ConverseStream answer as its events (API_runtime_ConverseStreamOutput.html and the
    /// event types it links: MessageStartEvent, ContentBlockDeltaEvent, MessageStopEvent,
    /// ConverseStreamMetadataEvent).
    #[test]
    fn golden_stream_and_a_cut_one() {
        let events = answer(
            vec![
                text_block(0, &["Hello", " there"]),
                tool_use_block(1, "tooluse_1", &["{\"sign\":", "\"WZPZ\"}"]),
            ],
            r#"{"usage":{"inputTokens":12,"outputTokens":7,"totalTokens":19},"metrics":{"latencyMs":321}}"#,
        );
        let m = ModelConfiguration::new(&BedrockConverse, "m");
        let mut d = m.decoder();
        let mut deltas = Vec::new();
        for e in &events {
            deltas.extend(d.feed(e).unwrap());
        }
        assert_eq!(deltas, vec!["Hello", " there"]);
        let r = d.finish().unwrap();
        assert_eq!(r.message.text(), "Hello there");
        assert_eq!(r.finish_reason.as_deref(), Some("tool_use"));
        assert_eq!(r.usage.unwrap().output_tokens, 7);
        assert!(
            matches!(&r.message.content[1], Part::ToolCall { id, arguments, .. } if id == "tooluse_1" && arguments["sign"] == "WZPZ")
        );

        // Cut before `metadata`, the terminal event.
        let mut cut = m.decoder();
        for e in &events[..9] {
            cut.feed(e).unwrap();
        }
        let e = cut.finish().unwrap_err();
        assert_mentions(&e, "ended before the reply was complete");

        let mut bad = m.decoder();
        assert!(bad
            .feed(&event("contentBlockDelta", "{\"delta\":"))
            .is_err());
        let e = bad
            .feed(&event(
                "validationException",
                r#"{"message":"Malformed input request"}"#,
            ))
            .unwrap_err();
        assert_eq!(
            e.message,
            "the stream stopped with validationException: Malformed input request"
        );
    }

    // https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ReasoningContentBlock.html
    // and ReasoningContentBlockDelta: reasoning text and its signature stream in deltas; the
    // signed reasoning goes back before the toolUse of the same turn, nowhere else.
    #[test]
    fn reasoning_content_streams_and_goes_back_with_tool_use() {
        let reasoning = [
            json!({"reasoningContent": {"text": "The user wants "}}),
            json!({"reasoningContent": {"text": "a song."}}),
            json!({"reasoningContent": {"signature": "ErcBCkgIAhABGAIiQ"}}),
        ];
        let mut thinking: Vec<StreamEvent> = reasoning.into_iter().map(|r| delta(0, r)).collect();
        thinking.push(block_stop(0));
        let events = answer(
            vec![
                thinking,
                tool_use_block(1, "tooluse_1", &["{\"sign\":\"WZPZ\"}"]),
            ],
            r#"{"usage":{"inputTokens":12,"outputTokens":7}}"#,
        );
        let m = ModelConfiguration::new(&BedrockConverse, "m");
        let mut d = m.decoder();
        let mut reasoning = Vec::new();
        for e in &events {
            assert!(d.feed(e).unwrap().is_empty());
            reasoning.extend(d.take_reasoning_deltas());
        }
        assert_eq!(reasoning, vec!["The user wants ", "a song."]);
        let r = d.finish().unwrap();
        assert_eq!(
            r.message.content[0],
            Part::reasoning("The user wants a song.", Some("ErcBCkgIAhABGAIiQ".into()))
        );
        let messages = [
            Message::user("Top song?"),
            r.message,
            answered("tooluse_1", "Elemental Hotel"),
        ];
        let body = m.prepare_request(&messages, false).unwrap().body;
        assert_eq!(
            body["messages"][1]["content"],
            json!([
                {"reasoningContent": {"reasoningText": {"text": "The user wants a song.", "signature": "ErcBCkgIAhABGAIiQ"}}},
                {"toolUse": {"toolUseId": "tooluse_1", "name": "top_song", "input": {"sign": "WZPZ"}}}
            ])
        );
        // A whole answer: reasoning text and redacted content; without a tool use, none of it
        // goes back.
        let body = br#"{"output":{"message":{"role":"assistant","content":[
            {"reasoningContent":{"reasoningText":{"text":"Easy.","signature":"sig"}}},
            {"reasoningContent":{"redactedContent":"ZW5j"}},
            {"text":"4"}]}},"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":1}}"#;
        let r = m.extract(body).unwrap();
        assert_eq!(r.message.reasoning(), "Easy.");
        assert!(matches!(
            &r.message.content[1],
            Part::Reasoning { redacted: true, .. }
        ));
        assert_eq!(r.message.content[2], Part::text("4"));
        let body = m
            .prepare_request(&[Message::user("2+2"), r.message], false)
            .unwrap()
            .body;
        assert_eq!(body["messages"][1]["content"], json!([{"text": "4"}]));
    }
}
