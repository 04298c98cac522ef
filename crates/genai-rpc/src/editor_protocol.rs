//! The typed params and results of the protocol's editor methods (see docs/PROTOCOL.md): the
//! tools a client hosts (`RegisterTool`, `UnregisterTool`, and the daemon's `OnToolCall`), and
//! the files a client holds for the workspace tools (the daemon's `ReadTextFile` and
//! `WriteTextFile`, offered with `Initialize.capabilities.editor`). `protocol.rs` re-exports
//! them beside the other methods' types.
//!
//! Every type here derives `JsonSchema`; `schemas/` is generated from them. This module owns
//! wire names and must never hold behaviour.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use genai_core::message::Part;

/// `RegisterTool`: the client hosts a tool the model may call, `editor.NAME`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct RegisterToolParams {
    /// 1 to 56 letters, digits, `_` or `-` (the model sees `editor__NAME`, 64 at most);
    /// registering a name again replaces the tool.
    pub(crate) name: String,
    pub(crate) description: String,
    /// A JSON Schema of the arguments object (`"type": "object"`).
    pub(crate) input_schema: Value,
    /// The tool only reads: every permission mode runs it without asking. Otherwise it counts
    /// as an edit: asked in `ask` mode, run in `edit` and `full`, refused in `read-only`.
    #[serde(default)]
    pub(crate) read_only: bool,
    /// How long the client may take to answer `OnToolCall` (default 60000, at most 600000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) timeout_ms: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RegisterToolResult {
    /// The tool's name as conversations select it: `editor.NAME`.
    pub(crate) tool: String,
}

/// `UnregisterTool`: the client no longer hosts the tool `name`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct UnregisterToolParams {
    pub(crate) name: String,
}

/// `OnToolCall` (daemon→client request): the model calls a tool the client registered.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OnToolCallParams {
    pub(crate) conversation_id: String,
    pub(crate) turn_id: String,
    pub(crate) call_id: String,
    /// The name the client registered (without `editor.`).
    pub(crate) name: String,
    /// The model's arguments (a JSON object).
    pub(crate) arguments: Value,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OnToolCallResult {
    /// What the model is told: text and image parts (a bare string is a text part).
    #[serde(deserialize_with = "genai_core::message::content_parts")]
    #[schemars(with = "Vec<genai_core::message::PartInput>")]
    pub(crate) content: Vec<Part>,
    /// The call failed: the model sees the content as a tool error.
    #[serde(default)]
    pub(crate) is_error: bool,
}

/// `Initialize.capabilities.editor`: what the client does itself of the workspace tools'
/// work.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EditorCapabilities {
    /// The daemon reads the workspace tools' files with `ReadTextFile` (unsaved buffers).
    #[serde(default)]
    pub(crate) read_text_file: bool,
    /// The daemon writes them with `WriteTextFile` (applied through the editor).
    #[serde(default)]
    pub(crate) write_text_file: bool,
}

/// `ReadTextFile` (daemon→client request): the text the editor holds for a file.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReadTextFileParams {
    pub(crate) conversation_id: String,
    /// The file's absolute path.
    pub(crate) path: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReadTextFileResult {
    /// `null`: no such file.
    pub(crate) text: Option<String>,
}

/// `WriteTextFile` (daemon→client request): replace a file's whole text through the editor;
/// an error answer (the user rejected the edit) leaves it unchanged and tells the model.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WriteTextFileParams {
    pub(crate) conversation_id: String,
    pub(crate) turn_id: String,
    pub(crate) call_id: String,
    /// The file's absolute path (it may not exist yet).
    pub(crate) path: String,
    pub(crate) text: String,
}

/// An edit a tool makes or would make, for a diff view.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FileDiff {
    /// The file's absolute path.
    pub(crate) path: String,
    /// Its text before; `null` for a new file.
    pub(crate) old_text: Option<String>,
    pub(crate) new_text: String,
}

impl From<&genai_core::tools::FileEdit> for FileDiff {
    fn from(e: &genai_core::tools::FileEdit) -> FileDiff {
        FileDiff {
            path: e.path.to_string_lossy().into_owned(),
            old_text: e.old_text.clone(),
            new_text: e.new_text.clone(),
        }
    }
}

/// `WriteTextFile`'s answer: `{}` once the editor applied the text.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub(crate) struct WriteTextFileResult {}
