//! The daemon's client port: turns the core's events into this connection's notifications
//! (`OnFeatureResponseChunk`, `OnReasoningChunk`, `OnFeatureResponse`, `OnToolCallChunk`, `DoAction`, `OnCompaction`, `OnPlan`,
//! `OnSubagentEvent` (`subagents.rs`), `OnPromptResponse*`, `OnNewMessage` to a hosting client) and the core's questions into
//! daemon→client requests (`RequestConfirmation`, `OnMiddleware`, `OnToolCall`,
//! `ReadTextFile`, `WriteTextFile`), which the peer sends and matches answers to.
//!
//! It owns the client's streaming choice, the tools it hosts (they leave with it) and whether
//! it holds the workspace tools' files; when a turn ends it tells the peer, so that
//! `$/cancelRequest` no longer finds it. It must never decide anything about a turn.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{json, Value};

use super::protocol::*;
use super::subagents::Subagents;
use genai_core::error::{Error, ErrorKind, Result};
use genai_core::feature::hosted_tools::{self, HostedTools};
use genai_core::feature::port::{
    ClientPort, Confirmation, HostedToolCall, HostedTurn, MiddlewareCall, PermissionAnswer,
    PermissionAsk, PromptEvent, PromptRef, TurnEvent, TurnRef,
};
use genai_core::feature::TurnOutcome;
use genai_core::message::Message;
use genai_core::tools::plugin::ModuleAnswer;
use genai_core::tools::{FileEdit, Tool};
use genai_core::workspace::{Editor, EditorCall};
use genai_peer::Peer;

pub(crate) struct RpcPort {
    peer: Arc<Peer>,
    streaming: AtomicBool,
    /// The tools the client registered.
    pub(crate) tools: HostedTools,
    /// What the client does of the workspace tools' files (`Initialize.capabilities.editor`).
    editor: Mutex<EditorCapabilities>,
    /// The files each running turn changed, for its final `OnFeatureResponse`.
    changed: Mutex<HashMap<String, Vec<String>>>,
    /// The running subagents' text waiting for its line's end.
    subagents: Subagents,
}

impl RpcPort {
    /// A port writing its frames (JSON texts) through `peer`.
    pub(crate) fn new(peer: Arc<Peer>) -> RpcPort {
        RpcPort {
            peer,
            streaming: AtomicBool::new(true),
            tools: HostedTools::default(),
            editor: Mutex::default(),
            changed: Mutex::default(),
            subagents: Subagents::default(),
        }
    }

    /// The client's `Initialize.capabilities.editor`.
    pub(crate) fn set_editor(&self, caps: EditorCapabilities) {
        if let Ok(mut e) = self.editor.lock() {
            *e = caps;
        }
    }

    fn editor_caps(&self) -> EditorCapabilities {
        self.editor.lock().map(|e| *e).unwrap_or_default()
    }

    /// The client's choice (`Initialize.capabilities.streaming`).
    pub(crate) fn set_streaming(&self, on: bool) {
        self.streaming.store(on, Ordering::Relaxed);
    }

    /// Sends `event` as a notification, serialized straight into its frame (no JSON tree in
    /// between: a turn sends one per streamed chunk).
    fn notify(&self, event: Event) {
        /// The notification as framed, `jsonrpc` after the method and params.
        #[derive(serde::Serialize)]
        struct Framed<'a> {
            #[serde(flatten)]
            event: &'a Event,
            jsonrpc: &'static str,
        }
        let framed = Framed {
            event: &event,
            jsonrpc: "2.0",
        };
        let frame = serde_json::to_string(&framed).unwrap_or_else(|e| {
            json!({"method": "$/error", "params": {"message": e.to_string()}, "jsonrpc": "2.0"})
                .to_string()
        });
        // A closed channel means the client is gone; there is no one left to tell.
        let _ = self.peer.send(frame);
    }

    /// Notes a file the turn changed, for its final `OnFeatureResponse`.
    fn changed_file(&self, turn: &TurnRef, edit: &FileEdit) {
        if let Ok(mut c) = self.changed.lock() {
            let files = c.entry(turn.turn_id.clone()).or_default();
            let path = edit.path.to_string_lossy().into_owned();
            if !files.contains(&path) {
                files.push(path);
            }
        }
    }

    /// Sends the client a request and waits for its answer.
    async fn request(&self, method: &'static str, params: impl serde::Serialize) -> Result<Value> {
        let params = serde_json::to_value(params).unwrap_or_default();
        self.peer
            .request(method, params)
            .await
            .map_err(|u| Error::new(ErrorKind::FeatureError, u.describe(method)))
    }
}

/// A client's answer to `method` as `R`; an error saying it should have been `shape`.
fn decode<R: serde::de::DeserializeOwned>(method: &str, answer: Value, shape: &str) -> Result<R> {
    serde_json::from_value(answer).map_err(|e| {
        Error::new(
            ErrorKind::FeatureError,
            format!("the client's {method} answer is not {shape}: {e}"),
        )
    })
}

/// The final (or a step's) `OnFeatureResponse` of a turn.
fn feature_response(
    turn: &TurnRef,
    o: TurnOutcome,
    is_final: bool,
    changed_files: Vec<String>,
) -> FeatureResponse {
    FeatureResponse {
        conversation_id: turn.conversation_id.clone(),
        turn_id: turn.turn_id.clone(),
        summary: o.summary,
        detailed_response: o.detailed,
        is_final,
        is_success: o.error.is_none(),
        error: o.error.as_ref().map(ErrorInfo::from),
        usage: o.usage,
        cost: o.cost,
        model: o.model,
        finish_reason: o.finish_reason,
        changed_files,
    }
}

#[async_trait]
impl ClientPort for RpcPort {
    fn streaming(&self) -> bool {
        self.streaming.load(Ordering::Relaxed)
    }

    fn turn_event(&self, turn: &TurnRef, event: TurnEvent) {
        let event = match event {
            // A subagent's events go out nested under its task call; the files it changed
            // also join its parent turn's. Its answer is the task call's result.
            TurnEvent::Subagent {
                call_id,
                agent,
                event,
            } => {
                if let TurnEvent::ToolFinished {
                    edit: Some(edit),
                    is_error: false,
                    ..
                } = &*event
                {
                    self.changed_file(turn, edit);
                }
                for notice in self.subagents.notices(turn, &call_id, &agent, *event) {
                    self.notify(Event::OnSubagent(notice));
                }
                return;
            }
            TurnEvent::Chunk(delta) => Event::OnFeatureResponseChunk(FeatureResponseChunk {
                conversation_id: turn.conversation_id.clone(),
                turn_id: turn.turn_id.clone(),
                delta,
            }),
            TurnEvent::Reasoning(delta) => Event::OnReasoningChunk(FeatureResponseChunk {
                conversation_id: turn.conversation_id.clone(),
                turn_id: turn.turn_id.clone(),
                delta,
            }),
            // The protocol tells a tool run through `detailedResponse`, not as it happens; the
            // files it changed come with the turn's end.
            TurnEvent::ToolFinished {
                edit: Some(edit),
                is_error: false,
                ..
            } => {
                self.changed_file(turn, &edit);
                return;
            }
            TurnEvent::ToolStarted { .. }
            | TurnEvent::ToolFinished { .. }
            | TurnEvent::Decision(_)
            | TurnEvent::Started { .. } => return,
            TurnEvent::ToolCall(d) => Event::OnToolCallChunk(ToolCallChunk {
                conversation_id: turn.conversation_id.clone(),
                turn_id: turn.turn_id.clone(),
                index: d.index as u32,
                id: d.id,
                name: d.name,
                arguments: d.arguments,
            }),
            TurnEvent::Action {
                message_id,
                sequence,
                action,
            } => Event::DoAction(DoActionParams {
                conversation_id: turn.conversation_id.clone(),
                turn_id: turn.turn_id.clone(),
                message_id,
                sequence,
                action,
            }),
            TurnEvent::Compacted(c) => Event::OnCompaction(Compaction {
                conversation_id: turn.conversation_id.clone(),
                turn_id: turn.turn_id.clone(),
                turns: c.turns,
                tokens_before: c.tokens_before,
                tokens_after: c.tokens_after,
                by: c.by,
            }),
            TurnEvent::Plan { entries } => Event::OnPlan(Plan {
                conversation_id: turn.conversation_id.clone(),
                turn_id: turn.turn_id.clone(),
                entries,
            }),
            TurnEvent::Step { summary, detailed } => {
                let step = TurnOutcome {
                    summary,
                    detailed,
                    ..Default::default()
                };
                Event::OnFeatureResponse(feature_response(turn, step, false, Vec::new()))
            }
            TurnEvent::Done(outcome) => {
                self.peer.running().ended(&turn.turn_id);
                self.subagents.ended(&turn.turn_id);
                let changed = self
                    .changed
                    .lock()
                    .ok()
                    .and_then(|mut c| c.remove(&turn.turn_id))
                    .unwrap_or_default();
                Event::OnFeatureResponse(feature_response(turn, outcome, true, changed))
            }
        };
        self.notify(event);
    }

    fn prompt_event(&self, prompt: &PromptRef, event: PromptEvent) {
        let event = match event {
            PromptEvent::Chunk(delta) => Event::OnPromptResponseChunk(PromptResponseChunk {
                agent_id: prompt.agent_id.clone(),
                request_id: prompt.request_id.clone(),
                delta,
            }),
            PromptEvent::Done(result) => {
                let (message, usage, finish_reason, error) = match result {
                    Ok(r) => (Some(r.message), r.usage, r.finish_reason, None),
                    Err(e) => (None, None, None, Some(ErrorInfo::from(&e))),
                };
                Event::OnPromptResponse(PromptResponse {
                    agent_id: prompt.agent_id.clone(),
                    request_id: prompt.request_id.clone(),
                    is_success: error.is_none(),
                    message,
                    error,
                    usage,
                    finish_reason,
                })
            }
        };
        self.notify(event);
    }

    fn hosted_turn(&self, turn: HostedTurn) {
        self.notify(Event::OnNewMessage(NewMessageToFeature {
            conversation_id: turn.turn.conversation_id,
            agent_id: turn.agent_id,
            turn_id: turn.turn.turn_id,
            feature: turn.feature,
            message: turn.message,
        }));
    }

    async fn confirm(&self, c: Confirmation) -> Result<bool> {
        let params = RequestConfirmationParams {
            conversation_id: c.turn.conversation_id,
            turn_id: c.turn.turn_id,
            text: c.text,
            link: Some(c.link),
            tool: c.tool,
            tool_call_id: c.tool_call_id,
            permission: None,
        };
        let answer = self.request("RequestConfirmation", params).await?;
        Ok(answer.get("confirmed").and_then(Value::as_bool) == Some(true))
    }

    async fn ask_permission(&self, ask: PermissionAsk) -> Result<PermissionAnswer> {
        let params = RequestConfirmationParams {
            conversation_id: ask.turn.conversation_id,
            turn_id: ask.turn.turn_id,
            text: ask.title,
            link: None,
            tool: ask.tool,
            tool_call_id: Some(ask.tool_call_id),
            permission: Some(PermissionRequest {
                subject: ask.subject,
                arguments: ask.arguments,
                reason: ask.reason,
                rule: ask.always_rule,
                options: PermissionAnswer::ALL
                    .iter()
                    .map(|o| o.as_str().to_string())
                    .collect(),
                diff: ask.edit.as_ref().map(FileDiff::from),
            }),
        };
        let answer = self.request("RequestConfirmation", params).await?;
        let answer: RequestConfirmationResult = serde_json::from_value(answer).map_err(|e| {
            Error::invalid_params(format!(
                "the answer to RequestConfirmation is not {{confirmed, option?}}: {e}"
            ))
        })?;
        match answer.option.as_deref() {
            Some(name) => PermissionAnswer::from_name(name).ok_or_else(|| {
                Error::invalid_params(format!(
                    "`{name}` is not an option of this RequestConfirmation: allow_once, allow_always, reject_once or reject_always"
                ))
            }),
            None if answer.confirmed => Ok(PermissionAnswer::AllowOnce),
            None => Ok(PermissionAnswer::RejectOnce),
        }
    }

    fn hosted_tools(&self) -> Vec<Tool> {
        self.tools.list()
    }

    async fn call_tool(&self, call: HostedToolCall) -> Result<ModuleAnswer> {
        let Some(limit) = self.tools.timeout(&call.name) else {
            return Err(Error::invalid_params(format!(
                "the client no longer hosts the tool editor.{}",
                call.name
            )));
        };
        let name = call.name.clone();
        let params = OnToolCallParams {
            conversation_id: call.turn.conversation_id,
            turn_id: call.turn.turn_id,
            call_id: call.call_id,
            name: call.name,
            arguments: call.arguments,
        };
        let asked = self.request("OnToolCall", params);
        let answer = tokio::time::timeout(limit, asked)
            .await
            .map_err(|_| hosted_tools::timed_out(&name, limit))?
            .map_err(|e| Error::new(e.kind, format!("editor.{name}: {}", e.message)))?;
        let answer: OnToolCallResult = decode(
            "OnToolCall",
            answer,
            "{content: a string or a list of parts, isError?}",
        )?;
        Ok(hosted_tools::answer(answer.content, answer.is_error))
    }

    fn editor(&self) -> Option<&dyn Editor> {
        let caps = self.editor_caps();
        (caps.read_text_file || caps.write_text_file).then_some(self as &dyn Editor)
    }

    async fn middleware(&self, call: MiddlewareCall) -> Result<Vec<Message>> {
        let params = OnMiddlewareParams {
            name: call.name,
            format: call.format,
            model: call.model,
            messages: call.messages,
        };
        let answer = self.request("OnMiddleware", params).await?;
        decode::<OnMiddlewareResult>("OnMiddleware", answer, "{messages}").map(|r| r.messages)
    }
}

/// The client's editor, when it offered `capabilities.editor`.
#[async_trait]
impl Editor for RpcPort {
    fn reads(&self) -> bool {
        self.editor_caps().read_text_file
    }

    fn writes(&self) -> bool {
        self.editor_caps().write_text_file
    }

    async fn read_text(&self, call: &EditorCall, path: &Path) -> Result<String> {
        let params = ReadTextFileParams {
            conversation_id: call.conversation_id.clone(),
            path: path.to_string_lossy().into_owned(),
        };
        let answer = self.request("ReadTextFile", params).await?;
        let answer: ReadTextFileResult = decode("ReadTextFile", answer, "{text}")?;
        answer.text.ok_or_else(|| {
            Error::invalid_params(format!("the editor has no file {}", path.display()))
        })
    }

    async fn write_text(&self, call: &EditorCall, path: &Path, text: &str) -> Result<()> {
        let params = WriteTextFileParams {
            conversation_id: call.conversation_id.clone(),
            turn_id: call.turn_id.clone(),
            call_id: call.call_id.clone(),
            path: path.to_string_lossy().into_owned(),
            text: text.to_string(),
        };
        self.request("WriteTextFile", params).await.map_err(|e| {
            Error::new(
                e.kind,
                format!("the editor did not write it: {}", e.message),
            )
        })?;
        Ok(())
    }
}
