//! The `task` tool: the model hands a prompt to a subagent (a definition of
//! [`crate::subagent`]), which works on it as a fresh agent with its own context (the
//! definition's body as system prompt, then the prompt) and answers; that answer is the
//! call's result, and what the parent turn stores. Several task calls of one reply run at
//! once, as every call of a reply does. The subagent's events reach the parent's client
//! nested under the task call (`TurnEvent::Subagent`), its asks go to that same client, and
//! its usage and cost are added to the parent turn's.
//!
//! It owns the tool's row, a subagent's turn and the port nesting its events. It must never
//! widen what the parent may do: the subagent's tools are the parent's narrowed to its
//! definition, its calls pass the parent's guard in the stricter of the two modes (the
//! files it changes are checkpointed under the parent's turn, so `genai undo` takes them),
//! and it cannot start another subagent (one level deep). Its failure is the call's error
//! result, never the parent's.
//!
//! A subagent runs on the parent's model unless its definition names one (`-m`'s names: an
//! agent of the config, `PROVIDER:MODEL`, a provider, `local`); then the session's
//! [`SubagentModels`] makes it a fresh agent on that model, with that model's price,
//! middleware, compaction and fallbacks.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};

use super::port::{
    ClientPort, Confirmation, HostedToolCall, HostedTurn, MiddlewareCall, PermissionAnswer,
    PermissionAsk, PromptEvent, PromptRef,
};
use super::tools::Tools;
use super::{Feature, Turn, TurnEvent, TurnRef};
use crate::agent::AIAgent;
use crate::error::Result;
use crate::message::{Message, Usage};
use crate::subagent::{Definitions, ModelChoice};
use crate::tools::plugin::ModuleAnswer;
use crate::tools::Tool;
use crate::workspace::Editor;

/// The tool's full name.
pub(crate) const TASK_TOOL: &str = "workspace.task";

/// The agents subagents run on when their definition names a model; the session gives
/// them, as it gives middleware their helper agents.
pub(crate) trait SubagentModels: Send + Sync {
    /// A fresh agent `id` on the model `name` names (as `-m` takes it), registered nowhere
    /// and storing nothing; an error says why that name reaches no model.
    fn agent_on(&self, name: &str, id: String) -> Result<AIAgent>;
}

/// The tool's row, its description listing the subagents `defs` holds.
pub(crate) fn tool(defs: &Definitions) -> Tool {
    let list: Vec<String> = defs
        .list()
        .map(|d| format!("- {}: {}", d.name, d.description))
        .collect();
    let names: Vec<&str> = defs.list().map(|d| d.name.as_str()).collect();
    Tool {
        name: TASK_TOOL.to_string(),
        description: format!(
            "Hand a task to a subagent: it works on it alone, with its own context and tools, and \
             answers with its result (which you then use). Give it everything it needs in the \
             prompt: it does not see this conversation. Several task calls in one reply run at \
             once. The subagents:\n{}",
            list.join("\n")
        ),
        input_schema: json!({"type": "object", "properties": {
            "agent": {"type": "string", "enum": names, "description": "The subagent's name."},
            "prompt": {"type": "string", "description": "The task, with all it needs to know."},
            "description": {"type": "string", "description": "A few words saying what it does."}
        }, "required": ["agent", "prompt"], "additionalProperties": false}),
        source: crate::workspace::SOURCE.to_string(),
        read_only: true,
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskArgs {
    agent: String,
    prompt: String,
    #[allow(dead_code)]
    description: Option<String>,
}

/// What the subagents of one parent turn spent: token counts, and the cost (`None` once one
/// was unknown).
pub(crate) struct Spent {
    pub(crate) usage: Option<Usage>,
    pub(crate) cost: Option<f64>,
}

impl Default for Spent {
    fn default() -> Spent {
        Spent {
            usage: None,
            cost: Some(0.0),
        }
    }
}

impl Spent {
    fn add(&mut self, usage: Option<Usage>, cost: Option<f64>) {
        self.usage = match (self.usage, usage) {
            (Some(a), Some(b)) => Some(a.plus(b)),
            (a, b) => a.or(b),
        };
        self.cost = match (self.cost, cost, usage) {
            (Some(a), Some(b), _) => Some(a + b),
            (a, _, None) => a,
            _ => None,
        };
    }

    /// Adds what the subagents spent to the parent turn's usage and cost.
    pub(crate) fn onto(&self, outcome: &mut super::TurnOutcome) {
        if self.usage.is_none() {
            return;
        }
        outcome.usage = match (outcome.usage, self.usage) {
            (Some(a), Some(b)) => Some(a.plus(b)),
            (a, b) => a.or(b),
        };
        outcome.cost = outcome.cost.zip(self.cost).map(|(a, b)| a + b);
    }
}

impl Tools {
    /// Runs one `task` call of `turn`: the subagent its arguments name, on the tools of
    /// `offered` (the parent's) its definition keeps; answers what the parent's model reads.
    pub(super) async fn run_task(
        &self,
        turn: &Turn,
        call_id: &str,
        arguments: &Value,
        offered: &[Tool],
        spent: &Mutex<Spent>,
    ) -> (ModuleAnswer, Vec<String>) {
        let failed = |text: String| {
            let answer = ModuleAnswer {
                text,
                is_error: true,
                ..Default::default()
            };
            (answer, Vec::new())
        };
        let args: TaskArgs = match serde_json::from_value(arguments.clone()) {
            Ok(a) => a,
            Err(e) => return failed(format!("bad arguments for {TASK_TOOL}: {e}")),
        };
        let (root, config) = self.guard.lookup_dirs();
        let defs = Definitions::load(root, config);
        let def = match defs.find(&args.agent) {
            Ok(d) => d,
            Err(e) => return failed(e.message),
        };
        let selection: Vec<String> = offered
            .iter()
            .filter(|t| t.name != TASK_TOOL && def.allows_tool(&t.name))
            .map(|t| t.name.clone())
            .collect();
        let child = Tools {
            selection: Some(selection),
            at_most: Some(def.mode_under(self.guard.mode())),
            subagents: false,
            ..Tools::new(
                self.toolbox.clone(),
                self.guard.clone(),
                None,
                Some(self.max_steps),
                Some(self.mode),
            )
        };
        child
            .noted
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let port = Arc::new(SubagentPort {
            parent: turn.port.clone(),
            turn: turn.id.clone(),
            call_id: call_id.to_string(),
            agent: def.name.clone(),
        });
        let id = format!("{}/{call_id}", turn.agent.id);
        let mut details: Vec<String> = Vec::new();
        // The definition's model, when this core can reach models by name.
        let named = match (&def.model, &self.models) {
            (ModelChoice::Named(m), Some(models)) => Some((m.as_str(), models)),
            (ModelChoice::Named(m), None) => {
                details.push(format!(
                    "runs on the parent's model: its definition's model `{m}` is not reached from here"
                ));
                None
            }
            (ModelChoice::Inherit, _) => None,
        };
        let agent = match named {
            Some((m, models)) => match models.agent_on(m, id) {
                Ok(a) => a,
                Err(e) => {
                    return failed(format!(
                        "The subagent {} cannot run: its definition's model `{m}`: {} \
                         (`model: inherit` runs it on this conversation's model)",
                        def.name, e.message
                    ))
                }
            },
            None => turn.agent.subagent(id),
        };
        port.turn_event(
            &turn.id,
            TurnEvent::Started {
                prompt: args.prompt.clone(),
            },
        );
        let sub = Turn {
            id: turn.id.clone(),
            agent: Arc::new(agent),
            message: Message::user(args.prompt),
            cancel: turn.cancel.child_token(),
            system_prompt: Some(def.system.clone()),
            port: port.clone(),
            response_schema: None,
            budget: turn.budget,
        };
        let outcome = child.on_new_message(&sub).await;
        port.turn_event(&turn.id, TurnEvent::Done(outcome.clone()));
        if let Ok(mut s) = spent.lock() {
            s.add(outcome.usage, outcome.cost);
        }
        details.extend(outcome.detailed.iter().cloned());
        let details = details
            .into_iter()
            .map(|l| format!("subagent {} ({call_id}): {l}", def.name))
            .collect();
        let answer = match &outcome.error {
            Some(e) => ModuleAnswer {
                text: match named {
                    Some((m, _)) => format!(
                        "The subagent {} failed on its definition's model `{m}`: {}",
                        def.name, e.message
                    ),
                    None => format!("The subagent {} failed: {}", def.name, e.message),
                },
                is_error: true,
                ..Default::default()
            },
            None => ModuleAnswer {
                text: match &outcome.stopped {
                    Some(b) => format!("{}\n({}: {})", outcome.summary, def.name, b.describe()),
                    None => outcome.summary.clone(),
                },
                ..Default::default()
            },
        };
        (answer, details)
    }
}

/// The client port of a subagent: its events go to the parent's client nested under the
/// task call; everything it asks, the parent's client answers.
struct SubagentPort {
    parent: Arc<dyn ClientPort>,
    turn: TurnRef,
    call_id: String,
    agent: String,
}

impl SubagentPort {
    /// The id a client is asked about a subagent's call by: under its task call's, since a
    /// model that gives no ids (Gemini, Ollama: genai numbers their calls from one in each
    /// reply) gives the subagent's first call the same id as the parent's task call.
    fn nested_id(&self, id: &str) -> String {
        format!("{}/{id}", self.call_id)
    }
}

#[async_trait]
impl ClientPort for SubagentPort {
    fn streaming(&self) -> bool {
        self.parent.streaming()
    }

    fn turn_event(&self, _turn: &TurnRef, event: TurnEvent) {
        let nested = TurnEvent::Subagent {
            call_id: self.call_id.clone(),
            agent: self.agent.clone(),
            event: Box::new(event),
        };
        self.parent.turn_event(&self.turn, nested);
    }

    fn prompt_event(&self, prompt: &PromptRef, event: PromptEvent) {
        self.parent.prompt_event(prompt, event);
    }

    fn hosted_turn(&self, turn: HostedTurn) {
        self.parent.hosted_turn(turn);
    }

    async fn confirm(&self, mut request: Confirmation) -> Result<bool> {
        request.tool_call_id = request.tool_call_id.map(|id| self.nested_id(&id));
        self.parent.confirm(request).await
    }

    async fn ask_permission(&self, mut ask: PermissionAsk) -> Result<PermissionAnswer> {
        ask.tool_call_id = self.nested_id(&ask.tool_call_id);
        self.parent.ask_permission(ask).await
    }

    fn hosted_tools(&self) -> Vec<Tool> {
        self.parent.hosted_tools()
    }

    async fn call_tool(&self, call: HostedToolCall) -> Result<ModuleAnswer> {
        self.parent.call_tool(call).await
    }

    fn editor(&self) -> Option<&dyn Editor> {
        self.parent.editor()
    }

    async fn middleware(&self, call: MiddlewareCall) -> Result<Vec<Message>> {
        self.parent.middleware(call).await
    }
}

#[cfg(test)]
#[path = "task_tests.rs"]
mod tests;
