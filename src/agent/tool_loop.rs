//! The native tool loop: while the model answers with tool calls (up to a number of rounds),
//! they are run and their results sent back in the format's own tool-call shape.
//!
//! It owns [`ToolLoop`] (the tools of one prompt and how their calls run) and the rounds of a
//! native turn. It must never run a tool itself (the caller's `run` does) nor commit anything
//! (the agent commits the whole turn).

use serde_json::Value;

use super::{AIAgent, OnDelta, TurnSteps};
use crate::config::ToolMode;
use crate::error::Result;
use crate::format::{self, ModelConfiguration, ModelReply, RequestOptions, ToolCallDelta};
use crate::message::{Message, Part, Role, Usage};

impl AIAgent {
    /// The native tool loop: while the model answers with tool calls (up to `max_steps`
    /// rounds), they are run and their results sent back.
    pub(super) async fn native_turn(
        &self,
        model: &ModelConfiguration,
        full: &[Message],
        on_delta: Option<OnDelta<'_>>,
        tools: Option<&ToolLoop<'_>>,
    ) -> Result<TurnSteps> {
        let mut rounds = Rounds::default();
        loop {
            let messages = rounds.start(full);
            let on_call = tools.and_then(|t| t.on_call_delta);
            let options = RequestOptions {
                stream: on_delta.is_some(),
                tools: tools.map_or(&[], |t| &t.specs),
                stop: &[],
            };
            let reply = self
                .call_model(model, &messages, &options, on_delta, on_call)
                .await?;
            rounds.count_usage(reply.usage);
            let calls = reply.message.tool_calls();
            match tools {
                Some(t) if !calls.is_empty() && rounds.may_call(t.max_steps) => {
                    let results = (t.run)(calls).await;
                    rounds.step(reply.message, results);
                }
                _ => return Ok(rounds.end(reply)),
            }
        }
    }
}

/// The rounds of one turn so far: the steps (each round's calls, then their results), the
/// usage of every request, and how many requests there were.
#[derive(Default)]
pub(super) struct Rounds {
    steps: Vec<Message>,
    usage: Option<Usage>,
    count: usize,
}

impl Rounds {
    /// Starts the next round: the messages its request sends (the turn's, then the steps).
    pub(super) fn start(&mut self, full: &[Message]) -> Vec<Message> {
        self.count += 1;
        full.iter().chain(&self.steps).cloned().collect()
    }

    /// The number of the running round (1 for the first).
    pub(super) fn number(&self) -> usize {
        self.count
    }

    /// Whether another round of calls may run within `max_steps`.
    pub(super) fn may_call(&self, max_steps: usize) -> bool {
        self.steps.len() / 2 < max_steps
    }

    /// Adds a request's token counts.
    pub(super) fn count_usage(&mut self, usage: Option<Usage>) {
        self.usage = add_usage(self.usage, usage);
    }

    /// Records one round: the message with its calls, and their results.
    pub(super) fn step(&mut self, calls: Message, results: Vec<Part>) {
        self.steps.push(calls);
        self.steps.push(Message {
            role: Role::Tool,
            content: results,
            from: None,
        });
    }

    /// What the turn produced, ending with `reply`.
    pub(super) fn end(self, reply: ModelReply) -> TurnSteps {
        TurnSteps {
            reply,
            steps: self.steps,
            usage: self.usage,
            rounds: self.count,
        }
    }
}

/// Token counts of several requests of one turn, added up.
fn add_usage(a: Option<Usage>, b: Option<Usage>) -> Option<Usage> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.plus(b)),
        (a, b) => a.or(b),
    }
}

/// Tools offered to the model for one prompt, and how their calls are run.
pub struct ToolLoop<'a> {
    pub specs: Vec<format::ToolSpec>,
    /// Most rounds of tool calls before the model's reply is taken as final.
    pub max_steps: usize,
    /// Runs one reply's calls (`id`, wire name, arguments), concurrently, and returns one
    /// `Part::ToolResult` per call, in order.
    #[allow(clippy::type_complexity)]
    pub run: &'a (dyn Fn(Vec<(String, String, Value)>) -> futures::future::BoxFuture<'a, Vec<Part>>
             + Send
             + Sync),
    /// Receives the pieces of tool calls as the model streams them (streaming requests only).
    pub on_call_delta: Option<&'a (dyn Fn(&ToolCallDelta) + Send + Sync)>,
    /// Native tool calls, the ReAct text loop, or the choice by format and provider.
    pub mode: ToolMode,
}
