//! Commands: prompts kept as files and run by name in every front-end (`genai ask -t NAME`,
//! `/NAME` in chat and ACP, an LSP code action, the daemon's `RunCommand`, VS Code).
//!
//! A command is a Markdown file with a YAML front matter (`file.rs`), looked up in the
//! project's `.genai/commands/`, the config folder's `commands/`, Claude Code's and Codex's
//! folders, `[lsp.actions]` and the built-in ones (`lookup.rs`), and rendered with its
//! arguments, the free text and the input into the text of one user message (`render.rs`).
//!
//! This module owns the format, the lookup and the rendering. It must never run a turn, open
//! a conversation or talk to a model: front-ends do that with what [`Command::prepare`] gives.

pub(crate) mod file;
pub(crate) mod lookup;
mod render;

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use file::{parse, parse_text};
pub use lookup::{fingerprint, valid_name, Commands};
pub(crate) use render::split_free;
pub use render::{split_words, Invocation};

use crate::config::lsp::ApplyMode;
use crate::error::{Error, Result};

/// Which tool wrote a command's file, which says how its placeholders and fields read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Dialect {
    /// genai's own: `{{name}}`, `{{input}}`, `{{args}}`; every field checked.
    Genai,
    /// Claude Code's `.claude/commands/*.md`: `$ARGUMENTS`, `$1`..`$9`.
    ClaudeCode,
    /// Codex's prompt files: `$ARGUMENTS`, `$1`..`$9`, `$NAME` from `NAME=value`.
    Codex,
}

/// Where a command comes from, from the most to the least preferred.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Place {
    /// `.genai/commands/` of the working folder or a folder above it.
    Project,
    /// `.claude/commands/` of the working folder or a folder above it.
    ClaudeProject,
    /// The config folder's `commands/`.
    User,
    /// `~/.claude/commands/`.
    ClaudeUser,
    /// `$CODEX_HOME/prompts/` (default `~/.codex/prompts/`).
    Codex,
    /// `[lsp.actions.NAME]` in the config (the old form of a code action).
    Config,
    /// Shipped in genai.
    Builtin,
}

/// A named argument of a command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Argument {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The value when none is given; without one the argument must be given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// What a command sets up beside its prompt: the conversation it starts and the turn it runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    /// An agent or `PROVIDER:MODEL`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The system prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// Model parameters by name (what `-p NAME=VALUE` sets).
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub parameters: Map<String, Value>,
    /// The JSON Schema the reply must match.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// The tool sources the model may call (what `--tools=` takes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Permission rules whose calls run without asking.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    /// Permission rules whose calls are refused.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
    /// The permission mode of the tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<crate::permission::Mode>,
    /// Files, folders or URLs sent after the prompt, as `-f` takes them (relative to the
    /// working folder, inside it).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) files: Vec<String>,
}

/// One command, ready to render.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Command {
    /// What `-t` and `/` take: the file's name without `.md`, `FOLDER:NAME` in a subfolder.
    pub name: String,
    pub description: String,
    /// The title an editor's menu shows (default: the name).
    pub title: String,
    pub place: Place,
    pub(crate) dialect: Dialect,
    /// The file it was read from (none for the built-in ones and `[lsp.actions]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    pub arguments: Vec<Argument>,
    /// Claude Code's and Codex's `argument-hint`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub argument_hint: Option<String>,
    /// What an editor does with the reply on a selection (default `show`).
    pub apply: ApplyMode,
    pub settings: Settings,
    /// Fields of another tool's file that genai does not use (Claude Code's `model`,
    /// `allowed-tools`...), said by `genai commands show`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unused: Vec<String>,
    /// The prompt with its placeholders.
    pub body: String,
}

/// A rendered command: the text of the user message and what the command sets.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prepared {
    pub(crate) text: String,
    pub(crate) settings: Settings,
}

impl Command {
    /// The text its prompt renders to with `invocation`, and its settings; an error names a
    /// missing or unknown argument.
    pub fn prepare(&self, invocation: &Invocation) -> Result<Prepared> {
        Ok(Prepared {
            text: render::render(self, invocation)?,
            settings: self.settings.clone(),
        })
    }

    /// Whether its prompt places the input itself (`{{input}}`, in genai's files).
    pub fn places_input(&self) -> bool {
        self.dialect == Dialect::Genai
            && render::placeholders(&self.body)
                .iter()
                .any(|(_, name)| name == "input")
    }

    /// The arguments that must be given (no default).
    pub fn required(&self) -> impl Iterator<Item = &Argument> {
        self.arguments.iter().filter(|a| a.default.is_none())
    }

    /// Where it comes from, for listings: its file, or what else.
    pub fn origin(&self) -> String {
        match (&self.path, self.place) {
            (Some(p), _) => p.display().to_string(),
            (None, Place::Config) => format!("[lsp.actions.{}] in the config", self.name),
            (None, _) => "built in".to_string(),
        }
    }
}

/// A command file that could not be read: its path and what is wrong (with the line).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct BadFile {
    /// The name the file would have given.
    pub name: String,
    pub path: PathBuf,
    /// `PATH:LINE: what is wrong`.
    pub message: String,
}

impl BadFile {
    pub(crate) fn error(&self) -> Error {
        Error::invalid_params(self.message.clone())
    }
}

/// Whether `name` can name an argument: letters, digits and `_`, not first a digit.
pub(crate) fn valid_argument_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
}

/// The built-in commands: explain, improve, document, test, fix (files of this folder).
const BUILTIN: [(&str, &str); 5] = [
    ("explain", include_str!("builtin/explain.md")),
    ("improve", include_str!("builtin/improve.md")),
    ("document", include_str!("builtin/document.md")),
    ("test", include_str!("builtin/test.md")),
    ("fix", include_str!("builtin/fix.md")),
];

/// The built-in commands, parsed (a test keeps them valid).
pub fn builtin() -> Vec<Command> {
    BUILTIN
        .iter()
        .filter_map(|(name, text)| {
            file::parse_text(name, text, Dialect::Genai, Place::Builtin, None).ok()
        })
        .collect()
}

/// `[lsp.actions.NAME]` as commands: the prompt is the instruction, the selection follows.
pub(crate) fn from_lsp_actions(
    actions: &BTreeMap<String, crate::config::lsp::LspActionConfig>,
) -> Vec<Command> {
    actions
        .iter()
        .map(|(name, a)| Command {
            name: name.clone(),
            description: a.title.clone(),
            title: a.title.clone(),
            place: Place::Config,
            dialect: Dialect::Genai,
            path: None,
            arguments: Vec::new(),
            argument_hint: None,
            apply: a.apply,
            settings: Settings::default(),
            unused: Vec::new(),
            body: a.prompt.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests;
