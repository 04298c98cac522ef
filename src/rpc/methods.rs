//! The daemon's methods in one table: each method's name, who sends it, whether it is a
//! request or a notification, whether it is answered off the read loop, and the Rust types of
//! its params and result. The list of methods the daemon serves (stdio and WebSocket), the
//! generated `schemas/` and the method table of `docs/PROTOCOL.md` come from this table (tests
//! fail when the document, or `dispatch.rs`, disagree with it). It owns no behaviour:
//! `dispatch.rs` runs each method.

use schemars::{schema_for, JsonSchema};
use serde_json::Value;

use super::listings::Components;
use super::protocol::*;

/// Who sends a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sender {
    /// The client (editor, script) sends it to the daemon.
    Client,
    /// The daemon sends it to the client.
    Daemon,
}

/// How a method is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A request answered on the read loop, in order.
    Request,
    /// A request that waits on a tool source: answered off the read loop, when ready.
    RequestAnsweredLater,
    /// A notification: no answer.
    Notification,
}

/// One method of the protocol.
pub struct Method {
    pub name: &'static str,
    pub sender: Sender,
    pub kind: Kind,
    /// The schema of its params, when it takes any.
    pub params: Option<fn() -> Value>,
    /// The schema of its result, when it has one beyond `{}`.
    pub result: Option<fn() -> Value>,
}

fn s<T: JsonSchema>() -> Value {
    serde_json::to_value(schema_for!(T)).unwrap_or(Value::Null)
}

const fn method(
    name: &'static str,
    sender: Sender,
    kind: Kind,
    params: Option<fn() -> Value>,
    result: Option<fn() -> Value>,
) -> Method {
    Method {
        name,
        sender,
        kind,
        params,
        result,
    }
}

use Kind::{Notification, Request, RequestAnsweredLater};
use Sender::{Client, Daemon};

/// Every method, in the order `schemas/` lists them.
#[rustfmt::skip]
pub const METHODS: &[Method] = &[
    method("Initialize", Client, Request, Some(s::<InitializeParams>), Some(s::<InitializeResult>)),
    method("ListComponents", Client, Request, None, Some(s::<Components>)),
    method("CreateServiceProvider", Client, Request, Some(s::<CreateServiceProviderParams>), None),
    method("CreateModelConfiguration", Client, Request, Some(s::<CreateModelConfigurationParams>), None),
    method("RemoveComponent", Client, Request, Some(s::<RemoveComponentParams>), None),
    method("CreateConversation", Client, Request, Some(s::<CreateConversationParams>), Some(s::<CreateConversationResult>)),
    method("ResumeConversation", Client, Request, Some(s::<ConversationIdParams>), Some(s::<CreateConversationResult>)),
    method("RemoveConversation", Client, Request, Some(s::<ConversationIdParams>), None),
    method("DeleteConversation", Client, Request, Some(s::<ConversationIdParams>), None),
    method("ListConversations", Client, Request, Some(s::<ListConversationsParams>), Some(s::<ListConversationsResult>)),
    method("SearchConversations", Client, Request, Some(s::<SearchConversationsParams>), Some(s::<SearchConversationsResult>)),
    method("GetConversationHistory", Client, Request, Some(s::<GetConversationHistoryParams>), Some(s::<GetConversationHistoryResult>)),
    method("OnNewMessage", Client, Request, Some(s::<OnNewMessageParams>), Some(s::<TurnIdResult>)),
    method("CreateAIAgent", Client, Request, Some(s::<CreateAIAgentParams>), Some(s::<AgentIdResult>)),
    method("RemoveAIAgent", Client, Request, Some(s::<AgentIdParams>), None),
    method("SendPrompt", Client, Request, Some(s::<SendPromptParams>), Some(s::<RequestIdResult>)),
    method("GetHistory", Client, Request, Some(s::<AgentIdParams>), Some(s::<Vec<crate::message::Message>>)),
    method("SetModelParameter", Client, Request, Some(s::<SetModelParameterParams>), None),
    method("RegisterFeature", Client, Request, Some(s::<RegisterFeatureParams>), None),
    method("RegisterMiddleware", Client, Request, Some(s::<RegisterMiddlewareParams>), None),
    method("OnMiddleware", Daemon, Request, Some(s::<OnMiddlewareParams>), Some(s::<OnMiddlewareResult>)),
    method("OnFeatureResponse", Client, Request, Some(s::<OnFeatureResponseParams>), None),
    method("Cancel", Client, Request, Some(s::<CancelParams>), Some(s::<CancelResult>)),
    method("ListTools", Client, RequestAnsweredLater, Some(s::<ListToolsParams>), Some(s::<ListToolsResult>)),
    method("CallTool", Client, RequestAnsweredLater, Some(s::<CallToolParams>), Some(s::<CallToolResult>)),
    method("ListResources", Client, RequestAnsweredLater, Some(s::<ListMcpParams>), Some(s::<ListResourcesResult>)),
    method("ReadResource", Client, RequestAnsweredLater, Some(s::<ReadResourceParams>), Some(s::<ReadResourceResult>)),
    method("ListPrompts", Client, RequestAnsweredLater, Some(s::<ListMcpParams>), Some(s::<ListPromptsResult>)),
    method("GetPrompt", Client, RequestAnsweredLater, Some(s::<GetPromptParams>), Some(s::<GetPromptResult>)),
    method("OnFeatureResponseChunk", Daemon, Notification, Some(s::<FeatureResponseChunk>), None),
    method("OnReasoningChunk", Daemon, Notification, Some(s::<FeatureResponseChunk>), None),
    method("OnFeatureResponse", Daemon, Notification, Some(s::<FeatureResponse>), None),
    method("OnPromptResponseChunk", Daemon, Notification, Some(s::<PromptResponseChunk>), None),
    method("OnPromptResponse", Daemon, Notification, Some(s::<PromptResponse>), None),
    method("OnNewMessage", Daemon, Notification, Some(s::<NewMessageToFeature>), None),
    method("DoAction", Daemon, Notification, Some(s::<DoActionParams>), None),
    method("OnToolCallChunk", Daemon, Notification, Some(s::<ToolCallChunk>), None),
    method("RequestConfirmation", Daemon, Request, Some(s::<RequestConfirmationParams>), Some(s::<RequestConfirmationResult>)),
    // Without schemas: `$/cancelRequest` takes `{id}` (LSP's), `Shutdown` nothing.
    method("$/cancelRequest", Client, Notification, None, None),
    method("Shutdown", Client, Request, None, None),
];

/// The methods a client may send, answered on the read loop (`Session::dispatch`).
pub fn served_now() -> impl Iterator<Item = &'static str> {
    METHODS
        .iter()
        .filter(|m| m.sender == Client && m.kind != RequestAnsweredLater)
        .map(|m| m.name)
}

/// The methods a client may send that wait on a tool source (`dispatch::tool_request`).
pub fn served_later() -> impl Iterator<Item = &'static str> {
    METHODS
        .iter()
        .filter(|m| m.sender == Client && m.kind == RequestAnsweredLater)
        .map(|m| m.name)
}

/// Whether `name` is answered off the read loop.
pub fn answered_later(name: &str) -> bool {
    served_later().any(|m| m == name)
}

/// The schemas the table gives, by file name (without `.json`): `NAME.params` and
/// `NAME.result` of requests, `notification.NAME` of the daemon's notifications.
pub fn schemas() -> impl Iterator<Item = (String, Value)> {
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
        include_str!("../../docs/PROTOCOL.md")
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
            .map(|m| (m.name.to_string(), m.sender, m.kind == RequestAnsweredLater))
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
