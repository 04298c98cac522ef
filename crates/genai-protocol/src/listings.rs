//! The wire shapes of what the core lists — stored conversations and messages, registered
//! components, tools — and their conversions from the core's own types. Field names, order and
//! doc comments here are the protocol (the schemas are generated from them); the core's types
//! may change without changing these.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use genai_core::message::{Message, Usage};
use genai_core::{provider, select, store, tools};

/// One conversation as stored.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConversationRecord {
    pub(crate) id: String,
    /// The first user message, shortened (or the title the client gave).
    pub(crate) title: String,
    pub(crate) feature: String,
    /// The service provider instance name.
    pub(crate) provider: String,
    /// The model configuration instance name, when one was named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) model_configuration: Option<String>,
    pub(crate) format: String,
    pub(crate) model: String,
    #[serde(default)]
    pub(crate) parameters: Map<String, Value>,
    /// Milliseconds since the Unix epoch.
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
    #[serde(default)]
    pub(crate) message_count: u64,
    /// The tool sources or tools the conversation may use (`tools` feature); none: the
    /// enabled sources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tools: Option<Vec<String>>,
    /// `PROVIDER:MODEL` that answered the last turn, a fallback's when one served (absent
    /// before a turn, and for turns stored before genai recorded it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) answered_by: Option<String>,
    /// The folder it was started in, its root (where its workspace tools work), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cwd: Option<String>,
}

impl From<store::ConversationRecord> for ConversationRecord {
    fn from(r: store::ConversationRecord) -> Self {
        ConversationRecord {
            id: r.id,
            title: r.title,
            feature: r.feature,
            provider: r.provider,
            model_configuration: r.model_configuration,
            format: r.format,
            model: r.model,
            parameters: r.parameters,
            created_at: r.created_at,
            updated_at: r.updated_at,
            message_count: r.message_count,
            tools: r.tools,
            answered_by: r.answered_by,
            cwd: r.cwd,
        }
    }
}

/// One message as stored, with its place in the conversation.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StoredMessage {
    pub(crate) seq: i64,
    #[serde(flatten)]
    pub(crate) message: Message,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) usage: Option<Usage>,
    /// What the request that produced this message cost in US dollars (with `usage`; absent
    /// when unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cost: Option<f64>,
    pub(crate) created_at: i64,
    /// The model that ran this message's turn (absent for messages stored before genai
    /// recorded it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) model: Option<String>,
    /// The provider that answered that turn, a fallback's when one served (absent for
    /// messages stored before genai recorded it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) provider: Option<String>,
}

impl From<store::StoredMessage> for StoredMessage {
    fn from(m: store::StoredMessage) -> Self {
        StoredMessage {
            seq: m.seq,
            message: m.message,
            usage: m.usage,
            cost: m.cost,
            created_at: m.created_at,
            model: m.model,
            provider: m.provider,
        }
    }
}

/// What `ListComponents` reports.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Components {
    /// What a conversation that names no model runs on (`CreateConversation` without
    /// `agent` or `serviceProvider`, `genai ask` without `-m`); absent when nothing is chosen
    /// by default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) default: Option<DefaultChoice>,
    pub service_providers: Vec<ProviderInfo>,
    pub model_configurations: Vec<ModelInfo>,
    pub features: Vec<Value>,
    /// Registered kinds: `serviceProviders` (with the formats each runs) and `modelConfigurations` (with their parameters).
    pub kinds: Value,
}

/// The default choice of `ListComponents`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DefaultChoice {
    /// The provider instance.
    pub(crate) service_provider: String,
    /// A named model configuration, when the default names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) model_configuration: Option<String>,
    /// A model id, when the default names one (else the provider's default model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) model: Option<String>,
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

impl From<provider::KeyStatus> for KeyStatus {
    fn from(k: provider::KeyStatus) -> Self {
        match k {
            provider::KeyStatus::NotNeeded => KeyStatus::NotNeeded,
            provider::KeyStatus::Found => KeyStatus::Found,
            provider::KeyStatus::Missing => KeyStatus::Missing,
        }
    }
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderInfo {
    pub name: String,
    pub kind: String,
    pub default_model: Option<String>,
    pub origin: String,
    /// Whether it has the key it needs.
    pub(crate) key: KeyStatus,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelInfo {
    pub name: String,
    pub format: String,
    pub model: String,
    pub(crate) parameters: Map<String, Value>,
    pub(crate) origin: String,
}

impl From<select::Listed> for Components {
    fn from(listed: select::Listed) -> Self {
        let c = listed.registered;
        Components {
            default: listed.default.map(|d| DefaultChoice {
                service_provider: d.provider,
                model_configuration: d.model_configuration,
                model: d.model,
            }),
            service_providers: c
                .service_providers
                .iter()
                .map(|p| ProviderInfo {
                    name: p.name.clone(),
                    kind: p.kind.to_string(),
                    default_model: p.provider.default_model().map(str::to_string),
                    origin: p.origin.as_str().to_string(),
                    key: p.provider.key_status().into(),
                })
                .collect(),
            model_configurations: c
                .model_configurations
                .into_iter()
                .map(|m| ModelInfo {
                    name: m.name,
                    format: m.format.to_string(),
                    model: m.model,
                    parameters: m.parameters,
                    origin: m.origin.as_str().to_string(),
                })
                .collect(),
            features: c
                .features
                .iter()
                .map(|f| json!({"name": f.name, "description": f.description, "origin": f.origin.as_str()}))
                .collect(),
            kinds: json!({
                "serviceProviders": c.provider_kinds.iter().map(|k| json!({
                    "name": k.name,
                    "description": k.description,
                    "formats": k.formats,
                    "defaultFormat": k.default_format,
                })).collect::<Vec<_>>(),
                "modelConfigurations": c.format_kinds.iter().map(|k| json!({
                    "name": k.name,
                    "description": k.description,
                    "parameters": k.parameters,
                })).collect::<Vec<_>>(),
            }),
        }
    }
}

/// One tool as the model and the client see it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// `MODULE.function` or `SERVER.tool`.
    pub(crate) name: String,
    pub(crate) description: String,
    /// A JSON Schema of the arguments object.
    pub(crate) input_schema: Value,
    /// `plugin:NAME` or `mcp:NAME`.
    pub(crate) source: String,
}

impl From<tools::Tool> for Tool {
    fn from(t: tools::Tool) -> Self {
        Tool {
            name: t.name,
            description: t.description,
            input_schema: t.input_schema,
            source: t.source,
        }
    }
}

/// A source that could not be loaded, and why.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SourceError {
    pub(crate) source: String,
    pub(crate) message: String,
}

impl From<tools::toolbox::SourceError> for SourceError {
    fn from(e: tools::toolbox::SourceError) -> Self {
        SourceError {
            source: e.source,
            message: e.message,
        }
    }
}

/// A resource an MCP server lists (`ListResources`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpResource {
    /// The MCP server's name in the config.
    pub(crate) source: String,
    pub(crate) uri: String,
    pub(crate) name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) mime_type: Option<String>,
}

impl From<tools::mcp_context::McpResource> for McpResource {
    fn from(r: tools::mcp_context::McpResource) -> Self {
        McpResource {
            source: r.source,
            uri: r.uri,
            name: r.name,
            description: r.description,
            mime_type: r.mime_type,
        }
    }
}

/// An argument of an MCP prompt.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct McpPromptArgument {
    pub(crate) name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) description: Option<String>,
    pub(crate) required: bool,
}

/// A prompt an MCP server lists (`ListPrompts`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct McpPrompt {
    /// The MCP server's name in the config.
    pub(crate) source: String,
    pub(crate) name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) description: Option<String>,
    pub(crate) arguments: Vec<McpPromptArgument>,
}

impl From<tools::mcp_context::McpPrompt> for McpPrompt {
    fn from(p: tools::mcp_context::McpPrompt) -> Self {
        McpPrompt {
            source: p.source,
            name: p.name,
            description: p.description,
            arguments: p
                .arguments
                .into_iter()
                .map(|a| McpPromptArgument {
                    name: a.name,
                    description: a.description,
                    required: a.required,
                })
                .collect(),
        }
    }
}
