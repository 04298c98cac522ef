//! The built-in `assistant` feature: plain chat. It sends the user's message (with the
//! conversation's system prompt) to the agent, streams the reply, and ends the turn with the
//! reply as summary (its reasoning left out: that streams apart and stays in the history) and
//! the provider and model that answered (a fallback's when one served), usage, cost and
//! latency as details.

use std::sync::Arc;

use async_trait::async_trait;

use super::{Answer, BuiltinFeature, Feature, ReplyLines, Turn, TurnOutcome};
use crate::agent::{Delta, OnDelta};

pub const NAME: &str = "assistant";

/// The feature table's row.
pub(crate) const FEATURE: BuiltinFeature = BuiltinFeature {
    name: NAME,
    description: "Chat with the model: streams the reply, keeps the history.",
    takes_tools: false,
    build: |_| Ok(Arc::new(Assistant)),
};

pub(crate) struct Assistant;

#[async_trait]
impl Feature for Assistant {
    async fn on_new_message(&self, turn: &Turn) -> TurnOutcome {
        let prompt = turn.prompt_with(turn.message.clone());
        let stream_to = |delta: Delta<'_>| turn.stream(delta);
        let on_delta: Option<OnDelta<'_>> = if turn.streaming() {
            Some(&stream_to)
        } else {
            None
        };
        let mut detailed = turn.agent.take_notes();
        let schema = turn.response_schema.as_deref();
        let told = |c: &crate::compaction::Compacted| turn.compacted(c);
        let sent = turn
            .agent
            .send_prompt_observed(prompt, on_delta, Some(&told), &turn.cancel, None, schema)
            .await;
        if sent.is_err() {
            // An answer names the provider that answered; a failure the one asked.
            let provider = &turn.agent.binding().provider;
            detailed.insert(
                0,
                format!("provider: {} ({})", provider.name, provider.kind),
            );
        }
        TurnOutcome::of_prompt(sent, detailed, ReplyLines::Request, |outcome, _| Answer {
            summary: outcome.reply.message.text(),
            model: Some(outcome.answered_model()),
        })
    }
}
