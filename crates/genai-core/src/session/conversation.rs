//! The conversation task: one task per open conversation, fed by a channel, so its turns run in
//! order, one at a time, while conversations run concurrently. `cancel` acts at once through
//! the running turn's token, not through the queue. A turn is queued bare (`on_new_message`,
//! its events reach the conversation's port) or followed (`run_turn`, a [`TurnStream`] gets
//! them too).
//!
//! Every accepted message ends with exactly one final [`TurnEvent::Done`], sent here and
//! nowhere else, even when the feature panics; each turn runs in its span (`invoke_agent`), the
//! root of its trace. This module must never look inside a turn's work: the feature does it.

use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::turn_stream::{TurnStream, WatchedPort, Watchers};
use super::{poisoned, unknown_conversation, CancelTarget, Framework, OpenConversation};
use crate::agent::budget::Budget;
use crate::agent::AIAgent;
use crate::error::{Error, Result};
use crate::feature::port::{ClientPort, TurnEvent, TurnRef};
use crate::feature::{Feature, Turn, TurnOutcome};
use crate::format::ResponseSchema;
use crate::message::{Message, Part};
use crate::telemetry::spans;
use crate::tools::toolbox::Toolbox;

/// A message waiting for its turn.
struct Queued {
    turn_id: String,
    message: Message,
    /// The schema its reply must match, if the message gives one.
    response_schema: Option<Arc<ResponseSchema>>,
    /// The limits of an unattended run's turn.
    budget: Option<Budget>,
    /// The turn's cancellation token, made when it is queued so that a [`TurnStream`] can
    /// cancel it before it runs.
    cancel: CancellationToken,
}

/// A live conversation.
pub(super) struct Conversation {
    pub(crate) agent: Arc<AIAgent>,
    pub(crate) feature: String,
    queue: mpsc::UnboundedSender<Queued>,
    /// The running turn and its cancellation token.
    pub(crate) running: Arc<Mutex<Option<(String, CancellationToken)>>>,
    /// Cancelled when the conversation is closed: ends its task.
    pub(crate) closed: CancellationToken,
    /// The client that drives the conversation, as its turns see it (with the streams that
    /// follow them).
    pub(crate) port: Arc<dyn ClientPort>,
    /// The streams following its turns.
    watchers: Watchers,
    /// Its tool sources (the config's, with the MCP servers its client brought).
    pub(crate) toolbox: Arc<Toolbox>,
    /// The guard of its tool calls, when its feature takes tools.
    pub(crate) guard: Option<Arc<crate::feature::guard::Guard>>,
    /// Its root, the `cwd` it was started with.
    pub(crate) cwd: Option<String>,
}

impl Framework {
    /// Starts the conversation's task and says what it runs on; `feature` is the feature's name
    /// and the feature, `(service_provider, cwd)` its provider instance and root.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn open(
        self: &Arc<Self>,
        id: String,
        agent: Arc<AIAgent>,
        (feature_name, feature): (String, Arc<dyn Feature>),
        system_prompt: Option<String>,
        toolbox: Arc<Toolbox>,
        port: Arc<dyn ClientPort>,
        (service_provider, cwd): (String, Option<String>),
    ) -> Result<OpenConversation> {
        let (format, model, _) = agent.binding().model_info();
        let opened = OpenConversation {
            conversation_id: id.clone(),
            agent_id: agent.id.clone(),
            feature: feature_name.clone(),
            service_provider,
            format: format.to_string(),
            model,
            cwd: cwd.clone(),
        };
        let (queue, mut rx) = mpsc::unbounded_channel::<Queued>();
        let running: Arc<Mutex<Option<(String, CancellationToken)>>> = Arc::new(Mutex::new(None));
        let closed = CancellationToken::new();
        let watchers = Watchers::default();
        let port: Arc<dyn ClientPort> = Arc::new(WatchedPort {
            port,
            watchers: watchers.clone(),
        });
        // The turns' spans name the feature that runs them.
        let feature_label = feature_name.clone();
        let conv = Conversation {
            agent: agent.clone(),
            feature: feature_name,
            queue,
            running: running.clone(),
            closed: closed.clone(),
            port: port.clone(),
            watchers,
            toolbox,
            guard: feature.guard(),
            cwd,
        };
        self.running.add_conversation(id.clone(), conv)?;
        let running_work = self.running.clone();
        tokio::spawn(async move {
            while let Some(queued) = rx.recv().await {
                let Queued {
                    turn_id,
                    message,
                    response_schema,
                    budget,
                    cancel,
                } = queued;
                if let Ok(mut r) = running.lock() {
                    *r = Some((turn_id.clone(), cancel.clone()));
                }
                let turn = Turn {
                    id: TurnRef {
                        conversation_id: id.clone(),
                        turn_id: turn_id.clone(),
                    },
                    agent: agent.clone(),
                    message,
                    cancel,
                    system_prompt: system_prompt.clone(),
                    port: port.clone(),
                    response_schema,
                    budget,
                };
                let turn_ref = turn.id.clone();
                // The feature runs in its own task so that a panic in it still ends the turn.
                let feature = feature.clone();
                let span = spans::turn(Some(&id), Some(&turn_id), &feature_label);
                let traced = async move { feature.on_new_message(&turn).await };
                let outcome = match tokio::spawn(traced.instrument(span.clone())).await {
                    Ok(outcome) => outcome,
                    Err(e) => {
                        TurnOutcome::failed(Error::internal(format!("the feature failed: {e}")))
                    }
                };
                let (usage, model) = (outcome.usage.as_ref(), outcome.model.as_deref());
                spans::turn_ended(&span, usage, model, outcome.error.as_ref());
                if let Ok(mut r) = running.lock() {
                    *r = None;
                }
                if let Some(e) = &outcome.error {
                    tracing::warn!(conversation = %id, turn = %turn_id, kind = e.kind.as_str(), "turn failed: {}", e.message);
                }
                port.turn_event(&turn_ref, TurnEvent::Done(outcome));
                running_work.end();
            }
        });
        Ok(opened)
    }

    /// Queues a user message; returns the turn id at once, and the turn's events reach the
    /// conversation's port.
    #[cfg(test)]
    pub(crate) fn on_new_message(&self, conversation_id: &str, message: Message) -> Result<String> {
        self.on_new_message_with(conversation_id, message, None)
    }

    /// `on_new_message` whose reply must match `schema` (else the conversation's).
    pub fn on_new_message_with(
        &self,
        conversation_id: &str,
        message: Message,
        schema: Option<ResponseSchema>,
    ) -> Result<String> {
        let (turn_id, _) = self.queue_turn(conversation_id, message, (schema, None), None)?;
        Ok(turn_id)
    }

    /// Queues a user message (whose reply must match `schema`, else the conversation's) and
    /// follows its turn to the end: its events (which reach the conversation's port as well),
    /// ending with its outcome. Dropping the stream before then cancels the turn.
    pub fn run_turn(
        &self,
        conversation_id: &str,
        message: Message,
        schema: Option<ResponseSchema>,
    ) -> Result<TurnStream> {
        self.run_turn_within(conversation_id, message, schema, None)
    }

    /// `run_turn` within `budget`: a limit reached stops the turn's tool calls, its last reply
    /// taken as final and stored, and the outcome says which (`TurnOutcome::stopped`).
    pub fn run_turn_within(
        &self,
        conversation_id: &str,
        message: Message,
        schema: Option<ResponseSchema>,
        budget: Option<Budget>,
    ) -> Result<TurnStream> {
        let (tx, rx) = mpsc::unbounded_channel();
        let limits = (schema, budget);
        let (turn_id, cancel) = self.queue_turn(conversation_id, message, limits, Some(tx))?;
        let turn = TurnRef {
            conversation_id: conversation_id.to_string(),
            turn_id,
        };
        Ok(TurnStream::new(turn, rx, cancel))
    }

    /// Queues a turn with its schema and budget, followed by `watcher` when it is given; its
    /// id and cancellation token.
    fn queue_turn(
        &self,
        conversation_id: &str,
        message: Message,
        (schema, budget): (Option<ResponseSchema>, Option<Budget>),
        watcher: Option<mpsc::UnboundedSender<TurnEvent>>,
    ) -> Result<(String, CancellationToken)> {
        let blank = message
            .content
            .iter()
            .all(|p| matches!(p, Part::Text { text } if text.trim().is_empty()));
        if blank {
            return Err(Error::invalid_params("the message is empty"));
        }
        let queue = |conv: &Conversation| {
            let turn_id = super::new_id();
            let cancel = conv.closed.child_token();
            if let Some(tx) = watcher {
                // Before the turn is queued, so that the stream misses none of its events.
                conv.watchers
                    .lock()
                    .map_err(|_| poisoned())?
                    .insert(turn_id.clone(), tx);
            }
            self.running.begin();
            let queued = Queued {
                turn_id: turn_id.clone(),
                message,
                response_schema: schema.map(Arc::new),
                budget,
                cancel: cancel.clone(),
            };
            if conv.queue.send(queued).is_err() {
                self.running.end();
                if let Ok(mut w) = conv.watchers.lock() {
                    w.remove(&turn_id);
                }
                return Err(unknown_conversation(conversation_id));
            }
            Ok((turn_id, cancel))
        };
        self.running
            .conversation(conversation_id, queue)?
            .unwrap_or_else(|| Err(unknown_conversation(conversation_id)))
    }

    /// Cancels a running turn or prompt; false when nothing ran under that id.
    pub fn cancel(&self, target: &CancelTarget) -> Result<bool> {
        if target.request_id.is_none()
            && target.conversation_id.is_none()
            && target.turn_id.is_none()
        {
            return Err(Error::invalid_params(
                "Cancel needs `conversationId`, `turnId` or `requestId`",
            ));
        }
        let mut cancelled = false;
        if let Some(req) = &target.request_id {
            cancelled = self.running.cancel_prompt(req)?;
        }
        if let Some(cid) = &target.conversation_id {
            if self.running.conversation(cid, |_| ())?.is_none() {
                return Err(unknown_conversation(cid));
            }
        }
        if target.conversation_id.is_some() || target.turn_id.is_some() {
            self.running.each_conversation(|cid, conv| {
                if target.conversation_id.as_ref().is_some_and(|c| c != cid) {
                    return Ok(());
                }
                if let Some((turn, token)) = conv.running.lock().map_err(|_| poisoned())?.as_ref() {
                    if target.turn_id.as_ref().is_none_or(|t| t == turn) {
                        token.cancel();
                        cancelled = true;
                    }
                }
                Ok(())
            })?;
        }
        Ok(cancelled)
    }
}
