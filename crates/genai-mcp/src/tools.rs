//! The tools genai serves: the workspace's (`read_file`, `list`, `search`, `edit_file`,
//! `write_file`, `run_command`, `fetch`, with the schemas the models get), each call through
//! the core's guard; `ask`, one turn on any model genai reaches (the local engine included);
//! `search_history`, the stored history's full-text search.
//!
//! It maps arguments and answers between MCP and the core. It must never decide whether a
//! call may run (the guard does) nor pick a model (`genai_core::select` does).

use std::sync::Arc;

use genai_core::error::Error;
use genai_core::message::Message;
use genai_core::select::ModelChoice;
use genai_core::session::{ConversationSpec, Framework, ServedTools};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use rmcp::ErrorData;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::port::McpPort;

/// One turn on a model.
pub(crate) const ASK: &str = "ask";
/// The history's full-text search.
pub(crate) const SEARCH_HISTORY: &str = "search_history";

/// The most matches `search_history` answers.
const MAX_MATCHES: u64 = 100;

/// An MCP tool of a JSON schema object.
fn tool(name: &str, description: &str, schema: Value, read_only: bool) -> Tool {
    let schema: JsonObject = match schema {
        Value::Object(o) => o,
        _ => JsonObject::new(),
    };
    let mut hints = ToolAnnotations::new();
    hints.read_only_hint = Some(read_only);
    Tool::new(name.to_string(), description.to_string(), Arc::new(schema)).with_annotations(hints)
}

/// Every tool served.
pub(crate) fn list(served: &ServedTools) -> Vec<Tool> {
    let mut tools: Vec<Tool> = served
        .tools()
        .into_iter()
        .map(|t| tool(&t.name, &t.description, t.input_schema, t.read_only))
        .collect();
    tools.push(tool(
        ASK,
        "Ask a model through genai and get its reply: any model genai reaches (a provider of its config, PROVIDER:MODEL, an agent, or `local` for the local engine). The conversation is kept in genai's history.",
        json!({"type": "object", "properties": {
            "prompt": {"type": "string", "description": "What to ask."},
            "model": {"type": "string", "description": "A model as `genai ask -m` takes it: an agent, PROVIDER:MODEL, a provider, or `local`; default: genai's default model."}
        }, "required": ["prompt"], "additionalProperties": false}),
        true,
    ));
    tools.push(tool(
        SEARCH_HISTORY,
        "Search genai's stored conversations for messages containing every word of a query; answers the best matches with their conversation ids (`genai sessions show ID` shows one).",
        json!({"type": "object", "properties": {
            "query": {"type": "string", "description": "The words to find."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_MATCHES, "description": "How many matches at most (default 20)."}
        }, "required": ["query"], "additionalProperties": false}),
        true,
    ));
    tools
}

/// An error result the client (and its model) reads.
fn failed(text: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text.into())])
}

/// A string argument.
fn text_argument<'a>(arguments: &'a JsonObject, name: &str) -> Result<Option<&'a str>, ErrorData> {
    match arguments.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ErrorData::invalid_params(
            format!("`{name}` must be a string"),
            None,
        )),
    }
}

/// Runs tool `name`; a protocol error only for an unknown tool or malformed arguments.
pub(crate) async fn call(
    fw: &Arc<Framework>,
    served: &ServedTools,
    port: &Arc<McpPort>,
    name: &str,
    arguments: JsonObject,
    cancelled: &CancellationToken,
) -> Result<CallToolResult, ErrorData> {
    match name {
        ASK => {
            let prompt = text_argument(&arguments, "prompt")?
                .ok_or_else(|| ErrorData::invalid_params("`prompt` is required", None))?;
            let model = text_argument(&arguments, "model")?;
            Ok(ask(fw, served, port, prompt, model, cancelled).await)
        }
        SEARCH_HISTORY => {
            let query = text_argument(&arguments, "query")?
                .ok_or_else(|| ErrorData::invalid_params("`query` is required", None))?;
            let limit = match arguments.get("limit") {
                None | Some(Value::Null) => 20,
                Some(v) => v
                    .as_u64()
                    .filter(|n| (1..=MAX_MATCHES).contains(n))
                    .ok_or_else(|| {
                        ErrorData::invalid_params(
                            format!("`limit` must be a whole number from 1 to {MAX_MATCHES}"),
                            None,
                        )
                    })?,
            };
            Ok(search_history(fw, query, limit as usize))
        }
        function if served.tools().iter().any(|t| t.name == function) => {
            let answer = served.call(function, &Value::Object(arguments)).await;
            let content = vec![ContentBlock::text(answer.text)];
            Ok(match answer.is_error {
                true => CallToolResult::error(content),
                false => CallToolResult::success(content),
            })
        }
        other => Err(ErrorData::invalid_params(
            format!("there is no tool `{other}` (tools/list lists them)"),
            None,
        )),
    }
}

/// One turn on `model` (genai's default when None), in a new conversation kept in the history.
async fn ask(
    fw: &Arc<Framework>,
    served: &ServedTools,
    port: &Arc<McpPort>,
    prompt: &str,
    model: Option<&str>,
    cancelled: &CancellationToken,
) -> CallToolResult {
    let spec = ConversationSpec {
        model: model.map_or(ModelChoice::Default, |m| ModelChoice::Named(m.to_string())),
        cwd: Some(served.root().to_string_lossy().into_owned()),
        ..Default::default()
    };
    let conv = match fw.create_conversation(spec, port.clone()) {
        Ok(c) => c,
        Err(e) => return failed(e.message),
    };
    let id = conv.conversation_id.clone();
    let outcome = match fw.run_turn(&id, Message::user(prompt.to_string()), None) {
        Ok(turn) => tokio::select! {
            outcome = turn.outcome() => Ok(outcome),
            _ = cancelled.cancelled() => Err(Error::cancelled()),
        },
        Err(e) => Err(e),
    };
    // Closed for good: a conversation whose turn failed leaves no empty row.
    let _ = fw.close_conversation(&id);
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => return failed(e.message),
    };
    if let Some(e) = outcome.error {
        return failed(e.message);
    }
    let mut result = CallToolResult::success(vec![ContentBlock::text(outcome.summary.clone())]);
    result.structured_content = Some(json!({
        "reply": outcome.summary,
        "conversationId": id,
        "model": outcome.model.unwrap_or(conv.model),
        "provider": outcome.provider.unwrap_or(conv.service_provider),
    }));
    result
}

/// The best `limit` messages matching `query`, as JSON: conversation id, title, role,
/// position, and a snippet with the matches between `[` and `]`.
fn search_history(fw: &Framework, query: &str, limit: usize) -> CallToolResult {
    let found = match fw.history().search(query, limit, "[", "]") {
        Ok(f) => f,
        Err(e) => return failed(e.message),
    };
    let matches: Vec<Value> = found
        .iter()
        .map(|f| {
            json!({
                "conversationId": f.conversation_id, "title": f.title,
                "seq": f.seq, "role": f.role, "snippet": f.snippet,
            })
        })
        .collect();
    CallToolResult::structured(json!({ "matches": matches }))
}
