//! The daemon's methods in one table: each method's name, who sends it, whether it is a
//! request or a notification, the Rust types of its params and result, and the function of
//! `handlers.rs` that answers it (run on the read loop, or off it when it waits on a tool
//! source). Dispatch, the list of methods the daemon serves (stdio and WebSocket), the
//! generated `schemas/` and the method table of `docs/PROTOCOL.md` come from this table (a test
//! fails when the document disagrees). It owns the decoding of params and encoding of results
//! between the wire's JSON and each handler's types; it must never act on the core itself.

use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::{schema_for, JsonSchema};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

use super::errors::{RpcError, INTERNAL_ERROR};
use super::handlers::{self, Call};
use super::listings::Components;
use super::port::RpcPort;
use super::protocol::*;
use genai_core::error::Error;
use genai_core::session::Framework;

/// Who sends a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sender {
    /// The client (editor, script) sends it to the daemon.
    Client,
    /// The daemon sends it to the client.
    Daemon,
}

/// Whether a method is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Request,
    /// No answer.
    Notification,
}

/// A daemon method's answer, as the wire's JSON.
pub(crate) type Answer = Result<Value, RpcError>;
/// The answer of a method answered later.
pub(crate) type AnswerFuture = BoxFuture<'static, Answer>;

/// What answers a method.
pub(crate) enum Handler {
    /// A method the client sends, answered on the read loop, in order.
    Now(fn(&mut Call, Value) -> Answer),
    /// A method the client sends that waits on a tool source: answered off the read loop,
    /// when ready, with the framework and the client's port.
    Later(fn(Arc<Framework>, Arc<RpcPort>, Value) -> AnswerFuture),
    /// A method the daemon sends: the client answers it.
    Client,
}

/// One method of the protocol.
pub(crate) struct Method {
    pub(crate) name: &'static str,
    pub(crate) sender: Sender,
    pub(crate) kind: Kind,
    /// The schema of its params, when it takes any.
    pub(crate) params: Option<fn() -> Value>,
    /// The schema of its result, when it has one beyond `{}`.
    pub(crate) result: Option<fn() -> Value>,
    pub(crate) handler: Handler,
}

impl Method {
    /// Whether it is answered off the read loop.
    pub(crate) fn answered_later(&self) -> bool {
        matches!(self.handler, Handler::Later(_))
    }
}

fn s<T: JsonSchema>() -> Value {
    serde_json::to_value(schema_for!(T)).unwrap_or(Value::Null)
}

/// A method's params as its handler takes them (absent params are `{}`).
pub(crate) fn decode<T: DeserializeOwned>(p: Value) -> Result<T, RpcError> {
    let p = if p.is_null() { json!({}) } else { p };
    serde_json::from_value(p)
        .map_err(|e| Error::invalid_params(format!("invalid params: {e}")).into())
}

/// A handler's result as the wire's JSON.
pub(crate) fn encode<T: Serialize>(v: T) -> Answer {
    serde_json::to_value(v)
        .map_err(|e| RpcError::new(INTERNAL_ERROR, format!("cannot encode the result: {e}")))
}

/// A request the client sends, answered on the read loop by `handlers::$f`:
/// `PARAMS => RESULT`, `PARAMS` alone when it answers `{}`, `=> RESULT` when it takes no
/// params, nothing for neither.
macro_rules! request {
    ($name:literal, $f:ident, $kind:expr, $params:expr, $result:expr) => {
        Method {
            name: $name,
            sender: Client,
            kind: $kind,
            params: $params,
            result: $result,
            handler: Handler::Now(|cx, p| encode(handlers::$f(cx, decode(p)?)?)),
        }
    };
    ($name:literal, $f:ident, $p:ty => $r:ty) => {
        request!($name, $f, Request, Some(s::<$p>), Some(s::<$r>))
    };
    ($name:literal, $f:ident, => $r:ty) => {
        request!($name, $f, Request, None, Some(s::<$r>))
    };
    ($name:literal, $f:ident, $p:ty) => {
        request!($name, $f, Request, Some(s::<$p>), None)
    };
    ($name:literal, $f:ident) => {
        request!($name, $f, Request, None, None)
    };
}

/// A request the client sends that `handlers::$f` answers off the read loop.
macro_rules! later {
    (@method $name:literal, $p:ty => $r:ty, $handler:expr) => {
        Method {
            name: $name,
            sender: Client,
            kind: Request,
            params: Some(s::<$p>),
            result: Some(s::<$r>),
            handler: Handler::Later($handler),
        }
    };
    ($name:literal, $f:ident, $p:ty => $r:ty) => {
        later!(@method $name, $p => $r, |fw, _, p| {
            Box::pin(async move { encode(handlers::$f(fw, decode(p)?).await?) })
        })
    };
    // Handlers that open conversations for their client take its port too.
    ($name:literal, $f:ident, port, $p:ty => $r:ty) => {
        later!(@method $name, $p => $r, |fw, port, p| {
            Box::pin(async move { encode(handlers::$f(fw, port, decode(p)?).await?) })
        })
    };
}

/// A method the daemon sends: a request with its result, or a notification.
macro_rules! sent {
    ($name:literal, $p:ty => $r:ty) => {
        Method {
            name: $name,
            sender: Daemon,
            kind: Request,
            params: Some(s::<$p>),
            result: Some(s::<$r>),
            handler: Handler::Client,
        }
    };
    ($name:literal, $p:ty) => {
        Method {
            name: $name,
            sender: Daemon,
            kind: Notification,
            params: Some(s::<$p>),
            result: None,
            handler: Handler::Client,
        }
    };
}

use Kind::{Notification, Request};
use Sender::{Client, Daemon};

/// Every method, in the order `schemas/` lists them.
#[rustfmt::skip]
pub(crate) const METHODS: &[Method] = &[
    request!("Initialize", initialize, InitializeParams => InitializeResult),
    request!("ListComponents", list_components, => Components),
    request!("CreateServiceProvider", create_service_provider, CreateServiceProviderParams),
    request!("CreateModelConfiguration", create_model_configuration, CreateModelConfigurationParams),
    request!("RemoveComponent", remove_component, RemoveComponentParams),
    request!("CreateConversation", create_conversation, CreateConversationParams => CreateConversationResult),
    request!("ResumeConversation", resume_conversation, ConversationIdParams => CreateConversationResult),
    request!("RemoveConversation", remove_conversation, ConversationIdParams),
    request!("DeleteConversation", delete_conversation, ConversationIdParams),
    request!("ListConversations", list_conversations, ListConversationsParams => ListConversationsResult),
    request!("SearchConversations", search_conversations, SearchConversationsParams => SearchConversationsResult),
    request!("GetConversationHistory", get_conversation_history, GetConversationHistoryParams => GetConversationHistoryResult),
    request!("OnNewMessage", on_new_message, OnNewMessageParams => TurnIdResult),
    request!("CreateAIAgent", create_ai_agent, CreateAIAgentParams => AgentIdResult),
    request!("RemoveAIAgent", remove_ai_agent, AgentIdParams),
    request!("SendPrompt", send_prompt, SendPromptParams => RequestIdResult),
    request!("GetHistory", get_history, AgentIdParams => Vec<genai_core::message::Message>),
    request!("SetModelParameter", set_model_parameter, SetModelParameterParams),
    request!("RegisterFeature", register_feature, RegisterFeatureParams),
    request!("RegisterMiddleware", register_middleware, RegisterMiddlewareParams),
    sent!("OnMiddleware", OnMiddlewareParams => OnMiddlewareResult),
    request!("RegisterTool", register_tool, RegisterToolParams => RegisterToolResult),
    request!("UnregisterTool", unregister_tool, UnregisterToolParams),
    sent!("OnToolCall", OnToolCallParams => OnToolCallResult),
    sent!("ReadTextFile", ReadTextFileParams => ReadTextFileResult),
    sent!("WriteTextFile", WriteTextFileParams => WriteTextFileResult),
    request!("OnFeatureResponse", on_feature_response, OnFeatureResponseParams),
    request!("Cancel", cancel, CancelParams => CancelResult),
    request!("Undo", undo, UndoParams => genai_core::checkpoint::Undone),
    request!("ListCheckpoints", list_checkpoints, ListCheckpointsParams => ListCheckpointsResult),
    later!("ListTools", list_tools, ListToolsParams => ListToolsResult),
    later!("CallTool", call_tool, CallToolParams => CallToolResult),
    later!("ListResources", list_resources, ListMcpParams => ListResourcesResult),
    later!("ReadResource", read_resource, ReadResourceParams => ReadResourceResult),
    later!("ListPrompts", list_prompts, ListMcpParams => ListPromptsResult),
    later!("GetPrompt", get_prompt, GetPromptParams => GetPromptResult),
    later!("ListCommands", list_commands, ListCommandsParams => ListCommandsResult),
    later!("RunCommand", run_command, port, RunCommandParams => RunCommandResult),
    sent!("OnFeatureResponseChunk", FeatureResponseChunk),
    sent!("OnReasoningChunk", FeatureResponseChunk),
    sent!("OnFeatureResponse", FeatureResponse),
    sent!("OnPromptResponseChunk", PromptResponseChunk),
    sent!("OnPromptResponse", PromptResponse),
    sent!("OnNewMessage", NewMessageToFeature),
    sent!("DoAction", DoActionParams),
    sent!("OnToolCallChunk", ToolCallChunk),
    sent!("OnCompaction", Compaction),
    sent!("OnPlan", Plan),
    sent!("OnSubagentEvent", SubagentNotice),
    sent!("RequestConfirmation", RequestConfirmationParams => RequestConfirmationResult),
    // Without schemas: `$/cancelRequest` takes `{id}` (LSP's), `Shutdown` nothing.
    request!("$/cancelRequest", cancel_request, Notification, None, None),
    request!("Shutdown", shutdown),
];

/// The method named `name` that a client may send.
pub(crate) fn served(name: &str) -> Option<&'static Method> {
    METHODS
        .iter()
        .find(|m| m.sender == Client && m.name == name)
}

/// The methods a client may send, answered on the read loop.
pub(crate) fn served_now() -> impl Iterator<Item = &'static str> {
    METHODS
        .iter()
        .filter(|m| matches!(m.handler, Handler::Now(_)))
        .map(|m| m.name)
}

/// The methods a client may send that wait on a tool source.
pub(crate) fn served_later() -> impl Iterator<Item = &'static str> {
    METHODS
        .iter()
        .filter(|m| m.answered_later())
        .map(|m| m.name)
}

/// The schemas the table gives, by file name (without `.json`): `NAME.params` and
/// `NAME.result` of requests, `notification.NAME` of the daemon's notifications.
pub(crate) fn schemas() -> impl Iterator<Item = (String, Value)> {
    METHODS.iter().flat_map(|m| {
        let params = m.params.map(|p| {
            let name = if m.sender == Daemon && m.kind == Notification {
                format!("notification.{}", m.name)
            } else {
                format!("{}.params", m.name)
            };
            (name, p())
        });
        let result = m.result.map(|r| (format!("{}.result", m.name), r()));
        params.into_iter().chain(result)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(name, sender, answered later)` of each row of `docs/PROTOCOL.md`'s method table.
    fn documented() -> Vec<(String, Sender, bool)> {
        include_str!("../../../docs/PROTOCOL.md")
            .lines()
            .filter(|l| l.starts_with("| [`"))
            .map(|l| {
                let cells: Vec<&str> = l.split('|').map(str::trim).collect();
                let name = cells[1].trim_start_matches("[`");
                let name = &name[..name.find('`').expect("a method name in backticks")];
                let sender = match cells[2] {
                    "c→d" => Client,
                    "d→c" => Daemon,
                    other => panic!("unknown direction {other:?} for {name}"),
                };
                (
                    name.to_string(),
                    sender,
                    cells[3].contains("answered later"),
                )
            })
            .collect()
    }

    #[test]
    fn the_method_table_of_protocol_md_lists_the_methods_of_the_table() {
        let mut doc = documented();
        let mut table: Vec<(String, Sender, bool)> = METHODS
            .iter()
            .map(|m| (m.name.to_string(), m.sender, m.answered_later()))
            .collect();
        let key = |m: &(String, Sender, bool)| (m.0.clone(), m.1 == Daemon);
        doc.sort_by_key(key);
        table.sort_by_key(key);
        assert!(
            doc.len() > 30,
            "the document's table was not found: {doc:?}"
        );
        assert_eq!(
            doc, table,
            "docs/PROTOCOL.md's method table and rpc::methods::METHODS differ"
        );
    }

    #[test]
    fn no_method_is_listed_twice_in_one_direction() {
        for (i, m) in METHODS.iter().enumerate() {
            assert!(
                !METHODS[..i]
                    .iter()
                    .any(|o| o.name == m.name && o.sender == m.sender),
                "{} is listed twice",
                m.name
            );
        }
    }
}
