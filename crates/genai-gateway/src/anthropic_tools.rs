//! Anthropic's `tools` and `tool_choice` in the core's terms, for `anthropic.rs`: custom tools
//! become [`ToolSpec`]s, a deferred one (`defer_loading`) held back until a `tool_reference`
//! block of a tool result loads it (Anthropic's tool search, which Claude Code uses), and
//! `tool_choice` the core's parameter. It must never let a server tool through: those run on
//! Anthropic's side, which genai is not, so they are refused naming them.

use serde_json::{json, Value};

use super::fields::{self, array, boolean, object, only};
use super::ApiError;
use genai_core::format::ToolSpec;

/// The tools the `tool_reference` blocks of the messages' tool results load (what a client's
/// tool search found).
pub(crate) fn referenced_tools(messages: &Value) -> Vec<String> {
    let blocks = |v: &Value| v.as_array().cloned().unwrap_or_default();
    blocks(messages)
        .iter()
        .flat_map(|m| blocks(&m["content"]))
        .filter(|b| b["type"] == "tool_result")
        .flat_map(|b| blocks(&b["content"]))
        .filter(|c| c["type"] == "tool_reference")
        .filter_map(|c| c["tool_name"].as_str().map(str::to_string))
        .collect()
}

/// The request's tools, those given to the model at once and the deferred ones: custom tools
/// only; the vendor's server tools (web search, code execution, bash, text editor, computer
/// use, ...) run on Anthropic's side, which genai is not.
pub(crate) fn tools(value: Value) -> Result<(Vec<ToolSpec>, Vec<ToolSpec>), ApiError> {
    let (mut specs, mut deferred) = (Vec::new(), Vec::new());
    for (i, tool) in array(value, "tools")?.into_iter().enumerate() {
        let at = format!("tools[{i}]");
        let mut tool = object(tool, &at)?;
        match tool.remove("type") {
            None | Some(Value::Null) => {}
            Some(Value::String(t)) if t == "custom" => {}
            Some(Value::String(t)) => {
                return Err(ApiError::invalid(
                    format!("{at}.type"),
                    format!(
                    "`{t}` is one of Anthropic's server tools, which genai's gateway cannot run: \
                         only custom tools (name, description, input_schema)"
                ),
                ))
            }
            Some(_) => return Err(ApiError::invalid(format!("{at}.type"), "must be a string")),
        }
        tool.remove("cache_control");
        let later = match tool.remove("defer_loading") {
            None | Some(Value::Null) => false,
            Some(v) => boolean(v, &format!("{at}.defer_loading"))?,
        };
        if tool.get("strict") == Some(&Value::Bool(false)) {
            tool.remove("strict");
        }
        only(&tool, &at, &["name", "description", "input_schema"])?;
        let (name, description) = fields::tool_name(&mut tool, &at)?;
        let input_schema = match tool.remove("input_schema") {
            Some(s @ Value::Object(_)) => s,
            _ => {
                return Err(ApiError::invalid(
                    format!("{at}.input_schema"),
                    "is required: a JSON Schema object",
                ))
            }
        };
        let spec = ToolSpec {
            name,
            description,
            input_schema,
        };
        match later {
            true => deferred.push(spec),
            false => specs.push(spec),
        }
    }
    Ok((specs, deferred))
}

/// `tool_choice` as the core's parameter (auto, required, none, or a tool's name), and
/// whether it turns parallel tool calls off.
pub(crate) fn tool_choice(value: Value) -> Result<(Value, bool), ApiError> {
    let at = "tool_choice";
    let mut m = object(value, at)?;
    let no_parallel = match m.remove("disable_parallel_tool_use") {
        None | Some(Value::Null) => false,
        Some(v) => boolean(v, "tool_choice.disable_parallel_tool_use")?,
    };
    let choice = match m.remove("type").as_ref().and_then(Value::as_str) {
        Some("auto") => json!("auto"),
        Some("any") => json!("required"),
        Some("none") => json!("none"),
        Some("tool") => match m.remove("name") {
            Some(n @ Value::String(_)) => n,
            _ => return Err(ApiError::invalid("tool_choice.name", "is required")),
        },
        _ => {
            return Err(ApiError::invalid(
                "tool_choice.type",
                "must be auto, any, tool or none",
            ))
        }
    };
    only(&m, at, &[])?;
    Ok((choice, no_parallel))
}
