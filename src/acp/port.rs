//! The client port of one ACP connection's sessions: the core's turn events become `session/update`
//! notifications (`agent_message_chunk`, `agent_thought_chunk`, `tool_call`,
//! `tool_call_update`, `usage_update`), and a tool's confirmation becomes
//! `session/request_permission`. The `session/prompt` that sent a turn follows it to its end
//! through the core's `TurnStream`.
//!
//! It owns what the session must remember about its turns (what was streamed). It must never
//! decide anything about a turn: the core runs it, the dispatcher answers the prompt.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use agent_client_protocol_schema::v1::{
    ContentBlock, ContentChunk, PermissionOption, PermissionOptionKind, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, SessionUpdate, TextContent, ToolCall,
    ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind, UsageUpdate,
};
use async_trait::async_trait;
use serde_json::{json, Value};

use super::connection::Connection;
use crate::error::{Error, ErrorKind, Result};
use crate::feature::port::{
    ClientPort, Confirmation, HostedTurn, PermissionAnswer, PermissionAsk, PromptEvent, PromptRef,
    TurnEvent, TurnRef,
};
use crate::feature::TurnOutcome;
use crate::message::Usage;

/// The option ids genai offers in `session/request_permission`.
pub const ALLOW: &str = "allow";
pub const REJECT: &str = "reject";

pub struct SessionPort {
    conn: Arc<Connection>,
    /// Turns that streamed reply text (their summary is not sent again at the end).
    streamed: Mutex<HashSet<String>>,
}

/// A text block as a message chunk.
pub fn text_chunk(text: impl Into<String>) -> ContentChunk {
    ContentChunk::new(ContentBlock::Text(TextContent::new(text)))
}

/// What kind of tool a name suggests, for the client's icon (`other` when nothing fits).
pub fn tool_kind(name: &str) -> ToolKind {
    let function = name.rsplit('.').next().unwrap_or(name).to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| function.contains(w));
    if has(&["delete", "remove"]) {
        ToolKind::Delete
    } else if has(&["search", "find", "grep"]) {
        ToolKind::Search
    } else if has(&["write", "edit", "update", "create", "set", "add"]) {
        ToolKind::Edit
    } else if has(&["read", "get", "list", "show"]) {
        ToolKind::Read
    } else if has(&["fetch", "http", "download"]) {
        ToolKind::Fetch
    } else if has(&["run", "exec", "shell"]) {
        ToolKind::Execute
    } else {
        ToolKind::Other
    }
}

/// A tool call as its first `tool_call` update shows it.
pub fn tool_call(id: &str, name: &str, arguments: Value, status: ToolCallStatus) -> ToolCall {
    ToolCall::new(id.to_string(), name.to_string())
        .kind(tool_kind(name))
        .status(status)
        .raw_input(arguments)
}

/// The end of a tool call: its status and output.
pub fn tool_result(id: &str, output: &str, is_error: bool) -> ToolCallUpdate {
    let status = if is_error {
        ToolCallStatus::Failed
    } else {
        ToolCallStatus::Completed
    };
    let content = ToolCallContent::from(ContentBlock::Text(TextContent::new(output)));
    ToolCallUpdate::new(
        id.to_string(),
        ToolCallUpdateFields::new()
            .status(status)
            .content(vec![content])
            .raw_output(json!({"text": output, "isError": is_error})),
    )
}

/// Token usage as ACP's context update: `used` is what the last request held (prompt and
/// reply); genai does not know the model's window, so `size` is 0 and the counts are in
/// `_meta.genai`.
pub fn usage_update(u: &Usage) -> UsageUpdate {
    let mut meta = serde_json::Map::new();
    meta.insert(
        "genai".into(),
        serde_json::to_value(u).unwrap_or_else(|_| json!({})),
    );
    UsageUpdate::new(u.total(), 0).meta(meta)
}

impl SessionPort {
    pub fn new(conn: Arc<Connection>) -> SessionPort {
        SessionPort {
            conn,
            streamed: Mutex::default(),
        }
    }

    fn update(&self, turn: &TurnRef, update: SessionUpdate) {
        self.conn.update(&turn.conversation_id, update);
    }

    /// What the client sees at the end of a turn besides the prompt's answer.
    fn finish(&self, turn: &TurnRef, outcome: &TurnOutcome) {
        let streamed = self
            .streamed
            .lock()
            .map(|mut s| s.remove(&turn.turn_id))
            .unwrap_or(false);
        match &outcome.error {
            Some(e) if e.kind == ErrorKind::Cancelled => {}
            Some(e) => self.update(
                turn,
                SessionUpdate::AgentMessageChunk(text_chunk(format!(
                    "{}genai: {}",
                    if streamed { "\n\n" } else { "" },
                    e.message
                ))),
            ),
            None if !streamed && !outcome.summary.is_empty() => self.update(
                turn,
                SessionUpdate::AgentMessageChunk(text_chunk(outcome.summary.clone())),
            ),
            None => {}
        }
        if let Some(u) = &outcome.usage {
            self.update(turn, SessionUpdate::UsageUpdate(usage_update(u)));
        }
    }
}

impl SessionPort {
    /// Sends `session/request_permission` and answers the option the user selected (`None`:
    /// cancelled).
    async fn request_permission(
        &self,
        request: RequestPermissionRequest,
    ) -> Result<Option<String>> {
        let answer = self
            .conn
            .request("session/request_permission", request)
            .await
            .map_err(|e| Error::new(ErrorKind::FeatureError, e.message))?;
        let answer: RequestPermissionResponse = serde_json::from_value(answer).map_err(|e| {
            Error::new(
                ErrorKind::FeatureError,
                format!("the client's answer to session/request_permission is not one: {e}"),
            )
        })?;
        Ok(match answer.outcome {
            RequestPermissionOutcome::Selected(s) => Some(s.option_id.0.to_string()),
            _ => None,
        })
    }
}

#[async_trait]
impl ClientPort for SessionPort {
    fn streaming(&self) -> bool {
        true
    }

    fn turn_event(&self, turn: &TurnRef, event: TurnEvent) {
        match event {
            TurnEvent::Chunk(delta) => {
                if let Ok(mut s) = self.streamed.lock() {
                    s.insert(turn.turn_id.clone());
                }
                self.update(turn, SessionUpdate::AgentMessageChunk(text_chunk(delta)));
            }
            TurnEvent::Reasoning(delta) => {
                self.update(turn, SessionUpdate::AgentThoughtChunk(text_chunk(delta)))
            }
            TurnEvent::Step { summary, .. } => {
                self.update(turn, SessionUpdate::AgentThoughtChunk(text_chunk(summary)))
            }
            // A call is shown once it runs, with its whole arguments.
            TurnEvent::ToolCall(_) => {}
            TurnEvent::ToolStarted {
                id,
                name,
                arguments,
            } => {
                self.update(
                    turn,
                    SessionUpdate::ToolCall(tool_call(
                        &id,
                        &name,
                        arguments,
                        ToolCallStatus::Pending,
                    )),
                );
                self.update(
                    turn,
                    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                        id,
                        ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
                    )),
                );
            }
            TurnEvent::ToolFinished {
                id,
                output,
                is_error,
                ..
            } => self.update(
                turn,
                SessionUpdate::ToolCallUpdate(tool_result(&id, &output, is_error)),
            ),
            // ACP has no place for a tool's action object; it stays in the turn's details.
            TurnEvent::Action { .. } => {}
            TurnEvent::Done(outcome) => self.finish(turn, &outcome),
        }
    }

    // An ACP client sends no prompts straight to agents and hosts no feature.
    fn prompt_event(&self, _: &PromptRef, _: PromptEvent) {}

    fn hosted_turn(&self, _: HostedTurn) {}

    async fn confirm(&self, c: Confirmation) -> Result<bool> {
        let call_id = c
            .tool_call_id
            .clone()
            .unwrap_or_else(|| format!("confirm-{}", c.turn.turn_id));
        let fields = ToolCallUpdateFields::new()
            .title(format!("{}: {}", c.tool, c.text))
            .kind(tool_kind(&c.tool));
        let request = RequestPermissionRequest::new(
            c.turn.conversation_id.clone(),
            ToolCallUpdate::new(call_id, fields),
            vec![
                PermissionOption::new(ALLOW, "Allow", PermissionOptionKind::AllowOnce),
                PermissionOption::new(REJECT, "Reject", PermissionOptionKind::RejectOnce),
            ],
        );
        Ok(self.request_permission(request).await?.as_deref() == Some(ALLOW))
    }

    async fn ask_permission(&self, ask: PermissionAsk) -> Result<PermissionAnswer> {
        let fields = ToolCallUpdateFields::new()
            .title(ask.title.clone())
            .kind(tool_kind(&ask.tool))
            .raw_input(ask.arguments.clone());
        let choices = [
            (
                PermissionAnswer::AllowOnce,
                "Allow once".to_string(),
                PermissionOptionKind::AllowOnce,
            ),
            (
                PermissionAnswer::AllowAlways,
                format!("Always allow ({})", ask.always_rule),
                PermissionOptionKind::AllowAlways,
            ),
            (
                PermissionAnswer::RejectOnce,
                "Reject".to_string(),
                PermissionOptionKind::RejectOnce,
            ),
            (
                PermissionAnswer::RejectAlways,
                "Always reject in this session".to_string(),
                PermissionOptionKind::RejectAlways,
            ),
        ];
        let request = RequestPermissionRequest::new(
            ask.turn.conversation_id.clone(),
            ToolCallUpdate::new(ask.tool_call_id.clone(), fields),
            choices
                .iter()
                .map(|(a, name, kind)| PermissionOption::new(a.as_str(), name.clone(), *kind))
                .collect(),
        );
        // Cancelled (the turn is being cancelled) or unknown: the call does not run.
        Ok(self
            .request_permission(request)
            .await?
            .and_then(|id| PermissionAnswer::from_name(&id))
            .unwrap_or(PermissionAnswer::RejectOnce))
    }
}
