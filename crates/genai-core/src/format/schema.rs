//! Structured output: the JSON Schema a reply must match ([`ResponseSchema`]), how a reply is
//! read and checked against it, what each format can say of it (OpenAI's `strict` rules,
//! Gemini's OpenAPI subset), and the `tool_choice` parameter ([`ToolChoice`]) of the formats
//! with native tools.
//!
//! It owns the schema's checks and conversions, and each API's shape of a tool choice. It must
//! never build a request body (each format places these in its own) nor send a request again
//! (the agent retries).

use serde_json::{json, Map, Value};

use super::{ParameterSpec, Parameters, ToolSpec};
use crate::error::{Error, ErrorKind, Result};
use crate::message::{Message, Part};

/// The name of a schema that was given none.
pub(crate) const DEFAULT_NAME: &str = "response";

/// The JSON Schema a reply must match, with the name the APIs want for it (letters, digits,
/// `_`, `-`, up to 64).
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseSchema {
    pub(crate) name: String,
    pub(crate) schema: Value,
}

impl ResponseSchema {
    /// A schema, checked: it must be a JSON object that compiles as a JSON Schema.
    pub fn new(name: Option<&str>, schema: Value) -> Result<ResponseSchema> {
        let name = name.map(str::trim).filter(|n| !n.is_empty());
        let name = name.unwrap_or(DEFAULT_NAME);
        if name.len() > 64
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(Error::invalid_params(format!(
                "the schema name `{name}` must be 1 to 64 letters, digits, `_` or `-`"
            )));
        }
        if !schema.is_object() {
            return Err(Error::invalid_params(
                "the response schema must be a JSON object (a JSON Schema)",
            ));
        }
        jsonschema::validator_for(&schema).map_err(|e| {
            Error::invalid_params(format!("the response schema is not a JSON Schema: {e}"))
        })?;
        Ok(ResponseSchema {
            name: name.to_string(),
            schema,
        })
    }

    /// A schema and its name when a request gives one (`responseSchema`, `responseSchemaName`).
    pub fn given(schema: Option<Value>, name: Option<String>) -> Result<Option<ResponseSchema>> {
        schema.map(|s| Self::new(name.as_deref(), s)).transpose()
    }

    /// A schema from its JSON text (the caller reads a file when given a path: a format does
    /// no I/O; see `select::schema_text`).
    pub fn from_json_text(name: Option<&str>, json: &str) -> Result<ResponseSchema> {
        let schema = serde_json::from_str(json).map_err(|e| {
            Error::invalid_params(format!("the response schema is not valid JSON: {e}"))
        })?;
        ResponseSchema::new(name, schema)
    }

    /// The schema as a conversation's history keeps it: `{"name", "schema"}`.
    pub(crate) fn stored(&self) -> Value {
        json!({"name": self.name, "schema": self.schema})
    }

    /// A schema the history kept ([`ResponseSchema::stored`]), checked again.
    pub(crate) fn from_stored(stored: &Value) -> Result<ResponseSchema> {
        let schema = stored.get("schema").cloned().ok_or_else(|| {
            Error::new(
                ErrorKind::Store,
                "the conversation's stored response schema has no `schema`",
            )
        })?;
        ResponseSchema::new(stored.get("name").and_then(Value::as_str), schema)
    }

    /// Whether the root is an object schema (what a forced tool's input must be).
    pub(crate) fn is_object(&self) -> bool {
        self.schema.get("type").and_then(Value::as_str) == Some("object")
            || (self.schema.get("type").is_none() && self.schema.get("properties").is_some())
    }

    /// Whether OpenAI's strict mode accepts the schema: every object lists all its properties
    /// as required and sets `additionalProperties: false`.
    pub(crate) fn strict_ok(&self) -> bool {
        strict_ok(&self.schema)
    }

    /// The tool whose forced call carries the answer (formats without a JSON mode).
    pub(crate) fn answer_tool(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.clone(),
            description: "Give your answer: its input is the whole answer, as the schema says."
                .to_string(),
            input_schema: self.schema.clone(),
        }
    }

    /// The answer tool, for formats that take a structured answer as a forced tool call: a
    /// tool's input is an object, so the schema must describe one.
    pub(crate) fn forced_tool(&self) -> Result<ToolSpec> {
        if !self.is_object() {
            return Err(Error::invalid_params(
                "this format gives a structured answer as a forced tool call, whose input is an \
                 object: the response schema must have \"type\": \"object\"",
            ));
        }
        Ok(self.answer_tool())
    }

    /// Whether `message` answers through the answer tool.
    pub(crate) fn answered_by_tool(&self, message: &Message) -> bool {
        message
            .content
            .iter()
            .any(|p| matches!(p, Part::ToolCall { name, .. } if *name == self.name))
    }

    /// The reply's JSON, checked: from the answer tool's call when there is one, else from the
    /// text (a Markdown code fence around it is tolerated). The errors say what is wrong.
    pub(crate) fn check(&self, message: &Message) -> std::result::Result<Value, Vec<String>> {
        let value = match message.content.iter().find_map(|p| match p {
            Part::ToolCall {
                name, arguments, ..
            } if *name == self.name => Some(arguments.clone()),
            _ => None,
        }) {
            Some(v) => v,
            None => {
                let text = message.text();
                serde_json::from_str::<Value>(unfenced(&text))
                    .map_err(|e| vec![format!("the reply is not JSON: {e}")])?
            }
        };
        let validator = jsonschema::validator_for(&self.schema)
            .map_err(|e| vec![format!("the schema does not compile: {e}")])?;
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .take(10)
            .map(|e| match e.instance_path().to_string() {
                p if p.is_empty() => e.to_string(),
                p => format!("{e} (at `{p}`)"),
            })
            .collect();
        if errors.is_empty() {
            Ok(value)
        } else {
            Err(errors)
        }
    }

    /// The schema in Gemini's OpenAPI subset, and what could not be said in it.
    pub(crate) fn gemini(&self) -> (Value, Vec<String>) {
        gemini_subset(&self.schema)
    }
}

/// The error of a reply that does not match the schema after the retry.
pub(crate) fn invalid_reply(errors: &[String]) -> Error {
    Error::new(
        ErrorKind::ProviderError,
        format!(
            "the model's reply does not match the response schema (after one retry): {}",
            errors.join("; ")
        ),
    )
}

/// What the model is told when its reply did not match.
pub(crate) fn retry_text(errors: &[String]) -> String {
    format!(
        "Your reply does not match the required JSON Schema: {}. Answer again with only the corrected JSON.",
        errors.join("; ")
    )
}

fn unfenced(text: &str) -> &str {
    let t = text.trim();
    let Some(rest) = t.strip_prefix("```") else {
        return t;
    };
    let rest = rest.trim_start_matches(|c: char| c.is_ascii_alphanumeric());
    rest.strip_suffix("```").unwrap_or(rest).trim()
}

fn strict_ok(schema: &Value) -> bool {
    let Some(o) = schema.as_object() else {
        return true;
    };
    if let Some(Value::Object(props)) = o.get("properties") {
        if o.get("additionalProperties") != Some(&Value::Bool(false)) {
            return false;
        }
        let required: Vec<&str> = o
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if props.keys().any(|k| !required.contains(&k.as_str())) {
            return false;
        }
        if !props.values().all(strict_ok) {
            return false;
        }
    } else if o.get("type").and_then(Value::as_str) == Some("object") {
        return false;
    }
    ["items", "additionalProperties"]
        .iter()
        .filter_map(|k| o.get(*k))
        .all(strict_ok)
        && ["anyOf", "$defs", "definitions"]
            .iter()
            .filter_map(|k| o.get(*k))
            .all(|v| match v {
                Value::Array(a) => a.iter().all(strict_ok),
                Value::Object(m) => m.values().all(strict_ok),
                _ => true,
            })
}

/// A JSON Schema cut down to Gemini's `Schema` (https://ai.google.dev/api/caching#Schema),
/// which refuses other keys such as `$schema` and `additionalProperties`: a type list such as
/// `["string", "null"]` becomes one type with `nullable`, `const` a one-value `enum`, `oneOf`
/// an `anyOf`; the rest is dropped and named (by its path) in the list returned. Tool
/// parameters and response schemas alike.
pub(crate) fn gemini_subset(schema: &Value) -> (Value, Vec<String>) {
    let mut dropped = Vec::new();
    let value = gemini_schema(schema, "", &mut dropped);
    dropped.sort();
    dropped.dedup();
    (value, dropped)
}

/// The keywords Gemini's `Schema` object takes (besides `type`, `properties`, `items`,
/// `anyOf`, which are converted).
const GEMINI_KEYWORDS: &[&str] = &[
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "default",
    "minimum",
    "maximum",
    "propertyOrdering",
];

fn gemini_schema(schema: &Value, at: &str, dropped: &mut Vec<String>) -> Value {
    let Some(o) = schema.as_object() else {
        return schema.clone();
    };
    let mut out = Map::new();
    for (k, v) in o {
        let path = if at.is_empty() {
            k.clone()
        } else {
            format!("{at}.{k}")
        };
        match k.as_str() {
            "type" => match v {
                Value::String(_) => {
                    out.insert("type".into(), v.clone());
                }
                Value::Array(types) => {
                    let kinds: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
                    if kinds.contains(&"null") {
                        out.insert("nullable".into(), Value::Bool(true));
                    }
                    let others: Vec<&&str> = kinds.iter().filter(|t| **t != "null").collect();
                    if let Some(t) = others.first() {
                        out.insert("type".into(), Value::from(**t));
                    }
                    if others.len() > 1 {
                        dropped.push(format!("{path} (several types; the first kept)"));
                    }
                }
                _ => dropped.push(path),
            },
            "const" => {
                out.insert("enum".into(), json!([v]));
            }
            "properties" => {
                let props: Map<String, Value> = v
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(name, s)| {
                        (
                            name.clone(),
                            gemini_schema(s, &format!("{path}.{name}"), dropped),
                        )
                    })
                    .collect();
                out.insert("properties".into(), Value::Object(props));
            }
            "items" => {
                out.insert("items".into(), gemini_schema(v, &path, dropped));
            }
            "anyOf" | "oneOf" => {
                let list: Vec<Value> = v
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|s| gemini_schema(s, &path, dropped))
                    .collect();
                if k == "oneOf" {
                    dropped.push(format!("{path} (taken as anyOf)"));
                }
                out.insert("anyOf".into(), Value::Array(list));
            }
            k if GEMINI_KEYWORDS.contains(&k) => {
                out.insert(k.to_string(), v.clone());
            }
            _ => dropped.push(path),
        }
    }
    Value::Object(out)
}

/// The `tool_choice` parameter: which tool calls the model may or must make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoice {
    /// The model decides (the default).
    Auto,
    /// The model must call a tool.
    Required,
    /// The model must not call any (the tools are not offered).
    None,
    /// The model must call this tool (its wire name).
    Tool(String),
}

/// The `tool_choice` parameter of the formats with native tools.
pub(crate) const TOOL_CHOICE: ParameterSpec = ParameterSpec::string(
    "tool_choice",
    "Which tool calls the model makes: auto (default), required, \
         none, or the name of one offered tool.",
);

impl ToolChoice {
    /// The choice the parameters set for this request's tools: `None` when no tools are
    /// offered or the parameter is unset. A tool name that is not offered is refused.
    pub(crate) fn of(parameters: &Parameters, tools: &[ToolSpec]) -> Result<Option<ToolChoice>> {
        let Some(value) = parameters.get(TOOL_CHOICE.name).and_then(Value::as_str) else {
            return Ok(None);
        };
        if tools.is_empty() {
            return Ok(None);
        }
        let value = value.trim();
        Ok(Some(match value.to_ascii_lowercase().as_str() {
            "auto" => ToolChoice::Auto,
            "required" | "any" => ToolChoice::Required,
            "none" => ToolChoice::None,
            _ => {
                let wire = value.replace('.', "__");
                let tool = tools
                    .iter()
                    .find(|t| t.name == value || t.name == wire)
                    .ok_or_else(|| {
                        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
                        Error::new(
                            ErrorKind::InvalidParameter,
                            format!(
                                "tool_choice `{value}` is not auto, required, none or an offered tool ({})",
                                names.join(", ")
                            ),
                        )
                    })?;
                ToolChoice::Tool(tool.name.clone())
            }
        }))
    }
}

impl ToolChoice {
    /// `tool_choice` of the Chat Completions API.
    pub(crate) fn openai(&self) -> Value {
        match self {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::Required => json!("required"),
            ToolChoice::None => json!("none"),
            ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
        }
    }

    /// `tool_choice` of Anthropic's Messages API.
    pub(crate) fn claude(&self) -> Value {
        match self {
            ToolChoice::Auto => json!({"type": "auto"}),
            ToolChoice::Required => json!({"type": "any"}),
            ToolChoice::None => json!({"type": "none"}),
            ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
        }
    }

    /// Gemini's `toolConfig`.
    pub(crate) fn gemini(&self) -> Value {
        let config = match self {
            ToolChoice::Auto => json!({"mode": "AUTO"}),
            ToolChoice::Required => json!({"mode": "ANY"}),
            ToolChoice::None => json!({"mode": "NONE"}),
            ToolChoice::Tool(name) => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
        };
        json!({ "functionCallingConfig": config })
    }

    /// Converse's `toolChoice`; `None` for `none`, which Converse says by offering no tools.
    pub(crate) fn bedrock(&self) -> Option<Value> {
        match self {
            ToolChoice::Auto => Some(json!({"auto": {}})),
            ToolChoice::Required => Some(json!({"any": {}})),
            ToolChoice::None => None,
            ToolChoice::Tool(name) => Some(json!({"tool": {"name": name}})),
        }
    }

    /// The choice of a request that may carry a forced answer tool: alone, it is called; with
    /// other tools offered, some tool must be (the named one, if the parameter names one).
    pub(crate) fn with_answer(
        answer: Option<&ToolSpec>,
        tools: &[ToolSpec],
        choice: Option<ToolChoice>,
    ) -> Option<ToolChoice> {
        match (answer, choice) {
            (Some(a), _) if tools.is_empty() => Some(ToolChoice::Tool(a.name.clone())),
            (Some(_), Some(ToolChoice::Tool(name))) => Some(ToolChoice::Tool(name)),
            (Some(_), _) => Some(ToolChoice::Required),
            (None, choice) => choice,
        }
    }
}

#[cfg(test)]
#[path = "schema_tests.rs"]
mod tests;
