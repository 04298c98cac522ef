//! Compaction on the agent's side: the room of the model a request goes to (its provider's
//! declared context, else its `num_ctx`, else `[compaction] context_tokens`), the summary
//! written by the conversation's own model (a plain request on the turn's binding), each
//! request's messages through [`Compaction`](crate::compaction::Compaction), and `/compact`.
//!
//! It must never change the history (compaction changes what is sent) nor talk to a client:
//! what a compaction did goes to the prompt's caller through its [`Notes`].

use std::borrow::Cow;

use futures::future::BoxFuture;

use super::{AIAgent, ModelBinding, Notes};
use crate::compaction::window::{self, Room};
use crate::compaction::{Compacted, Compaction};
use crate::error::{Error, Result};
use crate::format::{ModelConfiguration, RequestOptions};
use crate::message::Message;

impl AIAgent {
    /// The room `model` has on `binding`'s provider, as compaction counts it (`None`: its
    /// context is not known and nothing is compacted).
    async fn compaction_room(
        c: &Compaction,
        binding: &ModelBinding,
        model: &ModelConfiguration,
    ) -> Option<Room> {
        let declared = match binding.provider.provider.context_tokens(&model.model).await {
            Some(n) => Some(n),
            None => window::declared_context(&model.parameters),
        };
        c.room(declared, &model.parameters)
    }

    /// A summary written by the turn's own model: one plain request, no history.
    async fn summarise(&self, binding: &ModelBinding, prompt: Vec<Message>) -> Result<String> {
        let notes = Notes::default();
        let options = RequestOptions::plain(false);
        let (reply, _) = self
            .send_with_fallbacks(
                binding,
                &binding.model,
                &prompt,
                &options,
                None,
                None,
                &notes,
            )
            .await
            .map_err(|e| {
                e.reworded(|m| format!("compaction: summarising the earliest turns failed: {m}"))
            })?;
        Ok(reply.message.text())
    }

    /// The messages one request sends after compaction: as they are when it is off or not
    /// needed. What it did is noted, and told to the prompt's caller.
    pub(super) async fn compacted<'m>(
        &self,
        binding: &ModelBinding,
        model: &ModelConfiguration,
        messages: &'m [Message],
        noted: &Notes<'_>,
    ) -> Result<Cow<'m, [Message]>> {
        let Some(c) = &self.compaction else {
            return Ok(Cow::Borrowed(messages));
        };
        let room = Self::compaction_room(c, binding, model).await;
        let summarise =
            |prompt| -> BoxFuture<'_, Result<String>> { Box::pin(self.summarise(binding, prompt)) };
        let prepared = c.prepare(messages, room, &summarise, false).await?;
        noted.add(prepared.note);
        if let Some(done) = &prepared.compacted {
            noted.compacted(done);
        }
        Ok(match prepared.messages {
            Some(m) => Cow::Owned(m),
            None => Cow::Borrowed(messages),
        })
    }

    /// Compacts the history now, whatever its size (`/compact`): every turn but the last
    /// `[compaction] keep_turns` is sent as a summary from the next request on. Waits for a
    /// running turn; the history itself is unchanged.
    pub async fn compact_now(&self) -> Result<Compacted> {
        let c = self.compaction.clone().ok_or_else(|| {
            Error::invalid_params(
                "compaction is off for this conversation ([compaction] enabled = false, or the agent lists a fit-context middleware)",
            )
        })?;
        let _turn = self.turn.lock().await;
        let binding = self.binding();
        let history = self.history()?;
        let room = Self::compaction_room(&c, &binding, &binding.model).await;
        let summarise = |prompt| -> BoxFuture<'_, Result<String>> {
            Box::pin(self.summarise(&binding, prompt))
        };
        let prepared = c.prepare(&history, room, &summarise, true).await?;
        prepared
            .compacted
            .ok_or_else(|| Error::internal("a forced compaction compacted nothing"))
    }
}
