//! The built-in `tools` feature: chat where the model may call the tools of the plugin modules
//! the config enables (`[plugins.NAME] enabled = true`). It offers them through the format's
//! native tool calls, runs each reply's calls concurrently, sends the results back, and ends the
//! turn with the final answer as summary and every call with its arguments and result as
//! details.
//!
//! It owns the mapping between tool names (`MODULE.function`) and the wire names formats
//! accept. Not yet here (issue 5): confirmations, actions and collect mode (a module's answer
//! text reaches the model; the links are listed in the details), MCP servers, ReAct for
//! formats without native tools.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::Value;

use super::{Feature, Turn, TurnOutcome};
use crate::agent::ToolLoop;
use crate::message::{Message, Part};
use crate::model::ToolSpec;
use crate::tools::toolbox::Toolbox;

pub const NAME: &str = "tools";
pub const DESCRIPTION: &str =
    "Chat with tools: the model may call the enabled plugin modules' functions.";

/// Rounds of tool calls in one turn before the model's reply is taken as final.
pub const MAX_STEPS: usize = 8;

pub struct Tools {
    pub toolbox: Arc<Toolbox>,
}

/// A wire name for a tool: `.` is not allowed in OpenAI's or Anthropic's tool names.
fn wire_name(name: &str) -> String {
    name.replace('.', "__")
}

#[async_trait]
impl Feature for Tools {
    async fn on_new_message(&self, turn: &Turn) -> TurnOutcome {
        let (tools, errors) = self.toolbox.list(None).await;
        let mut detailed: Vec<String> = errors
            .iter()
            .map(|e| format!("tool source {} unavailable: {}", e.source, e.message))
            .collect();
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
        let toolbox = self.toolbox.clone();
        let run = |calls: Vec<(String, String, Value)>| -> BoxFuture<'_, Vec<Part>> {
            let (toolbox, names, log) = (toolbox.clone(), &names, log.clone());
            async move {
                let runs = calls.into_iter().map(|(id, wire, args)| {
                    let toolbox = toolbox.clone();
                    let log = log.clone();
                    let name = names.get(&wire).cloned().unwrap_or(wire);
                    async move {
                        let (text, is_error, extra) = match toolbox.call(&name, &args).await {
                            Ok(a) => {
                                let mut extra = String::new();
                                if let Some(l) = &a.confirmation_link {
                                    extra.push_str(&format!(" (asks confirmation: {l})"));
                                }
                                if let Some(l) = &a.collect_link {
                                    extra.push_str(&format!(" (collects the next message: {l})"));
                                }
                                (a.text, a.is_error, extra)
                            }
                            Err(e) => (e.message, true, String::new()),
                        };
                        let mark = if is_error { "error" } else { "result" };
                        if let Ok(mut l) = log.lock() {
                            l.push(format!("tool {name}({args}) → {mark}: {text}{extra}"));
                        }
                        Part::ToolResult {
                            tool_call_id: id,
                            content: vec![Part::text(text)],
                            is_error,
                        }
                    }
                });
                futures::future::join_all(runs).await
            }
            .boxed()
        };
        let tool_loop = ToolLoop {
            specs,
            max_steps: MAX_STEPS,
            run: &run,
        };
        let mut prompt = Vec::with_capacity(2);
        if let Some(system) = &turn.system_prompt {
            prompt.push(Message::system(system.clone()));
        }
        prompt.push(turn.message.clone());
        let stream_to = |delta: &str| turn.chunk(delta);
        let on_delta: Option<&(dyn Fn(&str) + Send + Sync)> = if turn.events.streaming() {
            Some(&stream_to)
        } else {
            None
        };
        let result = turn
            .agent
            .send_prompt_with_tools(prompt, on_delta, &turn.cancel, Some(&tool_loop))
            .await;
        detailed.extend(log.lock().map(|l| l.clone()).unwrap_or_default());
        match result {
            Ok(outcome) => {
                let r = outcome.reply;
                if let Some(u) = r.usage {
                    detailed.push(format!(
                        "usage: {} input + {} output = {} tokens",
                        u.input_tokens,
                        u.output_tokens,
                        u.total()
                    ));
                }
                TurnOutcome {
                    summary: r.message.text(),
                    detailed,
                    error: None,
                    usage: r.usage,
                    model: r.model,
                    finish_reason: r.finish_reason,
                }
            }
            Err(e) => {
                let mut failed = TurnOutcome::failed(e);
                detailed.append(&mut failed.detailed);
                TurnOutcome { detailed, ..failed }
            }
        }
    }
}
