//! The wire shapes of what the core lists — stored conversations and messages, registered
//! components, tools, MCP resources and prompts — each written once. Field names, order and
//! doc comments here are the protocol (the schemas are generated from them).
//!
//! The core uses these types as its own where it holds the same data (the store reads its
//! rows into [`ConversationRecord`] and [`StoredMessage`]; [`KeyStatus`], [`SourceError`],
//! [`McpResource`] and [`McpPrompt`] are what it hands out). Where its own type holds more —
//! a tool's permission hint, the registry's live instances behind [`Components`] — the core
//! maps it to these. This module must never convert from, nor name, a core type:
//! [`StoredMessage`] takes the message model as type parameters for that reason.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One conversation as stored.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConversationRecord {
    pub id: String,
    /// The first user message, shortened (or the title the client gave).
    pub title: String,
    pub feature: String,
    /// The service provider instance name.
    pub provider: String,
    /// The model configuration instance name, when one was named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_configuration: Option<String>,
    pub format: String,
    pub model: String,
    #[serde(default)]
    pub parameters: Map<String, Value>,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
    pub updated_at: i64,
    #[serde(default)]
    pub message_count: u64,
    /// The tool sources or tools the conversation may use (`tools` feature); none: the
    /// enabled sources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// `PROVIDER:MODEL` that answered the last turn, a fallback's when one served (absent
    /// before a turn, and for turns stored before genai recorded it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<String>,
    /// The folder it was started in, its root (where its workspace tools work), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

// `M` and `U` are the core's message and token usage (`genai_core::store::StoredMessage`
// names them): their schemas are the core's message model, which this crate must not know.
// A comment, not a doc comment: a doc comment would change the schema's description.
/// One message as stored, with its place in the conversation.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "StoredMessage")]
pub struct StoredMessage<M, U> {
    pub seq: i64,
    #[serde(flatten)]
    pub message: M,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<U>,
    /// What the request that produced this message cost in US dollars (with `usage`; absent
    /// when unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    pub created_at: i64,
    /// The model that ran this message's turn (absent for messages stored before genai
    /// recorded it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The provider that answered that turn, a fallback's when one served (absent for
    /// messages stored before genai recorded it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
}

/// What `ListComponents` reports.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Components {
    /// What a conversation that names no model runs on (`CreateConversation` without
    /// `agent` or `serviceProvider`, `genai ask` without `-m`); absent when nothing is chosen
    /// by default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<DefaultChoice>,
    pub service_providers: Vec<ProviderInfo>,
    pub model_configurations: Vec<ModelInfo>,
    pub features: Vec<Value>,
    /// Registered kinds: `serviceProviders` (with the formats each runs) and `modelConfigurations` (with their parameters).
    pub kinds: Value,
}

/// The default choice of `ListComponents`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DefaultChoice {
    /// The provider instance.
    pub service_provider: String,
    /// A named model configuration, when the default names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_configuration: Option<String>,
    /// A model id, when the default names one (else the provider's default model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// Whether a provider instance has the credentials it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum KeyStatus {
    /// It needs no key (the local engine, Ollama, another server speaking a vendor's API).
    NotNeeded,
    /// It needs a key and one is set (environment, keyring, key file, `api_key_cmd`, config).
    Found,
    /// It needs a key and none is set: its requests fail until one is (`genai keys set NAME`).
    Missing,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderInfo {
    pub name: String,
    pub kind: String,
    pub default_model: Option<String>,
    pub origin: String,
    /// Whether it has the key it needs.
    pub key: KeyStatus,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelInfo {
    pub name: String,
    pub format: String,
    pub model: String,
    pub parameters: Map<String, Value>,
    pub origin: String,
}

/// One tool as the model and the client see it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// `MODULE.function` or `SERVER.tool`.
    pub name: String,
    pub description: String,
    /// A JSON Schema of the arguments object.
    pub input_schema: Value,
    /// `plugin:NAME` or `mcp:NAME`.
    pub source: String,
}

/// A source that could not be loaded, and why.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SourceError {
    pub source: String,
    pub message: String,
}

/// A resource an MCP server lists (`ListResources`).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpResource {
    /// The MCP server's name in the config.
    pub source: String,
    pub uri: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// An argument of an MCP prompt.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct McpPromptArgument {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub required: bool,
}

/// A prompt an MCP server lists (`ListPrompts`).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct McpPrompt {
    /// The MCP server's name in the config.
    pub source: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub arguments: Vec<McpPromptArgument>,
}
