//! The tools of a Responses request (`responses.rs` reads the rest): function tools, the
//! functions of a `namespace` tool offered as `NS__NAME`, the hosted web search left out and
//! named, and `tool_choice`.
//!
//! It owns reading them into the core's tool specs. It must never run a tool, and never drop
//! a hosted tool other than web search without refusing it by name.

use serde_json::{Map, Value};

use super::fields::{self, array, boolean, object, only, string};
use super::responses_wire::NAMESPACE_SEPARATOR;
use super::ApiError;
use genai_core::format::ToolSpec;

/// The tools offered, the namespaces among them, the hosted tools left out.
pub(super) type Tools = (Vec<ToolSpec>, Vec<String>, Vec<String>);

/// The request's function tools, with the functions of each `namespace` tool offered as
/// `NS__NAME` (its namespaces, in order), and the hosted web search tools, which genai's
/// models cannot run, left out and named (answered in a header). Any other hosted tool is
/// refused by its type.
pub(super) fn tools(value: Value) -> Result<Tools, ApiError> {
    let mut specs = Vec::new();
    let mut namespaces = Vec::new();
    let mut not_offered = Vec::new();
    for (i, tool) in array(value, "tools")?.into_iter().enumerate() {
        let at = format!("tools[{i}]");
        let mut tool = object(tool, &at)?;
        match tool.get("type").and_then(Value::as_str) {
            Some("function") => specs.push(function_tool(tool, &at, None)?),
            Some("namespace") => {
                only(&tool, &at, &["type", "name", "description", "tools"])?;
                let ns = string(
                    tool.remove("name").unwrap_or_default(),
                    &format!("{at}.name"),
                )?;
                let inner = array(tool.remove("tools").unwrap_or_default(), &format!("{at}.tools"))?;
                for (j, f) in inner.into_iter().enumerate() {
                    let f_at = format!("{at}.tools[{j}]");
                    let f = object(f, &f_at)?;
                    if f.get("type").and_then(Value::as_str) != Some("function") {
                        return Err(ApiError::invalid(
                            format!("{f_at}.type"),
                            "only function tools can be carried in a namespace",
                        ));
                    }
                    specs.push(function_tool(f, &f_at, Some(&ns))?);
                }
                namespaces.push(ns);
            }
            Some(t @ ("web_search" | "web_search_preview")) => not_offered.push(t.to_string()),
            Some(other) => {
                return Err(ApiError::invalid(
                    format!("{at}.type"),
                    format!(
                        "a `{other}` tool runs on OpenAI's servers, which genai cannot do: only function tools can be carried"
                    ),
                ))
            }
            None => return Err(ApiError::invalid(format!("{at}.type"), "is required")),
        }
    }
    Ok((specs, namespaces, not_offered))
}

/// One function tool (of namespace `ns`, offered as `NS__NAME`).
fn function_tool(
    mut tool: Map<String, Value>,
    at: &str,
    ns: Option<&str>,
) -> Result<ToolSpec, ApiError> {
    only(
        &tool,
        at,
        &[
            "type",
            "name",
            "description",
            "parameters",
            "strict",
            "defer_loading",
        ],
    )?;
    if let Some(deferred) = tool.remove("defer_loading").filter(|s| !s.is_null()) {
        boolean(deferred, &format!("{at}.defer_loading"))?;
    }
    let mut spec = fields::function_tool(&mut tool, at)?;
    if let Some(ns) = ns {
        spec.name = format!("{ns}{NAMESPACE_SEPARATOR}{}", spec.name);
    }
    Ok(spec)
}
