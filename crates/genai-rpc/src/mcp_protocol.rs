//! The typed params and results of the methods over MCP servers' resources and prompts
//! (`ListResources`, `ReadResource`, `ListPrompts`, `GetPrompt`); `protocol` re-exports them.
//!
//! Like `protocol`, it owns wire names only and must never hold behaviour.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::listings::{McpPrompt, McpResource, SourceError};
use genai_core::message::{Message, Part};

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ListMcpParams {
    /// MCP server names; default: the enabled ones.
    #[serde(default)]
    pub(crate) sources: Option<Vec<String>>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct ListResourcesResult {
    pub(crate) resources: Vec<McpResource>,
    /// Servers that could not be reached.
    pub(crate) errors: Vec<SourceError>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ReadResourceParams {
    /// The MCP server's name.
    pub(crate) source: String,
    pub(crate) uri: String,
}

/// A resource's contents as message parts, ready to go into a message as context: text (headed
/// by the resource's URI) and images.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct ReadResourceResult {
    pub(crate) contents: Vec<Part>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct ListPromptsResult {
    pub(crate) prompts: Vec<McpPrompt>,
    /// Servers that could not be reached.
    pub(crate) errors: Vec<SourceError>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct GetPromptParams {
    /// The MCP server's name.
    pub(crate) source: String,
    pub(crate) name: String,
    /// The prompt's arguments (default none).
    #[serde(default)]
    pub(crate) arguments: Map<String, Value>,
}

/// The prompt's messages, ready to send (`OnNewMessage`, `SendPrompt`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct GetPromptResult {
    pub(crate) messages: Vec<Message>,
}
