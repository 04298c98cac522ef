//! The built-in `tools` feature: chat where the model may call tools: the workspace's (when the
//! conversation names `workspace`), and those of the plugin modules and MCP servers the config
//! enables or the conversation names (`*` stands for the enabled ones). It offers them through
//! the format's native tool calls, runs each reply's calls concurrently, each through the
//! conversation's guard (permission policy, hooks, checkpoints: `guard.rs`), sends the results
//! back, and ends the turn with the final answer as summary and every call, decision and
//! result as details. A plugin module's confirmations, actions and collect mode are handled
//! here (what its answers ask: `plugin_asks.rs`); where the format or the provider has no
//! native tool calls, the agent runs a ReAct text loop instead (`agent/react`,
//! `[features.tools] mode`).
//!
//! With the workspace on it also offers the workspace's `plan` tool, whose calls become plan
//! events; a message sent in plan mode carries a note asking the model for a plan.
//!
//! It owns the mapping between tool names (`SOURCE.function`) and the wire names formats
//! accept. It must never decide whether a call may run (the guard does).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::Value;
use tracing::Instrument;

use super::guard::{Caller, DecisionRecord, Guard};
use super::plugin_asks::{confirm, marker, take_actions, Asked, Asks, MarkerFilter};
use super::port::{ClientPort, EDITOR_SOURCE};
use super::task::TASK_TOOL;
use super::{
    Answer, BuiltinFeature, Feature, FeatureContext, ReplyLines, Turn, TurnEvent, TurnOutcome,
};
use crate::agent::{Delta, OnDelta, ToolLoop};
use crate::config::ToolMode;
use crate::format::{ToolCallDelta, ToolSpec};
use crate::message::{Message, Part};
use crate::permission::Mode;
use crate::tools::plugin::ModuleAnswer;
use crate::tools::toolbox::Toolbox;
use crate::tools::Tool;
use crate::workspace::{self, Workspace};

pub const NAME: &str = "tools";

/// The feature table's row.
pub(crate) const FEATURE: BuiltinFeature = BuiltinFeature {
    name: NAME,
    description: "Chat with tools: the model may call the enabled plugin modules' functions.",
    takes_tools: true,
    build,
};

fn build(c: &FeatureContext<'_>) -> crate::error::Result<Arc<dyn Feature>> {
    if let Some(t) = c.tools {
        let others: Vec<String> = t.iter().filter(|n| !is_built_in(n)).cloned().collect();
        c.toolbox.check_selection(&others)?;
    }
    let guard = c.guard.cloned().ok_or_else(|| {
        crate::error::Error::internal("the tools feature was built without its guard")
    })?;
    Ok(Arc::new(Tools {
        models: Some(c.subagent_models.clone()),
        ..Tools::new(
            c.toolbox.clone(),
            guard,
            c.tools.map(<[String]>::to_vec),
            c.config.and_then(|f| f.max_steps),
            c.config.and_then(|f| f.mode),
        )
    }))
}

/// Whether a selection's entry names the source `source` or one of its tools.
fn names_source(name: &str, source: &str) -> bool {
    name == source
        || name
            .strip_prefix(source)
            .is_some_and(|rest| rest.starts_with('.'))
}

/// Whether a selection's entry names the workspace source or one of its tools.
pub(crate) fn is_workspace(name: &str) -> bool {
    names_source(name, workspace::SOURCE)
}

/// Whether a selection's entry names a source the toolbox does not hold: the workspace, or
/// the tools the client hosts (`editor`).
fn is_built_in(name: &str) -> bool {
    is_workspace(name) || names_source(name, EDITOR_SOURCE)
}

/// Rounds of tool calls in one turn before the model's reply is taken as final, unless
/// `[features.tools] max_steps` says otherwise.
pub(crate) const MAX_STEPS: usize = 8;

/// The `plan` tool's full name.
const PLAN_TOOL: &str = "workspace.plan";

/// What the model is told with a message sent in plan mode.
const PLAN_MODE_NOTE: &str = "(You are in plan mode: you may read, list and search the \
    workspace, but nothing you edit or run will happen. Study what this task needs, then answer \
    with your plan by calling the plan tool once with every step (status pending), and say in a \
    few words what the plan does. The user will carry the plan out in another mode; then update \
    the steps' statuses with the same tool as you work.)";

/// How many times in a turn a stop hook may send the model back to work.
const STOP_HOOK_ROUNDS: usize = 3;

/// The `tools` feature of one conversation.
pub(crate) struct Tools {
    pub(crate) toolbox: Arc<Toolbox>,
    /// The permission policy, hooks and checkpoints every call passes; the workspace.
    pub(crate) guard: Arc<Guard>,
    /// The sources or tools this conversation may use; `None`: the enabled sources.
    pub(crate) selection: Option<Vec<String>>,
    /// Rounds of tool calls per turn.
    pub(crate) max_steps: usize,
    /// Native tool calls, ReAct, or the choice by format and provider (`[features.tools] mode`).
    pub(crate) mode: ToolMode,
    /// A tool asked for the user's next message (collect mode): the tool and its link.
    pub(crate) collect: Mutex<Option<(String, String)>>,
    /// The guard's notes were given (they go with the first turn's details).
    pub(super) noted: std::sync::atomic::AtomicBool,
    /// A stricter mode than the guard's for its calls (a subagent's definition).
    pub(super) at_most: Option<Mode>,
    /// Whether the `task` tool is offered (never to a subagent: one level deep).
    pub(super) subagents: bool,
    /// Where a subagent whose definition names a model gets its agent.
    pub(super) models: Option<Arc<dyn super::task::SubagentModels>>,
}

impl Tools {
    pub(crate) fn new(
        toolbox: Arc<Toolbox>,
        guard: Arc<Guard>,
        selection: Option<Vec<String>>,
        max_steps: Option<usize>,
        mode: Option<ToolMode>,
    ) -> Tools {
        Tools {
            toolbox,
            guard,
            selection,
            max_steps: max_steps.unwrap_or(MAX_STEPS),
            mode: mode.unwrap_or_default(),
            collect: Mutex::new(None),
            noted: std::sync::atomic::AtomicBool::new(false),
            at_most: None,
            subagents: true,
            models: None,
        }
    }
}

/// A wire name for a tool: `.` is not allowed in OpenAI's or Anthropic's tool names.
fn wire_name(name: &str) -> String {
    name.replace('.', "__")
}

impl Tools {
    /// The messages of a prompt: the system prompt with the project's instructions
    /// (`AGENTS.md`) when the workspace is on, then `message`.
    fn prompt(&self, turn: &Turn, message: Message) -> Vec<Message> {
        let system = match (turn.system_prompt.as_deref(), self.guard.context()) {
            (Some(s), Some(c)) => Some(format!("{s}\n\n{c}")),
            (s, c) => s.or(c).map(str::to_string),
        };
        system
            .map(Message::system)
            .into_iter()
            .chain(std::iter::once(message))
            .collect()
    }

    /// The tools of the conversation's selection: the workspace's when it is on, those of the
    /// toolbox's sources (`*` in a selection: the enabled ones), and those the client hosts
    /// (named `editor`, or in `*`, or when there is no selection).
    async fn tools(
        &self,
        port: &dyn ClientPort,
    ) -> (Vec<Tool>, Vec<genai_protocol::listings::SourceError>) {
        let others: Option<Vec<String>> = self
            .selection
            .as_ref()
            .map(|s| s.iter().filter(|n| !is_built_in(n)).cloned().collect());
        let (mut tools, errors) = match &others {
            Some(o) if o.is_empty() => (Vec::new(), Vec::new()),
            _ => self.toolbox.list(others.as_deref()).await,
        };
        if self.guard.workspace().is_some() {
            let wanted = |t: &Tool| {
                self.selection
                    .as_ref()
                    .is_none_or(|s| s.iter().any(|n| n == workspace::SOURCE || n == &t.name))
            };
            let mut own: Vec<Tool> = Workspace::tools().into_iter().filter(wanted).collect();
            // Whenever the workspace's tools are on, the model may keep a plan.
            if !own.is_empty() {
                own.push(workspace::plan::tool());
                let (root, config) = self.guard.lookup_dirs();
                let defs = crate::subagent::Definitions::load(root, config);
                if self.subagents && !defs.is_empty() {
                    own.push(super::task::tool(&defs));
                }
            }
            own.append(&mut tools);
            tools = own;
        }
        let hosted = |t: &Tool| {
            self.selection.as_ref().is_none_or(|s| {
                s.iter().any(|n| {
                    n == EDITOR_SOURCE || n == &t.name || n == crate::tools::toolbox::ENABLED
                })
            })
        };
        tools.extend(port.hosted_tools().into_iter().filter(hosted));
        (tools, errors)
    }
}

#[async_trait]
impl Feature for Tools {
    fn guard(&self) -> Option<Arc<Guard>> {
        Some(self.guard.clone())
    }

    async fn on_new_message(&self, turn: &Turn) -> TurnOutcome {
        let (tools, errors) = self.tools(turn.port.as_ref()).await;
        let mut detailed: Vec<String> = errors
            .iter()
            .map(|e| format!("tool source {} unavailable: {}", e.source, e.message))
            .collect();
        if !self.noted.swap(true, std::sync::atomic::Ordering::Relaxed) {
            detailed.extend(self.guard.notes().iter().cloned());
        }
        detailed.extend(turn.agent.take_notes());
        let prompt_notes = match self
            .guard
            .prompt_submitted(turn, &turn.message.text())
            .await
        {
            Ok(notes) => notes,
            Err(reason) => {
                return TurnOutcome::failed(crate::error::Error::new(
                    crate::error::ErrorKind::FeatureError,
                    format!("a user_prompt_submit hook blocked this message: {reason}"),
                ))
            }
        };
        let offered: HashMap<&str, &Tool> = tools.iter().map(|t| (t.name.as_str(), t)).collect();
        let decisions: Arc<Mutex<Vec<DecisionRecord>>> = Arc::default();
        let names: HashMap<String, String> = tools
            .iter()
            .map(|t| (wire_name(&t.name), t.name.clone()))
            .collect();
        let specs: Vec<ToolSpec> = tools
            .iter()
            .map(|t| ToolSpec {
                name: wire_name(&t.name),
                description: t.description.clone(),
                input_schema: t.input_schema.clone(),
            })
            .collect();
        let log: Arc<Mutex<Vec<String>>> = Arc::default();
        let spent = Mutex::new(super::task::Spent::default());
        let (all_tools, spent) = (&tools, &spent);
        let asks: Arc<Mutex<Asks>> = Arc::default();
        let toolbox = self.toolbox.clone();
        let guard = &self.guard;
        let (offered, decisions_ref) = (&offered, &decisions);
        let run = |calls: Vec<(String, String, Value)>| -> BoxFuture<'_, Vec<Part>> {
            let (toolbox, names, log, asks) = (toolbox.clone(), &names, log.clone(), asks.clone());
            async move {
                let runs = calls.into_iter().map(|(id, wire, args)| {
                    let (toolbox, log, asks) = (toolbox.clone(), log.clone(), asks.clone());
                    let name = names.get(&wire).cloned().unwrap_or(wire);
                    async move {
                        turn.emit(TurnEvent::ToolStarted {
                            id: id.clone(),
                            name: name.clone(),
                            arguments: args.clone(),
                        });
                        let caller = Caller {
                            at_most: self.at_most,
                            ..turn.into()
                        };
                        let call = (id.as_str(), name.as_str(), &args);
                        let span = crate::telemetry::spans::tool(&name, &id, &args);
                        let answer = async {
                            match name.as_str() {
                                TASK_TOOL if self.subagents => {
                                    let (a, lines) =
                                        self.run_task(turn, &id, &args, all_tools, spent).await;
                                    log.lock().map(|mut l| l.extend(lines)).ok();
                                    a
                                }
                                _ => {
                                    let tool = offered.get(name.as_str()).copied();
                                    guard
                                        .call(caller, &toolbox, call, tool, decisions_ref)
                                        .await
                                }
                            }
                        };
                        let answer: crate::error::Result<ModuleAnswer> =
                            Ok(answer.instrument(span).await);
                        let images = match &answer {
                            Ok(a) if !a.is_error => a.images.clone(),
                            _ => Vec::new(),
                        };
                        let edit = answer.as_ref().ok().and_then(|a| a.edit.clone());
                        let (text, is_error) = match answer {
                            Ok(a) if a.is_error => (a.text, true),
                            Ok(a) => {
                                if let Ok(mut asks) = asks.lock() {
                                    asks.actions.extend(a.actions.iter().cloned());
                                    if let Some(link) = &a.collect_link {
                                        asks.collect = Some((name.clone(), link.clone()));
                                    }
                                }
                                match &a.confirmation_link {
                                    Some(link) => {
                                        let asked = Asked {
                                            tool: &name,
                                            call_id: &id,
                                            text: &a.text,
                                            link,
                                        };
                                        confirm(turn, &toolbox, asked, &log).await
                                    }
                                    None => (a.text, false),
                                }
                            }
                            Err(e) => (e.message, true),
                        };
                        turn.emit(TurnEvent::ToolFinished {
                            id: id.clone(),
                            name: name.clone(),
                            output: text.clone(),
                            is_error,
                            edit,
                        });
                        if !is_error && name == PLAN_TOOL {
                            if let Ok(entries) = workspace::plan::entries(&args) {
                                turn.emit(TurnEvent::Plan { entries });
                            }
                        }
                        let mark = if is_error { "error" } else { "result" };
                        if let Ok(mut l) = log.lock() {
                            l.push(format!("tool {name}({args}) → {mark}: {text}"));
                        }
                        Part::ToolResult {
                            tool_call_id: id,
                            content: std::iter::once(Part::text(text)).chain(images).collect(),
                            is_error,
                        }
                    }
                });
                futures::future::join_all(runs).await
            }
            .boxed()
        };
        let call_chunk = |d: &ToolCallDelta| {
            turn.emit(TurnEvent::ToolCall(ToolCallDelta {
                name: d
                    .name
                    .as_ref()
                    .map(|w| names.get(w).cloned().unwrap_or_else(|| w.clone())),
                ..d.clone()
            }))
        };
        let spent_by_subagents = || spent.lock().ok().and_then(|s| s.cost);
        let budget = turn.budget.filter(|b| b.is_limited());
        let tool_loop = ToolLoop {
            specs,
            max_steps: budget.and_then(|b| b.max_steps).unwrap_or(self.max_steps),
            run: &run,
            on_call_delta: if turn.streaming() {
                Some(&call_chunk)
            } else {
                None
            },
            mode: self.mode,
            budget: budget.as_ref(),
            spent_elsewhere: Some(&spent_by_subagents),
        };
        let mut message = turn.message.clone();
        let collecting = self.collect.lock().ok().and_then(|mut c| c.take());
        if let Some((tool, link)) = collecting {
            let note = match self
                .toolbox
                .collect(&tool, &link, &turn.message.text())
                .await
            {
                Ok(answer) => {
                    detailed.push(format!("collected this message for {tool}: {answer}"));
                    format!("(This message was collected by {tool}, as it asked. It answered: {answer})")
                }
                Err(e) => {
                    detailed.push(format!(
                        "collecting this message for {tool} failed: {}",
                        e.message
                    ));
                    format!("(Collecting this message for {tool} failed: {})", e.message)
                }
            };
            message.content.push(Part::text(note));
        }
        for note in prompt_notes {
            message.content.push(Part::text(note));
        }
        // In plan mode the message says so, where it stays with the message (a system prompt
        // is kept with the conversation, and would outlive the mode).
        if self.guard.mode() == Mode::Plan && self.guard.workspace().is_some() {
            message.content.push(Part::text(PLAN_MODE_NOTE));
        }
        let prompt = self.prompt(turn, message);
        let filter = Mutex::new(MarkerFilter::default());
        let is_marker = |candidate: &str| {
            asks.lock().is_ok_and(|a| {
                a.actions.iter().any(|action| {
                    action.get("code").and_then(Value::as_str).map(marker) == Some(candidate.into())
                })
            })
        };
        let stream_to = |delta: Delta<'_>| {
            let Delta::Text(delta) = delta else {
                return turn.stream(delta);
            };
            let shown = filter
                .lock()
                .map(|mut f| f.push(delta, is_marker))
                .unwrap_or_default();
            if !shown.is_empty() {
                turn.chunk(&shown);
            }
        };
        let on_delta: Option<OnDelta<'_>> = if turn.streaming() {
            Some(&stream_to)
        } else {
            None
        };
        let told = |c: &crate::compaction::Compacted| turn.compacted(c);
        let mut result = turn
            .agent
            .send_prompt_observed(
                prompt,
                on_delta,
                Some(&told),
                &turn.cancel,
                Some(&tool_loop),
                turn.response_schema.as_deref(),
            )
            .await;
        // A stop hook may send the model back to work, a few times at most.
        for again in 0..STOP_HOOK_ROUNDS {
            // A budget reached ends the run: no hook sends the model past it.
            if result.as_ref().is_ok_and(|o| o.stopped.is_some()) || result.is_err() {
                break;
            }
            let Some(reason) = self.guard.stopping(turn, again > 0).await else {
                break;
            };
            detailed.push(format!("a stop hook sent the model on: {reason}"));
            let next = self.prompt(turn, Message::user(format!("(A stop hook says:) {reason}")));
            result = turn
                .agent
                .send_prompt_observed(
                    next,
                    on_delta,
                    Some(&told),
                    &turn.cancel,
                    Some(&tool_loop),
                    turn.response_schema.as_deref(),
                )
                .await;
        }
        let decisions = std::mem::take(&mut *decisions.lock().unwrap_or_else(|e| e.into_inner()));
        detailed.extend(decisions.iter().map(DecisionRecord::detail));
        if let Err(e) =
            turn.agent
                .record_decisions(&turn.id.turn_id, &turn.message.text(), &decisions)
        {
            detailed.push(format!(
                "the permission decisions could not be kept: {}",
                e.message
            ));
        }
        let rest = filter.lock().map(|mut f| f.flush()).unwrap_or_default();
        if !rest.is_empty() {
            turn.chunk(&rest);
        }
        detailed.extend(log.lock().map(|l| l.clone()).unwrap_or_default());
        let mut ended =
            TurnOutcome::of_prompt(result, detailed, ReplyLines::Rounds, |outcome, detailed| {
                detailed.extend(outcome.notes.iter().cloned());
                if let Some(why) = &outcome.react {
                    detailed.push(format!(
                        "tool mode: ReAct ({why}); {} requests to the model",
                        outcome.rounds
                    ));
                }
                let asks = std::mem::take(&mut *asks.lock().unwrap_or_else(|e| e.into_inner()));
                if let Some(c) = asks.collect {
                    detailed.push(format!("the next message will be collected for {}", c.0));
                    if let Ok(mut slot) = self.collect.lock() {
                        *slot = Some(c);
                    }
                }
                let (actions, summary) = take_actions(&outcome.reply.message.text(), &asks.actions);
                for (sequence, action) in actions.into_iter().enumerate() {
                    detailed.push(format!("action: {action}"));
                    turn.emit(TurnEvent::Action {
                        message_id: turn.id.turn_id.clone(),
                        sequence: sequence as u32,
                        action,
                    });
                }
                Answer {
                    summary,
                    model: Some(outcome.answered_model()),
                }
            });
        spent.lock().map(|s| s.onto(&mut ended)).ok();
        ended
    }
}

#[cfg(test)]
#[path = "tools_tests.rs"]
mod tests;
