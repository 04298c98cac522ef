//! Tools the model can call: plugin modules (HTTP services with a manifest) and MCP servers
//! (child processes speaking MCP over stdio, or streamable-HTTP servers). Each tool has a name
//! (`SOURCE.function`), a description and a JSON input schema. The built-in `workspace` source
//! is `crate::workspace`.
//!
//! This module owns what a tool is and how a source describes its tools (plugin modules, MCP
//! servers, the toolbox that gathers them). It must never run the model's tool loops (native
//! or ReAct: the agent runs them) nor talk JSON-RPC to a client.

pub mod manifest;
pub(crate) mod mcp;
mod mcp_answer;
pub mod mcp_context;
pub mod plugin;
pub mod signature;
pub mod toolbox;

use serde_json::Value;

/// One tool as the model and the client see it.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    /// `MODULE.function` or `SERVER.tool`.
    pub name: String,
    pub description: String,
    /// A JSON Schema of the arguments object.
    pub input_schema: Value,
    /// `plugin:NAME`, `mcp:NAME` or `workspace`.
    pub source: String,
    /// The tool only reads (an MCP server's `readOnlyHint`, the workspace's reading tools):
    /// the `read-only` permission mode lets it run.
    pub(crate) read_only: bool,
}

/// The tool as the listings show it (`genai-protocol`): a mapping, not a mirror, since the
/// permission hint stays in the core.
impl From<Tool> for genai_protocol::listings::Tool {
    fn from(t: Tool) -> Self {
        genai_protocol::listings::Tool {
            name: t.name,
            description: t.description,
            input_schema: t.input_schema,
            source: t.source,
        }
    }
}

/// A file a tool changed, for a client's diff view.
#[derive(Debug, Clone, PartialEq)]
pub struct FileEdit {
    /// The file's absolute path.
    pub path: std::path::PathBuf,
    /// Its text before (`None`: the tool created it, or it was not text).
    pub old_text: Option<String>,
    pub new_text: String,
}
