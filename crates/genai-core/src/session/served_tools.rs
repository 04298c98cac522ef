//! The workspace's tools served to a client that calls them itself, with no model in between
//! (`genai mcp`): each call passes the same guard a model's call passes in a conversation
//! (the permission policy, asking through the client's port, the hooks, the sandbox, the
//! checkpoint kept before a file changes), so `genai undo` puts back what a call changed.
//!
//! It owns the calls' ids: one session id for the server's life (the checkpoints' conversation)
//! and one turn id per call (the checkpoints' turn, so `genai undo` undoes one call). It must
//! never decide a call (the guard does) nor speak a wire format (the front-end does).

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::{new_id, Framework, PermissionFlags};
use crate::error::{Error, Result};
use crate::feature::guard::{Caller, Guard};
use crate::feature::port::{ClientPort, TurnRef};
use crate::tools::toolbox::Toolbox;
use crate::tools::Tool;
use crate::workspace::{self, Workspace};

/// What one call answered: the text the client shows, and whether it is an error (a refusal,
/// bad arguments, a failed command).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolAnswer {
    pub text: String,
    pub is_error: bool,
    /// The turn id the call's checkpoint is kept under (`genai undo --turn`).
    pub turn_id: String,
}

/// The workspace's tools over one root, for one client.
pub struct ServedTools {
    guard: Arc<Guard>,
    toolbox: Arc<Toolbox>,
    port: Arc<dyn ClientPort>,
    session_id: String,
}

impl Framework {
    /// The workspace's tools over `root`, under the permission policy the config, the
    /// project, the saved rules and `flags` make, asking through `port`; an error when `root`
    /// cannot be a workspace or a rule is wrong.
    pub fn serve_tools(
        &self,
        root: &Path,
        flags: &PermissionFlags,
        port: Arc<dyn ClientPort>,
    ) -> Result<ServedTools> {
        let selection = [workspace::SOURCE.to_string()];
        let root_text = root.to_string_lossy();
        let guard = self.guard(Some(&root_text), Some(&selection), flags)?;
        if guard.workspace().is_none() {
            let why = guard.notes().join("; ");
            return Err(Error::invalid_params(format!(
                "{} cannot be the workspace: {why}",
                root.display()
            )));
        }
        Ok(ServedTools {
            guard,
            toolbox: self.toolbox().clone(),
            port,
            session_id: new_id(),
        })
    }
}

impl ServedTools {
    /// The tools, named by function (`read_file`, `edit_file`, ...), with their schemas.
    pub fn tools(&self) -> Vec<Tool> {
        Workspace::tools()
            .into_iter()
            .map(|mut t| {
                t.name = function(&t.name).to_string();
                t
            })
            .collect()
    }

    /// The workspace's root folder.
    pub fn root(&self) -> &Path {
        self.guard
            .workspace()
            .map_or(Path::new("."), |w| w.root().path())
    }

    /// What the policy and the sandbox say once: ignored project rules, commands not sandboxed.
    pub fn notes(&self) -> &[String] {
        self.guard.notes()
    }

    /// The id the calls' checkpoints are kept under as a conversation (`genai undo --cid`).
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Calls `function` (a name of [`ServedTools::tools`]) with `arguments` through the guard.
    pub async fn call(&self, function: &str, arguments: &Value) -> ToolAnswer {
        let turn = TurnRef {
            conversation_id: self.session_id.clone(),
            turn_id: new_id(),
        };
        let caller = Caller {
            id: &turn,
            port: self.port.as_ref(),
            at_most: None,
        };
        let tool = format!("{}.{function}", workspace::SOURCE);
        let offered = Workspace::tools().into_iter().find(|t| t.name == tool);
        let decisions = Mutex::new(Vec::new());
        let call = (turn.turn_id.as_str(), tool.as_str(), arguments);
        let answer = match &offered {
            Some(t) => {
                let toolbox = &self.toolbox;
                self.guard
                    .call(caller, toolbox, call, Some(t), &decisions)
                    .await
            }
            None => crate::tools::plugin::ModuleAnswer {
                text: format!("there is no workspace tool `{function}`"),
                is_error: true,
                ..Default::default()
            },
        };
        for d in decisions.into_inner().unwrap_or_default() {
            tracing::info!("{}({}): {} by {}", d.tool, d.argument, d.decision, d.by);
        }
        ToolAnswer {
            text: answer.text,
            is_error: answer.is_error,
            turn_id: turn.turn_id,
        }
    }
}

/// `read_file` of `workspace.read_file`.
fn function(name: &str) -> &str {
    name.strip_prefix(workspace::SOURCE)
        .and_then(|n| n.strip_prefix('.'))
        .unwrap_or(name)
}
