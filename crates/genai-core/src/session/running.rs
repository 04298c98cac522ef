//! What runs in one genai process ([`Running`]): the open conversations and the agents by id,
//! the prompts sent straight to agents (by request id, each with its cancellation token), and
//! how many turns and prompts are queued or running (what [`Framework::idle`] waits for).
//!
//! It owns those tables and that count, and nothing else. Each table's lock is held only to read
//! or change it, never across an await, and no caller is handed a lock. It must never build an
//! agent or a conversation, run a turn or a prompt, nor touch the store: `Framework` does,
//! through it.
//!
//! [`Framework::idle`]: super::Framework::idle

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::conversation::Conversation;
use super::poisoned;
use crate::agent::AIAgent;
use crate::error::Result;

/// The service of what runs: conversations, agents, prompts and the work in flight.
pub(super) struct Running {
    conversations: Mutex<HashMap<String, Conversation>>,
    agents: Mutex<HashMap<String, Arc<AIAgent>>>,
    /// Running prompts by request id.
    prompts: Mutex<HashMap<String, CancellationToken>>,
    /// How many turns and prompts are queued or running.
    inflight: watch::Sender<usize>,
}

impl Default for Running {
    fn default() -> Running {
        Running {
            conversations: Mutex::default(),
            agents: Mutex::default(),
            prompts: Mutex::default(),
            inflight: watch::channel(0).0,
        }
    }
}

impl Running {
    /// Keeps an open conversation under its id.
    pub(super) fn add_conversation(&self, id: String, conversation: Conversation) -> Result<()> {
        self.conversations
            .lock()
            .map_err(|_| poisoned())?
            .insert(id, conversation);
        Ok(())
    }

    /// Takes an open conversation out (`None`: none is open under that id).
    pub(super) fn remove_conversation(&self, id: &str) -> Result<Option<Conversation>> {
        Ok(self
            .conversations
            .lock()
            .map_err(|_| poisoned())?
            .remove(id))
    }

    /// What `f` reads of the open conversation `id` (`None`: none is open under that id);
    /// `f` must not await nor call back into this service.
    pub(super) fn conversation<T>(
        &self,
        id: &str,
        f: impl FnOnce(&Conversation) -> T,
    ) -> Result<Option<T>> {
        Ok(self
            .conversations
            .lock()
            .map_err(|_| poisoned())?
            .get(id)
            .map(f))
    }

    /// What `f` reads of the open conversation whose agent is `agent_id`, if there is one.
    pub(super) fn conversation_of_agent<T>(
        &self,
        agent_id: &str,
        f: impl FnOnce(&Conversation) -> T,
    ) -> Result<Option<T>> {
        Ok(self
            .conversations
            .lock()
            .map_err(|_| poisoned())?
            .values()
            .find(|c| c.agent.id == agent_id)
            .map(f))
    }

    /// Runs `f` on every open conversation, with its id, until one fails.
    pub(super) fn each_conversation(
        &self,
        mut f: impl FnMut(&str, &Conversation) -> Result<()>,
    ) -> Result<()> {
        let conversations = self.conversations.lock().map_err(|_| poisoned())?;
        conversations.iter().try_for_each(|(id, c)| f(id, c))
    }

    /// The ids of the open conversations.
    pub(super) fn conversation_ids(&self) -> Result<Vec<String>> {
        Ok(self
            .conversations
            .lock()
            .map_err(|_| poisoned())?
            .keys()
            .cloned()
            .collect())
    }

    /// Keeps an agent under its id.
    pub(super) fn add_agent(&self, agent: Arc<AIAgent>) -> Result<()> {
        self.agents
            .lock()
            .map_err(|_| poisoned())?
            .insert(agent.id.clone(), agent);
        Ok(())
    }

    /// The agent kept under `id`, if any.
    pub(super) fn agent(&self, id: &str) -> Result<Option<Arc<AIAgent>>> {
        Ok(self.agents.lock().map_err(|_| poisoned())?.get(id).cloned())
    }

    /// Forgets the agent `id`; whether one was kept.
    pub(super) fn remove_agent(&self, id: &str) -> Result<bool> {
        Ok(self
            .agents
            .lock()
            .map_err(|_| poisoned())?
            .remove(id)
            .is_some())
    }

    /// Keeps a running prompt's token under its request id.
    pub(super) fn add_prompt(&self, request_id: String, cancel: CancellationToken) -> Result<()> {
        self.prompts
            .lock()
            .map_err(|_| poisoned())?
            .insert(request_id, cancel);
        Ok(())
    }

    /// Forgets a prompt that ended.
    pub(super) fn remove_prompt(&self, request_id: &str) {
        if let Ok(mut p) = self.prompts.lock() {
            p.remove(request_id);
        }
    }

    /// Cancels the running prompt `request_id`; whether one ran.
    pub(super) fn cancel_prompt(&self, request_id: &str) -> Result<bool> {
        let prompts = self.prompts.lock().map_err(|_| poisoned())?;
        Ok(prompts
            .get(request_id)
            .map(CancellationToken::cancel)
            .is_some())
    }

    /// Counts a turn or a prompt queued.
    pub(super) fn begin(&self) {
        self.inflight.send_modify(|n| *n += 1);
    }

    /// Counts a turn or a prompt ended (after its final event went).
    pub(super) fn end(&self) {
        self.inflight.send_modify(|n| *n = n.saturating_sub(1));
    }

    /// Waits until no turn or prompt is queued or running.
    pub(super) async fn idle(&self) {
        let mut rx = self.inflight.subscribe();
        let _ = rx.wait_for(|n| *n == 0).await;
    }

    /// Cancels every open conversation (its queued and running turns) and every prompt.
    pub(super) fn cancel_all(&self) {
        if let Ok(convs) = self.conversations.lock() {
            convs.values().for_each(|c| c.closed.cancel());
        }
        if let Ok(p) = self.prompts.lock() {
            p.values().for_each(CancellationToken::cancel);
        }
    }

    #[cfg(test)]
    pub(super) fn open_conversations(&self) -> usize {
        self.conversations.lock().map(|c| c.len()).unwrap_or(0)
    }
}
