//! `[lsp]`: the settings of `genai lsp`, the language server: which model its actions use,
//! the custom code actions, and completion (off unless enabled). Plain data; `src/lsp/` reads it.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `[lsp]`: the language server's settings.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LspConfig {
    /// The model code actions and `genai.ask` use: an agent from `[agents]` or
    /// `provider:model` (default: the `[defaults]` model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Lines of the file shown to the model above and below the selection (default 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_lines: Option<u32>,
    /// Custom code actions by name: `[lsp.actions.NAME]`, offered after the built-in ones.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) actions: BTreeMap<String, LspActionConfig>,
    /// Completion as you type: `[lsp.completion]`.
    #[serde(default)]
    pub completion: CompletionConfig,
    /// The tool sources `genai.ask` may use, such as `["workspace"]` (the files under the
    /// editor's workspace folder, see WORKSPACE.md); default none. Asks reach the editor as
    /// `window/showMessageRequest`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// The permission mode of those tools (`read-only`, `ask`, `edit`, `full`; default: the
    /// config's `[permissions] mode`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<crate::permission::Mode>,
}

/// `[lsp.actions.NAME]`: a code action on the selection.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct LspActionConfig {
    /// The title the editor shows in its code-action menu.
    pub(crate) title: String,
    /// What to ask about the selection; the selection, the file name, its language and the
    /// lines around it are added after it.
    pub(crate) prompt: String,
    /// What to do with the reply (default `show`).
    #[serde(default)]
    pub(crate) apply: ApplyMode,
}

/// What a code action does with the model's reply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApplyMode {
    /// Replace the selection with the reply's code block.
    Replace,
    /// Insert the reply's code block on the line below the selection.
    InsertBelow,
    /// Show the reply (a Markdown document, or a message).
    #[default]
    Show,
}

/// `[lsp.completion]`: completion from a model, off by default.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompletionConfig {
    /// Offer completions (`textDocument/completion` and `textDocument/inlineCompletion`).
    #[serde(default)]
    pub enabled: bool,
    /// The model that completes (default: the `[lsp] model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Milliseconds without a newer request before the model is asked (default 300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debounce_ms: Option<u64>,
    /// The most tokens one completion may take (default 64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
}
