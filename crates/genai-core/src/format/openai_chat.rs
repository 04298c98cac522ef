//! The `openai-chat` format: the OpenAI Chat Completions API, spoken by OpenAI and by every
//! OpenAI-compatible server, with its SSE stream decoder beside it.
//!
//! It owns the JSON shape of requests and responses of that API and nothing else: no HTTP,
//! no keys, no URLs.

use serde_json::{Map, Value};

use super::openai_chat_body;
use super::parameters::with_stops;
use super::reply::{body_json, event_json, invalid_json, parse_arguments};
use super::sampling;
use super::schema::TOOL_CHOICE;
use super::wire::{items, str_field};
use super::{
    EventReader, Format, FormatSpec, ImageSupport, ModelReply, ModelRequest, ParameterSpec,
    ReplyBuilder, Request, StreamDecoder, StreamEvent,
};
use crate::error::{Error, Result};
use crate::message::{Part, Usage};

pub const FORMAT: &str = "openai-chat";

pub(crate) const PARAMETERS: &[ParameterSpec] = &[
    sampling::TEMPERATURE,
    sampling::TOP_P,
    sampling::MAX_TOKENS,
    sampling::MAX_TOKENS
        .named("max_completion_tokens")
        .described("The most tokens the reply may have, reasoning included (newer OpenAI models)."),
    sampling::PRESENCE_PENALTY,
    sampling::FREQUENCY_PENALTY,
    sampling::SEED,
    sampling::STOP.described("Sequences where generation stops (up to 4)."),
    ParameterSpec::object(
        "response_format",
        "The reply's shape, sent as a JSON object (text given with -p is parsed): \
            {\"type\":\"json_object\"}, or {\"type\":\"json_schema\",\"json_schema\":{...}}.",
    ),
    ParameterSpec::one_of(
        "reasoning_effort",
        &["none", "minimal", "low", "medium", "high", "xhigh"],
        "How hard a reasoning model thinks before answering (OpenAI's \
         o-series and GPT-5, and servers that take it, such as vLLM and OpenRouter); what \
         it thinks comes back as reasoning where the server sends it (reasoning_content).",
    ),
    ParameterSpec::string("user", "An end-user id passed to the provider."),
    ParameterSpec::object(
        "logit_bias",
        "A JSON object from token id to a bias from -100 to 100.",
    ),
    ParameterSpec::boolean(
        "parallel_tool_calls",
        "Whether the model may call several tools at once.",
    ),
    ParameterSpec::string(
        "service_tier",
        "auto, default, flex or priority (OpenAI's processing tiers).",
    ),
    ParameterSpec::boolean(
        "store",
        "Whether OpenAI keeps the completion for its dashboard.",
    ),
    ParameterSpec::object(
        "metadata",
        "A JSON object of string tags stored with the completion.",
    ),
    sampling::TOP_K.described(
        "Sample from the k most likely tokens (0: all). Honoured by \
         the local provider and compatible servers such as llama.cpp and vLLM; OpenAI \
         refuses it.",
    ),
    sampling::REPEAT_PENALTY.described(
        "Penalty for repeating recent tokens (1: none). Honoured by \
         the local provider and compatible servers such as llama.cpp; OpenAI refuses it.",
    ),
    ParameterSpec::boolean(
        "ignore_eos",
        "Generate until max_tokens: never end at an end-of-generation \
         token (nor, on the local provider, when the reply repeats itself), for \
         benchmarks. Honoured by the local provider and llama.cpp's server; OpenAI \
         refuses it.",
    ),
    TOOL_CHOICE,
];

/// The `openai-chat` format.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OpenAiChat;

/// What the `openai-chat` format is.
pub(crate) const SPEC: FormatSpec = FormatSpec {
    name: FORMAT,
    description: "OpenAI Chat Completions API",
    parameters: PARAMETERS,
    images: ImageSupport::ALL,
    native_tools: true,
    special: &[],
};

impl Format for OpenAiChat {
    fn spec(&self) -> &'static FormatSpec {
        &SPEC
    }

    fn prepare(&self, request: &Request<'_>) -> Result<ModelRequest> {
        let (model, parameters, messages, options) = request.parts();
        let with_stops = with_stops(PARAMETERS, parameters, options.stop);
        let bytes = openai_chat_body::write(
            model,
            &with_stops,
            messages,
            options.tools,
            options.schema,
            options.stream,
        )?;
        Ok(request.written(FORMAT, bytes))
    }

    fn extract(&self, _: &Map<String, Value>, body: &[u8]) -> Result<ModelReply> {
        match super::openai_chat_answer::read(body) {
            Some(read) => read,
            None => read_tree(body),
        }
    }

    fn decoder(&self, _: &Map<String, Value>) -> StreamDecoder {
        StreamDecoder::new(Events, ReplyBuilder::new())
    }
}

/// A whole answer read as a `Value` tree: what [`openai_chat_answer`](super::openai_chat_answer)
/// does not read into its types.
pub(super) fn read_tree(body: &[u8]) -> Result<ModelReply> {
    let v = body_json(body)?;
    if let Some(err) = v.get("error") {
        return Err(Error::provider(error_text(err)));
    }
    let choice = v
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| Error::provider("the provider's answer has no choices"))?;
    let msg = choice.get("message").cloned().unwrap_or(Value::Null);
    let mut content = Vec::new();
    if let Some(reasoning) = reasoning_of(&msg) {
        content.push(Part::reasoning(reasoning, None));
    }
    if let Some(text) = msg.get("content").and_then(Value::as_str) {
        content.push(Part::text(text));
    } else if let Some(refusal) = msg.get("refusal").and_then(Value::as_str) {
        content.push(Part::text(refusal));
    }
    if let Some(calls) = msg.get("tool_calls").and_then(Value::as_array) {
        for call in calls {
            let f = call.get("function").cloned().unwrap_or(Value::Null);
            content.push(Part::ToolCall {
                id: str_field(call, "id"),
                name: str_field(&f, "name"),
                arguments: parse_arguments(
                    f.get("arguments").and_then(Value::as_str).unwrap_or(""),
                ),
                signature: None,
            });
        }
    }
    Ok(ModelReply::assistant(
        content,
        v.get("usage").and_then(usage_of),
        choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_string),
        v.get("model").and_then(Value::as_str).map(str::to_string),
    ))
}

/// The text of an OpenAI error object: its message, with its code when there is one.
pub(crate) fn error_text(err: &Value) -> String {
    let message = err
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| err.to_string());
    match err.get("code").and_then(|c| {
        c.as_str()
            .map(str::to_string)
            .or_else(|| c.as_i64().map(|n| n.to_string()))
    }) {
        Some(code) => format!("{message} [{code}]"),
        None => message,
    }
}

fn usage_of(u: &Value) -> Option<Usage> {
    if !u.is_object() {
        return None;
    }
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    Some(Usage {
        input_tokens: n("prompt_tokens"),
        output_tokens: n("completion_tokens"),
        cache_read_tokens: u
            .get("prompt_tokens_details")
            .and_then(|d| d.get("cached_tokens"))
            .and_then(Value::as_u64),
        cache_write_tokens: None,
        reasoning_tokens: u
            .get("completion_tokens_details")
            .and_then(|d| d.get("reasoning_tokens"))
            .and_then(Value::as_u64),
    })
}

/// The reasoning a message or delta carries: `reasoning_content` (DeepSeek, Qwen, vLLM,
/// llama-server) or `reasoning` (OpenRouter, newer vLLM and Ollama's OpenAI endpoint).
fn reasoning_of(v: &Value) -> Option<&str> {
    ["reasoning_content", "reasoning"]
        .iter()
        .find_map(|k| v.get(*k).and_then(Value::as_str))
        .filter(|r| !r.is_empty())
}

/// Reads the `chat.completion.chunk` events of a streamed answer; the stream is complete at
/// `[DONE]` or at a finish reason.
struct Events;

/// One streamed chunk: the fields genai reads, each as sent; the rest (`id`, `object`,
/// `created`, `system_fingerprint` and the like) is skipped without being built.
#[derive(serde::Deserialize)]
struct Chunk {
    error: Option<Value>,
    model: Option<Value>,
    usage: Option<Value>,
    /// Read as a list of choices (not a `Value` tree): each chunk has one, and building its
    /// map was a good part of reading a stream.
    choices: Option<Vec<Option<StreamChoice>>>,
}

/// One choice of a streamed chunk, each field as sent.
#[derive(serde::Deserialize)]
struct StreamChoice {
    index: Option<Value>,
    delta: Option<Value>,
    finish_reason: Option<Value>,
}

impl EventReader for Events {
    fn read(&mut self, event: &StreamEvent, reply: &mut ReplyBuilder) -> Result<()> {
        let data = event.data.trim();
        if data == "[DONE]" {
            reply.complete();
            return Ok(());
        }
        if !data.starts_with('{') {
            // Not a chunk (a blank keep-alive or a bare value): nothing to read, once valid.
            return event_json(event).map(drop);
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(invalid_json)?;
        if let Some(err) = &chunk.error {
            return Err(Error::provider(error_text(err)));
        }
        if let Some(model) = chunk.model.as_ref().and_then(Value::as_str) {
            reply.model = Some(model.to_string());
        }
        if let Some(u) = chunk.usage.as_ref().and_then(usage_of) {
            reply.usage = Some(u);
        }
        for choice in chunk.choices.iter().flatten().flatten() {
            if choice.index.as_ref().and_then(Value::as_u64).unwrap_or(0) != 0 {
                continue;
            }
            let delta = choice.delta.as_ref().unwrap_or(&Value::Null);
            if let Some(reasoning) = reasoning_of(delta) {
                reply.reasoning(reasoning);
            }
            if let Some(text) = delta.get("content").and_then(Value::as_str) {
                reply.text(text);
            }
            for call in items(delta, "/tool_calls") {
                let i = call.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
                if i > 1024 {
                    return Err(Error::provider(
                        "the provider's stream has an absurd tool call index",
                    ));
                }
                let f = call.get("function").unwrap_or(&Value::Null);
                reply.call_piece(
                    i,
                    call.get("id").and_then(Value::as_str),
                    f.get("name").and_then(Value::as_str),
                    f.get("arguments").and_then(Value::as_str).unwrap_or(""),
                );
            }
            if let Some(reason) = choice.finish_reason.as_ref().and_then(Value::as_str) {
                reply.finish_reason = Some(reason.to_string());
                reply.complete();
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "openai_chat_tests.rs"]
mod tests;
