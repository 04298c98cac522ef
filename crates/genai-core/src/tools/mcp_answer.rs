//! An MCP tool call's result as the model's answer: the text parts joined (the structured
//! content when there is no text), images as image parts, and the structured content checked
//! against the tool's `outputSchema` (a mismatch is a tool error naming it).
//!
//! It must never call a server: `mcp` does, and hands the result here.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

use super::plugin::ModuleAnswer;
use crate::message::Part;

/// A call's result as the model's answer: the text parts joined (the structured content when
/// there is no text). With an output schema the structured content must be there and valid,
/// else the answer is a tool error saying so.
pub(super) fn answer_of(
    tool: &str,
    result: &CallToolResult,
    output_schema: Option<&Value>,
) -> ModuleAnswer {
    let is_error = result.is_error.unwrap_or(false);
    let text: Vec<String> = result
        .content
        .iter()
        .filter_map(|part| match part {
            ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect();
    let mut text = text.join("\n");
    if text.is_empty() {
        if let Some(structured) = &result.structured_content {
            text = structured.to_string();
        }
    }
    let invalid = match (output_schema, &result.structured_content) {
        (Some(_), None) if !is_error => Some(format!(
            "`{tool}` declares an outputSchema but answered no structuredContent"
        )),
        (Some(schema), Some(structured)) if !is_error => check_output(tool, schema, structured),
        _ => None,
    };
    match invalid {
        Some(why) => ModuleAnswer {
            text: format!("{why}; its answer was: {text}"),
            is_error: true,
            ..ModuleAnswer::default()
        },
        None => ModuleAnswer {
            text,
            is_error,
            images: result
                .content
                .iter()
                .filter_map(|part| match part {
                    ContentBlock::Image(i) => Some(Part::Image {
                        url: None,
                        media_type: Some(i.mime_type.clone()),
                        data: Some(i.data.clone()),
                    }),
                    _ => None,
                })
                .collect(),
            ..ModuleAnswer::default()
        },
    }
}

/// Why `structured` does not fit the tool's output schema, if it does not.
fn check_output(tool: &str, schema: &Value, structured: &Value) -> Option<String> {
    let validator = match jsonschema::validator_for(schema) {
        Ok(v) => v,
        Err(e) => {
            return Some(format!(
                "`{tool}` declares an outputSchema that is not a JSON Schema: {e}"
            ))
        }
    };
    let first = validator.iter_errors(structured).next()?;
    Some(format!(
        "the structuredContent of `{tool}` does not match its outputSchema: {first} (at `{}`)",
        first.instance_path()
    ))
}
