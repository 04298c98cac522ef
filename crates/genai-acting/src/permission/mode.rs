//! The permission modes (`read-only`, `plan`, `ask`, `edit`, `full`), what each decides for a
//! call no rule matched, and the answers a call gets.
//!
//! It owns the modes' names and their table (the permission module's documentation shows
//! it). It must never weigh rules or secret files: `Policy::decide` does, before the mode.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use genai_base::error::{Error, Result};

/// What a tool call does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Reads the workspace: `read_file`, `list`, `search`.
    Read,
    /// Changes a file: `edit_file`, `write_file`.
    Edit,
    /// Runs a command: `run_command`.
    Execute,
    /// Reaches the network: `fetch`.
    Fetch,
    /// A tool of an MCP server or plugin module the user configured; `read_only` when the
    /// MCP server marks it `readOnlyHint`.
    Other { read_only: bool },
}

/// How much is allowed without asking, when no rule decides.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Reads only: edits, commands and unmarked tools are denied, fetches asked.
    ReadOnly,
    /// As `read-only`, and the model is told to answer with a plan (its `plan` tool) that a
    /// turn in another mode carries out.
    Plan,
    /// Reads and configured tools run; edits, commands and fetches are asked (the default).
    #[default]
    Ask,
    /// Edits run too; commands and fetches are asked.
    Edit,
    /// Everything runs, except on secret files.
    Full,
}

impl Mode {
    /// Every mode, strictest first.
    pub const ALL: [Mode; 5] = [
        Mode::ReadOnly,
        Mode::Plan,
        Mode::Ask,
        Mode::Edit,
        Mode::Full,
    ];

    /// The mode's name: `read-only`, `plan`, `ask`, `edit`, `full`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::ReadOnly => "read-only",
            Mode::Plan => "plan",
            Mode::Ask => "ask",
            Mode::Edit => "edit",
            Mode::Full => "full",
        }
    }

    /// What this mode decides for a call of this kind no rule matched.
    pub fn decide(self, kind: Kind) -> Decision {
        use Decision::{Allow, Ask, Deny};
        match (kind, self) {
            (Kind::Read, _) | (Kind::Other { read_only: true }, _) => Allow,
            (_, Mode::Full) => Allow,
            (Kind::Fetch, _) => Ask,
            (Kind::Edit | Kind::Execute, Mode::ReadOnly | Mode::Plan) => Deny,
            (Kind::Edit, Mode::Edit) => Allow,
            (Kind::Edit | Kind::Execute, _) => Ask,
            (Kind::Other { read_only: false }, Mode::ReadOnly | Mode::Plan) => Deny,
            (Kind::Other { read_only: false }, _) => Allow,
        }
    }

    /// What a verdict of this mode says decided it: `mode ask`; in plan mode, what to do
    /// about a refused call.
    pub fn verdict_by(self, decision: Decision) -> String {
        match (self, decision) {
            (Mode::Plan, Decision::Deny) => "plan mode: only reads run while the model plans; \
                 carry the plan out in another mode (switch with --mode edit)"
                .to_string(),
            _ => format!("mode {self}"),
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Mode {
    type Err = Error;

    fn from_str(s: &str) -> Result<Mode> {
        Mode::ALL
            .into_iter()
            .find(|m| m.as_str() == s.trim())
            .ok_or_else(|| {
                Error::invalid_params(format!(
                    "unknown permission mode `{s}`: use one of {}",
                    genai_base::error::known(Mode::ALL)
                ))
            })
    }
}

/// The answer to a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Run it.
    Allow,
    /// Ask the user first.
    Ask,
    /// Refuse it.
    Deny,
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        })
    }
}
