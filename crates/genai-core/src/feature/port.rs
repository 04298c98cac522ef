//! The client port: how the core reaches whoever drives a conversation or a prompt.
//!
//! A front-end (the JSON-RPC daemon, `genai ask`, and later ACP, LSP or WebSocket) implements
//! [`ClientPort`] and hands it to the core with each conversation, prompt or client-hosted
//! feature it opens. The core speaks only these types; it must never build a wire message, and
//! a port must never reach back into a turn's logic: it shows, forwards or answers.

use async_trait::async_trait;
use serde_json::Value;

use super::TurnOutcome;
use crate::error::{Error, Result};
use crate::format::{ModelReply, ToolCallDelta};
use crate::message::Message;
pub use crate::middleware::hosted::MiddlewareCall;
use crate::tools::plugin::ModuleAnswer;
use crate::tools::{FileEdit, Tool};
use crate::workspace::Editor;

/// The tool source of the tools a client hosts (`RegisterTool`): `editor.NAME`.
pub(crate) const EDITOR_SOURCE: &str = "editor";

/// A call of a tool the client hosts.
#[derive(Debug, Clone)]
pub struct HostedToolCall {
    pub turn: TurnRef,
    pub call_id: String,
    /// The name the client registered (without `editor.`).
    pub name: String,
    pub arguments: Value,
}

/// Which turn an event belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnRef {
    pub conversation_id: String,
    pub turn_id: String,
}

/// What happens in a turn, in order; every accepted turn ends with exactly one `Done`.
#[derive(Debug, Clone)]
pub enum TurnEvent {
    /// The next piece of the reply's text.
    Chunk(String),
    /// The next piece of the model's reasoning, streamed apart from the answer (the built-in
    /// features emit it; the daemon sends it as `OnReasoningChunk`). The whole reasoning is
    /// also in the stored reply; ports may ignore the pieces.
    Reasoning(String),
    /// A piece of a tool call as the model streams it; `name` is the tool's own name
    /// (`SOURCE.function`), not its wire name.
    ToolCall(ToolCallDelta),
    /// A tool call starts running (native, parallel or ReAct alike), with its whole arguments.
    ToolStarted {
        /// The call's id, as the model gave it (ReAct calls get one from genai).
        id: String,
        /// The tool's own name (`SOURCE.function`).
        name: String,
        arguments: Value,
    },
    /// A tool call ended: its output as the model will see it.
    ToolFinished {
        id: String,
        name: String,
        output: String,
        is_error: bool,
        /// The file it changed (the workspace's edit tools).
        edit: Option<FileEdit>,
    },
    /// The permission policy decided a tool call before it ran (or was refused): allowed or
    /// denied, and by what (the rule, the mode, the user's answer, a hook).
    Decision(crate::store::DecisionRecord),
    /// The reply triggered an action a tool offered (`[[CODE]]` in the reply).
    Action {
        /// The id of the reply that triggered it.
        message_id: String,
        /// 0, 1, ... in the order the markers appear in the reply.
        sequence: u32,
        /// The tool's action object.
        action: Value,
    },
    /// The request about to go neared the model's context: its oldest turns are sent as a
    /// summary from now on (the history keeps them all).
    Compacted(crate::compaction::Compacted),
    /// The model set out or updated its plan (the workspace's `plan` tool ran): every step.
    Plan {
        entries: Vec<genai_protocol::plan::PlanEntry>,
    },
    /// Something that happened in a subagent the `task` call `call_id` runs, nested under that
    /// call: first its `Started`, then its text, tool calls, decisions, file changes and plan,
    /// last its `Done` (its outcome: error, budget, usage and cost; never the parent's end).
    /// Its answer is the call's result. Never nested twice: a subagent cannot start another.
    Subagent {
        call_id: String,
        /// The subagent's name (its definition's).
        agent: String,
        event: Box<TurnEvent>,
    },
    /// A subagent began working on the task's prompt; sent only nested under `Subagent` (a
    /// front-end knows when its own turns start).
    Started { prompt: String },
    /// A step a client-hosted feature reported before its final answer.
    Step {
        summary: String,
        detailed: Vec<String>,
    },
    /// The end of the turn.
    Done(TurnOutcome),
}

impl TurnEvent {
    /// One line saying what a subagent's event did, for front-ends that show its progress
    /// under the task call as text (`calling workspace.read_file`, `refused ...: by what`,
    /// `changed src/lib.rs`); `None` for what they do not show (text, pieces of calls).
    pub fn progress_line(&self) -> Option<String> {
        match self {
            TurnEvent::ToolStarted { name, .. } => Some(format!("calling {name}")),
            TurnEvent::Decision(d) if d.decision != "allow" => {
                Some(format!("refused {}({}): {}", d.tool, d.argument, d.by))
            }
            TurnEvent::ToolFinished {
                edit: Some(edit),
                is_error: false,
                ..
            } => Some(format!("changed {}", edit.path.display())),
            TurnEvent::ToolFinished {
                name,
                is_error: true,
                ..
            } => Some(format!("{name} failed")),
            TurnEvent::Plan { entries } => Some(format!("plan of {} steps", entries.len())),
            _ => None,
        }
    }
}

/// Which prompt (`Framework::send_prompt`) an event belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptRef {
    pub agent_id: String,
    pub request_id: String,
}

/// What happens to a prompt: text pieces, then exactly one `Done`.
#[derive(Debug, Clone)]
pub enum PromptEvent {
    Chunk(String),
    Done(Result<ModelReply, Error>),
}

/// A turn handed to the client that hosts its feature; the client answers with
/// `Framework::on_feature_response`.
#[derive(Debug, Clone)]
pub struct HostedTurn {
    pub turn: TurnRef,
    pub agent_id: String,
    pub feature: String,
    pub message: Message,
}

/// A tool asks the user to confirm an operation.
#[derive(Debug, Clone)]
pub struct Confirmation {
    pub turn: TurnRef,
    /// What the tool says about the operation.
    pub text: String,
    /// The link genai POSTs when the user confirms.
    pub link: String,
    /// The tool that asks.
    pub tool: String,
    /// The id of the tool call whose answer asks (as in `TurnEvent::ToolStarted`).
    pub tool_call_id: Option<String>,
}

/// A tool call the permission policy says to ask the user about.
#[derive(Debug, Clone)]
pub struct PermissionAsk {
    pub turn: TurnRef,
    /// The id of the tool call (as in `TurnEvent::ToolStarted`).
    pub tool_call_id: String,
    /// The tool's own name (`SOURCE.function`).
    pub tool: String,
    /// What it acts on: the root-relative path, the command line, the URL.
    pub subject: Option<String>,
    /// The call's whole arguments.
    pub arguments: Value,
    /// One line for the user: `Run \`cargo test\``, `Edit src/main.rs`, ...
    pub title: String,
    /// Why it asks (the rule or the mode).
    pub reason: String,
    /// The rule an "allow always" answer saves for this project.
    pub always_rule: String,
    /// The change an edit would make, for a diff view.
    pub edit: Option<FileEdit>,
}

/// The user's answer to a [`PermissionAsk`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionAnswer {
    AllowOnce,
    /// Allow, and save [`PermissionAsk::always_rule`] for this project.
    AllowAlways,
    RejectOnce,
    /// Reject, and ask no more in this conversation about calls the same rule would cover.
    RejectAlways,
}

impl PermissionAnswer {
    /// Every answer, in the order clients show them.
    pub const ALL: [PermissionAnswer; 4] = [
        PermissionAnswer::AllowOnce,
        PermissionAnswer::AllowAlways,
        PermissionAnswer::RejectOnce,
        PermissionAnswer::RejectAlways,
    ];

    pub(crate) fn allows(self) -> bool {
        matches!(
            self,
            PermissionAnswer::AllowOnce | PermissionAnswer::AllowAlways
        )
    }

    /// The answer's name on the wire and in the details: `allow_once`, `allow_always`,
    /// `reject_once`, `reject_always`.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionAnswer::AllowOnce => "allow_once",
            PermissionAnswer::AllowAlways => "allow_always",
            PermissionAnswer::RejectOnce => "reject_once",
            PermissionAnswer::RejectAlways => "reject_always",
        }
    }

    /// The answer named `name` ([`PermissionAnswer::as_str`]).
    pub fn from_name(name: &str) -> Option<PermissionAnswer> {
        Self::ALL.into_iter().find(|a| a.as_str() == name)
    }
}

/// The core's way out to a front-end. Calls that only tell (`turn_event`, `prompt_event`,
/// `hosted_turn`) must not block: a port queues or prints and returns.
#[async_trait]
pub trait ClientPort: Send + Sync {
    /// Whether the client wants streamed pieces (chunks, tool-call pieces, reasoning).
    fn streaming(&self) -> bool;
    /// Something happened in a turn this client drives.
    fn turn_event(&self, turn: &TurnRef, event: TurnEvent);
    /// Something happened to a prompt this client sent.
    fn prompt_event(&self, prompt: &PromptRef, event: PromptEvent);
    /// A turn of a feature this client hosts.
    fn hosted_turn(&self, turn: HostedTurn);
    /// Asks the user to confirm; an error when nobody can answer (taken as a refusal).
    async fn confirm(&self, request: Confirmation) -> Result<bool>;
    /// Asks the user whether a tool call may run; an error when nobody can answer (the call is
    /// refused and the model is told so). By default nobody can.
    async fn ask_permission(&self, ask: PermissionAsk) -> Result<PermissionAnswer> {
        Err(Error::new(
            crate::error::ErrorKind::FeatureError,
            format!(
                "no one to ask whether {} may run: this client cannot answer permission requests",
                ask.tool
            ),
        ))
    }
    /// The tools this client hosts (`editor.NAME`). By default none.
    fn hosted_tools(&self) -> Vec<Tool> {
        Vec::new()
    }
    /// Calls a tool this client hosts; an error when it fails, leaves or does not answer in
    /// time.
    async fn call_tool(&self, call: HostedToolCall) -> Result<ModuleAnswer> {
        Err(Error::new(
            crate::error::ErrorKind::FeatureError,
            format!("this client hosts no tool {}", call.name),
        ))
    }
    /// The client's editor, when it holds the workspace's files or runs its commands.
    fn editor(&self) -> Option<&dyn Editor> {
        None
    }
    /// Runs a middleware this client registered on a request's messages and returns the
    /// messages to send; an error fails the request. By default the client hosts none.
    async fn middleware(&self, call: MiddlewareCall) -> Result<Vec<Message>> {
        Err(Error::new(
            crate::error::ErrorKind::FeatureError,
            format!("this client hosts no middleware {}", call.name),
        ))
    }
}
