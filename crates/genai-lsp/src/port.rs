//! The language server as the core's client: [`LspPort`] routes each completion agent's
//! prompt events to the request waiting on them, and [`ask`] / [`complete`] run one turn
//! (followed through the core's `TurnStream`) or one prompt to its end with the cancellation
//! the editor asked for (`$/cancelRequest` drops the request's future, which cancels here).
//! It must never speak LSP to the editor: `server.rs` does that.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::documents::Documents;
use genai_core::error::{Error, ErrorKind, Result};
use genai_core::feature::port::{
    ClientPort, Confirmation, HostedTurn, PermissionAnswer, PermissionAsk, PromptEvent, PromptRef,
    TurnEvent, TurnRef,
};
use genai_core::message::Message;
use genai_core::select::ModelChoice;
use genai_core::session::{CancelTarget, ConversationSpec, Framework};
use genai_core::workspace::Editor;

/// Routes the core's prompt events to the requests that wait on them, and asks the editor
/// whether a tool call may run.
#[derive(Default)]
pub(crate) struct LspPort {
    /// Prompt events by agent id (each completion has its own agent).
    prompts: Mutex<HashMap<String, mpsc::UnboundedSender<PromptEvent>>>,
    /// The editor, for `window/showMessageRequest` and `workspace/applyEdit` (none in tests
    /// without one).
    pub(super) editor: Option<tower_lsp_server::Client>,
    /// The editor's open documents, which the workspace tools read (`editing.rs`).
    pub(super) docs: Arc<Mutex<Documents>>,
    /// The editor applies workspace edits (`workspace.applyEdit`): the workspace tools write
    /// through it.
    applies_edits: AtomicBool,
}

/// The buttons of a permission ask, in the order the editor shows them.
const ASK_BUTTONS: [(PermissionAnswer, &str); 4] = [
    (PermissionAnswer::AllowOnce, "Allow once"),
    (PermissionAnswer::AllowAlways, "Always allow"),
    (PermissionAnswer::RejectOnce, "Reject"),
    (PermissionAnswer::RejectAlways, "Always reject"),
];

impl LspPort {
    /// A port that asks `editor` about tool calls; `docs` are its open documents.
    pub(crate) fn new(editor: tower_lsp_server::Client, docs: Arc<Mutex<Documents>>) -> LspPort {
        LspPort {
            prompts: Mutex::default(),
            editor: Some(editor),
            docs,
            applies_edits: AtomicBool::new(false),
        }
    }

    /// The client's `workspace.applyEdit` capability.
    pub(crate) fn set_applies_edits(&self, yes: bool) {
        self.applies_edits.store(yes, Ordering::Relaxed);
    }

    pub(super) fn applies_edits(&self) -> bool {
        self.editor.is_some() && self.applies_edits.load(Ordering::Relaxed)
    }
}

/// What a conversation of `genai.ask` may do: its tools, root and permission mode.
#[derive(Debug, Clone, Default)]
pub(crate) struct Acting {
    pub(crate) tools: Option<Vec<String>>,
    pub(crate) cwd: Option<String>,
    pub(crate) mode: Option<genai_core::permission::Mode>,
    /// A command's model, system prompt and parameters (default: `[lsp] model`'s).
    pub(crate) model: Option<String>,
    pub(crate) system: Option<String>,
    pub(crate) parameters: serde_json::Map<String, serde_json::Value>,
}

#[async_trait]
impl ClientPort for LspPort {
    fn streaming(&self) -> bool {
        true
    }

    // A turn's events reach the request that sent it through its `TurnStream`.
    fn turn_event(&self, _: &TurnRef, _: TurnEvent) {}

    fn prompt_event(&self, prompt: &PromptRef, event: PromptEvent) {
        if let Some(tx) = self
            .prompts
            .lock()
            .ok()
            .and_then(|p| p.get(&prompt.agent_id).cloned())
        {
            let _ = tx.send(event);
        }
    }

    // The language server hosts no feature.
    fn hosted_turn(&self, _: HostedTurn) {}

    fn editor(&self) -> Option<&dyn Editor> {
        Some(self as &dyn Editor)
    }

    async fn confirm(&self, _: Confirmation) -> Result<bool> {
        Err(Error::invalid_params(
            "the language server does not confirm plugin modules' operations",
        ))
    }

    async fn ask_permission(&self, ask: PermissionAsk) -> Result<PermissionAnswer> {
        use tower_lsp_server::ls_types::{MessageActionItem, MessageType};
        let editor = self
            .editor
            .as_ref()
            .ok_or_else(|| Error::new(ErrorKind::FeatureError, "no editor to ask"))?;
        let message = format!(
            "genai: {} ({}). \"Always allow\" saves `{}` for this project.",
            ask.title, ask.reason, ask.always_rule
        );
        let buttons = ASK_BUTTONS
            .iter()
            .map(|(_, title)| MessageActionItem {
                title: title.to_string(),
                properties: Default::default(),
            })
            .collect();
        let chosen = editor
            .show_message_request(MessageType::WARNING, message, Some(buttons))
            .await
            .map_err(|e| {
                Error::new(
                    ErrorKind::FeatureError,
                    format!(
                        "the editor did not answer window/showMessageRequest: {}",
                        e.message
                    ),
                )
            })?;
        // Dismissed: nobody allowed it.
        Ok(chosen
            .and_then(|c| {
                ASK_BUTTONS
                    .iter()
                    .find(|(_, t)| *t == c.title)
                    .map(|(a, _)| *a)
            })
            .unwrap_or(PermissionAnswer::RejectOnce))
    }
}

/// The end of one action's turn.
#[derive(Debug, Clone)]
pub(crate) struct Answer {
    pub(crate) conversation_id: String,
    pub(crate) reply: String,
}

/// On drop, stops what a request started unless it finished (the editor cancelled the request,
/// or the server is going away), and forgets the route.
struct Running<'a> {
    fw: &'a Framework,
    port: &'a LspPort,
    conversation_id: Option<String>,
    agent_id: Option<String>,
    request_id: Option<String>,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if let Some(id) = &self.conversation_id {
            // Closing cancels a turn still running and ends the conversation's task; its
            // history stays in the store, unless no turn was committed to it.
            let _ = self.fw.close_conversation(id);
        }
        if let Some(id) = &self.agent_id {
            if let Ok(mut p) = self.port.prompts.lock() {
                p.remove(id);
            }
            if let Some(request_id) = self.request_id.take() {
                let _ = self.fw.cancel(&CancelTarget {
                    request_id: Some(request_id),
                    ..Default::default()
                });
            }
            let _ = self.fw.remove_agent(id);
        }
    }
}

fn cancelled() -> Error {
    Error::new(ErrorKind::Cancelled, "cancelled")
}

/// Runs `prompt` as the one turn of a new conversation (`title` in the history), streaming the
/// reply's length into `progress`; `stop` cancels it (the progress's cancel button).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn ask(
    fw: &Arc<Framework>,
    port: &Arc<LspPort>,
    model: ModelChoice,
    title: String,
    prompt: String,
    acting: Acting,
    progress: &watch::Sender<usize>,
    stop: &CancellationToken,
) -> Result<Answer> {
    let spec = ConversationSpec {
        model: acting.model.map_or(model, ModelChoice::Named),
        system_prompt: acting.system,
        parameters: (!acting.parameters.is_empty()).then_some(acting.parameters),
        title: Some(title),
        tools: acting.tools,
        cwd: acting.cwd,
        permissions: genai_core::session::PermissionFlags {
            mode: acting.mode,
            ..Default::default()
        },
        ..Default::default()
    };
    let client: Arc<dyn ClientPort> = port.clone();
    let conv = fw.create_conversation(spec, client)?;
    let _running = Running {
        fw,
        port,
        conversation_id: Some(conv.conversation_id.clone()),
        agent_id: None,
        request_id: None,
    };
    let mut turn = fw.run_turn(&conv.conversation_id, Message::user(prompt), None)?;
    let mut streamed = 0usize;
    let mut stopped = false;
    let outcome = loop {
        let event = tokio::select! {
            e = turn.next_event() => e,
            // The turn still ends with its `Done`, which says it was cancelled.
            _ = stop.cancelled(), if !stopped => {
                stopped = true;
                turn.cancel();
                continue;
            }
        };
        match event {
            Some(TurnEvent::Chunk(delta)) => {
                streamed += delta.len();
                progress.send_replace(streamed);
            }
            Some(TurnEvent::Done(outcome)) => break outcome,
            Some(_) => {}
            None => return Err(Error::internal("the turn ended twice")),
        }
    };
    if let Some(e) = outcome.error {
        return Err(if stop.is_cancelled() { cancelled() } else { e });
    }
    Ok(Answer {
        conversation_id: conv.conversation_id,
        reply: outcome.summary,
    })
}

/// Sends one prompt to a new agent of `model` (kept out of the history), its reply capped at
/// `max_tokens` where the format has that parameter.
pub(crate) async fn complete(
    fw: &Arc<Framework>,
    port: &Arc<LspPort>,
    model: &ModelChoice,
    max_tokens: u32,
    prompt: String,
) -> Result<String> {
    let agent_id = fw.create_agent(model, None)?;
    let mut running = Running {
        fw,
        port,
        conversation_id: None,
        agent_id: Some(agent_id.clone()),
        request_id: None,
    };
    if let Err(e) = fw
        .agent(&agent_id)?
        .set_parameter("max_tokens", max_tokens.into())
    {
        tracing::debug!("completion without a token cap: {}", e.message);
    }
    let (tx, mut events) = mpsc::unbounded_channel();
    port.prompts
        .lock()
        .map_err(|_| Error::internal("lsp port lock poisoned"))?
        .insert(agent_id.clone(), tx);
    running.request_id =
        Some(fw.send_prompt(&agent_id, vec![Message::user(prompt)], port.clone())?);
    loop {
        match events.recv().await {
            Some(PromptEvent::Chunk(_)) => {}
            Some(PromptEvent::Done(result)) => {
                running.request_id = None;
                return Ok(result?.message.text());
            }
            None => return Err(Error::internal("the core stopped before the prompt ended")),
        }
    }
}
