//! The typed params and results of the protocol's tool methods (see docs/PROTOCOL.md): the
//! client's `ListTools` and `CallTool`, the daemon's `RequestConfirmation` (a plugin module's
//! confirmation, or a permission ask) and `DoAction`, and `Undo` and `ListCheckpoints`.
//! `protocol.rs` re-exports them beside the other methods' types.
//!
//! Every type here derives `JsonSchema`; `schemas/` is generated from them. This module owns
//! wire names and must never hold behaviour.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::listings::{SourceError, Tool};

/// `RequestConfirmation` (daemon→client request): a tool asks the user to confirm an
/// operation; the answer is `{confirmed}`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RequestConfirmationParams {
    pub(crate) conversation_id: String,
    pub(crate) turn_id: String,
    /// What the tool says about the operation; for a permission, one line such as
    /// `Run \`cargo test\``.
    pub(crate) text: String,
    /// The link the daemon POSTs when the user confirms (a plugin module's confirmation);
    /// absent when the permission policy asks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) link: Option<String>,
    /// The tool that asks, or that asks to run.
    pub(crate) tool: String,
    /// The id of the tool call (as in `OnToolCallChunk`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tool_call_id: Option<String>,
    /// Present when the permission policy asks whether a tool call may run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) permission: Option<PermissionRequest>,
}

/// What a permission ask adds to `RequestConfirmation`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PermissionRequest {
    /// What the call acts on: the root-relative path, the command line or the URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) subject: Option<String>,
    /// The call's arguments.
    pub(crate) arguments: Value,
    /// Why it asks: the rule or the mode.
    pub(crate) reason: String,
    /// The rule `allow_always` saves for this project.
    pub(crate) rule: String,
    /// The answers the client may give in `option`: `allow_once`, `allow_always`,
    /// `reject_once`, `reject_always`.
    pub(crate) options: Vec<String>,
    /// For an edit: the change it would make.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) diff: Option<super::editor_protocol::FileDiff>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RequestConfirmationResult {
    /// Yes or no; for a permission, `true` alone is `allow_once`.
    pub(crate) confirmed: bool,
    /// For a permission: one of its `options` (it wins over `confirmed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) option: Option<String>,
}

/// `Undo`: put back the files one turn's tools changed (default: the newest turn not yet
/// undone, of `conversationId` when given).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct UndoParams {
    #[serde(default)]
    pub(crate) conversation_id: Option<String>,
    /// A turn id or a unique prefix.
    #[serde(default)]
    pub(crate) turn_id: Option<String>,
    /// Restore files changed since the turn too.
    #[serde(default)]
    pub(crate) force: bool,
}

/// `ListCheckpoints`: the turns whose tools changed files, newest first.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ListCheckpointsParams {
    #[serde(default)]
    pub(crate) conversation_id: Option<String>,
    /// At most this many (default 20, at most 200).
    #[serde(default)]
    pub(crate) limit: Option<usize>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListCheckpointsResult {
    pub(crate) turns: Vec<genai_core::checkpoint::TurnChanges>,
}

/// `DoAction` (notification): the model's reply triggered an action a tool offered
/// (`[[CODE]]` in the reply; the marker is removed from the summary).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DoActionParams {
    pub(crate) conversation_id: String,
    pub(crate) turn_id: String,
    /// The id of the reply that triggered it.
    pub(crate) message_id: String,
    /// 0, 1, ... in the order the markers appear in the reply.
    pub(crate) sequence: u32,
    /// The tool's action object (`code`, `type`, and its own fields).
    pub(crate) action: Value,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ListToolsParams {
    /// Sources (plugin names) or single tools (`SOURCE.function`); default: the enabled ones.
    #[serde(default)]
    pub(crate) tools: Option<Vec<String>>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListToolsResult {
    pub(crate) tools: Vec<Tool>,
    /// Sources that could not be loaded (a module down, a broken manifest).
    pub(crate) errors: Vec<SourceError>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct CallToolParams {
    /// `SOURCE.function`.
    pub(crate) name: String,
    /// A JSON object (default `{}`).
    #[serde(default = "empty_object")]
    pub(crate) arguments: Value,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// What a tool answered: the text the model would see, and what the module asked for.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CallToolResult {
    pub(crate) text: String,
    /// The module reported an error; `text` says what.
    pub(crate) is_error: bool,
    /// The module asks the user to confirm: POSTing this link confirms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) confirmation_link: Option<String>,
    /// Actions the reply may trigger with `[[CODE]]`.
    pub(crate) actions: Vec<Value>,
    /// The module wants the user's next message POSTed to this link.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) collect_link: Option<String>,
}
