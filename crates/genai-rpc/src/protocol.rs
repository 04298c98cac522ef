//! The typed params, results and notifications of the JSON-RPC protocol (see docs/PROTOCOL.md).
//!
//! Every type here derives `JsonSchema`; `schemas/` is generated from them. This module owns
//! the wire names and must never hold behaviour: `dispatch` translates, the core acts.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub(crate) use super::editor_protocol::*;
use super::listings::ConversationRecord;
pub(crate) use super::tool_protocol::*;
use genai_core::message::{Message, Usage};
use genai_core::store::StoredMessage;
use genai_protocol::with_model_choice;

pub(crate) use super::command_protocol::*;
pub(crate) use super::mcp_protocol::*;

pub(crate) const PROTOCOL_VERSION: &str = "1.0";

/// A message as a client may send it: a plain string (a user message) or a Message object.
#[derive(Debug, Clone, JsonSchema)]
#[serde(untagged)]
pub(crate) enum MessageInput {
    Text(String),
    Message(Message),
}

/// By hand rather than `untagged`, which would answer a message's own error (a refused file
/// part, a wrong role) with "did not match any variant".
impl<'de> Deserialize<'de> for MessageInput {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::String(text) => Ok(MessageInput::Text(text)),
            other => Message::deserialize(other)
                .map(MessageInput::Message)
                .map_err(serde::de::Error::custom),
        }
    }
}

impl MessageInput {
    pub(crate) fn into_message(self) -> Message {
        match self {
            MessageInput::Text(t) => Message::user(t),
            MessageInput::Message(m) => m,
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InitializeParams {
    // Part of the wire and its schema; no handler reads it. (A doc comment here would change
    // the schema's description.)
    #[serde(default)]
    #[allow(dead_code)]
    pub(crate) client_info: Option<Value>,
    #[serde(default)]
    pub(crate) capabilities: ClientCapabilities,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ClientCapabilities {
    /// Whether the client wants `OnFeatureResponseChunk`/`OnPromptResponseChunk` (default true).
    #[serde(default = "yes")]
    pub(crate) streaming: bool,
    /// The client reads or writes the workspace tools' files itself.
    #[serde(default)]
    pub(crate) editor: EditorCapabilities,
}

impl Default for ClientCapabilities {
    fn default() -> Self {
        ClientCapabilities {
            streaming: true,
            editor: EditorCapabilities::default(),
        }
    }
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InitializeResult {
    pub(crate) server_info: ServerInfo,
    pub(crate) protocol_version: String,
    pub(crate) capabilities: Value,
    /// Over WebSocket (`genai serve`) only: the folders a conversation may work in (`cwd`)
    /// and the one it works in when `cwd` is not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) roots: Option<WorkspaceRoots>,
}

/// The folders `genai serve` lets its WebSocket clients root conversations in (`[serve] roots`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceRoots {
    /// Where a conversation works when `CreateConversation` gives no `cwd` (the folder the
    /// serve was started in, when it is allowed).
    pub default: String,
    /// A `cwd` must be one of these folders or inside one (canonical paths).
    pub allowed: Vec<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct ServerInfo {
    pub(crate) name: String,
    pub(crate) version: String,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct CreateServiceProviderParams {
    pub(crate) name: String,
    pub(crate) kind: String,
    /// The same keys as a `[service_providers.NAME]` table of the config file (`base_url`, ...).
    #[serde(default)]
    pub(crate) settings: Map<String, Value>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct CreateModelConfigurationParams {
    pub(crate) name: String,
    pub(crate) format: String,
    pub(crate) model: String,
    #[serde(default)]
    pub(crate) parameters: Map<String, Value>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct RemoveComponentParams {
    pub(crate) name: String,
}

with_model_choice! {
/// Names what a conversation runs on: an `agent` from the config, or a `serviceProvider` with a
/// `modelConfiguration` instance or a `model` id (or neither: the provider's default model).
/// With nothing, the config's `[defaults] model` is used.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct CreateConversationParams {
    #[serde(default)]
    pub(crate) feature: Option<String>,
} then {
    #[serde(default)]
    pub(crate) title: Option<String>,
    /// A system prompt for this conversation (replaces the agent's and the feature's).
    #[serde(default)]
    pub(crate) system_prompt: Option<String>,
    /// Model parameters, checked like `SetModelParameter`.
    #[serde(default)]
    pub(crate) parameters: Option<Map<String, Value>>,
    /// Keep the conversation out of the history store.
    #[serde(default)]
    pub(crate) ephemeral: bool,
    /// The tool sources (plugin or MCP server names) or single tools (`SOURCE.tool`) the
    /// model may call; implies the `tools` feature. Default: the enabled sources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tools: Option<Vec<String>>,
    /// The JSON Schema every reply must match (structured output): the reply is checked, retried
    /// once with the errors, and fails when it still does not match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) response_schema: Option<Value>,
    /// The folder the workspace tools work in, the conversation's root (default: the daemon's
    /// working directory; under `genai serve`, the default of `Initialize`'s `roots`, and a
    /// folder outside its `allowed` ones is refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cwd: Option<String>,
    /// The permission mode of tool calls: `read-only`, `ask`, `edit` or `full` (default: the
    /// config's, else `ask`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) mode: Option<genai_core::permission::Mode>,
    /// Rules whose calls run without asking, such as `run_command(cargo test*)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) allow: Vec<String>,
    /// Rules whose calls are refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) deny: Vec<String>,
    /// The schema's name as the APIs get it (letters, digits, `_`, `-`; default `response`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) response_schema_name: Option<String>,
}
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreateConversationResult {
    pub(crate) conversation_id: String,
    pub(crate) agent_id: String,
    pub(crate) feature: String,
    pub(crate) service_provider: String,
    pub(crate) format: String,
    pub(crate) model: String,
    /// The conversation's root, the folder its workspace tools work in, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cwd: Option<String>,
}

with_model_choice! {
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct CreateAIAgentParams {
    #[serde(default)]
    pub(crate) parameters: Option<Map<String, Value>>,
}
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AgentIdResult {
    pub(crate) agent_id: String,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct AgentIdParams {
    pub(crate) agent_id: String,
}

/// A conversation id, or any unique prefix of one.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ConversationIdParams {
    pub(crate) conversation_id: String,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ListConversationsParams {
    #[serde(default = "default_page")]
    pub(crate) page_size: usize,
    #[serde(default)]
    pub(crate) cursor: Option<String>,
}

fn default_page() -> usize {
    50
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListConversationsResult {
    pub(crate) conversations: Vec<ConversationRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) next_cursor: Option<String>,
}

/// `SearchConversations`: every word of `query`, in every stored message.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct SearchConversationsParams {
    pub(crate) query: String,
    /// How many messages (default 20, 1..=200).
    #[serde(default = "default_search_limit")]
    pub(crate) limit: usize,
}

fn default_search_limit() -> usize {
    20
}

/// One message that matches, best first.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SearchHit {
    pub(crate) conversation_id: String,
    pub(crate) title: String,
    pub(crate) seq: i64,
    pub(crate) role: String,
    /// The text around the matches, each match between `**` and `**`.
    pub(crate) snippet: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SearchConversationsResult {
    pub(crate) hits: Vec<SearchHit>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct GetConversationHistoryParams {
    pub(crate) conversation_id: String,
    #[serde(default = "default_page")]
    pub(crate) page_size: usize,
    #[serde(default)]
    pub(crate) cursor: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GetConversationHistoryResult {
    pub(crate) messages: Vec<StoredMessage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) next_cursor: Option<String>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct OnNewMessageParams {
    pub(crate) conversation_id: String,
    pub(crate) message: MessageInput,
    /// The JSON Schema this turn's reply must match (structured output): the reply is checked, retried
    /// once with the errors, and fails when it still does not match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) response_schema: Option<Value>,
    /// The schema's name as the APIs get it (letters, digits, `_`, `-`; default `response`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) response_schema_name: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TurnIdResult {
    pub(crate) turn_id: String,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct SendPromptParams {
    pub(crate) agent_id: String,
    /// The messages of the prompt; a plain string is one user message.
    pub(crate) prompt: PromptInput,
    /// The JSON Schema the reply must match (structured output): the reply is checked, retried
    /// once with the errors, and fails when it still does not match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) response_schema: Option<Value>,
    /// The schema's name as the APIs get it (letters, digits, `_`, `-`; default `response`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) response_schema_name: Option<String>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum PromptInput {
    Text(String),
    Messages(Vec<Message>),
}

impl PromptInput {
    pub(crate) fn into_messages(self) -> Vec<Message> {
        match self {
            PromptInput::Text(t) => vec![Message::user(t)],
            PromptInput::Messages(m) => m,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RequestIdResult {
    pub(crate) request_id: String,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct SetModelParameterParams {
    pub(crate) agent_id: String,
    pub(crate) name: String,
    /// The new value (a string is converted to the parameter's type); `null` removes it.
    pub(crate) value: Value,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct RegisterFeatureParams {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) description: String,
}

/// A client hosts the middleware `name` from now on; it answers each `OnMiddleware` within
/// `timeoutMs` (default 30000).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct RegisterMiddlewareParams {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) timeout_ms: Option<u64>,
}

/// `OnMiddleware` (daemon→client request): the messages a request is about to send (history
/// included) through the middleware `name` the client hosts; the answer is the messages to send.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OnMiddlewareParams {
    pub(crate) name: String,
    /// The format and model the messages go to.
    pub(crate) format: String,
    pub(crate) model: String,
    pub(crate) messages: Vec<Message>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OnMiddlewareResult {
    pub(crate) messages: Vec<Message>,
}

/// From a client-hosted feature: the answer of a turn (`final` defaults to true).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct OnFeatureResponseParams {
    pub(crate) conversation_id: String,
    #[serde(default)]
    pub(crate) turn_id: Option<String>,
    pub(crate) summary: String,
    #[serde(default)]
    pub(crate) detailed_response: Vec<String>,
    #[serde(default = "yes", rename = "final")]
    pub(crate) is_final: bool,
    /// Set when the turn failed: the final `OnFeatureResponse` then has `isSuccess: false`
    /// and an error of kind `featureError` with this text.
    #[serde(default)]
    pub(crate) error: Option<String>,
}

/// Stops a turn (by `conversationId` or `turnId`) or a prompt (by `requestId`).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct CancelParams {
    #[serde(default)]
    pub(crate) conversation_id: Option<String>,
    #[serde(default)]
    pub(crate) turn_id: Option<String>,
    #[serde(default)]
    pub(crate) request_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CancelResult {
    /// False when nothing was running under that id.
    pub(crate) cancelled: bool,
}

/// The error part of a failed turn or prompt.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ErrorInfo {
    pub(crate) kind: String,
    pub(crate) message: String,
}

impl From<&genai_core::error::Error> for ErrorInfo {
    fn from(e: &genai_core::error::Error) -> Self {
        ErrorInfo {
            kind: e.kind.as_str().to_string(),
            message: e.message.clone(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FeatureResponseChunk {
    pub(crate) conversation_id: String,
    pub(crate) turn_id: String,
    pub(crate) delta: String,
}

/// A turn's request neared its model's context: its oldest turns are sent as a summary from
/// now on (the history keeps every turn).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Compaction {
    pub(crate) conversation_id: String,
    pub(crate) turn_id: String,
    /// The turns sent as their summary, from the conversation's start.
    pub(crate) turns: usize,
    /// About how many tokens the request's messages took before and after.
    pub(crate) tokens_before: usize,
    pub(crate) tokens_after: usize,
    /// Who wrote the summary: `the conversation's model` or `agent NAME`.
    pub(crate) by: String,
}

/// The model set out or updated its plan (the workspace's `plan` tool): every step with its
/// status, the whole plan each time.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Plan {
    pub(crate) conversation_id: String,
    pub(crate) turn_id: String,
    pub(crate) entries: Vec<genai_protocol::plan::PlanEntry>,
}

/// What a subagent did, nested under its parent's `task` call (`OnSubagentEvent`).
pub(crate) type SubagentNotice = genai_protocol::subagent::SubagentNotice<Usage>;

/// A piece of a tool call as the model streams it (the `tools` feature, streaming on): the
/// pieces of one call share `index`; `id` and `name` come with its first piece; `arguments`
/// are the next characters of its JSON arguments.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolCallChunk {
    pub(crate) conversation_id: String,
    pub(crate) turn_id: String,
    pub(crate) index: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) id: Option<String>,
    /// The tool's name (`SOURCE.function`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) name: Option<String>,
    pub(crate) arguments: String,
}

/// The end (when `final`) or a step of a turn: the summary is the chat bubble.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FeatureResponse {
    pub(crate) conversation_id: String,
    pub(crate) turn_id: String,
    pub(crate) summary: String,
    pub(crate) detailed_response: Vec<String>,
    #[serde(rename = "final")]
    pub(crate) is_final: bool,
    pub(crate) is_success: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<ErrorInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) usage: Option<Usage>,
    /// What the turn cost in US dollars, from the model's price (`[pricing]` or the built-in
    /// estimates); absent when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cost: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) finish_reason: Option<String>,
    /// The files the turn's tools changed (absolute paths), for an Undo; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) changed_files: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PromptResponseChunk {
    pub(crate) agent_id: String,
    pub(crate) request_id: String,
    pub(crate) delta: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PromptResponse {
    pub(crate) agent_id: String,
    pub(crate) request_id: String,
    pub(crate) is_success: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) message: Option<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<ErrorInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) finish_reason: Option<String>,
}

/// Sent to the client that hosts the conversation's feature.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NewMessageToFeature {
    pub(crate) conversation_id: String,
    pub(crate) agent_id: String,
    pub(crate) turn_id: String,
    pub(crate) feature: String,
    pub(crate) message: Message,
}

/// A notification from the daemon to the client.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(tag = "method", content = "params")]
pub(crate) enum Event {
    OnFeatureResponseChunk(FeatureResponseChunk),
    /// A piece of the model's reasoning, apart from the answer's chunks (same params).
    OnReasoningChunk(FeatureResponseChunk),
    OnFeatureResponse(FeatureResponse),
    OnPromptResponseChunk(PromptResponseChunk),
    OnPromptResponse(PromptResponse),
    OnNewMessage(NewMessageToFeature),
    DoAction(DoActionParams),
    OnToolCallChunk(ToolCallChunk),
    OnCompaction(Compaction),
    OnPlan(Plan),
    #[serde(rename = "OnSubagentEvent")]
    OnSubagent(SubagentNotice),
}
