//! Prompts sent straight to an agent (the seed framework's `SendPrompt`), for client-hosted
//! features and scripts: each runs in the background and ends with exactly one
//! [`PromptEvent::Done`] on the sender's port. A running turn of the agent's conversation
//! cancels its prompts too. This module must never touch a conversation's queue.

use std::sync::Arc;

use super::Framework;
use crate::agent::{Delta, OnDelta};
use crate::error::{Error, Result};
use crate::feature::port::{ClientPort, PromptEvent, PromptRef};
use crate::format::ResponseSchema;
use crate::message::Message;

impl Framework {
    /// Runs a prompt on an agent in the background; returns its request id at once.
    pub fn send_prompt(
        &self,
        agent_id: &str,
        prompt: Vec<Message>,
        port: Arc<dyn ClientPort>,
    ) -> Result<String> {
        self.send_prompt_with(agent_id, prompt, None, port)
    }

    /// `send_prompt` whose reply must match `schema` (else the agent's).
    pub fn send_prompt_with(
        &self,
        agent_id: &str,
        prompt: Vec<Message>,
        schema: Option<ResponseSchema>,
        port: Arc<dyn ClientPort>,
    ) -> Result<String> {
        let agent = self.agent(agent_id)?;
        if prompt.is_empty() {
            return Err(Error::invalid_params("the prompt is empty"));
        }
        let request_id = super::new_id();
        let turn_token = self.running.conversation_of_agent(agent_id, |c| {
            c.running
                .lock()
                .ok()
                .and_then(|r| r.as_ref().map(|(_, t)| t.clone()))
        })?;
        let cancel = turn_token
            .flatten()
            .map(|t| t.child_token())
            .unwrap_or_default();
        self.running
            .add_prompt(request_id.clone(), cancel.clone())?;
        let running = self.running.clone();
        let id = PromptRef {
            agent_id: agent.id.clone(),
            request_id: request_id.clone(),
        };
        running.begin();
        tokio::spawn(async move {
            let (worker_port, worker_id) = (port.clone(), id.clone());
            // The prompt runs in its own task so that a panic still ends it with `Done`.
            let work = tokio::spawn(async move {
                // A prompt streams the answer's text only; its reasoning is in the reply.
                let stream_to = |delta: Delta<'_>| {
                    if let Delta::Text(delta) = delta {
                        worker_port.prompt_event(&worker_id, PromptEvent::Chunk(delta.to_string()))
                    }
                };
                let on_delta: Option<OnDelta<'_>> = if worker_port.streaming() {
                    Some(&stream_to)
                } else {
                    None
                };
                agent
                    .send_prompt_as(prompt, on_delta, &cancel, None, schema.as_ref())
                    .await
            });
            let result = work
                .await
                .unwrap_or_else(|e| Err(Error::internal(format!("the prompt failed: {e}"))));
            running.remove_prompt(&id.request_id);
            port.prompt_event(&id, PromptEvent::Done(result.map(|o| o.reply)));
            running.end();
        });
        Ok(request_id)
    }
}
