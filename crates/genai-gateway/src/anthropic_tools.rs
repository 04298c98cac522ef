//! Anthropic's `tools` and `tool_choice` in the core's terms, for `anthropic.rs`: custom tools
//! become [`ToolSpec`]s, a deferred one (`defer_loading`) held back until a `tool_reference`
//! block of a tool result loads it (Anthropic's tool search, which Claude Code uses), and
//! `tool_choice` the core's parameter. It must never let a server tool through: those run on
//! Anthropic's side, which genai is not, so they are refused naming them.

use serde_json::{json, Value};

use super::anthropic_request::{Block, Content, WireMessage, WireTool};
use super::fields::{self, boolean, object, only, present_key};
use super::ApiError;
use genai_core::format::ToolSpec;

/// The tools the `tool_reference` blocks of the messages' tool results load (what a client's
/// tool search found).
pub(crate) fn referenced_tools(messages: &[WireMessage]) -> Vec<String> {
    fn blocks(c: &Option<Content>) -> &[Block] {
        match c {
            Some(Content::List(b)) => b,
            _ => &[],
        }
    }
    messages
        .iter()
        .flat_map(|m| blocks(&m.content))
        .filter(|b| b.kind.as_deref() == Some("tool_result"))
        .flat_map(|b| blocks(&b.content))
        .filter(|c| c.kind.as_deref() == Some("tool_reference"))
        .filter_map(|c| c.tool_name.clone())
        .collect()
}

/// The request's tools, those given to the model at once and the deferred ones: custom tools
/// only; the vendor's server tools (web search, code execution, bash, text editor, computer
/// use, ...) run on Anthropic's side, which genai is not. A tool's `cache_control` is
/// dropped (genai places its own breakpoints), and so is `strict: false`; `strict: true`
/// cannot be carried.
pub(crate) fn tools(given: Vec<WireTool>) -> Result<(Vec<ToolSpec>, Vec<ToolSpec>), ApiError> {
    let (mut specs, mut deferred) = (Vec::new(), Vec::new());
    for (i, tool) in given.into_iter().enumerate() {
        let at = format!("tools[{i}]");
        if let Some(t) = tool.kind.as_deref().filter(|t| *t != "custom") {
            return Err(ApiError::invalid(
                format!("{at}.type"),
                format!(
                    "`{t}` is one of Anthropic's server tools, which genai's gateway cannot run: \
                     only custom tools (name, description, input_schema)"
                ),
            ));
        }
        let strict = (tool.strict == Some(true)).then_some("strict");
        fields::carried(&at, strict.or_else(|| present_key(&tool.other)))?;
        let name = tool
            .name
            .ok_or_else(|| ApiError::invalid(format!("{at}.name"), "must be a string"))?;
        let name = fields::checked_tool_name(name, &at)?;
        let Some(input_schema @ Value::Object(_)) = tool.input_schema else {
            return Err(ApiError::invalid(
                format!("{at}.input_schema"),
                "is required: a JSON Schema object",
            ));
        };
        let spec = ToolSpec {
            name,
            description: tool.description.unwrap_or_default(),
            input_schema,
        };
        match tool.defer_loading.unwrap_or(false) {
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
