//! The conversation a terminal front-end (`genai ask`, `genai chat`) talks in: the flags both
//! take (model, system prompt, attachments, files, parameters, `-c`/`--cid`, tools), and
//! opening a new conversation, continuing a stored one, or handing one over to another model,
//! and closing them all when the front-end ends.
//!
//! It only turns flags into the core's calls (`Framework`); which model a name means is
//! `genai_core::select`'s business, and what a handover rewrites is the session's.

use std::sync::Arc;

use genai_core::error::{Error, ErrorKind};
use genai_core::feature::port::ClientPort;
use genai_core::select::ModelChoice;
use genai_core::session::{ConversationSpec, Framework, OpenConversation, PermissionFlags};
use serde_json::Value;

/// The flags of a conversation on the terminal.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ConversationArgs {
    /// An agent from the config, PROVIDER:MODEL (such as openai:gpt-4o-mini), a provider
    /// alone (its default model), or `local` (the default local model).
    ///
    /// Without -m: `model` under [defaults] in the config; else the first provider whose
    /// variables are set: openai (OPENAI_API_KEY or OPENAI_BASE_URL), anthropic
    /// (ANTHROPIC_API_KEY), gemini (GEMINI_API_KEY or GOOGLE_API_KEY); else, when the config
    /// has no [service_providers], the default local model (`genai models default NAME`). A
    /// provider runs its `default_model`, else its vendor's default; a server that only
    /// speaks OpenAI's API (OPENAI_BASE_URL, `base_url`) runs the first model it lists.
    #[arg(short, long)]
    pub model: Option<String>,
    /// A system prompt for this conversation.
    #[arg(short, long)]
    pub system: Option<String>,
    /// An image to send with the prompt: a file, a file:// URL, or an http(s) URL that genai
    /// downloads (repeatable). PNG, JPEG, GIF or WebP, told from the bytes; 20 MiB at most.
    #[arg(short = 'a', long = "attach", value_name = "FILE|URL")]
    pub attach: Vec<String>,
    /// Text to send after the prompt, as fenced blocks with their paths (repeatable): a file,
    /// a folder (walked honouring .gitignore, hidden, binary and large files skipped), an
    /// http(s) URL (HTML turned into text), or `-` for stdin. 1 MiB a file, 4 MiB in all.
    #[arg(short = 'f', long = "file", value_name = "PATH|DIR|URL|-")]
    pub files: Vec<String>,
    /// A model parameter, NAME=VALUE (repeatable), such as -p temperature=0.2.
    #[arg(short = 'p', long = "param", value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    /// Continue the most recent conversation that has a reply (one whose turns all failed is
    /// not kept).
    #[arg(short, long, conflicts_with = "cid")]
    pub r#continue: bool,
    /// Continue the conversation with this id (any unique prefix).
    #[arg(long, value_name = "ID")]
    pub cid: Option<String>,
    /// Do not show the model's reasoning (shown dimmed on stderr when that is a terminal).
    #[arg(long)]
    pub no_reasoning: bool,
    /// Load a local model in this process even when a `genai serve` of this user runs it
    /// (by default its warm model answers; `[serve] connect = false` turns that off always).
    #[arg(long)]
    pub no_connect: bool,
    /// Print the reply as the model wrote it, without rendering its Markdown (it is rendered
    /// only on a terminal, and never with NO_COLOR set).
    #[arg(long)]
    pub raw: bool,
    /// Let the model call tools (the `tools` feature): `--tools` gives it the enabled plugin
    /// modules and MCP servers, `--tools=calc,files.read` the named sources or single tools,
    /// `--tools=workspace` genai's own tools on the files of the working directory (read,
    /// search, edit, run commands sandboxed; docs/WORKSPACE.md), `--tools='workspace,*'` those
    /// and the enabled sources.
    #[arg(
        long,
        value_name = "SOURCES",
        num_args = 0..=1,
        require_equals = true,
        value_delimiter = ','
    )]
    pub tools: Option<Vec<String>>,
    /// Confirm what tools ask to confirm without asking (without it, genai asks on the
    /// terminal, and refuses when there is none).
    #[arg(long)]
    pub yes: bool,
    /// What tool calls may do without asking: read-only (no edits, no commands), plan (as
    /// read-only, and the model answers with a plan: carry it out with -c --mode edit "go"),
    /// ask (reads run; edits and commands ask), edit (edits run; commands ask) or full.
    /// Default: the config's `[permissions] mode`, else ask.
    #[arg(long, value_name = "MODE")]
    pub mode: Option<genai_core::permission::Mode>,
    /// A rule whose calls run without asking (repeatable), such as
    /// --allow 'run_command(cargo test*)' or --allow 'edit_file(src/**)'.
    #[arg(long, value_name = "RULE")]
    pub allow: Vec<String>,
    /// A rule whose calls are refused (repeatable); deny beats ask beats allow.
    #[arg(long, value_name = "RULE")]
    pub deny: Vec<String>,
}

/// Closes every conversation of the process for good when dropped
/// ([`Framework::close_all`]): however `ask` or `chat` ends, a conversation no turn was
/// committed to leaves no empty row in the history.
pub struct CloseAtEnd(pub Arc<Framework>);

impl Drop for CloseAtEnd {
    fn drop(&mut self) {
        self.0.close_all();
    }
}

pub fn usage(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidParams, msg)
}

/// `NAME=VALUE` parameters (`-p`, chat's `/params`), values as strings (the format converts
/// and checks them).
pub fn parse_params(specs: &[String]) -> Result<Vec<(String, Value)>, Error> {
    specs
        .iter()
        .map(|p| {
            let (k, v) = p
                .split_once('=')
                .filter(|(k, _)| !k.trim().is_empty())
                .ok_or_else(|| usage(format!("a parameter is NAME=VALUE, got `{p}`")))?;
            Ok((k.trim().to_string(), Value::String(v.to_string())))
        })
        .collect()
}

impl ConversationArgs {
    /// Lays a command's settings under these flags: a flag given wins; its rules and
    /// parameters come before the flags' (a later `-p` of the same name wins).
    pub fn lay_under(&mut self, s: &genai_core::command::Settings) {
        self.model = self.model.take().or_else(|| s.model.clone());
        self.system = self.system.take().or_else(|| s.system.clone());
        self.tools = self.tools.take().or_else(|| s.tools.clone());
        self.mode = self.mode.or(s.mode);
        self.allow.splice(0..0, s.allow.iter().cloned());
        self.deny.splice(0..0, s.deny.iter().cloned());
        let params = s.parameters.iter().map(|(k, v)| match v {
            Value::String(v) => format!("{k}={v}"),
            v => format!("{k}={v}"),
        });
        self.params.splice(0..0, params);
    }

    /// `--mode`, `--allow` and `--deny`.
    fn permission_flags(&self) -> PermissionFlags {
        PermissionFlags {
            mode: self.mode,
            allow: self.allow.clone(),
            deny: self.deny.clone(),
        }
    }

    /// Whether these flags continue a stored conversation.
    pub fn continues(&self) -> bool {
        self.r#continue || self.cid.is_some()
    }

    /// Whether the run may give the model tools: `--tools`, or a continued conversation
    /// (it keeps the tools it was opened with).
    pub fn may_use_tools(&self) -> bool {
        self.tools.is_some() || self.continues()
    }

    /// The tool selection of `--tools` (None without it, an empty list for all).
    fn tool_selection(&self) -> Option<Vec<String>> {
        self.tools.as_ref().map(|names| {
            names
                .iter()
                .map(|n| n.trim().to_string())
                .filter(|n| !n.is_empty())
                .collect()
        })
    }

    /// Opens the conversation these flags name: a stored one continued (on its model, or
    /// handed over to `-m`'s), else a new one; `ephemeral` keeps a new one out of the history.
    pub fn open(
        &self,
        fw: &Arc<Framework>,
        ephemeral: bool,
        port: Arc<dyn ClientPort>,
    ) -> Result<OpenConversation, Error> {
        // A bad rule is the user's mistake, said before anything is sent, tools or not.
        genai_core::permission::Policy::new(genai_core::permission::Layers {
            flag_allow: self.allow.clone(),
            flag_deny: self.deny.clone(),
            ..Default::default()
        })?;
        if self.mode.is_some() && self.tools.is_none() && !self.continues() {
            // A mode says what tool calls may do; without tools it would say nothing.
            return Err(usage(
                "--mode sets what tool calls may do, and this conversation has no tools: \
                 add --tools=workspace (genai's tools on these files) or --tools",
            ));
        }
        if !self.continues() {
            return self.open_new(fw, self.model.clone(), ephemeral, port);
        }
        let id = match &self.cid {
            Some(id) => id.clone(),
            None => fw
                .last_conversation()?
                .ok_or_else(|| usage("there is no conversation to continue yet"))?,
        };
        // Flags given now apply to the conversation from now on.
        let flags = self.permission_flags();
        if flags != PermissionFlags::default() {
            let id = fw.resolve_conversation(&id)?;
            fw.store_permissions(&id, &flags)?;
        }
        match &self.model {
            Some(m) => {
                let choice = ModelChoice::Named(m.clone());
                let reopened = fw.resume_conversation_on(&id, &choice, self.system.clone(), port);
                reopened.map(handed_over)
            }
            None => fw.resume_conversation(&id, self.system.clone(), port),
        }
    }

    /// Opens a new conversation on `model` (the default model when None), with these flags'
    /// system prompt and tools.
    pub fn open_new(
        &self,
        fw: &Arc<Framework>,
        model: Option<String>,
        ephemeral: bool,
        port: Arc<dyn ClientPort>,
    ) -> Result<OpenConversation, Error> {
        let tools = self.tool_selection();
        let spec = ConversationSpec {
            feature: tools
                .is_some()
                .then(|| genai_core::feature::tools::NAME.to_string()),
            tools: tools.filter(|t| !t.is_empty()),
            model: model.map_or(ModelChoice::Default, ModelChoice::Named),
            system_prompt: self.system.clone(),
            ephemeral,
            cwd: std::env::current_dir()
                .ok()
                .map(|d| d.to_string_lossy().into_owned()),
            permissions: self.permission_flags(),
            ..Default::default()
        };
        fw.create_conversation(spec, port)
    }
}

/// The conversation [`Framework::resume_conversation_on`] reopened on another model: the same
/// model goes on, another takes the whole history over; what its format cannot carry of the
/// history is said on stderr.
pub fn handed_over((conv, notes): (OpenConversation, Vec<String>)) -> OpenConversation {
    for note in notes {
        eprintln!("genai: {note}");
    }
    conv
}
