//! Commands as the front-ends use them: the commands seen from a working folder (files,
//! `[lsp.actions]`, built-in ones) and the MCP servers' prompts (`SERVER.PROMPT`), and one
//! made ready for a turn: its message's text with the command's files after it, and its
//! settings. Every front-end comes here, so a command sends the same text from each.
//!
//! It must never run a turn nor open a conversation: the front-end does, with what it gets.

use std::path::Path;

use serde_json::{Map, Value};

use super::Framework;
use crate::command::{Commands, Invocation, Settings};
use crate::error::{Error, Result};
use crate::message::Part;
use crate::tools::toolbox::Toolbox;
use genai_protocol::listings::McpPrompt;

/// A command ready for a turn: the user message's parts and what the command sets.
#[derive(Debug, Clone)]
pub struct ReadyCommand {
    pub parts: Vec<Part>,
    pub settings: Settings,
}

impl ReadyCommand {
    /// The message's text (its text parts joined), for showing it.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}

/// The name an MCP prompt runs by: `SERVER.PROMPT`.
pub fn mcp_command_name(p: &McpPrompt) -> String {
    format!("{}.{}", p.source, p.name)
}

impl Framework {
    /// The config folder (`with_home`), where the user's `commands/` are.
    pub fn config_dir(&self) -> Option<&Path> {
        self.home.as_ref().and_then(|h| h.saved_rules.parent())
    }

    /// The commands seen from `cwd`: files, `[lsp.actions]` and the built-in ones.
    pub fn commands(&self, cwd: &Path) -> Commands {
        Commands::load(cwd, self.config_dir(), &self.config.lsp.actions)
    }

    /// The MCP servers' prompts a command may name: the conversation's servers, else the
    /// config's enabled ones; servers that cannot be reached are left out.
    pub async fn mcp_commands(&self, conversation: Option<&str>) -> Vec<McpPrompt> {
        let toolbox = self.command_toolbox(conversation);
        toolbox.prompts(None).await.0
    }

    fn command_toolbox(&self, conversation: Option<&str>) -> std::sync::Arc<Toolbox> {
        conversation
            .and_then(|id| self.toolbox_of(id).ok())
            .unwrap_or_else(|| self.toolbox().clone())
    }

    /// Makes command `name` of `commands` (those [`Framework::commands`] read from `cwd`)
    /// ready: a command file's prompt rendered with `invocation` and its `files` read after it
    /// (inside `cwd`), or, for `SERVER.PROMPT` that no file names, the MCP server's prompt with
    /// the named arguments (the free text goes to its first argument when it has one not given).
    pub async fn prepare_command(
        &self,
        commands: &Commands,
        cwd: &Path,
        conversation: Option<&str>,
        name: &str,
        invocation: &Invocation,
    ) -> Result<ReadyCommand> {
        let name = name.strip_prefix('/').unwrap_or(name);
        if !commands.contains(name) {
            if let Some((server, prompt)) = name.split_once('.') {
                return self
                    .mcp_command(conversation, server, prompt, invocation)
                    .await;
            }
        }
        let command = commands.find(name)?;
        let prepared = command.prepare(invocation)?;
        let mut text = prepared.text;
        if !prepared.settings.files.is_empty() {
            let files = command_files(cwd, &prepared.settings.files, self.own_secrets())?;
            if !text.is_empty() {
                text.push_str("\n\n");
            }
            text.push_str(&files);
        }
        Ok(ReadyCommand {
            parts: vec![Part::text(text)],
            settings: prepared.settings,
        })
    }

    async fn mcp_command(
        &self,
        conversation: Option<&str>,
        server: &str,
        name: &str,
        invocation: &Invocation,
    ) -> Result<ReadyCommand> {
        let toolbox = self.command_toolbox(conversation);
        if toolbox.mcp_server(server).is_none() {
            return Err(Error::invalid_params(format!(
                "no command `{server}.{name}`: no command file has that name, and there is no MCP server `{server}` (genai commands list shows the commands)"
            )));
        }
        let (prompts, errors) = toolbox.prompts(Some(&[server.to_string()])).await;
        if let Some(e) = errors.first() {
            return Err(Error::invalid_params(format!(
                "no command `{server}.{name}`: MCP server `{server}`: {}",
                e.message
            )));
        }
        let prompt = prompts
            .into_iter()
            .find(|p| p.name == name)
            .ok_or_else(|| {
                Error::invalid_params(format!(
                    "no command `{server}.{name}`: no command file has that name, and MCP server `{server}` has no prompt `{name}`"
                ))
            })?;
        let mut arguments: Map<String, Value> = invocation
            .arguments
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        let text = invocation.text.trim();
        if !text.is_empty() {
            match prompt
                .arguments
                .iter()
                .find(|a| !arguments.contains_key(&a.name))
            {
                Some(a) => {
                    arguments.insert(a.name.clone(), Value::String(text.to_string()));
                }
                None => {
                    return Err(Error::invalid_params(format!(
                        "command `{server}.{name}` takes no more arguments than those given; `{text}` has no place"
                    )))
                }
            }
        }
        if let Some(missing) = prompt
            .arguments
            .iter()
            .find(|a| a.required && !arguments.contains_key(&a.name))
        {
            return Err(Error::invalid_params(format!(
                "command `{server}.{name}` needs its argument `{0}`: give {0}=VALUE",
                missing.name
            )));
        }
        let messages = toolbox.mcp(server)?.prompt(name, arguments).await?;
        let mut parts: Vec<Part> = messages.into_iter().flat_map(|m| m.content).collect();
        if let Some(input) = invocation.input.as_deref().filter(|i| !i.trim().is_empty()) {
            parts.push(Part::text(input));
        }
        Ok(ReadyCommand {
            parts,
            settings: Settings::default(),
        })
    }
}

/// A command's `files`, read as `-f` reads them; each must lie inside `cwd`, and none may be a
/// secret file nor one of genai's own (`own`).
fn command_files(cwd: &Path, files: &[String], own: Vec<std::path::PathBuf>) -> Result<String> {
    let root = crate::workspace::paths::Root::new(cwd)?;
    let mut specs = Vec::with_capacity(files.len());
    for f in files {
        if crate::fetch::is_url(f) {
            specs.push(f.clone());
            continue;
        }
        let path = root.resolve(f).map_err(|e| {
            Error::invalid_params(format!("the command's file `{f}`: {}", e.message))
        })?;
        let relative = root.relative(&path);
        if crate::permission::is_secret(&relative) {
            return Err(Error::invalid_params(format!(
                "the command's file `{f}` holds secrets (.env, keys): genai does not send it"
            )));
        }
        specs.push(relative);
    }
    let secrets = crate::context_files::Secrets::new(own, None);
    Ok(crate::context_files::load_in(root.path(), &specs, &secrets)?.text)
}

/// The conversation a command starts: its model (unless `model` names another), system
/// prompt, parameters, tools and permissions, rooted at `cwd`.
pub fn command_conversation(
    settings: &Settings,
    model: Option<String>,
    cwd: &Path,
    ephemeral: bool,
) -> super::ConversationSpec {
    let model = model.or_else(|| settings.model.clone());
    super::ConversationSpec {
        feature: settings
            .tools
            .is_some()
            .then(|| crate::feature::tools::NAME.to_string()),
        tools: settings.tools.clone().filter(|t| !t.is_empty()),
        model: model.map_or(
            crate::select::ModelChoice::Default,
            crate::select::ModelChoice::Named,
        ),
        system_prompt: settings.system.clone(),
        parameters: (!settings.parameters.is_empty()).then(|| settings.parameters.clone()),
        ephemeral,
        cwd: Some(cwd.to_string_lossy().into_owned()),
        permissions: super::PermissionFlags {
            mode: settings.mode,
            allow: settings.allow.clone(),
            deny: settings.deny.clone(),
        },
        ..Default::default()
    }
}

impl Framework {
    /// The folder a conversation works in (where it was started): an open one's, else the
    /// stored one's, when it has one.
    pub fn conversation_cwd(&self, id: &str) -> Option<std::path::PathBuf> {
        if let Some(cwd) = self.running.conversation(id, |c| c.cwd.clone()).ok()? {
            return cwd.map(std::path::PathBuf::from);
        }
        let record = self.history.conversation(id).ok().flatten()?;
        record.cwd.map(std::path::PathBuf::from)
    }
}
