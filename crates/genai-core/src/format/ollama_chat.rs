//! The `ollama-chat` format: Ollama's native `/api/chat`, with its NDJSON stream decoder
//! beside it (https://github.com/ollama/ollama/blob/main/docs/api.md#generate-a-chat-completion).
//!
//! It owns the JSON shape of that API: `messages` with string `content` and base64 `images`,
//! sampling parameters inside the `options` object, `format`, `keep_alive`, and the
//! `done`/`done_reason`/`prompt_eval_count`/`eval_count` of the answer. It must never do I/O,
//! know a URL or a key (the `ollama` provider does), nor send `options` as anything but an
//! object.
//!
//! Tools follow https://docs.ollama.com/capabilities/tool-calling: `tools` of `type: function`,
//! `message.tool_calls` with arguments as an object (whole calls, also when streaming), and one
//! `{role: "tool", tool_name, content}` message per result. Ollama gives calls no id: genai
//! names them `call_N`, unique in their reply.

use serde_json::{json, Map, Value};

use super::parameters::with_stops;
use super::reply::{body_json, event_json};
use super::sampling;
use super::schema::{ToolChoice, TOOL_CHOICE};
use super::wire::{
    arguments_object, chat_message, function_tools, items, object_parameter, str_at, text_of,
    CallNames,
};
use super::{
    EventReader, Format, FormatSpec, ImageSupport, ModelReply, ModelRequest, ParameterSpec,
    ReplyBuilder, Request, SpecialParameter, StreamDecoder, StreamEvent, ToolSpec,
};
use crate::error::{Error, ErrorKind, Result};
use crate::message::{Message, Part, Usage};

pub(crate) const FORMAT: &str = "ollama-chat";

/// Parameters sent at the top level of the request; every other one goes into `options`.
const TOP_LEVEL: &[&str] = &["format", "keep_alive", "think", "options", TOOL_CHOICE.name];

/// Options from Ollama's Modelfile reference ("valid parameters and values") and the API's
/// "Generate request (With options)" example.
pub(crate) const PARAMETERS: &[ParameterSpec] = &[
    sampling::TEMPERATURE.described(
        "Sampling temperature; higher is more creative \
         (options.temperature, default 0.8).",
    ),
    sampling::TOP_P.described(
        "Nucleus sampling: the probability mass to sample from \
         (options.top_p, default 0.9).",
    ),
    sampling::TOP_K.described("Sample from the k most likely tokens (options.top_k, default 40)."),
    ParameterSpec::number(
        "min_p",
        0.0,
        1.0,
        "Least probability of a token, relative to the most likely \
         one (options.min_p).",
    ),
    ParameterSpec::number(
        "typical_p",
        0.0,
        1.0,
        "Locally typical sampling (options.typical_p).",
    ),
    ParameterSpec::integer(
        "num_ctx",
        1,
        10_000_000,
        "Context window in tokens (options.num_ctx).",
    ),
    ParameterSpec::integer(
        "num_predict",
        -2,
        10_000_000,
        "The most tokens the reply may have; -1 unlimited \
         (options.num_predict).",
    ),
    sampling::MAX_TOKENS
        .integers_between(1, 10_000_000)
        .described(
            "Same as num_predict (sent as options.num_predict), the name \
         other formats use.",
        ),
    sampling::SEED.described("Seed for reproducible outputs (options.seed)."),
    sampling::STOP.described("Sequences where generation stops (options.stop)."),
    sampling::REPEAT_PENALTY.described(
        "Penalty for repetitions (options.repeat_penalty, default \
         1.1).",
    ),
    ParameterSpec::integer(
        "repeat_last_n",
        -1,
        10_000_000,
        "How far back to look for repetitions; 0 off, -1 num_ctx \
         (options.repeat_last_n).",
    ),
    sampling::PRESENCE_PENALTY.described(
        "Penalty for tokens already present \
         (options.presence_penalty).",
    ),
    sampling::FREQUENCY_PENALTY.described(
        "Penalty proportional to how often a token appeared \
         (options.frequency_penalty).",
    ),
    ParameterSpec::integer(
        "mirostat",
        0,
        2,
        "Mirostat sampling: 0 off, 1 Mirostat, 2 Mirostat 2.0 \
         (options.mirostat).",
    ),
    ParameterSpec::number(
        "mirostat_tau",
        0.0,
        100.0,
        "Mirostat: balance between coherence and diversity \
         (options.mirostat_tau).",
    ),
    ParameterSpec::number(
        "mirostat_eta",
        0.0,
        10.0,
        "Mirostat learning rate (options.mirostat_eta).",
    ),
    ParameterSpec::integer(
        "num_keep",
        -1,
        10_000_000,
        "Tokens of the prompt kept when the context is full \
         (options.num_keep).",
    ),
    ParameterSpec::integer(
        "num_gpu",
        -1,
        100_000,
        "Layers offloaded to the GPU (options.num_gpu).",
    ),
    ParameterSpec::integer(
        "num_thread",
        0,
        100_000,
        "CPU threads (options.num_thread).",
    ),
    ParameterSpec::object(
        "options",
        "Any other Ollama options as a JSON object, such as \
         {\"num_batch\":512}; the parameters above override its keys.",
    ),
    ParameterSpec::string(
        "format",
        "\"json\" for JSON mode, or a JSON schema object for \
         structured outputs.",
    ),
    ParameterSpec::string(
        "keep_alive",
        "How long the model stays loaded after the request: a \
         duration such as \"5m\" or \"1h\", or seconds as a number (0 unloads, negative \
         keeps it loaded).",
    ),
    ParameterSpec::boolean(
        "think",
        "For thinking models: whether the model thinks before \
         answering (true or false; low, medium or high for models with levels, such as \
         gpt-oss); its thinking comes back as reasoning, apart from the answer.",
    ),
    TOOL_CHOICE,
];

/// The `ollama-chat` format.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OllamaChat;

/// The `options` object: the `options` parameter, then every sampling parameter over it.
fn options_of(parameters: &Map<String, Value>) -> Map<String, Value> {
    let mut options = object_parameter(parameters, "options");
    for (k, v) in parameters {
        if TOP_LEVEL.contains(&k.as_str()) {
            continue;
        }
        let key = if k == "max_tokens" { "num_predict" } else { k };
        // An explicit num_predict wins over its alias.
        if k == "max_tokens" && parameters.contains_key("num_predict") {
            continue;
        }
        options.insert(key.to_string(), v.clone());
    }
    options
}

/// What the `ollama-chat` format is.
pub(crate) const SPEC: FormatSpec = FormatSpec {
    name: FORMAT,
    description: "Ollama's native chat API (/api/chat, NDJSON streaming)",
    parameters: PARAMETERS,
    images: ImageSupport::INLINE,
    native_tools: true,
    // These take more than one JSON type.
    special: &[
        SpecialParameter {
            name: "format",
            check: |v| special_value("format", v),
        },
        SpecialParameter {
            name: "keep_alive",
            check: |v| special_value("keep_alive", v),
        },
        SpecialParameter {
            name: "think",
            check: |v| special_value("think", v),
        },
    ],
};

impl Format for OllamaChat {
    fn spec(&self) -> &'static FormatSpec {
        &SPEC
    }

    fn prepare(&self, request: &Request<'_>) -> Result<ModelRequest> {
        let (model, parameters, messages, options) = request.parts();
        let parameters = with_stops(PARAMETERS, parameters, options.stop);
        // Ollama's tool messages carry the tool's name, which our results know only by call id.
        let mut names = CallNames::default();
        let mut wire = Vec::with_capacity(messages.len());
        for m in messages {
            names.learn(m);
            wire.extend(to_wire(m, &names)?);
        }
        let mut body = Map::new();
        body.insert("model".into(), Value::from(model));
        body.insert("messages".into(), Value::Array(wire));
        // Ollama streams unless told not to.
        body.insert("stream".into(), Value::Bool(options.stream));
        for key in ["format", "keep_alive", "think"] {
            if let Some(v) = parameters.get(key) {
                body.insert(key.into(), v.clone());
            }
        }
        let sampling = options_of(&parameters);
        if !sampling.is_empty() {
            body.insert("options".into(), Value::Object(sampling));
        }
        // Ollama has no tool_choice: `none` offers no tools, a name offers only that one, and
        // `required` is left to the model.
        let offered: Vec<ToolSpec> = match ToolChoice::of(&parameters, options.tools)? {
            Some(ToolChoice::None) => Vec::new(),
            Some(ToolChoice::Tool(name)) => options
                .tools
                .iter()
                .filter(|t| t.name == name)
                .cloned()
                .collect(),
            _ => options.tools.to_vec(),
        };
        if !offered.is_empty() {
            body.insert("tools".into(), function_tools(&offered));
        }
        if let Some(schema) = options.schema {
            body.insert("format".into(), schema.schema.clone());
        }
        Ok(request.prepared(FORMAT, body))
    }

    fn extract(&self, _: &Map<String, Value>, body: &[u8]) -> Result<ModelReply> {
        let v = body_json(body)?;
        if let Some(err) = error_of(&v) {
            return Err(err);
        }
        if v.get("done").and_then(Value::as_bool) != Some(true) {
            return Err(Error::provider(
                "the provider's answer is not a finished chat response (no \"done\": true)",
            ));
        }
        let msg = v.get("message").cloned().unwrap_or(Value::Null);
        let mut content = Vec::new();
        if let Some(thinking) = msg.get("thinking").and_then(Value::as_str) {
            if !thinking.is_empty() {
                content.push(Part::reasoning(thinking, None));
            }
        }
        if let Some(text) = msg.get("content").and_then(Value::as_str) {
            if !text.is_empty() {
                content.push(Part::text(text));
            }
        }
        content.extend(
            tool_calls_of(&msg, 0)
                .into_iter()
                .map(|(id, name, arguments)| Part::ToolCall {
                    id,
                    name,
                    arguments,
                    signature: None,
                }),
        );
        Ok(ModelReply::assistant(
            content,
            usage_of(&v),
            str_at(&v, "/done_reason"),
            str_at(&v, "/model"),
        ))
    }

    fn decoder(&self, _: &Map<String, Value>) -> StreamDecoder {
        StreamDecoder::new(Events, ReplyBuilder::new())
    }
}

/// `format`: "json" or a JSON schema object (also as JSON text, from a shell);
/// `keep_alive`: a duration string, or seconds as a number (also as numeric text);
/// `think`: a boolean (also as text) or a level.
fn special_value(name: &'static str, value: Value) -> Result<Value> {
    let bad = |why: &str| {
        Error::new(
            ErrorKind::InvalidParameter,
            format!("{FORMAT} parameter `{name}`: {why}"),
        )
    };
    match (name, value) {
        ("format", Value::Object(o)) => Ok(Value::Object(o)),
        ("format", Value::String(s)) => {
            let t = s.trim();
            if t.eq_ignore_ascii_case("json") {
                return Ok(Value::from("json"));
            }
            match serde_json::from_str::<Value>(t) {
                Ok(Value::Object(o)) => Ok(Value::Object(o)),
                _ => Err(bad("expected \"json\" or a JSON schema object")),
            }
        }
        ("format", _) => Err(bad("expected \"json\" or a JSON schema object")),
        ("keep_alive", Value::Number(n)) => Ok(Value::Number(n)),
        ("keep_alive", Value::String(s)) => {
            let t = s.trim();
            if let Ok(n) = t.parse::<i64>() {
                return Ok(Value::from(n));
            }
            if let Ok(n) = t.parse::<f64>() {
                return Ok(Value::from(n));
            }
            let valid = !t.is_empty()
                && t.trim_start_matches('-')
                    .starts_with(|c: char| c.is_ascii_digit())
                && t.ends_with(['s', 'm', 'h']);
            if valid {
                Ok(Value::from(t))
            } else {
                Err(bad("expected a duration such as \"5m\", or seconds"))
            }
        }
        ("think", value) => {
            let text = value.as_str().map(|t| t.trim().to_ascii_lowercase());
            match (value, text.as_deref()) {
                (Value::Bool(b), _) => Ok(Value::Bool(b)),
                (_, Some("true")) => Ok(Value::Bool(true)),
                (_, Some("false")) => Ok(Value::Bool(false)),
                (_, Some(level @ ("low" | "medium" | "high"))) => Ok(Value::from(level)),
                _ => Err(bad("expected true, false, low, medium or high")),
            }
        }
        _ => Err(bad("expected a duration such as \"5m\", or seconds")),
    }
}

/// `{"error": "..."}`, Ollama's error shape (also used in a stream).
fn error_of(v: &Value) -> Option<Error> {
    let e = v.get("error")?;
    let text = match e {
        Value::String(s) => s.clone(),
        Value::Object(o) => o
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| e.to_string()),
        Value::Null => return None,
        other => other.to_string(),
    };
    Some(Error::provider(text))
}

/// Usage from the final record: `prompt_eval_count` in, `eval_count` out.
fn usage_of(v: &Value) -> Option<Usage> {
    let input = v.get("prompt_eval_count").and_then(Value::as_u64);
    let output = v.get("eval_count").and_then(Value::as_u64);
    if input.is_none() && output.is_none() {
        return None;
    }
    Some(Usage {
        input_tokens: input.unwrap_or(0),
        output_tokens: output.unwrap_or(0),
        ..Usage::default()
    })
}

/// Tool calls of a message (id, name, arguments) from `{"function": {"name", "arguments":
/// {...}}}`, ids made up when Ollama gives none (numbered from `first`).
fn tool_calls_of(msg: &Value, first: usize) -> Vec<(String, String, Value)> {
    items(msg, "/tool_calls")
        .enumerate()
        .map(|(i, call)| {
            let f = call.get("function").cloned().unwrap_or(Value::Null);
            let arguments = match f.get("arguments") {
                Some(Value::String(s)) => {
                    serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
                }
                Some(v) => v.clone(),
                None => json!({}),
            };
            (
                call.get("id")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("call_{}", first + i)),
                f.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                arguments,
            )
        })
        .collect()
}

/// One message in Ollama's shape; tool results become one `tool` message each. Reasoning is
/// not sent back: Ollama does not need it.
fn to_wire(m: &Message, names: &CallNames<'_>) -> Result<Vec<Value>> {
    let mut texts = Vec::new();
    let mut images = Vec::new();
    let mut tool_calls = Vec::new();
    let mut results = Vec::new();
    for part in &m.content {
        match part {
            Part::Reasoning { .. } => {}
            Part::Text { text } => texts.push(text.clone()),
            Part::Json { value } => texts.push(value.to_string()),
            Part::Image { data: Some(d), .. } => images.push(Value::from(d.clone())),
            Part::Image { .. } => {
                return Err(Error::invalid_params(
                    "the ollama-chat format takes images as inline data only (mediaType and data)",
                ))
            }
            Part::ToolCall {
                name, arguments, ..
            } => {
                // `arguments` is an object in Ollama's API.
                let arguments = arguments_object(arguments);
                let index = tool_calls.len();
                tool_calls.push(json!({"type": "function", "function": {
                    "index": index, "name": name, "arguments": arguments
                }}));
            }
            Part::ToolResult {
                tool_call_id,
                content,
                ..
            } => {
                let mut r = json!({"role": "tool", "content": text_of(content)});
                if let Some(name) = names.get(tool_call_id) {
                    r["tool_name"] = Value::from(name);
                }
                results.push(r);
            }
        }
    }
    let mut out = Vec::new();
    if !texts.is_empty() || !images.is_empty() || !tool_calls.is_empty() {
        let mut msg = chat_message(m.role, Value::from(texts.join("\n")), tool_calls);
        if !images.is_empty() {
            msg["images"] = Value::Array(images);
        }
        out.push(msg);
    }
    out.extend(results);
    Ok(out)
}

/// Reads the NDJSON records of a streamed `/api/chat` answer; the last one says
/// `"done": true`. Ollama sends each call whole, in one record.
struct Events;

impl EventReader for Events {
    fn read(&mut self, event: &StreamEvent, reply: &mut ReplyBuilder) -> Result<()> {
        let Some(v) = event_json(event)? else {
            return Ok(());
        };
        if let Some(err) = error_of(&v) {
            return Err(err);
        }
        if let Some(model) = str_at(&v, "/model") {
            reply.model = Some(model);
        }
        if let Some(msg) = v.get("message") {
            if let Some(thinking) = msg.get("thinking").and_then(Value::as_str) {
                reply.reasoning(thinking);
            }
            if let Some(text) = msg.get("content").and_then(Value::as_str) {
                reply.text(text);
            }
            for (id, name, arguments) in tool_calls_of(msg, reply.calls()) {
                reply.whole_call(id, name, arguments, None);
            }
        }
        if v.get("done").and_then(Value::as_bool) == Some(true) {
            reply.complete();
            reply.usage = usage_of(&v);
            reply.finish_reason = str_at(&v, "/done_reason");
        }
        Ok(())
    }

    fn finish(self: Box<Self>, reply: ReplyBuilder) -> Result<ModelReply> {
        if !reply.is_complete() {
            return Err(super::reply::ended_early(" (no \"done\": true record)"));
        }
        reply.into_reply()
    }
}

#[cfg(test)]
#[path = "ollama_chat_tests.rs"]
mod tests;
