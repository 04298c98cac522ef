//! The typed params and results of `ListCommands` and `RunCommand` (commands: prompts kept as
//! files, and the MCP servers' prompts); `protocol` re-exports them.
//!
//! Like `protocol`, it owns wire names only and must never hold behaviour.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use genai_core::command::{Argument, BadFile, Settings};
use genai_core::config::lsp::ApplyMode;

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ListCommandsParams {
    /// The folder commands are looked up from (default: the daemon's working folder).
    #[serde(default)]
    pub(crate) cwd: Option<String>,
    /// List the enabled MCP servers' prompts too, starting them (default true).
    #[serde(default)]
    pub(crate) mcp: Option<bool>,
}

/// One command a client may run.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CommandInfo {
    /// What `RunCommand` takes: `review`, `git:commit`, `SERVER.PROMPT`.
    pub(crate) name: String,
    /// A short title for menus.
    pub(crate) title: String,
    pub(crate) description: String,
    /// `project`, `claude-project`, `user`, `claude-user`, `codex`, `config`, `builtin` or `mcp`.
    pub(crate) source: String,
    /// The file it comes from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) path: Option<String>,
    pub(crate) arguments: Vec<Argument>,
    /// Free-form arguments (Claude Code's and Codex's `argument-hint`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) argument_hint: Option<String>,
    /// What an editor does with the reply on a selection.
    pub(crate) apply: ApplyMode,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct ListCommandsResult {
    pub(crate) commands: Vec<CommandInfo>,
    /// Command files that cannot be read (path, line and what is wrong), and MCP servers that
    /// could not be reached.
    pub(crate) errors: Vec<BadFile>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct RunCommandParams {
    /// The command's name, as `ListCommands` gives it (a leading `/` is allowed).
    pub(crate) name: String,
    /// Its named arguments.
    #[serde(default)]
    pub(crate) arguments: BTreeMap<String, String>,
    /// The free text after the command (`{{args}}`, `$ARGUMENTS`).
    #[serde(default)]
    pub(crate) text: Option<String>,
    /// The input: the editor's selection, a piped text (`{{input}}`).
    #[serde(default)]
    pub(crate) input: Option<String>,
    /// Run in this open conversation (the command's prompt and schema apply to this turn);
    /// without it a new conversation starts with the command's model, system prompt,
    /// parameters, tools and permissions.
    #[serde(default)]
    pub(crate) conversation_id: Option<String>,
    /// The folder the command is looked up from and works in (default: the conversation's,
    /// else the daemon's working folder).
    #[serde(default)]
    pub(crate) cwd: Option<String>,
    /// A model for the new conversation instead of the command's.
    #[serde(default)]
    pub(crate) model: Option<String>,
    /// Keep a new conversation out of the history.
    #[serde(default)]
    pub(crate) ephemeral: bool,
}

/// Where the command's turn runs; its events come as for `OnNewMessage`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunCommandResult {
    pub(crate) conversation_id: String,
    pub(crate) turn_id: String,
    /// The user message's text as sent.
    pub(crate) text: String,
    /// What the command set (model, system prompt, parameters, schema, tools...).
    pub(crate) settings: Settings,
}
