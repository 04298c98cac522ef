//! What a request asks of its model's configuration, whatever API it came in, set on the
//! [`RequestModel`] value before the agent is made: the model's parameters (checked by the
//! model's format, refused naming the request's field), a token limit and stop sequences under
//! the format's own names, reasoning effort and thinking where the format has a setting of
//! them, any JSON object, parallel tool calls off.
//!
//! It owns these translations only. It must never read a request's body (each API's file
//! lists its settings) nor change an agent: the model is a value until the turn.

use serde_json::{json, Value};

use super::ApiError;
use genai_core::format;
use genai_core::session::RequestModel;

/// One thing a request asks of its model.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Setting {
    /// A parameter of the model: the request's field and its value. A token limit
    /// (`max_tokens`, `max_completion_tokens`, `max_output_tokens`) and stop sequences
    /// (`stop`, `stop_sequences`) go to the format's own parameter of that meaning when it has
    /// none of the field's name.
    Parameter(String, Value),
    /// `reasoning.effort`, where the format has a `reasoning_effort`; elsewhere the model
    /// reasons as it is configured to, as the Messages API's `output_config.effort` does.
    Effort(String),
    /// Anthropic's `thinking` object, checked.
    Thinking(Value),
    /// Any JSON object: the model's own `response_format` (Responses' `text.format`).
    JsonObject,
    /// Parallel tool calls off, asked by the request's field of this name.
    NoParallelCalls(&'static str),
}

impl Setting {
    /// The model's parameters a request gives: (its field, the value).
    pub(crate) fn parameters(parameters: Vec<(String, Value)>) -> Vec<Setting> {
        parameters
            .into_iter()
            .map(|(field, value)| Setting::Parameter(field, value))
            .collect()
    }
}

/// Sets each of `settings` on `model`.
pub(crate) fn apply(model: &mut RequestModel, settings: Vec<Setting>) -> Result<(), ApiError> {
    for setting in settings {
        match setting {
            Setting::Parameter(field, value) => {
                let name = parameter_name(model, &field);
                model
                    .set_parameter(&name, value)
                    .map_err(|e| ApiError::of(&e, Some(&field)))?;
            }
            Setting::Effort(effort) => {
                if takes(model, "reasoning_effort") {
                    model
                        .set_parameter("reasoning_effort", json!(effort))
                        .map_err(|e| ApiError::of(&e, Some("reasoning.effort")))?;
                }
            }
            Setting::Thinking(thinking) => set_thinking(model, &thinking)?,
            Setting::JsonObject => model
                .set_parameter("response_format", json!({"type": "json_object"}))
                .map_err(|e| ApiError::of(&e, Some("text.format")))?,
            Setting::NoParallelCalls(field) => model
                .set_parameter("parallel_tool_calls", json!(false))
                .map_err(|_| {
                    ApiError::invalid(
                        field,
                        "the chosen model's format cannot turn parallel tool calls off",
                    )
                })?,
        }
    }
    Ok(())
}

fn takes(model: &RequestModel, name: &str) -> bool {
    let spec = model.configuration().format.spec();
    spec.parameters.iter().any(|p| p.name == name)
}

/// The format's parameter a request's field sets.
fn parameter_name(model: &RequestModel, field: &str) -> String {
    let spec = model.configuration().format.spec();
    match field {
        f if takes(model, f) => f,
        "max_tokens" | "max_completion_tokens" | "max_output_tokens" => {
            format::sampling::MAX_TOKENS.name
        }
        f @ ("stop" | "stop_sequences") => {
            format::parameters::stop_parameter(spec.parameters).unwrap_or(f)
        }
        f => f,
    }
    .to_string()
}

/// `thinking` on the chosen model, as its format takes it: Claude's own `thinking` (an
/// `adaptive` one too, which Claude Code 2.1 sends for a model name it does not know); Gemini's
/// `thinking_budget` (an enabled one's budget; -1, the model deciding how much, for an
/// adaptive one) with its thoughts included; Ollama's `think`. Other formats have no
/// setting of it (OpenAI's `reasoning_effort` exists only on some models, and OpenAI refuses it
/// on the others), so there the model answers as it is configured to, and says so by sending
/// no thinking back.
fn set_thinking(model: &mut RequestModel, thinking: &Value) -> Result<(), ApiError> {
    let enabled = thinking["type"] != "disabled";
    let budget = thinking["budget_tokens"].as_i64().unwrap_or(-1);
    let settings: Vec<(&str, Value)> = match (model.configuration().format.name(), enabled) {
        ("claude-messages", _) => vec![("thinking", thinking.clone())],
        ("gemini", true) => vec![
            ("thinking_budget", json!(budget)),
            ("include_thoughts", json!(true)),
        ],
        ("ollama-chat", true) => vec![("think", json!(true))],
        _ => Vec::new(),
    };
    for (name, value) in settings {
        model
            .set_parameter(name, value)
            .map_err(|e| ApiError::of(&e, Some("thinking")))?;
    }
    Ok(())
}
