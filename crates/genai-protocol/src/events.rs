//! The event stream of an unattended run: `genai ask --output-format stream-json` writes one
//! [`StreamEvent`] per line (JSON, then `\n`), so a CI script follows a run with `jq` as it
//! happens. The names are stable: a field may be added, none renamed or removed. Its schema is
//! `schemas/stream-event.json`.
//!
//! It owns the shapes of the events only; the binary writes them. `U` is the token counts'
//! record (the core's `Usage`), kept out of this leaf crate.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One line of the event stream: an event, and, for an event of a subagent (a `task` call's),
/// the call it is nested under, named as Claude Code's stream names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StreamLine<U> {
    #[serde(flatten)]
    pub event: StreamEvent<U>,
    /// The id of the `task` tool call whose subagent this event comes from; absent for the
    /// run's own events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_use_id: Option<String>,
    /// The subagent's name, beside `parent_tool_use_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent: Option<String>,
}

/// One event of the event stream. Every run writes `start` first and `result` last; in between,
/// in the order they happen: `text` and `reasoning` (pieces coalesced to whole lines, or what
/// came within about 100 ms), `compaction`, `tool_call`, `permission`, `tool_result`,
/// `plan`, `file_changed`, `usage` and `error`. A subagent's `tool_call`, `permission`,
/// `tool_result`, `plan` and `file_changed` carry `parent_tool_use_id` and `subagent`
/// ([`StreamLine`]); its answer is its `task` call's `tool_result`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent<U> {
    /// The turn started: its conversation (give it to `-c` to go on), and the model chosen.
    #[serde(rename_all = "camelCase")]
    Start {
        conversation_id: String,
        turn_id: String,
        /// The provider instance chosen (a fallback may answer instead: see `result`).
        provider: String,
        model: String,
    },
    /// A piece of the reply's text.
    Text { text: String },
    /// A piece of the model's reasoning, apart from the reply.
    Reasoning { text: String },
    /// The model asked for a tool call, with its whole arguments (before the policy decides).
    #[serde(rename_all = "camelCase")]
    ToolCall {
        /// The call's id, as the model gave it; `permission` and `tool_result` name it.
        id: String,
        /// The tool (`SOURCE.function`, `workspace.read_file`).
        name: String,
        arguments: Value,
    },
    /// The permission policy decided a call: `allow` or `deny`, and what decided.
    #[serde(rename_all = "camelCase")]
    Permission {
        id: String,
        name: String,
        /// The path, command line or URL the call is about (other tools: their arguments).
        subject: String,
        /// `allow` or `deny`.
        decision: String,
        /// The rule, the mode, the user's answer or the hook that decided.
        by: String,
    },
    /// A call ended: its output as the model sees it.
    #[serde(rename_all = "camelCase")]
    ToolResult {
        id: String,
        name: String,
        output: String,
        is_error: bool,
    },
    /// A tool changed a file (`genai undo --turn TURN` puts it back).
    #[serde(rename_all = "camelCase")]
    FileChanged {
        path: String,
        /// The file did not exist before.
        created: bool,
        added: usize,
        removed: usize,
        /// The checkpoint that holds its old bytes: the turn's id, for `genai undo --turn`.
        checkpoint: String,
    },
    /// A request neared the model's context, so genai compacted it before sending: the
    /// oldest `turns` are sent as a summary from now on (the history keeps every turn).
    #[serde(rename_all = "camelCase")]
    Compaction {
        /// The turns sent as their summary, from the conversation's start.
        turns: usize,
        /// About how many tokens the request's messages took before and after.
        tokens_before: usize,
        tokens_after: usize,
        /// Who wrote the summary: `the conversation's model` or `agent NAME`.
        by: String,
    },
    /// The model set out or updated its plan (its `plan` tool): every step, with its status.
    Plan {
        entries: Vec<crate::plan::PlanEntry>,
    },
    /// What the turn used, every request added up, and its cost in US dollars (`null`:
    /// unknown, never guessed).
    Usage { usage: Option<U>, cost: Option<f64> },
    /// The turn failed: the error's stable kind and its message.
    Error { kind: String, message: String },
    /// The end of the run; always the last line.
    #[serde(rename_all = "camelCase")]
    Result {
        conversation_id: String,
        turn_id: String,
        /// `success`, `error`, `budget_reached`, `refused` (it answered, but the policy
        /// refused at least one call) or `cancelled`.
        status: String,
        /// The exit code `genai ask` ends with (docs/CI.md lists them).
        exit_code: i32,
        /// The whole reply: text, or the checked JSON with `--schema`; `null` on failure.
        reply: Option<Value>,
        /// Who answered (a fallback's provider when one did).
        provider: Option<String>,
        model: Option<String>,
        finish_reason: Option<String>,
        /// The limit that stopped the run: `max-steps`, `max-cost` or `max-time`.
        budget: Option<String>,
        /// Tool calls the policy refused.
        refused: usize,
        usage: Option<U>,
        cost: Option<f64>,
    },
}
