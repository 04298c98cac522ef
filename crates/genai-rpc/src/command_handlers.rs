//! The daemon's `ListCommands` and `RunCommand`: the commands seen from a folder (files,
//! `[lsp.actions]`, built-in ones, MCP servers' prompts), and one run as a turn in a given
//! conversation or in a new one the command sets up. `handlers` re-exports them; the lookup,
//! rendering and conversation settings are the framework's, written once for every front-end.

use std::path::PathBuf;
use std::sync::Arc;

use super::errors::RpcError;
use super::port::RpcPort;
use super::protocol::{
    CommandInfo, ListCommandsParams, ListCommandsResult, RunCommandParams, RunCommandResult,
};
use genai_core::command::{BadFile, Command, Invocation};
use genai_core::config::lsp::ApplyMode;
use genai_core::error::Error;
use genai_core::format::ResponseSchema;
use genai_core::message::Message;
use genai_core::session::{command_conversation, mcp_command_name, Framework};

type Answer<T> = Result<T, RpcError>;

fn cwd_or_process(cwd: Option<String>) -> Result<PathBuf, Error> {
    match cwd {
        Some(c) => Ok(PathBuf::from(c)),
        None => std::env::current_dir()
            .map_err(|e| Error::invalid_params(format!("no working folder: {e}: give `cwd`"))),
    }
}

impl From<&Command> for CommandInfo {
    fn from(c: &Command) -> Self {
        let source = serde_json::to_value(c.place)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        CommandInfo {
            name: c.name.clone(),
            title: c.title.clone(),
            description: c.description.clone(),
            source,
            path: c.path.as_ref().map(|p| p.display().to_string()),
            arguments: c.arguments.clone(),
            argument_hint: c.argument_hint.clone(),
            apply: c.apply,
        }
    }
}

pub(crate) async fn list_commands(
    fw: Arc<Framework>,
    p: ListCommandsParams,
) -> Answer<ListCommandsResult> {
    let cwd = cwd_or_process(p.cwd)?;
    let commands = fw.commands(&cwd);
    let mut listed: Vec<CommandInfo> = commands.list().map(CommandInfo::from).collect();
    let mut errors: Vec<BadFile> = commands.bad().cloned().collect();
    if p.mcp.unwrap_or(true) {
        let (prompts, failed) = fw.toolbox().prompts(None).await;
        for prompt in prompts {
            let name = mcp_command_name(&prompt);
            if commands.contains(&name) {
                continue;
            }
            listed.push(CommandInfo {
                title: name.clone(),
                description: prompt
                    .description
                    .clone()
                    .unwrap_or_else(|| format!("The MCP prompt {}", prompt.name)),
                source: "mcp".into(),
                path: None,
                arguments: prompt
                    .arguments
                    .iter()
                    .map(|a| genai_core::command::Argument {
                        name: a.name.clone(),
                        description: a.description.clone(),
                        default: (!a.required).then(String::new),
                    })
                    .collect(),
                argument_hint: None,
                apply: ApplyMode::Show,
                name,
            });
        }
        errors.extend(failed.into_iter().map(|e| BadFile {
            name: e.source.clone(),
            path: PathBuf::new(),
            message: format!("MCP server `{}`: {}", e.source, e.message),
        }));
    }
    Ok(ListCommandsResult {
        commands: listed,
        errors,
    })
}

pub(crate) async fn run_command(
    fw: Arc<Framework>,
    port: Arc<RpcPort>,
    p: RunCommandParams,
) -> Answer<RunCommandResult> {
    let conversation = p.conversation_id.as_deref();
    let cwd = match (&p.cwd, conversation) {
        (None, Some(id)) => fw.conversation_cwd(&fw.resolve_conversation(id)?),
        _ => None,
    };
    let cwd = match cwd {
        Some(c) => c,
        None => cwd_or_process(p.cwd.clone())?,
    };
    let invocation = Invocation {
        arguments: p.arguments,
        text: p.text.unwrap_or_default(),
        input: p.input,
    };
    let commands = fw.commands(&cwd);
    let ready = fw
        .prepare_command(&commands, &cwd, conversation, &p.name, &invocation)
        .await?;
    let text = ready.text();
    let schema = ResponseSchema::given(ready.settings.schema.clone(), None)?;
    let mut message = Message::user(String::new());
    message.content = ready.parts;
    let conversation_id = match conversation {
        Some(id) => id.to_string(),
        None => {
            let spec = command_conversation(&ready.settings, p.model, &cwd, p.ephemeral);
            fw.create_conversation(spec, port)?.conversation_id
        }
    };
    let turn_id = fw.on_new_message_with(&conversation_id, message, schema)?;
    Ok(RunCommandResult {
        conversation_id,
        turn_id,
        text,
        settings: ready.settings,
    })
}
