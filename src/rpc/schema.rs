//! The JSON Schemas of the protocol, the message model and the config file, generated from the
//! Rust types. `schemas/` holds them committed; a test fails when they drift.
//! This module only lists types; it must never hand-write a schema. The one hand-written
//! schema, `plugin-manifest.json` (a contract for module authors), lives beside them and is
//! named in [`HAND_WRITTEN`].

use schemars::{schema_for, JsonSchema};
use serde_json::Value;

use super::listings::Components;
use super::protocol::*;

fn s<T: JsonSchema>() -> Value {
    serde_json::to_value(schema_for!(T)).unwrap_or(Value::Null)
}

/// Schemas in `schemas/` written by hand, not generated.
pub const HAND_WRITTEN: &[&str] = &["plugin-manifest.json"];

/// Every schema by file name (without `.json`), in a stable order.
pub fn all() -> Vec<(&'static str, Value)> {
    vec![
        ("message", s::<crate::message::Message>()),
        ("config", s::<crate::config::Config>()),
        ("Initialize.params", s::<InitializeParams>()),
        ("Initialize.result", s::<InitializeResult>()),
        ("ListComponents.result", s::<Components>()),
        (
            "CreateServiceProvider.params",
            s::<CreateServiceProviderParams>(),
        ),
        (
            "CreateModelConfiguration.params",
            s::<CreateModelConfigurationParams>(),
        ),
        ("RemoveComponent.params", s::<RemoveComponentParams>()),
        ("CreateConversation.params", s::<CreateConversationParams>()),
        ("CreateConversation.result", s::<CreateConversationResult>()),
        ("ResumeConversation.params", s::<ConversationIdParams>()),
        ("ResumeConversation.result", s::<CreateConversationResult>()),
        ("RemoveConversation.params", s::<ConversationIdParams>()),
        ("DeleteConversation.params", s::<ConversationIdParams>()),
        ("ListConversations.params", s::<ListConversationsParams>()),
        ("ListConversations.result", s::<ListConversationsResult>()),
        (
            "SearchConversations.params",
            s::<SearchConversationsParams>(),
        ),
        (
            "SearchConversations.result",
            s::<SearchConversationsResult>(),
        ),
        (
            "GetConversationHistory.params",
            s::<GetConversationHistoryParams>(),
        ),
        (
            "GetConversationHistory.result",
            s::<GetConversationHistoryResult>(),
        ),
        ("OnNewMessage.params", s::<OnNewMessageParams>()),
        ("OnNewMessage.result", s::<TurnIdResult>()),
        ("CreateAIAgent.params", s::<CreateAIAgentParams>()),
        ("CreateAIAgent.result", s::<AgentIdResult>()),
        ("RemoveAIAgent.params", s::<AgentIdParams>()),
        ("SendPrompt.params", s::<SendPromptParams>()),
        ("SendPrompt.result", s::<RequestIdResult>()),
        ("GetHistory.params", s::<AgentIdParams>()),
        ("GetHistory.result", s::<Vec<crate::message::Message>>()),
        ("SetModelParameter.params", s::<SetModelParameterParams>()),
        ("RegisterFeature.params", s::<RegisterFeatureParams>()),
        ("RegisterMiddleware.params", s::<RegisterMiddlewareParams>()),
        ("OnMiddleware.params", s::<OnMiddlewareParams>()),
        ("OnMiddleware.result", s::<OnMiddlewareResult>()),
        ("OnFeatureResponse.params", s::<OnFeatureResponseParams>()),
        ("Cancel.params", s::<CancelParams>()),
        ("ListTools.params", s::<ListToolsParams>()),
        ("ListTools.result", s::<ListToolsResult>()),
        ("CallTool.params", s::<CallToolParams>()),
        ("CallTool.result", s::<CallToolResult>()),
        ("ListResources.params", s::<ListMcpParams>()),
        ("ListResources.result", s::<ListResourcesResult>()),
        ("ReadResource.params", s::<ReadResourceParams>()),
        ("ReadResource.result", s::<ReadResourceResult>()),
        ("ListPrompts.params", s::<ListMcpParams>()),
        ("ListPrompts.result", s::<ListPromptsResult>()),
        ("GetPrompt.params", s::<GetPromptParams>()),
        ("GetPrompt.result", s::<GetPromptResult>()),
        ("Cancel.result", s::<CancelResult>()),
        (
            "notification.OnFeatureResponseChunk",
            s::<FeatureResponseChunk>(),
        ),
        ("notification.OnReasoningChunk", s::<FeatureResponseChunk>()),
        ("notification.OnFeatureResponse", s::<FeatureResponse>()),
        (
            "notification.OnPromptResponseChunk",
            s::<PromptResponseChunk>(),
        ),
        ("notification.OnPromptResponse", s::<PromptResponse>()),
        ("notification.OnNewMessage", s::<NewMessageToFeature>()),
        ("notification.DoAction", s::<DoActionParams>()),
        ("notification.OnToolCallChunk", s::<ToolCallChunk>()),
        (
            "RequestConfirmation.params",
            s::<RequestConfirmationParams>(),
        ),
        (
            "RequestConfirmation.result",
            s::<RequestConfirmationResult>(),
        ),
        ("notifications", s::<Event>()),
    ]
}

/// The schema text as committed: pretty JSON with its keys sorted (whatever order the maps keep)
/// and a final newline.
pub fn render(v: &Value) -> String {
    let mut text = serde_json::to_string_pretty(&sorted(v)).unwrap_or_default();
    text.push('\n');
    text
}

/// `v` with every object's keys in alphabetical order.
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&m[k])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
        other => other.clone(),
    }
}
