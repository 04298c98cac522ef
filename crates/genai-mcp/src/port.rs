//! The core's client port for an MCP client: a tool call the permission policy asks about is
//! put to the user as an MCP elicitation (a form with one "always" box) when the client
//! declared the elicitation capability; otherwise nobody can answer, and the refusal names the
//! rule that would allow such calls, as `genai ask` says it where there is no terminal.
//!
//! It never decides a call (the guard does with the answer) and never writes to stdout itself
//! (the `rmcp` session does).

use std::sync::Mutex;

use async_trait::async_trait;
use genai_core::error::{Error, ErrorKind, Result};
use genai_core::feature::port::{
    ClientPort, Confirmation, HostedTurn, PermissionAnswer, PermissionAsk, PromptEvent, PromptRef,
    TurnEvent, TurnRef,
};
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::service::{ElicitationMode, Peer};
use rmcp::RoleServer;

/// The box of the elicitation's form that saves the rule.
const ALWAYS: &str = "always";

/// Which server a session reaches, for the refusal's advice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Served {
    /// `genai mcp`, whose flags take rules.
    Stdio,
    /// `genai serve`'s `/mcp`, whose rules are the config's.
    Serve,
}

/// The port of one MCP session.
pub(crate) struct McpPort {
    /// The client, once it has sent a request (elicitations go to it).
    peer: Mutex<Option<Peer<RoleServer>>>,
    served: Served,
}

impl McpPort {
    pub(crate) fn new(served: Served) -> McpPort {
        McpPort {
            peer: Mutex::default(),
            served,
        }
    }

    /// Keeps the session's client to ask it later.
    pub(crate) fn attach(&self, peer: &Peer<RoleServer>) {
        if let Ok(mut p) = self.peer.lock() {
            if p.is_none() {
                *p = Some(peer.clone());
            }
        }
    }

    /// The client, when it can answer a form.
    fn asker(&self) -> Option<Peer<RoleServer>> {
        let peer = self.peer.lock().ok()?.clone()?;
        peer.supported_elicitation_modes()
            .contains(&ElicitationMode::Form)
            .then_some(peer)
    }
}

/// Why nobody can answer `ask`, naming the rule that would allow it where `served` takes it.
fn no_one_to_ask(ask: &PermissionAsk, served: Served) -> Error {
    let rule = &ask.always_rule;
    let how = match served {
        Served::Stdio => format!("start genai mcp with --allow '{rule}'"),
        Served::Serve => {
            format!("add '{rule}' to [permissions] allow in genai serve's config and restart it")
        }
    };
    Error::new(
        ErrorKind::FeatureError,
        format!(
            "this MCP client cannot answer permission questions (it declared no elicitation); \
             {how} to allow such calls"
        ),
    )
}

#[async_trait]
impl ClientPort for McpPort {
    fn streaming(&self) -> bool {
        false
    }

    fn turn_event(&self, _turn: &TurnRef, _event: TurnEvent) {}

    fn prompt_event(&self, _prompt: &PromptRef, _event: PromptEvent) {}

    fn hosted_turn(&self, _turn: HostedTurn) {}

    async fn confirm(&self, request: Confirmation) -> Result<bool> {
        Err(Error::new(
            ErrorKind::FeatureError,
            format!(
                "no one to confirm {}: genai mcp confirms nothing",
                request.tool
            ),
        ))
    }

    async fn ask_permission(&self, ask: PermissionAsk) -> Result<PermissionAnswer> {
        let Some(peer) = self.asker() else {
            return Err(no_one_to_ask(&ask, self.served));
        };
        let schema = ElicitationSchema::builder()
            .bool_property(ALWAYS, |b| {
                b.title("Always")
                    .description(format!(
                        "Allow every call `{}` in this project from now on",
                        ask.always_rule
                    ))
                    .with_default(false)
            })
            .build()
            .map_err(|e| Error::internal(format!("the elicitation's form: {e}")))?;
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: format!(
                "genai asks: {} ({}). Accept to allow it, decline to refuse it.",
                ask.title, ask.reason
            ),
            requested_schema: schema,
        };
        let answer = peer.create_elicitation(params).await.map_err(|e| {
            Error::new(
                ErrorKind::FeatureError,
                format!("the MCP client did not answer the permission question: {e}"),
            )
        })?;
        let always = answer
            .content
            .as_ref()
            .and_then(|c| c.get(ALWAYS))
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false);
        Ok(match (answer.action, always) {
            (ElicitationAction::Accept, true) => PermissionAnswer::AllowAlways,
            (ElicitationAction::Accept, false) => PermissionAnswer::AllowOnce,
            _ => PermissionAnswer::RejectOnce,
        })
    }
}
