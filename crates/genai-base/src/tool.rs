//! What a tool is, as every layer sees it: its name, description, input schema and source,
//! and a file it changed. It must never run a tool nor know where one comes from: the core's
//! tool sources and the workspace's built-in tools each build these.

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
    pub read_only: bool,
}

/// The tool as the listings show it (`genai-protocol`): a mapping, not a mirror, since the
/// permission hint (`read_only`) is for the permission policy, not for clients.
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
