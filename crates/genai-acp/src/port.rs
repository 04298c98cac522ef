//! The client port of one ACP connection's sessions: the core's turn events become `session/update`
//! notifications (`agent_message_chunk`, `agent_thought_chunk`, `tool_call`,
//! `tool_call_update`, `plan`, `usage_update`), and a tool's confirmation becomes
//! `session/request_permission`. The `session/prompt` that sent a turn follows it to its end
//! through the core's `TurnStream`.
//!
//! It owns what the session must remember about its turns (what was streamed). It must never
//! decide anything about a turn: the core runs it, the dispatcher answers the prompt.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_client_protocol_schema::v1::{
    ContentBlock, ContentChunk, Diff, PermissionOption, PermissionOptionKind, Plan, PlanEntry,
    PlanEntryPriority, PlanEntryStatus, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SessionUpdate, TextContent, ToolCall, ToolCallContent,
    ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind, UsageUpdate,
};
use async_trait::async_trait;
use serde_json::{json, Value};

use super::connection::Connection;
use genai_core::error::{Error, ErrorKind, Result};
use genai_core::feature::port::{
    ClientPort, Confirmation, HostedTurn, PermissionAnswer, PermissionAsk, PromptEvent, PromptRef,
    TurnEvent, TurnRef,
};
use genai_core::feature::TurnOutcome;
use genai_core::message::Usage;
use genai_core::tools::FileEdit;
use genai_core::workspace::Editor;

/// The option ids genai offers in `session/request_permission`.
pub(crate) const ALLOW: &str = "allow";
pub(crate) const REJECT: &str = "reject";

/// What the client offered in `initialize` of the workspace tools' work (`editor.rs` does it).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ClientOffers {
    pub(crate) reads: bool,
    pub(crate) writes: bool,
    pub(crate) terminal: bool,
}

pub(crate) struct SessionPort {
    pub(super) conn: Arc<Connection>,
    /// Turns that streamed reply text (their summary is not sent again at the end).
    streamed: Mutex<HashSet<String>>,
    /// What the client does itself of the workspace tools' work.
    offers: Mutex<ClientOffers>,
    /// Each session's folder, for the tool calls' locations.
    roots: Mutex<HashMap<String, PathBuf>>,
    /// What each running `task` call's subagent did so far, a line each: the call's content.
    progress: Mutex<HashMap<String, Vec<String>>>,
}

/// A text block as a message chunk.
pub(crate) fn text_chunk(text: impl Into<String>) -> ContentChunk {
    ContentChunk::new(ContentBlock::Text(TextContent::new(text)))
}

/// What kind of tool a name suggests, for the client's icon (`other` when nothing fits).
pub(crate) fn tool_kind(name: &str) -> ToolKind {
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
pub(crate) fn tool_call(
    id: &str,
    name: &str,
    arguments: Value,
    status: ToolCallStatus,
) -> ToolCall {
    ToolCall::new(id.to_string(), name.to_string())
        .kind(tool_kind(name))
        .status(status)
        .raw_input(arguments)
}

/// Where a workspace tool's call acts: its `path` under the session's folder (the folder
/// itself for a listing or search without one), with the first line read.
pub(crate) fn locations(
    name: &str,
    arguments: &Value,
    root: Option<&Path>,
) -> Vec<ToolCallLocation> {
    let (Some(root), Some(function)) = (
        root,
        name.strip_prefix(genai_core::workspace::SOURCE)
            .and_then(|n| n.strip_prefix('.')),
    ) else {
        return Vec::new();
    };
    let path = arguments.get("path").and_then(Value::as_str);
    let at = match (function, path) {
        (_, Some(p)) => root.join(p),
        ("list" | "search", None) => root.to_path_buf(),
        _ => return Vec::new(),
    };
    let line = arguments
        .get("offset")
        .and_then(Value::as_u64)
        .and_then(|l| u32::try_from(l).ok());
    vec![ToolCallLocation::new(at).line(line)]
}

/// An edit as ACP's diff content.
pub(crate) fn diff(edit: &FileEdit) -> ToolCallContent {
    ToolCallContent::Diff(
        Diff::new(edit.path.clone(), edit.new_text.clone()).old_text(edit.old_text.clone()),
    )
}

/// The end of a tool call: its status and output, and the diff of what it changed.
pub(crate) fn tool_result(
    id: &str,
    output: &str,
    is_error: bool,
    edit: Option<&FileEdit>,
) -> ToolCallUpdate {
    let status = if is_error {
        ToolCallStatus::Failed
    } else {
        ToolCallStatus::Completed
    };
    let mut content: Vec<ToolCallContent> = edit.map(diff).into_iter().collect();
    content.push(ToolCallContent::from(ContentBlock::Text(TextContent::new(
        output,
    ))));
    ToolCallUpdate::new(
        id.to_string(),
        ToolCallUpdateFields::new()
            .status(status)
            .content(content)
            .raw_output(json!({"text": output, "isError": is_error})),
    )
}

/// Token usage as ACP's context update: `used` is what the last request held (prompt and
/// reply); genai does not know the model's window, so `size` is 0 and the counts are in
/// `_meta.genai`.
pub(crate) fn usage_update(u: &Usage) -> UsageUpdate {
    let mut meta = serde_json::Map::new();
    meta.insert(
        "genai".into(),
        serde_json::to_value(u).unwrap_or_else(|_| json!({})),
    );
    UsageUpdate::new(u.total(), 0).meta(meta)
}

impl SessionPort {
    pub(crate) fn new(conn: Arc<Connection>) -> SessionPort {
        SessionPort {
            conn,
            streamed: Mutex::default(),
            offers: Mutex::default(),
            roots: Mutex::default(),
            progress: Mutex::default(),
        }
    }

    /// What the client offered in `initialize`.
    pub(crate) fn set_offers(&self, offers: ClientOffers) {
        if let Ok(mut o) = self.offers.lock() {
            *o = offers;
        }
    }

    pub(super) fn offers(&self) -> ClientOffers {
        self.offers.lock().map(|o| *o).unwrap_or_default()
    }

    /// The folder of the session `id`.
    pub(crate) fn set_root(&self, id: &str, root: &Path) {
        if let Ok(mut r) = self.roots.lock() {
            r.insert(id.to_string(), root.to_path_buf());
        }
    }

    fn root(&self, id: &str) -> Option<PathBuf> {
        self.roots.lock().ok()?.get(id).cloned()
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
    /// A subagent's event: one more line of its `task` call's content (ACP has no nested
    /// calls), the whole progress sent as that call's update.
    fn subagent(&self, turn: &TurnRef, call_id: String, agent: &str, event: &TurnEvent) {
        let Some(line) = event.progress_line() else {
            return;
        };
        let text = match self.progress.lock() {
            Ok(mut p) => {
                let lines = p.entry(call_id.clone()).or_default();
                lines.push(format!("[{agent}] {line}"));
                lines.join("\n")
            }
            Err(_) => return,
        };
        let content = vec![ToolCallContent::from(ContentBlock::Text(TextContent::new(
            text,
        )))];
        let fields = ToolCallUpdateFields::new().content(content);
        self.update(
            turn,
            SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(call_id, fields)),
        );
    }

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
            // ACP has no compaction update: the client shows it as a thought.
            TurnEvent::Compacted(c) => self.update(
                turn,
                SessionUpdate::AgentThoughtChunk(text_chunk(format!("({})\n", c.describe()))),
            ),
            TurnEvent::Plan { entries } => self.update(turn, SessionUpdate::Plan(plan(entries))),
            // A call is shown once it runs, with its whole arguments.
            TurnEvent::ToolCall(_) => {}
            TurnEvent::ToolStarted {
                id,
                name,
                arguments,
            } => {
                let root = self.root(&turn.conversation_id);
                let at = locations(&name, &arguments, root.as_deref());
                self.update(
                    turn,
                    SessionUpdate::ToolCall(
                        tool_call(&id, &name, arguments, ToolCallStatus::Pending).locations(at),
                    ),
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
                edit,
                ..
            } => {
                // A task call's progress ends with its subagent.
                if let Ok(mut p) = self.progress.lock() {
                    p.remove(&id);
                }
                self.update(
                    turn,
                    SessionUpdate::ToolCallUpdate(tool_result(
                        &id,
                        &output,
                        is_error,
                        edit.as_ref(),
                    )),
                )
            }
            // ACP has no place for a tool's action object; it stays in the turn's details.
            TurnEvent::Action { .. } | TurnEvent::Decision(_) | TurnEvent::Started { .. } => {}
            TurnEvent::Subagent {
                call_id,
                agent,
                event,
            } => self.subagent(turn, call_id, &agent, &event),
            TurnEvent::Done(outcome) => self.finish(turn, &outcome),
        }
    }

    fn editor(&self) -> Option<&dyn Editor> {
        let o = self.offers();
        (o.reads || o.writes || o.terminal).then_some(self as &dyn Editor)
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
        let root = self.root(&ask.turn.conversation_id);
        let mut fields = ToolCallUpdateFields::new()
            .title(ask.title.clone())
            .kind(tool_kind(&ask.tool))
            .locations(locations(&ask.tool, &ask.arguments, root.as_deref()))
            .raw_input(ask.arguments.clone());
        if let Some(edit) = &ask.edit {
            fields = fields.content(vec![diff(edit)]);
        }
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

/// A plan as ACP's plan entries (a step without a priority is of medium priority there).
fn plan(entries: Vec<genai_protocol::plan::PlanEntry>) -> Plan {
    use genai_protocol::plan::{PlanPriority, PlanStatus};
    Plan::new(
        entries
            .into_iter()
            .map(|e| {
                let priority = match e.priority {
                    Some(PlanPriority::High) => PlanEntryPriority::High,
                    Some(PlanPriority::Low) => PlanEntryPriority::Low,
                    Some(PlanPriority::Medium) | None => PlanEntryPriority::Medium,
                };
                let status = match e.status {
                    PlanStatus::Pending => PlanEntryStatus::Pending,
                    PlanStatus::InProgress => PlanEntryStatus::InProgress,
                    PlanStatus::Completed => PlanEntryStatus::Completed,
                };
                PlanEntry::new(e.content, priority, status)
            })
            .collect(),
    )
}
