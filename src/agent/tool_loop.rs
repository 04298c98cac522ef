//! The native tool loop: while the model answers with tool calls (up to a number of rounds),
//! they are run and their results sent back in the format's own tool-call shape.
//!
//! It owns [`ToolLoop`] (the tools of one prompt and how their calls run) and the rounds of a
//! native turn. It must never run a tool itself (the caller's `run` does) nor commit anything
//! (the agent commits the whole turn).

use serde_json::Value;

use super::{AIAgent, TurnSteps};
use crate::config::ToolMode;
use crate::error::Result;
use crate::format::{self, ModelConfiguration, RequestOptions, ToolCallDelta};
use crate::message::{Message, Part, Role, Usage};

impl AIAgent {
    /// The native tool loop: while the model answers with tool calls (up to `max_steps`
    /// rounds), they are run and their results sent back.
    pub(super) async fn native_turn(
        &self,
        model: &ModelConfiguration,
        full: &[Message],
        on_delta: Option<&(dyn Fn(&str) + Send + Sync)>,
        tools: Option<&ToolLoop<'_>>,
    ) -> Result<TurnSteps> {
        let mut steps: Vec<Message> = Vec::new();
        let mut usage: Option<Usage> = None;
        let mut rounds = 0;
        loop {
            rounds += 1;
            let mut messages = full.to_vec();
            messages.extend(steps.iter().cloned());
            let on_call = tools.and_then(|t| t.on_call_delta);
            let options = RequestOptions {
                stream: on_delta.is_some(),
                tools: tools.map_or(&[], |t| &t.specs),
                stop: &[],
            };
            let reply = self
                .call_model(model, &messages, &options, on_delta, on_call)
                .await?;
            usage = add_usage(usage, reply.usage);
            let calls = reply.message.tool_calls();
            match tools {
                Some(t) if !calls.is_empty() && steps.len() / 2 < t.max_steps => {
                    let results = (t.run)(calls).await;
                    steps.push(reply.message);
                    steps.push(Message {
                        role: Role::Tool,
                        content: results,
                        from: None,
                    });
                }
                _ => {
                    return Ok(TurnSteps {
                        reply,
                        steps,
                        usage,
                        rounds,
                    })
                }
            }
        }
    }
}

/// Token counts of several requests of one turn, added up.
pub(super) fn add_usage(a: Option<Usage>, b: Option<Usage>) -> Option<Usage> {
    let add = |x: Option<u64>, y: Option<u64>| match (x, y) {
        (None, None) => None,
        (x, y) => Some(x.unwrap_or(0) + y.unwrap_or(0)),
    };
    match (a, b) {
        (Some(a), Some(b)) => Some(Usage {
            input_tokens: a.input_tokens + b.input_tokens,
            output_tokens: a.output_tokens + b.output_tokens,
            cache_read_tokens: add(a.cache_read_tokens, b.cache_read_tokens),
            cache_creation_tokens: add(a.cache_creation_tokens, b.cache_creation_tokens),
        }),
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
