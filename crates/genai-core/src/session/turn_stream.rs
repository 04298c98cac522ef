//! Running a turn to its end: [`TurnStream`], what `Framework::run_turn` returns, is the one
//! way a front-end that waits on a turn (the CLI, ACP, LSP) follows it: the turn's events in
//! order, ending with exactly one [`TurnEvent::Done`] carrying its outcome. Dropping the
//! stream before that end cancels the turn; so does [`TurnStream::cancel`] or
//! `Framework::cancel` with its turn id (the stream then ends with a cancelled outcome).
//!
//! The conversation's client port still sees every event first, as it always does (the
//! daemon forwards them as they come, ACP writes its session updates); the stream is a copy
//! for whoever waits. This module must never change what a turn does: it only watches.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use async_trait::async_trait;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::feature::port::{
    ClientPort, Confirmation, HostedTurn, MiddlewareCall, PermissionAnswer, PermissionAsk,
    PromptEvent, PromptRef, TurnEvent, TurnRef,
};
use crate::feature::TurnOutcome;
use crate::message::Message;

/// The streams following a conversation's turns, by turn id.
pub(super) type Watchers = Arc<Mutex<HashMap<String, mpsc::UnboundedSender<TurnEvent>>>>;

/// One turn's events, ending with its outcome. See the module's documentation.
pub struct TurnStream {
    turn: TurnRef,
    events: mpsc::UnboundedReceiver<TurnEvent>,
    /// The turn's cancellation token.
    cancel: CancellationToken,
    /// The final event was handed out: nothing more comes, and dropping cancels nothing.
    ended: bool,
}

impl std::fmt::Debug for TurnStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnStream")
            .field("turn", &self.turn)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl TurnStream {
    pub(super) fn new(
        turn: TurnRef,
        events: mpsc::UnboundedReceiver<TurnEvent>,
        cancel: CancellationToken,
    ) -> TurnStream {
        TurnStream {
            turn,
            events,
            cancel,
            ended: false,
        }
    }

    /// The turn followed.
    #[cfg(test)]
    pub(crate) fn turn(&self) -> &TurnRef {
        &self.turn
    }

    /// The turn's id.
    pub fn id(&self) -> &str {
        &self.turn.turn_id
    }

    /// Cancels the turn (queued or running); it still ends with its `Done`, which says so.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// The turn's next event: its last is `Done`, after which this is `None`.
    pub async fn next_event(&mut self) -> Option<TurnEvent> {
        std::future::poll_fn(|cx| self.poll_event(cx)).await
    }

    /// Waits for the turn's end, passing over its other events.
    pub async fn outcome(mut self) -> TurnOutcome {
        while let Some(event) = self.next_event().await {
            if let TurnEvent::Done(outcome) = event {
                return outcome;
            }
        }
        // `next_event` ends with `Done`: this is not reached.
        TurnOutcome::failed(Error::internal("the turn ended twice"))
    }

    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<TurnEvent>> {
        if self.ended {
            return Poll::Ready(None);
        }
        let event = match self.events.poll_recv(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Some(event)) => event,
            // The conversation's task went away without ending the turn (the runtime is
            // shutting down): the stream still ends with an outcome.
            Poll::Ready(None) => TurnEvent::Done(TurnOutcome::failed(Error::internal(
                "the core stopped before the turn ended",
            ))),
        };
        self.ended = matches!(event, TurnEvent::Done(_));
        Poll::Ready(Some(event))
    }
}

impl futures::Stream for TurnStream {
    type Item = TurnEvent;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<TurnEvent>> {
        self.get_mut().poll_event(cx)
    }
}

impl Drop for TurnStream {
    fn drop(&mut self) {
        if !self.ended {
            self.cancel.cancel();
        }
    }
}

/// A conversation's client port as its turns see it: each event goes to the client's port,
/// then to the stream following that turn, if one does.
pub(super) struct WatchedPort {
    pub(crate) port: Arc<dyn ClientPort>,
    pub(crate) watchers: Watchers,
}

#[async_trait]
impl ClientPort for WatchedPort {
    fn streaming(&self) -> bool {
        self.port.streaming()
    }

    fn turn_event(&self, turn: &TurnRef, event: TurnEvent) {
        let watcher = self.watchers.lock().ok().and_then(|mut w| match &event {
            TurnEvent::Done(_) => w.remove(&turn.turn_id),
            _ => w.get(&turn.turn_id).cloned(),
        });
        match watcher {
            Some(tx) => {
                self.port.turn_event(turn, event.clone());
                let _ = tx.send(event);
            }
            None => self.port.turn_event(turn, event),
        }
    }

    fn prompt_event(&self, prompt: &PromptRef, event: PromptEvent) {
        self.port.prompt_event(prompt, event)
    }

    fn hosted_turn(&self, turn: HostedTurn) {
        self.port.hosted_turn(turn)
    }

    async fn confirm(&self, request: Confirmation) -> Result<bool> {
        self.port.confirm(request).await
    }

    async fn ask_permission(&self, ask: PermissionAsk) -> Result<PermissionAnswer> {
        self.port.ask_permission(ask).await
    }

    fn hosted_tools(&self) -> Vec<crate::tools::Tool> {
        self.port.hosted_tools()
    }

    async fn call_tool(
        &self,
        call: crate::feature::port::HostedToolCall,
    ) -> Result<crate::tools::plugin::ModuleAnswer> {
        self.port.call_tool(call).await
    }

    fn editor(&self) -> Option<&dyn crate::workspace::Editor> {
        self.port.editor()
    }

    async fn middleware(&self, call: MiddlewareCall) -> Result<Vec<Message>> {
        self.port.middleware(call).await
    }
}

#[cfg(test)]
#[path = "turn_stream_tests.rs"]
mod tests;
