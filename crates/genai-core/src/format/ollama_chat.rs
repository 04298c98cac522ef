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

pub const FORMAT: &str = "ollama-chat";

/// Parameters sent at the top level of the request; every other one goes into `options`.
const TOP_LEVEL: &[&str] = &["format", "keep_alive", "think", "options", TOOL_CHOICE.name];

/// Options from Ollama's Modelfile reference ("valid parameters and values") and the API's
/// "Generate request (With options)" example.
pub const PARAMETERS: &[ParameterSpec] = &[
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
pub struct OllamaChat;

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
pub const SPEC: FormatSpec = FormatSpec {
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
mod tests {
    //! Fixtures are the examples of https://github.com/ollama/ollama/blob/main/docs/api.md
    //! ("Generate a chat completion"), images shortened.
    use super::*;
    use crate::format::testing::*;
    use crate::format::{ModelConfiguration, ToolSpec};
    use crate::message::Role;

    #[test]
    fn request_matches_the_documented_chat_request() {
        // "Chat request (Reproducible outputs)".
        let mut m = ModelConfiguration::new(&OllamaChat, "llama3.2");
        m.set_parameter("seed", json!(101)).unwrap();
        m.set_parameter("Temperature", json!("0")).unwrap();
        let req = m.prepare_request(&[Message::user("Hello!")], true).unwrap();
        assert_eq!(
            req.body,
            json!({
              "model": "llama3.2",
              "messages": [{"role": "user", "content": "Hello!"}],
              "stream": true,
              "options": {"seed": 101, "temperature": 0.0}
            })
        );
        // "Chat request (No streaming)": `stream: false` must be said.
        let req = ModelConfiguration::new(&OllamaChat, "llama3.2")
            .prepare_request(&[Message::user("why is the sky blue?")], false)
            .unwrap();
        assert_eq!(
            req.body,
            json!({"model": "llama3.2", "messages": [{"role": "user", "content": "why is the sky blue?"}], "stream": false})
        );
    }

    #[test]
    fn images_history_and_system_follow_the_documented_shapes() {
        // "Chat request (with images)" and "Chat request (With History)".
        let img = said(
            Role::User,
            vec![
                Part::text("what is in this image?"),
                image("image/png", "iVBORw0KGgoAAAANSUhEUgAAAG0AAABmCAYAAADBPx+V"),
            ],
        );
        let msgs = [
            Message::system("be brief"),
            Message::user("why is the sky blue?"),
            said(
                Role::Assistant,
                vec![Part::text("due to rayleigh scattering.")],
            ),
            img,
        ];
        let req = ModelConfiguration::new(&OllamaChat, "llava")
            .prepare_request(&msgs, true)
            .unwrap();
        assert_eq!(
            req.body["messages"],
            json!([
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "why is the sky blue?"},
                {"role": "assistant", "content": "due to rayleigh scattering."},
                {"role": "user", "content": "what is in this image?",
                 "images": ["iVBORw0KGgoAAAANSUhEUgAAAG0AAABmCAYAAADBPx+V"]}
            ])
        );
        let by_url = said(Role::User, vec![image_url("https://x/y.png")]);
        assert!(ModelConfiguration::new(&OllamaChat, "llava")
            .prepare_request(&[by_url], false)
            .is_err());
    }

    #[test]
    fn tool_calls_and_results_use_ollama_shapes() {
        let msgs = [
            Message::user("What is the weather today in Paris?"),
            calling(
                "call_0",
                "get_current_weather",
                json!({"format": "celsius", "location": "Paris, FR"}),
            ),
            answered("call_0", "22 degrees"),
        ];
        let req = ModelConfiguration::new(&OllamaChat, "llama3.2")
            .prepare_request(&msgs, false)
            .unwrap();
        assert_eq!(
            req.body["messages"][1],
            json!({"role": "assistant", "content": "",
                   "tool_calls": [{"type": "function", "function": {"index": 0, "name": "get_current_weather",
                                                "arguments": {"format": "celsius", "location": "Paris, FR"}}}]})
        );
        assert_eq!(
            req.body["messages"][2],
            json!({"role": "tool", "content": "22 degrees", "tool_name": "get_current_weather"})
        );
        // "Chat request (with tools)" response.
        let body = br#"{
  "model": "llama3.2",
  "created_at": "2024-07-22T20:33:28.123648Z",
  "message": {
    "role": "assistant",
    "content": "",
    "tool_calls": [
      {
        "function": {
          "name": "get_current_weather",
          "arguments": {
            "format": "celsius",
            "location": "Paris, FR"
          }
        }
      }
    ]
  },
  "done_reason": "stop",
  "done": true,
  "total_duration": 885095291,
  "load_duration": 3753500,
  "prompt_eval_count": 122,
  "prompt_eval_duration": 328493000,
  "eval_count": 33,
  "eval_duration": 552222000
}"#;
        let r = ModelConfiguration::new(&OllamaChat, "m")
            .extract(body)
            .unwrap();
        assert_eq!(
            r.message.content,
            vec![call(
                "call_0",
                "get_current_weather",
                json!({"format": "celsius", "location": "Paris, FR"})
            )]
        );
        assert_eq!(r.usage.unwrap().input_tokens, 122);
    }

    fn city_tool(name: &str, description: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            input_schema: json!({
                "type": "object",
                "required": ["city"],
                "properties": {"city": {"type": "string", "description": "The name of the city"}}
            }),
        }
    }

    fn city_call(id: &str, name: &str, city: &str) -> Part {
        call(id, name, json!({ "city": city }))
    }

    fn text_result(id: &str, text: &str) -> Part {
        result(id, vec![Part::text(text)], false)
    }

    // https://docs.ollama.com/capabilities/tool-calling, "Parallel tool calling" (cURL): the
    // tools, the assistant's calls, one `tool` message per result with the tool's name; then a
    // second round whose made-up ids repeat the first one's.
    #[test]
    fn golden_parallel_tool_calls() {
        let m = ModelConfiguration::new(&OllamaChat, "qwen3");
        let tools = [
            city_tool("get_temperature", "Get the current temperature for a city"),
            city_tool(
                "get_conditions",
                "Get the current weather conditions for a city",
            ),
        ];
        let msgs = [
            Message::user(
                "What are the current weather conditions and temperature in New York and London?",
            ),
            said(
                Role::Assistant,
                vec![
                    city_call("call_0", "get_temperature", "New York"),
                    city_call("call_1", "get_conditions", "New York"),
                    city_call("call_2", "get_temperature", "London"),
                    city_call("call_3", "get_conditions", "London"),
                ],
            ),
            said(
                Role::Tool,
                vec![
                    text_result("call_0", "22°C"),
                    text_result("call_1", "Partly cloudy"),
                    text_result("call_2", "15°C"),
                    text_result("call_3", "Rainy"),
                ],
            ),
            said(
                Role::Assistant,
                vec![city_call("call_0", "get_conditions", "Tokyo")],
            ),
            answered("call_0", "Sunny"),
        ];
        let b = m.prepare_with_tools(&msgs, &tools).unwrap().body;
        let tool = |name: &str, description: &str| {
            json!({"type": "function", "function": {
                "name": name, "description": description,
                "parameters": {"type": "object", "required": ["city"],
                               "properties": {"city": {"type": "string", "description": "The name of the city"}}}
            }})
        };
        assert_eq!(
            b["tools"],
            json!([
                tool("get_temperature", "Get the current temperature for a city"),
                tool(
                    "get_conditions",
                    "Get the current weather conditions for a city"
                )
            ])
        );
        let wire_call = |index: usize, name: &str, city: &str| json!({"type": "function", "function": {"index": index, "name": name, "arguments": {"city": city}}});
        assert_eq!(
            b["messages"],
            json!([
                {"role": "user", "content": "What are the current weather conditions and temperature in New York and London?"},
                {"role": "assistant", "content": "", "tool_calls": [
                    wire_call(0, "get_temperature", "New York"),
                    wire_call(1, "get_conditions", "New York"),
                    wire_call(2, "get_temperature", "London"),
                    wire_call(3, "get_conditions", "London")
                ]},
                {"role": "tool", "tool_name": "get_temperature", "content": "22°C"},
                {"role": "tool", "tool_name": "get_conditions", "content": "Partly cloudy"},
                {"role": "tool", "tool_name": "get_temperature", "content": "15°C"},
                {"role": "tool", "tool_name": "get_conditions", "content": "Rainy"},
                {"role": "assistant", "content": "", "tool_calls": [wire_call(0, "get_conditions", "Tokyo")]},
                {"role": "tool", "tool_name": "get_conditions", "content": "Sunny"}
            ])
        );
        assert_eq!(b["stream"], false);
    }

    // "Tool calling with streaming": records carry whole calls in `message.tool_calls`; each is
    // one delta, and ids stay unique over the records of one reply.
    #[test]
    fn streamed_tool_calls_are_whole_deltas() {
        let lines = [
            r#"{"model":"qwen3","created_at":"2025-09-23T18:01:01.1Z","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_temperature","arguments":{"city":"New York"}}}]},"done":false}"#,
            r#"{"model":"qwen3","created_at":"2025-09-23T18:01:01.2Z","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_conditions","arguments":{"city":"New York"}}}]},"done":false}"#,
            r#"{"model":"qwen3","created_at":"2025-09-23T18:01:01.3Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":40,"eval_count":30}"#,
        ];
        let mut d = ModelConfiguration::new(&OllamaChat, "qwen3").decoder();
        let mut deltas = Vec::new();
        for line in lines {
            assert!(d.feed(&StreamEvent::data(line)).unwrap().is_empty());
            deltas.extend(d.take_tool_call_deltas());
        }
        let seen: Vec<(usize, Option<&str>, Option<&str>, &str)> = deltas
            .iter()
            .map(|d| {
                (
                    d.index,
                    d.id.as_deref(),
                    d.name.as_deref(),
                    d.arguments.as_str(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                (
                    0,
                    Some("call_0"),
                    Some("get_temperature"),
                    r#"{"city":"New York"}"#
                ),
                (
                    1,
                    Some("call_1"),
                    Some("get_conditions"),
                    r#"{"city":"New York"}"#
                )
            ]
        );
        let r = d.finish().unwrap();
        assert_eq!(
            r.message.content,
            vec![
                city_call("call_0", "get_temperature", "New York"),
                city_call("call_1", "get_conditions", "New York")
            ]
        );
    }

    #[test]
    fn options_is_an_object_and_parameters_override_it() {
        let mut m = ModelConfiguration::new(&OllamaChat, "llama3.2");
        m.set_parameter("options", json!("{\"num_batch\": 2, \"top_k\": 5}"))
            .unwrap();
        m.set_parameter("top_k", json!(20)).unwrap();
        m.set_parameter("max_tokens", json!(100)).unwrap();
        m.set_parameter("stop", json!(["\n", "user:"])).unwrap();
        m.set_parameter("num_ctx", json!("1024")).unwrap();
        m.set_parameter("format", json!("JSON")).unwrap();
        m.set_parameter("keep_alive", json!("5m")).unwrap();
        let b = m
            .prepare_request(&[Message::user("hi")], false)
            .unwrap()
            .body;
        assert_eq!(
            b["options"],
            json!({"num_batch": 2, "top_k": 20, "num_predict": 100, "stop": ["\n", "user:"], "num_ctx": 1024})
        );
        assert_eq!(b["format"], "json");
        assert_eq!(b["keep_alive"], "5m");
        // Structured outputs: a schema object, given as JSON text from a shell.
        m.set_parameter(
            "format",
            json!(
                r#"{"type":"object","properties":{"age":{"type":"integer"}},"required":["age"]}"#
            ),
        )
        .unwrap();
        m.set_parameter("keep_alive", json!("0")).unwrap();
        let b = m
            .prepare_request(&[Message::user("hi")], false)
            .unwrap()
            .body;
        assert_eq!(b["format"]["properties"]["age"]["type"], "integer");
        assert_eq!(b["keep_alive"], 0);
        assert!(m.set_parameter("format", json!("yaml")).is_err());
        assert!(m.set_parameter("keep_alive", json!("soon")).is_err());
        assert!(m.set_parameter("options", json!("[1]")).is_err());
        let e = m.set_parameter("temp", json!(1)).unwrap_err();
        assert_mentions(&e, "num_ctx");
        m.set_parameter("format", Value::Null).unwrap();
        assert!(!m.parameters.contains_key("format"));
    }

    #[test]
    fn extracts_the_documented_non_streaming_answer() {
        // "Chat request (Structured outputs)" response.
        let body = br#"{
  "model": "llama3.1",
  "created_at": "2024-12-06T00:46:58.265747Z",
  "message": { "role": "assistant", "content": "{\"age\": 22, \"available\": false}" },
  "done_reason": "stop",
  "done": true,
  "total_duration": 2254970291,
  "load_duration": 574751416,
  "prompt_eval_count": 34,
  "prompt_eval_duration": 1502000000,
  "eval_count": 12,
  "eval_duration": 175000000
}"#;
        let r = ModelConfiguration::new(&OllamaChat, "m")
            .extract(body)
            .unwrap();
        assert_eq!(r.message.text(), "{\"age\": 22, \"available\": false}");
        let u = r.usage.unwrap();
        assert_eq!((u.input_tokens, u.output_tokens), (34, 12));
        assert_eq!(r.finish_reason.as_deref(), Some("stop"));
        assert_eq!(r.model.as_deref(), Some("llama3.1"));
        let e = ModelConfiguration::new(&OllamaChat, "m")
            .extract(br#"{"error":"model \"x\" not found, try pulling it first"}"#)
            .unwrap_err();
        assert_eq!(e.message, "model \"x\" not found, try pulling it first");
    }

    #[test]
    fn stream_decodes_the_documented_records_and_detects_a_cut() {
        // "Chat Request (Streaming)": partial records, then the final one with the counts.
        let lines = [
            r#"{"model":"llama3.2","created_at":"2023-08-04T08:52:19.385406455-07:00","message":{"role":"assistant","content":"The","images":null},"done":false}"#,
            r#"{"model":"llama3.2","created_at":"2023-08-04T08:52:19.385406455-07:00","message":{"role":"assistant","content":" sky"},"done":false}"#,
            r#"{"model":"llama3.2","created_at":"2023-08-04T19:22:45.499127Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","total_duration":4883583458,"load_duration":1334875,"prompt_eval_count":26,"prompt_eval_duration":342546000,"eval_count":282,"eval_duration":4535599000}"#,
        ];
        let m = ModelConfiguration::new(&OllamaChat, "m");
        let mut d = m.decoder();
        assert_eq!(d.feed(&StreamEvent::data(lines[0])).unwrap(), vec!["The"]);
        assert_eq!(d.feed(&StreamEvent::data(lines[1])).unwrap(), vec![" sky"]);
        let mut cut = m.decoder();
        cut.feed(&StreamEvent::data(lines[0])).unwrap();
        let e = cut.finish().unwrap_err();
        assert!(e.message.contains("ended before the reply was complete"));
        assert!(d.feed(&StreamEvent::data(lines[2])).unwrap().is_empty());
        let r = d.finish().unwrap();
        assert_eq!(r.message.text(), "The sky");
        let u = r.usage.unwrap();
        assert_eq!((u.input_tokens, u.output_tokens), (26, 282));
        assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    }

    #[test]
    fn stream_errors_and_malformed_lines_are_errors() {
        let mut d = ModelConfiguration::new(&OllamaChat, "m").decoder();
        let e = d
            .feed(&StreamEvent::data(
                r#"{"error":"an error was encountered while running the model"}"#,
            ))
            .unwrap_err();
        assert_eq!(
            e.message,
            "an error was encountered while running the model"
        );
        let e = d.feed(&StreamEvent::data("{\"model\":")).unwrap_err();
        assert_mentions(&e, "invalid JSON");
    }

    // https://github.com/ollama/ollama/blob/main/docs/api.md (thinking): with `think`, the
    // message carries `thinking` apart from `content`, streamed record by record.
    #[test]
    fn thinking_is_reasoning_and_think_is_sent() {
        let mut m = ModelConfiguration::new(&OllamaChat, "qwen3");
        m.set_parameter("think", json!("High")).unwrap();
        assert_eq!(m.parameters["think"], json!("high"));
        let e = m.set_parameter("think", json!("very")).unwrap_err();
        assert_mentions(&e, "low, medium or high");
        m.set_parameter("think", json!("true")).unwrap();
        let req = m.prepare_request(&[Message::user("2+2?")], true).unwrap();
        assert_eq!(req.body["think"], json!(true));
        let lines = [
            r#"{"model":"qwen3","message":{"role":"assistant","content":"","thinking":"Two plus "},"done":false}"#,
            r#"{"model":"qwen3","message":{"role":"assistant","content":"","thinking":"two."},"done":false}"#,
            r#"{"model":"qwen3","message":{"role":"assistant","content":"4"},"done":false}"#,
            r#"{"model":"qwen3","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop"}"#,
        ];
        let mut d = m.decoder();
        let mut reasoning = Vec::new();
        let mut text = Vec::new();
        for line in lines {
            text.extend(d.feed(&StreamEvent::data(line)).unwrap());
            reasoning.extend(d.take_reasoning_deltas());
        }
        assert_eq!(
            (reasoning, text),
            (
                vec!["Two plus ".to_string(), "two.".into()],
                vec!["4".to_string()]
            )
        );
        let r = d.finish().unwrap();
        assert_eq!(r.message.content[0], Part::reasoning("Two plus two.", None));
        let body = m
            .prepare_request(&[Message::user("2+2?"), r.message], false)
            .unwrap()
            .body;
        assert_eq!(
            body["messages"][1],
            json!({"role": "assistant", "content": "4"})
        );
        let whole = br#"{"model":"qwen3","message":{"role":"assistant","content":"4","thinking":"Easy."},"done":true}"#;
        assert_eq!(m.extract(whole).unwrap().message.reasoning(), "Easy.");
    }
}
