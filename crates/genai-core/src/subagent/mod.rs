//! Subagents: agents defined as files that the model hands part of a task to through the
//! `task` tool (`feature::task` runs them).
//!
//! A definition is a Markdown file with a YAML front matter (`file.rs`): genai's own
//! `.genai/agents/NAME.md` and Claude Code's `.claude/agents/NAME.md` read unchanged (name,
//! description, tools, model; the body is the system prompt). They are looked up nearest
//! first, as commands are: `.genai/agents/` of the working folder and each folder above it,
//! then `.claude/agents/` the same way, then the config folder's `agents/`, then
//! `~/.claude/agents/` (`$CLAUDE_CONFIG_DIR`). The first place holding a name wins; a file
//! that cannot be read is listed with its reason and never fatal.
//!
//! This module owns the format and the lookup. It must never run a turn nor widen what a
//! conversation may do: a definition can only narrow the parent's tools and mode.

mod file;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Serialize;

pub use file::{parse_text, workspace_tool};

use crate::command::lookup::{folders_of, walkdir_sorted};
pub use crate::command::{BadFile, Dialect, Place};
use crate::error::{Error, Result};
use crate::permission::Mode;

/// Which model a subagent runs on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "name")]
pub enum ModelChoice {
    /// The parent's model (`inherit`, no `model`, or Claude Code's `sonnet`, `opus`, `haiku`).
    Inherit,
    /// A model named in the definition, as `-m` takes it (an agent of the config,
    /// `PROVIDER:MODEL`, a provider, `local`): the subagent runs on it.
    Named(String),
}

impl ModelChoice {
    fn read(text: &str) -> ModelChoice {
        match text.trim() {
            "" | "inherit" | "sonnet" | "opus" | "haiku" => ModelChoice::Inherit,
            other => ModelChoice::Named(other.to_string()),
        }
    }
}

/// One subagent's definition.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Definition {
    /// What the `task` tool's `agent` takes: the front matter's `name`, else the file's name.
    pub name: String,
    pub description: String,
    /// The workspace tools it may call (`workspace.read_file`...); `None`: all of the
    /// parent's. Always within the parent's: a tool the parent lacks is not given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Names in `tools` genai has no tool for (Claude Code's `WebSearch`...): left out.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unknown_tools: Vec<String>,
    pub model: ModelChoice,
    /// A permission mode for its calls; it only applies when stricter than the parent's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    pub place: Place,
    pub path: Option<PathBuf>,
    /// Fields of Claude Code's file that genai does not use.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unused: Vec<String>,
    /// The system prompt: the file's body.
    pub system: String,
}

impl Definition {
    /// Whether it may call `tool` (a tool's full name), before the parent's own limits.
    pub fn allows_tool(&self, tool: &str) -> bool {
        self.tools
            .as_ref()
            .is_none_or(|t| t.iter().any(|n| n == tool))
    }

    /// The mode its calls are decided in under a parent in `parent`: the stricter of the two.
    pub fn mode_under(&self, parent: Mode) -> Mode {
        match self.mode {
            // Modes are ordered strictest first.
            Some(m) if m < parent => m,
            _ => parent,
        }
    }
}

/// The subagents seen from a working folder, by name.
#[derive(Debug, Clone, Default)]
pub struct Definitions {
    entries: BTreeMap<String, std::result::Result<Definition, BadFile>>,
}

impl Definitions {
    /// Reads every folder of the lookup, nearest first.
    pub fn load(cwd: &Path, config_dir: Option<&Path>) -> Definitions {
        let mut defs = Definitions::default();
        for folder in folders_of("agents", cwd, config_dir) {
            for path in walkdir_sorted(&folder.path, 1) {
                let Some(stem) = path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.strip_suffix(".md"))
                else {
                    continue;
                };
                let read = file::parse(stem, &path, folder.dialect, folder.place);
                let name = read.as_ref().map_or(stem, |d| d.name.as_str()).to_string();
                defs.entries.entry(name).or_insert(read);
            }
        }
        defs
    }

    /// The definitions that can run, by name.
    pub fn list(&self) -> impl Iterator<Item = &Definition> {
        self.entries.values().filter_map(|e| e.as_ref().ok())
    }

    /// The files that cannot be read.
    pub fn bad(&self) -> impl Iterator<Item = &BadFile> {
        self.entries.values().filter_map(|e| e.as_ref().err())
    }

    /// Whether no definition can run.
    pub fn is_empty(&self) -> bool {
        self.list().next().is_none()
    }

    /// The subagent `name`; an error says what is wrong with its file, or which there are.
    pub fn find(&self, name: &str) -> Result<&Definition> {
        match self.entries.get(name) {
            Some(Ok(d)) => Ok(d),
            Some(Err(bad)) => Err(Error::invalid_params(bad.message.clone())),
            None => Err(Error::invalid_params(format!(
                "no subagent `{name}`: there are {} (genai agents list shows them)",
                crate::error::known(self.list().map(|d| d.name.clone()))
            ))),
        }
    }
}
