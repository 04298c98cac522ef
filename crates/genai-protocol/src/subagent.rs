//! What a subagent (a `task` tool call's) does, as the daemon's `OnSubagentEvent` notification
//! tells it: the turn, the task call it is nested under, the subagent's name and one
//! [`SubagentEvent`]. A client shows them as a block under the task call; one that does not
//! know the notification ignores it and loses nothing the final `OnFeatureResponse` says.
//!
//! It owns these shapes only; the daemon's port fills them. `U` is the token counts' record
//! (the core's `Usage`), kept out of this leaf crate. It must never decide what a subagent may
//! do, nor say more than the parent's client already may see.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The params of `OnSubagentEvent`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubagentNotice<U> {
    pub conversation_id: String,
    pub turn_id: String,
    /// The id of the parent's `workspace.task` call the subagent runs for.
    pub call_id: String,
    /// The subagent's name (its definition's).
    pub agent: String,
    pub event: SubagentEvent<U>,
}

/// One thing a subagent did. Of one task call: `started` first, `finished` last (after its
/// `usage`), the rest in the order they happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum SubagentEvent<U> {
    /// It began working on the task's prompt.
    Started { prompt: String },
    /// Its model asked for a tool call, with its whole arguments (before the policy decides).
    ToolCall {
        /// The call's id; `permission` and `toolResult` name it, as does a
        /// `RequestConfirmation` (`toolCallId`) when the policy asks the user.
        id: String,
        /// The tool (`SOURCE.function`).
        name: String,
        arguments: Value,
    },
    /// The permission policy decided a call: `allow` or `deny`, and what decided.
    Permission {
        id: String,
        name: String,
        /// The path, command line or URL the call is about.
        subject: String,
        /// `allow` or `deny`.
        decision: String,
        /// The rule, the mode, the user's answer or the hook that decided.
        by: String,
    },
    /// A call ended; its output is what the subagent's model read.
    #[serde(rename_all = "camelCase")]
    ToolResult {
        id: String,
        name: String,
        output: String,
        is_error: bool,
    },
    /// A call changed a file (absolute path); it is also in the turn's `changedFiles`.
    FileChanged { path: String },
    /// Its plan (its `workspace.plan` tool), whole each time.
    Plan {
        entries: Vec<crate::plan::PlanEntry>,
    },
    /// Its text, whole lines (the rest comes with its next event); streaming on only.
    Text { text: String },
    /// What it used and cost in US dollars (`null`: unknown, never guessed); already counted
    /// in the turn's `usage` and `cost`.
    Usage { usage: Option<U>, cost: Option<f64> },
    /// It ended: `success`, `error` (with `error`), `budget_reached` (its own rounds hit a
    /// budget; it answered) or `cancelled`. Its answer is the task call's result.
    Finished {
        status: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
}
