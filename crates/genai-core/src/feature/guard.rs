//! The guard every tool call of a conversation passes, whatever its source (the workspace, an
//! MCP server, a plugin module) and whatever the front-end: the permission policy decides
//! (asking the user through the client port when it says so), the `pre_tool_use` hooks may
//! block, a file is checkpointed before a workspace tool changes it, the `post_tool_use` hooks
//! see the answer, and every decision is kept with the turn.
//!
//! It owns the order of those steps and the text the model gets when a call is refused. It
//! must never decide a rule itself (`crate::permission` does) nor run a tool's logic
//! (`crate::workspace`, the toolbox).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;

mod secrets;

use super::port::{
    ClientPort, HostedToolCall, PermissionAnswer, PermissionAsk, TurnEvent, TurnRef, EDITOR_SOURCE,
};
use super::Turn;
use crate::checkpoint::{CheckpointConfig, Checkpoints, TurnKey};
use crate::error::{Error, Result};
use crate::hooks::{self, HookContext, HooksConfig, Outcome};
use crate::permission::project::SavedRules;
use crate::permission::{Decision, Kind, Policy, Request, Verdict};
pub(crate) use crate::store::DecisionRecord;
use crate::tools::plugin::ModuleAnswer;
use crate::tools::toolbox::Toolbox;
use crate::tools::Tool;
use crate::workspace::sandbox::{self, Sandbox, Support};
use crate::workspace::{self, CallContext, Content, EditorCall, Workspace};

/// Where genai keeps what outlives a conversation: checkpoints, and the rules "allow always"
/// answers save.
#[derive(Debug, Clone)]
pub(crate) struct GuardHome {
    pub(crate) data_dir: PathBuf,
    /// genai's own files that hold secrets (`crate::secrets::own_files`): never read by a tool
    /// nor sent as context.
    pub(crate) own_secrets: Vec<PathBuf>,
    /// The file of the saved "always" rules (`CONFIG_DIR/projects.toml`).
    pub(crate) saved_rules: PathBuf,
    pub(crate) checkpoints: CheckpointConfig,
}

/// The guard of one conversation.
pub(crate) struct Guard {
    root: PathBuf,
    workspace: Option<Arc<Workspace>>,
    policy: Mutex<Policy>,
    hooks: HooksConfig,
    home: Option<GuardHome>,
    checkpoints: OnceLock<Option<Arc<Checkpoints>>>,
    /// Commands may reach the network (`[permissions] network`).
    network: bool,
    /// Rules the user answered "reject always" to, in this conversation.
    rejected: Mutex<HashSet<String>>,
    /// Held while the user is asked: the calls of one reply run together, but their questions
    /// come one at a time (and an "always" answer settles the ones after it).
    asking: tokio::sync::Mutex<()>,
    /// What the turn's details say once: ignored project rules, the sandbox, AGENTS.md.
    notes: Vec<String>,
    /// Values of the root's secret files, never shown to the model.
    secret_values: Vec<String>,
    /// The project's `AGENTS.md` text, for the system prompt.
    context: Option<String>,
    /// The temporary folder sandboxed commands may write to (removed with the conversation).
    temp: OnceLock<std::result::Result<tempfile::TempDir, String>>,
}

/// What a guard is made from.
pub(crate) struct GuardSpec {
    pub(crate) root: PathBuf,
    pub(crate) workspace: Option<Arc<Workspace>>,
    pub(crate) policy: Policy,
    pub(crate) hooks: HooksConfig,
    pub(crate) home: Option<GuardHome>,
    pub(crate) network: bool,
    pub(crate) notes: Vec<String>,
    /// The project's `AGENTS.md` text, for the system prompt.
    pub(crate) context: Option<String>,
}

/// Whom a call is for: its turn (the checkpoint of what it changes is kept under it, the
/// hooks see its conversation) and the client asked about it. A model's call comes from a
/// [`Turn`]; a client calling a tool itself (`genai mcp`) names its own.
#[derive(Clone, Copy)]
pub(crate) struct Caller<'a> {
    pub(crate) id: &'a TurnRef,
    pub(crate) port: &'a dyn ClientPort,
    /// A stricter mode its calls are decided in (a subagent's definition), never a wider one.
    pub(crate) at_most: Option<crate::permission::Mode>,
}

impl<'a> From<&'a Turn> for Caller<'a> {
    fn from(turn: &'a Turn) -> Caller<'a> {
        Caller {
            id: &turn.id,
            port: turn.port.as_ref(),
            at_most: None,
        }
    }
}

/// What a refused call tells the model.
fn refused(text: String) -> ModuleAnswer {
    ModuleAnswer {
        text,
        is_error: true,
        ..Default::default()
    }
}

impl Guard {
    pub(crate) fn new(spec: GuardSpec) -> Guard {
        let mut notes = spec.policy.notes().to_vec();
        notes.extend(spec.notes);
        if spec.workspace.is_some() {
            if let Support::Missing(why) = sandbox::support() {
                notes.push(format!(
                    "commands are not sandboxed, so each one asks: {why}"
                ));
            }
        }
        Guard {
            secret_values: secrets::values(&spec.root),
            root: spec.root,
            workspace: spec.workspace,
            policy: Mutex::new(spec.policy),
            hooks: spec.hooks,
            home: spec.home,
            checkpoints: OnceLock::new(),
            network: spec.network,
            rejected: Mutex::default(),
            asking: tokio::sync::Mutex::new(()),
            notes,
            context: spec.context,
            temp: OnceLock::new(),
        }
    }

    /// Changes the permission mode (a client's mode switch); answers the mode in force.
    pub(crate) fn set_mode(&self, mode: crate::permission::Mode) -> crate::permission::Mode {
        self.policy.lock().map_or(mode, |mut p| p.set_mode(mode))
    }

    /// The permission mode in force.
    pub(crate) fn mode(&self) -> crate::permission::Mode {
        self.policy
            .lock()
            .map_or(crate::permission::Mode::ReadOnly, |p| p.mode())
    }

    /// The notes the first turn's details carry.
    pub(crate) fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The project's instructions (`AGENTS.md`) for the system prompt, when the workspace is on.
    pub(crate) fn context(&self) -> Option<&str> {
        self.context.as_deref()
    }

    pub(crate) fn workspace(&self) -> Option<&Arc<Workspace>> {
        self.workspace.as_ref()
    }

    /// Where subagents are looked up from: the root, and the config folder (that of the saved
    /// rules' file).
    pub(crate) fn lookup_dirs(&self) -> (&Path, Option<&Path>) {
        let config = self.home.as_ref().and_then(|h| h.saved_rules.parent());
        (&self.root, config)
    }

    /// The checkpoint store, opened on the first change (`None` without a home, or when it
    /// cannot open: then writes are refused, never made without their checkpoint).
    fn checkpoints(&self) -> Result<Arc<Checkpoints>> {
        let opened = self.checkpoints.get_or_init(|| {
            let home = self.home.as_ref()?;
            match Checkpoints::open(&home.data_dir) {
                Ok(c) => {
                    // Old checkpoints go once a process, before the first new one
                    // (`[checkpoints] max_age_days`, `max_megabytes`).
                    let (age, bytes) = (home.checkpoints.max_age(), home.checkpoints.max_bytes());
                    match c.prune(age, bytes) {
                        Ok(p) if p.turns > 0 => tracing::info!(
                            "pruned the checkpoints of {} turns ({} bytes)",
                            p.turns,
                            p.bytes
                        ),
                        Ok(_) => {}
                        Err(e) => tracing::warn!("cannot prune the checkpoints: {}", e.message),
                    }
                    Some(Arc::new(c))
                }
                Err(e) => {
                    tracing::warn!("cannot open the checkpoints: {}", e.message);
                    None
                }
            }
        });
        opened.clone().ok_or_else(|| {
            Error::internal(
                "the checkpoint store cannot be opened, so no file is changed (see the log)",
            )
        })
    }

    /// The hooks' context for a turn.
    fn hook_context(&self, turn: Caller<'_>) -> HookContext {
        HookContext {
            session_id: turn.id.conversation_id.clone(),
            cwd: self.root.clone(),
            transcript_path: None,
        }
    }

    /// Runs the `user_prompt_submit` hooks: `Err(reason)` when one blocks the prompt; the
    /// notes (what the hooks printed) join the message as context.
    pub(crate) async fn prompt_submitted(
        &self,
        turn: &Turn,
        prompt: &str,
    ) -> std::result::Result<Vec<String>, String> {
        if self.hooks.user_prompt_submit.is_empty() {
            return Ok(Vec::new());
        }
        let event = hooks::Event::UserPromptSubmit { prompt };
        match hooks::run(&self.hooks, event, &self.hook_context(turn.into())).await {
            Outcome::Continue { notes } => Ok(notes),
            Outcome::Block { reason, .. } => Err(reason),
        }
    }

    /// Runs the `stop` hooks at the end of a turn: `Some(reason)` when one asks the model to
    /// go on.
    pub(crate) async fn stopping(&self, turn: &Turn, again: bool) -> Option<String> {
        if self.hooks.stop.is_empty() {
            return None;
        }
        let event = hooks::Event::Stop {
            stop_hook_active: again,
        };
        match hooks::run(&self.hooks, event, &self.hook_context(turn.into())).await {
            Outcome::Continue { .. } => None,
            Outcome::Block { reason, .. } => Some(reason),
        }
    }

    /// Hides the root's secret values in a text the model will see.
    fn scrub(&self, mut text: String) -> String {
        for value in &self.secret_values {
            if text.contains(value.as_str()) {
                text = text.replace(value.as_str(), "[secret hidden by genai]");
            }
        }
        text
    }

    /// What the policy says of a call, with the sandbox and the session's rejections.
    fn verdict(
        &self,
        request: &Request<'_>,
        in_terminal: bool,
        at_most: Option<crate::permission::Mode>,
    ) -> (Verdict, String) {
        let Ok(policy) = self.policy.lock() else {
            return (
                Verdict {
                    decision: Decision::Deny,
                    by: "an internal error (the policy's lock)".into(),
                },
                String::new(),
            );
        };
        let always = policy.always_rule(request);
        let mut verdict = policy.decide_within(request, at_most);
        drop(policy);
        if verdict.decision != Decision::Deny
            && self.rejected.lock().is_ok_and(|r| r.contains(&always))
        {
            verdict = Verdict {
                decision: Decision::Deny,
                by: "your \"reject always\" answer in this conversation".into(),
            };
        }
        if verdict.decision == Decision::Allow && matches!(request.kind, Kind::Execute) {
            let unsandboxed = match sandbox::support() {
                _ if in_terminal => Some("commands run in the editor's terminal".to_string()),
                Support::Missing(why) => Some(why.clone()),
                Support::Landlock { .. } => None,
            };
            if let Some(why) = unsandboxed {
                verdict = Verdict {
                    decision: Decision::Ask,
                    by: format!("no sandbox ({why})"),
                };
            }
        }
        (verdict, always)
    }

    /// Asks the user through the turn's client; `(allowed, by)`.
    async fn ask(&self, turn: Caller<'_>, ask: PermissionAsk) -> (bool, String) {
        let always = ask.always_rule.clone();
        match turn.port.ask_permission(ask).await {
            Ok(answer) => {
                match answer {
                    PermissionAnswer::AllowAlways => {
                        if let Ok(mut p) = self.policy.lock() {
                            if let Err(e) = p.add_saved(&always) {
                                tracing::warn!("cannot follow the rule {always}: {}", e.message);
                            }
                        }
                        if let Some(home) = &self.home {
                            let saved = SavedRules::new(home.saved_rules.clone());
                            if let Err(e) = saved.add(&self.root, &always) {
                                tracing::warn!("cannot save the rule {always}: {}", e.message);
                            }
                        }
                    }
                    PermissionAnswer::RejectAlways => {
                        if let Ok(mut r) = self.rejected.lock() {
                            r.insert(always.clone());
                        }
                    }
                    _ => {}
                }
                let saved = match answer {
                    PermissionAnswer::AllowAlways => format!(", saved `{always}`"),
                    _ => String::new(),
                };
                (
                    answer.allows(),
                    format!("the user ({}{saved})", answer.as_str()),
                )
            }
            Err(e) => (false, format!("no one to ask ({})", e.message)),
        }
    }

    /// Runs one call through the policy, the hooks and the checkpoints; the decision goes to
    /// `decisions`.
    pub(crate) async fn call(
        &self,
        turn: Caller<'_>,
        toolbox: &Toolbox,
        call: (&str, &str, &Value),
        offered: Option<&Tool>,
        decisions: &Mutex<Vec<DecisionRecord>>,
    ) -> ModuleAnswer {
        let read_only = offered.is_some_and(|t| t.read_only);
        let source = offered.map_or("", |t| t.source.as_str());
        let (call_id, tool, arguments) = call;
        let record = |argument: &str, allowed: bool, by: &str| {
            let decided = DecisionRecord {
                call_id: call_id.to_string(),
                tool: tool.to_string(),
                argument: argument.to_string(),
                decision: if allowed { "allow" } else { "deny" }.to_string(),
                by: by.to_string(),
            };
            crate::telemetry::spans::decided(tool, call_id, allowed, by);
            turn.port
                .turn_event(turn.id, TurnEvent::Decision(decided.clone()));
            if let Ok(mut d) = decisions.lock() {
                d.push(decided);
            }
        };
        let in_workspace = tool
            .strip_prefix(workspace::SOURCE)
            .and_then(|f| f.strip_prefix('.'));
        let described = match (in_workspace, &self.workspace) {
            (Some(function), Some(ws)) => match ws.describe(function, arguments) {
                Ok(d) => Some((function, ws, d)),
                Err(e) => {
                    record(&arguments.to_string(), false, &e.message);
                    return refused(format!("Refused: {}", e.message));
                }
            },
            (Some(_), None) => {
                return refused(format!(
                    "{tool} is not offered in this conversation (the workspace source is off)"
                ))
            }
            _ => None,
        };
        let (kind, subject) = match &described {
            Some((_, _, d)) => (d.kind, d.subject.clone()),
            // A client's tool that changes something changes the editor's state: an edit
            // (asked in `ask` mode), unlike a configured tool the user chose to run.
            None if source == EDITOR_SOURCE && !read_only => (Kind::Edit, None),
            None => (Kind::Other { read_only }, None),
        };
        let argument = subject.clone().unwrap_or_else(|| {
            let mut s = arguments.to_string();
            if s.len() > 200 {
                s.truncate(s.floor_char_boundary(200));
                s.push('…');
            }
            s
        });
        let request = Request {
            tool,
            kind,
            subject: subject.as_deref(),
        };
        let editor = turn.port.editor();
        let in_terminal = editor.is_some_and(|e| e.runs_commands());
        let (mut verdict, mut always_rule) = self.verdict(&request, in_terminal, turn.at_most);
        let _asking = match verdict.decision {
            Decision::Ask => {
                let held = self.asking.lock().await;
                // An answer given meanwhile ("always") may have settled this call.
                (verdict, always_rule) = self.verdict(&request, in_terminal, turn.at_most);
                Some(held)
            }
            _ => None,
        };
        let (allowed, by) = match verdict.decision {
            Decision::Allow => (true, verdict.by),
            Decision::Deny => (false, verdict.by),
            Decision::Ask => {
                let edit = match &described {
                    Some((function, ws, d)) if d.kind == Kind::Edit => {
                        let reads = editor
                            .filter(|e| e.reads())
                            .map(|e| (e, editor_call(turn, call_id)));
                        ws.preview(function, arguments, reads).await.ok()
                    }
                    _ => None,
                };
                let ask = PermissionAsk {
                    turn: turn.id.clone(),
                    tool_call_id: call_id.to_string(),
                    tool: tool.to_string(),
                    subject: subject.clone(),
                    arguments: arguments.clone(),
                    title: title(tool, kind, &argument),
                    reason: verdict.by,
                    always_rule,
                    edit,
                };
                self.ask(turn, ask).await
            }
        };
        record(&argument, allowed, &by);
        drop(_asking);
        if !allowed {
            return refused(format!(
                "Refused: {tool}({argument}) was not allowed ({by}). It was not run: do not retry it; \
                 tell the user what you wanted to do, or do something else."
            ));
        }
        let cx = self.hook_context(turn);
        let pre = hooks::Event::PreToolUse {
            tool,
            source,
            input: arguments,
        };
        if let Outcome::Block { reason, by } = hooks::run(&self.hooks, pre, &cx).await {
            record(&argument, false, &format!("the pre_tool_use hook `{by}`"));
            return refused(format!("Blocked by a hook: {reason}"));
        }
        let mut answer = match described {
            Some((function, ws, d)) => {
                let call = (call_id, function, arguments);
                self.run_workspace(turn, ws, call, &d).await
            }
            None if source == EDITOR_SOURCE => {
                let call = HostedToolCall {
                    turn: turn.id.clone(),
                    call_id: call_id.to_string(),
                    name: tool
                        .strip_prefix(EDITOR_SOURCE)
                        .and_then(|n| n.strip_prefix('.'))
                        .unwrap_or(tool)
                        .to_string(),
                    arguments: arguments.clone(),
                };
                turn.port
                    .call_tool(call)
                    .await
                    .unwrap_or_else(|e| refused(e.message))
            }
            None => toolbox
                .call(tool, arguments)
                .await
                .unwrap_or_else(|e| refused(e.message)),
        };
        answer.text = self.scrub(std::mem::take(&mut answer.text));
        if !self.hooks.post_tool_use.is_empty() {
            let response = hooks::tool_response(&answer.text, answer.is_error);
            let post = hooks::Event::PostToolUse {
                tool,
                source,
                input: arguments,
                response: &response,
            };
            if let Outcome::Block { reason, .. } = hooks::run(&self.hooks, post, &cx).await {
                answer.text.push_str(&format!("\n(A hook says: {reason})"));
            }
        }
        answer
    }

    /// Runs an allowed workspace call: its file checkpointed first, its command sandboxed, both
    /// through the client's editor when it holds the files or runs the commands.
    async fn run_workspace(
        &self,
        turn: Caller<'_>,
        ws: &Workspace,
        (call_id, function, arguments): (&str, &str, &Value),
        described: &workspace::Described,
    ) -> ModuleAnswer {
        let key = TurnKey {
            conversation_id: turn.id.conversation_id.clone(),
            turn_id: turn.id.turn_id.clone(),
        };
        let root = ws.root().path().to_path_buf();
        let on_write = |path: &Path, done: bool, held: Content<'_>| -> Result<()> {
            let c = self.checkpoints()?;
            match (done, held) {
                (false, Content::OnDisk) => c.before_change(&key, &root, path),
                (false, Content::Known(held)) => c.before_change_held(&key, &root, path, held),
                (true, Content::Known(Some(bytes))) => c.after_change_held(&key, path, bytes),
                (true, _) => c.after_change(&key, path),
            }
        };
        let editor = turn.port.editor();
        let secret = |relative: &str| self.policy.lock().map_or(true, |p| p.is_secret(relative));
        let in_terminal = editor.is_some_and(|e| e.runs_commands());
        let sandbox = match (described.kind, sandbox::support()) {
            (Kind::Execute, Support::Landlock { .. }) if !in_terminal => {
                let temp = self.temp.get_or_init(|| {
                    tempfile::Builder::new()
                        .prefix("genai-command-")
                        .tempdir()
                        .map_err(|e| e.to_string())
                });
                let temp = match temp {
                    Ok(t) => t.path().to_path_buf(),
                    Err(e) => {
                        return refused(format!(
                            "the command was not run: its temporary folder cannot be made ({e})"
                        ))
                    }
                };
                Some(Sandbox {
                    root: root.clone(),
                    temp,
                    network: self.network,
                    hidden: secrets::hidden(self.home.as_ref(), ws),
                })
            }
            _ => None,
        };
        let cx = CallContext {
            on_write: &on_write,
            secret: &secret,
            sandbox,
            editor: editor.map(|e| (e, editor_call(turn, call_id))),
        };
        match ws.call(function, arguments, cx).await {
            Ok(called) => ModuleAnswer {
                text: called.text,
                edit: called.edit,
                ..Default::default()
            },
            Err(e) => refused(e.message),
        }
    }
}

/// Which call an editor request is for.
fn editor_call(turn: Caller<'_>, call_id: &str) -> EditorCall {
    EditorCall {
        conversation_id: turn.id.conversation_id.clone(),
        turn_id: turn.id.turn_id.clone(),
        call_id: call_id.to_string(),
    }
}

/// One line for the user about a call: `Run `cargo test``, `Edit src/main.rs`.
fn title(tool: &str, kind: Kind, argument: &str) -> String {
    match (tool.rsplit('.').next().unwrap_or(tool), kind) {
        ("run_command", _) => format!("Run `{argument}`"),
        ("edit_file", _) => format!("Edit {argument}"),
        ("write_file", _) => format!("Write {argument}"),
        ("fetch", _) => format!("Fetch {argument}"),
        (_, Kind::Read) => format!("Read {argument}"),
        _ => format!("Call {tool}({argument})"),
    }
}

#[cfg(test)]
mod tests;
