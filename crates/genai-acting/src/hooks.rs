//! Hooks: the user's commands run at four moments of a turn (`[hooks]` of the config), spoken
//! to as Claude Code speaks to its hooks, so that existing Claude Code hook scripts work
//! unchanged.
//!
//! Each hook gets one JSON object on stdin: `session_id` (the conversation id),
//! `transcript_path` (null when there is none), `cwd`, `hook_event_name`, and per event:
//! * `PreToolUse`: `tool_name` and `tool_input` in Claude Code's shape (see [`claude_tool`]),
//!   and `genai_tool_name`, genai's own name of the tool (`workspace.run_command`);
//! * `PostToolUse`: the same, and `tool_response` (see [`tool_response`]);
//! * `UserPromptSubmit`: `prompt`;
//! * `Stop`: `stop_hook_active`.
//!
//! Its answer, as in Claude Code: exit 2 blocks, with stderr as the reason; exit 0 with JSON
//! on stdout decides through `decision: "block"` + `reason`, `continue: false` + `stopReason`,
//! or (PreToolUse) `hookSpecificOutput.permissionDecision` `deny` / `ask` / `allow` +
//! `permissionDecisionReason`; `hookSpecificOutput.additionalContext`, `systemMessage` and the
//! plain stdout of a `UserPromptSubmit` hook become notes; any other exit, a timeout or a
//! command that cannot start is a non-blocking error: a note, and the turn goes on.
//!
//! A hook runs under `sh -c` in the workspace, in its own process group (all of it is killed at
//! its time limit), with the minimal environment of [`genai_base::process`]: this module must never
//! hand a hook genai's keys, and never read more of a hook's output than [`MAX_OUTPUT`].

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use regex::Regex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use genai_base::error::{Error, ErrorKind, Result};

mod claude;

pub(crate) use claude::claude_tool;
pub use claude::tool_response;
use claude::{answer, hook_input};

/// The time limit of a hook that names none, in seconds (Claude Code's too).
pub(crate) const DEFAULT_TIMEOUT_S: u64 = 60;

/// The most of a hook's stdout or stderr that is read; the rest is drained and dropped.
pub const MAX_OUTPUT: usize = 1 << 20;

/// The most of a reason or a note passed on (the model reads it).
const MAX_REASON: usize = 4096;

/// `[hooks]` of the config: the commands run at each moment, in order. Each moment takes a
/// list of hooks (`[[hooks.pre_tool_use]]` tables, or command lines), or one command line.
#[derive(Deserialize, Serialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct HooksConfig {
    /// Before a tool runs; may block it.
    #[serde(default, deserialize_with = "one_or_many")]
    pub pre_tool_use: Vec<HookConfig>,
    /// After a tool ran; a block tells the model the hook's reason.
    #[serde(default, deserialize_with = "one_or_many")]
    pub post_tool_use: Vec<HookConfig>,
    /// When the user's prompt arrives, before the model sees it; may block it, and its
    /// stdout is added to the context.
    #[serde(default, deserialize_with = "one_or_many")]
    pub user_prompt_submit: Vec<HookConfig>,
    /// When the model is done; a block makes it go on, with the reason as what to do.
    #[serde(default, deserialize_with = "one_or_many")]
    pub stop: Vec<HookConfig>,
}

/// A moment's hooks: one command line (`stop = "check.sh"`) or a list of hooks. Written with
/// a visitor, not an untagged enum, so that a mistake in one hook is named.
fn one_or_many<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Vec<HookConfig>, D::Error> {
    struct Visitor;
    impl<'de> serde::de::Visitor<'de> for Visitor {
        type Value = Vec<HookConfig>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a command line, or a list of hooks")
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<Self::Value, E> {
            Ok(vec![HookConfig::command(v.to_string())])
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> std::result::Result<Self::Value, A::Error> {
            let mut hooks = Vec::new();
            while let Some(hook) = seq.next_element::<HookConfig>()? {
                hooks.push(hook);
            }
            Ok(hooks)
        }
    }
    d.deserialize_any(Visitor)
}

/// One hook command: a table, or its command line alone (`"scripts/check.sh"`).
#[derive(Serialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[schemars(deny_unknown_fields)]
pub struct HookConfig {
    /// The command line, run with `sh -c` in the workspace.
    pub command: String,
    /// Tool hooks: which tools, matched against both genai's name (`workspace.run_command`)
    /// and Claude Code's (`Bash`). Absent, `""` or `*`: every tool; only letters, digits, `_`
    /// and `|`: one of these exact names (`Edit|Write`); anything else: a regular expression
    /// found in the name (`mcp__github__.*`, `workspace\.`). Ignored by the other moments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    /// Seconds before the hook is killed (default 60); a timeout does not block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<u64>,
}

/// The table form of a hook, as the config spells it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HookTable {
    command: String,
    #[serde(default)]
    matcher: Option<String>,
    #[serde(default)]
    timeout_s: Option<u64>,
}

impl HookConfig {
    /// A hook of every tool with the default time limit.
    pub fn command(command: String) -> HookConfig {
        HookConfig {
            command,
            matcher: None,
            timeout_s: None,
        }
    }
}

// Written by hand, not derived: a command line alone is a hook too, and a mistake in a table
// (`comand = ...`) must still be named, which an untagged enum's error would not do.
impl<'de> Deserialize<'de> for HookConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = HookConfig;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a command line, or a table {command, matcher?, timeout_s?}")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<HookConfig, E> {
                Ok(HookConfig::command(v.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> std::result::Result<HookConfig, A::Error> {
                let t = HookTable::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(HookConfig {
                    command: t.command,
                    matcher: t.matcher,
                    timeout_s: t.timeout_s,
                })
            }
        }
        d.deserialize_any(Visitor)
    }
}

impl HooksConfig {
    /// No hook at all.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.pre_tool_use.is_empty()
            && self.post_tool_use.is_empty()
            && self.user_prompt_submit.is_empty()
            && self.stop.is_empty()
    }

    /// An error naming the first matcher that is not a valid regular expression (for the
    /// config's check: at run time such a hook is skipped with a note).
    pub fn validate(&self) -> Result<()> {
        for (table, hooks) in [
            ("pre_tool_use", &self.pre_tool_use),
            ("post_tool_use", &self.post_tool_use),
        ] {
            for (i, hook) in hooks.iter().enumerate() {
                if let Err(e) = Matcher::new(hook.matcher.as_deref()) {
                    return Err(Error::new(
                        ErrorKind::Config,
                        format!("[[hooks.{table}]] number {}: {e}", i + 1),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The moment a hook runs at, with what it is told.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// Before a tool runs. `tool`: genai's name; `source`: the tool's source (`workspace`,
    /// `mcp:SERVER`, `plugin:NAME`); `input`: its arguments.
    PreToolUse {
        tool: &'a str,
        source: &'a str,
        input: &'a Value,
    },
    /// After a tool ran; `response` is sent as `tool_response` (build it with
    /// [`tool_response`]).
    PostToolUse {
        tool: &'a str,
        source: &'a str,
        input: &'a Value,
        response: &'a Value,
    },
    /// The user's prompt, before the model sees it.
    UserPromptSubmit { prompt: &'a str },
    /// The model is done; `stop_hook_active`: it goes on because a stop hook blocked before.
    Stop { stop_hook_active: bool },
}

impl Event<'_> {
    /// Claude Code's name of the event (`hook_event_name`).
    pub fn name(&self) -> &'static str {
        match self {
            Event::PreToolUse { .. } => "PreToolUse",
            Event::PostToolUse { .. } => "PostToolUse",
            Event::UserPromptSubmit { .. } => "UserPromptSubmit",
            Event::Stop { .. } => "Stop",
        }
    }

    fn hooks<'c>(&self, config: &'c HooksConfig) -> &'c [HookConfig] {
        match self {
            Event::PreToolUse { .. } => &config.pre_tool_use,
            Event::PostToolUse { .. } => &config.post_tool_use,
            Event::UserPromptSubmit { .. } => &config.user_prompt_submit,
            Event::Stop { .. } => &config.stop,
        }
    }
}

/// Where the hooks run and for which conversation.
#[derive(Debug, Clone)]
pub struct HookContext {
    /// The conversation id (`session_id`).
    pub session_id: String,
    /// The workspace root: the hooks' working directory, `cwd`, `CLAUDE_PROJECT_DIR` and
    /// `GENAI_PROJECT_DIR`.
    pub cwd: PathBuf,
    pub transcript_path: Option<PathBuf>,
}

/// What the hooks decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Go on. `notes`: what the hooks added (a `UserPromptSubmit` hook's stdout and any
    /// `additionalContext`: context for the model; `systemMessage`s and non-blocking errors
    /// such as "hook `x` timed out after 60 s").
    Continue { notes: Vec<String> },
    /// Stop. PreToolUse: the tool does not run; PostToolUse: the model is told `reason`;
    /// UserPromptSubmit: the prompt is refused; Stop: the model goes on, `reason` saying
    /// what to do. `reason` is the hook's text, verbatim (trimmed, at most 4 KB); `by` the
    /// hook's command.
    Block { reason: String, by: String },
}

/// Runs the hooks of `event` that match, in order; the first that blocks ends the run.
pub async fn run(hooks: &HooksConfig, event: Event<'_>, ctx: &HookContext) -> Outcome {
    let mut notes = Vec::new();
    let list = event.hooks(hooks);
    if list.is_empty() {
        return Outcome::Continue { notes };
    }
    let claude = match event {
        Event::PreToolUse {
            tool,
            source,
            input,
        }
        | Event::PostToolUse {
            tool,
            source,
            input,
            ..
        } => Some((tool, claude_tool(tool, source, input, &ctx.cwd))),
        _ => None,
    };
    let stdin = hook_input(&event, claude.as_ref(), ctx);
    for hook in list {
        if let Some((genai_name, (claude_name, _))) = &claude {
            match Matcher::new(hook.matcher.as_deref()) {
                Ok(m) if m.matches(genai_name) || m.matches(claude_name) => {}
                Ok(_) => continue,
                Err(e) => {
                    notes.push(format!("hook `{}` skipped: {e}", short(&hook.command)));
                    continue;
                }
            }
        }
        match run_hook(hook, &event, &stdin, ctx).await {
            Verdict::Go(mut more) => notes.append(&mut more),
            Verdict::Block(reason) => {
                return Outcome::Block {
                    reason,
                    by: hook.command.clone(),
                }
            }
        }
    }
    Outcome::Continue { notes }
}

/// A hook's `matcher`, as Claude Code reads it.
enum Matcher {
    All,
    Names(Vec<String>),
    Pattern(Regex),
}

impl Matcher {
    fn new(matcher: Option<&str>) -> Result<Matcher, String> {
        let m = matcher.map(str::trim).unwrap_or("");
        if m.is_empty() || m == "*" {
            return Ok(Matcher::All);
        }
        if m.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|')
        {
            return Ok(Matcher::Names(
                m.split('|').map(|n| n.trim().to_string()).collect(),
            ));
        }
        Regex::new(m)
            .map(Matcher::Pattern)
            .map_err(|e| format!("the matcher `{m}` is not a valid regular expression: {e}"))
    }

    fn matches(&self, name: &str) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Names(names) => names.iter().any(|n| n == name),
            Matcher::Pattern(re) => re.is_match(name),
        }
    }
}

/// What one hook said.
pub enum Verdict {
    Go(Vec<String>),
    Block(String),
}

/// Runs one hook to its end or its time limit.
async fn run_hook(
    hook: &HookConfig,
    event: &Event<'_>,
    stdin: &[u8],
    ctx: &HookContext,
) -> Verdict {
    let name = short(&hook.command);
    let limit_s = hook.timeout_s.unwrap_or(DEFAULT_TIMEOUT_S).max(1);
    let mut command = tokio::process::Command::new("sh");
    command
        .arg("-c")
        .arg(&hook.command)
        .current_dir(&ctx.cwd)
        .env_clear()
        .envs(genai_base::process::minimal_env(&[]))
        .env("CLAUDE_PROJECT_DIR", &ctx.cwd)
        .env("GENAI_PROJECT_DIR", &ctx.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    command.process_group(0);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            return Verdict::Go(vec![format!(
                "hook `{name}` could not start in {}: {e}",
                ctx.cwd.display()
            )])
        }
    };
    let pid = child.id();
    let mut input = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let finished = tokio::time::timeout(Duration::from_secs(limit_s), async {
        let write = async {
            if let Some(pipe) = input.as_mut() {
                // A hook that does not read its input closes the pipe: not an error.
                let _ = pipe.write_all(stdin).await;
                let _ = pipe.shutdown().await;
            }
            drop(input.take());
        };
        let (_, out, err, status) = tokio::join!(
            write,
            read_capped(stdout),
            read_capped(stderr),
            child.wait()
        );
        (out, err, status)
    })
    .await;
    let (stdout, stderr, status) = match finished {
        Ok(done) => done,
        Err(_) => {
            kill_group(pid);
            let _ = child.kill().await;
            return Verdict::Go(vec![format!("hook `{name}` timed out after {limit_s} s")]);
        }
    };
    let status = match status {
        Ok(status) => status,
        Err(e) => return Verdict::Go(vec![format!("hook `{name}` failed: {e}")]),
    };
    let stderr = String::from_utf8_lossy(&stderr);
    match status.code() {
        Some(0) => answer(event, &String::from_utf8_lossy(&stdout), &name),
        Some(2) => {
            let reason = capped(&stderr);
            Verdict::Block(if reason.is_empty() {
                format!("blocked by hook `{name}` (exit 2, no message)")
            } else {
                reason
            })
        }
        code => {
            let how =
                code.map_or_else(|| "killed by a signal".to_string(), |c| format!("exit {c}"));
            let line = stderr.lines().map(str::trim).find(|l| !l.is_empty());
            Verdict::Go(vec![match line {
                Some(line) => format!("hook `{name}` failed ({how}): {}", capped(line)),
                None => format!("hook `{name}` failed ({how})"),
            }])
        }
    }
}

/// Reads a pipe to its end, keeping the first [`MAX_OUTPUT`] bytes (a hook must not fill
/// genai's memory, nor block on a full pipe).
async fn read_capped<R: AsyncRead + Unpin>(pipe: Option<R>) -> Vec<u8> {
    let mut kept = Vec::new();
    let Some(mut pipe) = pipe else {
        return kept;
    };
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => return kept,
            Ok(n) => {
                let room = MAX_OUTPUT.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
}

/// Kills the hook's whole process group (the shell and what it started).
#[cfg(unix)]
fn kill_group(pid: Option<u32>) {
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        // SAFETY: kill(2) on the group this hook leads (process_group(0) made it its leader).
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

#[cfg(not(unix))]
fn kill_group(_: Option<u32>) {}

/// Trimmed and at most [`MAX_REASON`] bytes (cut at a character boundary, marked with `…`).
pub fn capped(text: &str) -> String {
    let text = text.trim();
    if text.len() <= MAX_REASON {
        return text.to_string();
    }
    format!("{}…", &text[..text.floor_char_boundary(MAX_REASON)])
}

/// A hook's command as named in notes: its first line, at most 60 characters.
fn short(command: &str) -> String {
    let line = command.trim().lines().next().unwrap_or("");
    if line.chars().count() <= 60 && !command.trim().contains('\n') {
        return line.to_string();
    }
    let mut s: String = line.chars().take(59).collect();
    s.push('…');
    s
}

#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;
