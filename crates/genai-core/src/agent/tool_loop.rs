//! The native tool loop: while the model answers with tool calls (up to a number of rounds),
//! they are run and their results sent back in the format's own tool-call shape.
//!
//! It owns [`ToolLoop`] (the tools of one prompt and how their calls run) and the rounds of a
//! native turn. It must never run a tool itself (the caller's `run` does) nor commit anything
//! (the agent commits the whole turn).

use serde_json::Value;

use super::budget::{Budget, BudgetReached};
use super::structured;
use super::{AIAgent, Answerer, ModelBinding, Notes, OnDelta, TurnSteps};
use crate::config::ToolMode;
use crate::error::Result;
use crate::format::{
    self, ModelConfiguration, ModelReply, RequestOptions, ResponseSchema, ToolCallDelta,
};
use crate::message::{Message, Part, Role, Usage};

impl AIAgent {
    /// The native tool loop: while the model answers with tool calls (up to `max_steps`
    /// rounds), they are run and their results sent back. With a `schema`, the final reply is
    /// checked against it ([`structured`](super::structured)); it is not streamed, and
    /// `on_delta` gets the checked JSON whole.
    pub(super) async fn native_turn(
        &self,
        binding: &ModelBinding,
        full: &[Message],
        on_delta: Option<OnDelta<'_>>,
        tools: Option<&ToolLoop<'_>>,
        schema: Option<&ResponseSchema>,
        notes: &Notes<'_>,
    ) -> Result<TurnSteps> {
        let mut rounds = Rounds::default();
        let streamed = on_delta.filter(|_| schema.is_none());
        let model = &binding.model;
        // A forced call (`tool_choice` required or a tool's name) is forced in the first round
        // only: after calls, the model decides, or it could never answer.
        let relaxed = forced_choice(model).then(|| {
            let mut m = model.clone();
            m.parameters.remove(format::schema::TOOL_CHOICE.name);
            m
        });
        let mut model = model;
        // The failed reply and what was wrong with it, sent with the one retry only.
        let mut retry: Vec<Message> = Vec::new();
        loop {
            let mut messages = rounds.start(full);
            messages.extend(retry.iter().cloned());
            let on_call = tools.and_then(|t| t.on_call_delta);
            let options = RequestOptions {
                stream: streamed.is_some(),
                tools: tools.map_or(&[], |t| &t.specs),
                stop: &[],
                schema,
            };
            let (mut reply, answerer) = self
                .call_model(
                    binding, model, &messages, &options, streamed, on_call, notes,
                )
                .await?;
            rounds.count_usage(reply.usage, &answerer);
            let answered = schema.is_some_and(|s| s.answered_by_tool(&reply.message));
            let calls = reply.message.tool_calls();
            match tools {
                Some(t) if !answered && !calls.is_empty() && rounds.may_go_on(t) => {
                    let results = (t.run)(calls).await;
                    rounds.step(reply.message, results);
                    model = relaxed.as_ref().unwrap_or(model);
                }
                _ => {
                    let Some(schema) = schema else {
                        return Ok(rounds.end(reply, answerer));
                    };
                    match structured::settle(schema, &mut reply) {
                        Ok(json) => {
                            // Unstreamed, the caller learns who answered with the reply.
                            if let Some(f) = on_delta {
                                f(super::Delta::Answering(&answerer));
                                f(super::Delta::Text(&json));
                            }
                            return Ok(rounds.end(reply, answerer));
                        }
                        Err(errors) if retry.is_empty() => {
                            retry = structured::retry_messages(schema, &reply.message, &errors);
                        }
                        Err(errors) => return Err(format::schema::invalid_reply(&errors)),
                    }
                }
            }
        }
    }
}

/// Whether the model's `tool_choice` forces a call.
fn forced_choice(model: &ModelConfiguration) -> bool {
    let choice = model.parameters.get(format::schema::TOOL_CHOICE.name);
    let choice = choice.and_then(Value::as_str).map(str::to_ascii_lowercase);
    !matches!(choice.as_deref(), None | Some("auto" | "none"))
}

/// The rounds of one turn so far: the steps (each round's calls, then their results), the
/// usage and cost of every request, how many requests there were, and the budget that
/// stopped the turn, if one did.
pub(super) struct Rounds {
    steps: Vec<Message>,
    usage: Option<Usage>,
    /// What the requests cost so far; `None` once one's price is unknown.
    cost: Option<f64>,
    count: usize,
    started: std::time::Instant,
    stopped: Option<BudgetReached>,
}

impl Default for Rounds {
    fn default() -> Rounds {
        Rounds {
            steps: Vec::new(),
            usage: None,
            cost: Some(0.0),
            count: 0,
            started: std::time::Instant::now(),
            stopped: None,
        }
    }
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

    /// Whether the model's calls may run and another round follow: within `max_steps` and
    /// within the turn's budget; when a limit the budget set stops the turn, it is noted.
    pub(super) fn may_go_on(&mut self, tools: &ToolLoop<'_>) -> bool {
        let Some(budget) = tools.budget else {
            return self.may_call(tools.max_steps);
        };
        if !self.may_call(tools.max_steps) {
            self.stopped = budget.max_steps.map(|max| BudgetReached::Steps {
                max: max.min(tools.max_steps),
            });
            return false;
        }
        // What its subagents spent counts too (unknown there: unknown in all).
        let elsewhere = tools.spent_elsewhere.map_or(Some(0.0), |f| f());
        let spent = self.cost.zip(elsewhere).map(|(a, b)| a + b);
        self.stopped = budget.reached(spent, self.started);
        self.stopped.is_none()
    }

    /// Adds a request's token counts, and its cost at the price of the model that answered it.
    pub(super) fn count_usage(&mut self, usage: Option<Usage>, answerer: &Answerer) {
        self.usage = add_usage(self.usage, usage);
        let price = answerer.price.as_ref().map(|p| p.price);
        self.cost = match (self.cost, price, usage) {
            (Some(spent), Some(price), Some(u)) => Some(spent + price.cost(&u)),
            (spent, _, None) => spent,
            _ => None,
        };
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

    /// What the turn produced, ending with `reply` from `answerer`.
    pub(super) fn end(self, reply: ModelReply, answerer: Answerer) -> TurnSteps {
        TurnSteps {
            reply,
            answerer,
            steps: self.steps,
            usage: self.usage,
            rounds: self.count,
            stopped: self.stopped,
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
    /// The run's limits, checked before each further round (`max_steps` is already the
    /// budget's when it sets one).
    pub budget: Option<&'a Budget>,
    /// What the run spent outside this loop so far, in US dollars (its subagents'; `None`:
    /// unknown), counted against the budget's cost.
    pub spent_elsewhere: Option<&'a (dyn Fn() -> Option<f64> + Send + Sync)>,
}
