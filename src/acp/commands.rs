//! MCP prompts as ACP slash commands: a session's MCP servers' prompts are announced as
//! `available_commands_update` (`/SERVER.prompt`), and a prompt that starts with one is
//! expanded: the rest of its first line is the prompt's first argument, and the prompt's
//! messages take the command's place in the user's message.
//!
//! It must never run a turn; it only shapes what the user sends.

use agent_client_protocol_schema::v1::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, SessionUpdate,
    UnstructuredCommandInput,
};
use serde_json::{Map, Value};

use super::connection::{AcpError, Connection};
use crate::message::{Message, Part};
use crate::session::Framework;
use crate::tools::mcp_context::McpPrompt;
use crate::tools::toolbox::Toolbox;

fn command_name(p: &McpPrompt) -> String {
    format!("{}.{}", p.source, p.name)
}

/// Tells the client the commands of the session `id` (nothing when its servers offer no
/// prompts).
pub async fn announce(fw: &Framework, conn: &Connection, id: &str) {
    let Ok(toolbox) = fw.toolbox_of(id) else {
        return;
    };
    let (prompts, _) = toolbox.prompts(None).await;
    if prompts.is_empty() {
        return;
    }
    let commands = prompts
        .iter()
        .map(|p| {
            let command = AvailableCommand::new(
                command_name(p),
                p.description
                    .clone()
                    .unwrap_or_else(|| format!("The MCP prompt {}", p.name)),
            );
            match p.arguments.first() {
                Some(a) => command.input(AvailableCommandInput::Unstructured(
                    UnstructuredCommandInput::new(
                        a.description.clone().unwrap_or_else(|| a.name.clone()),
                    ),
                )),
                None => command,
            }
        })
        .collect();
    conn.update(
        id,
        SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands)),
    );
}

/// Expands a leading `/SERVER.prompt rest` in `message` into the prompt's messages; other
/// messages are left as they are.
pub async fn expand(toolbox: &Toolbox, message: &mut Message) -> Result<(), AcpError> {
    let Some(Part::Text { text }) = message.content.first() else {
        return Ok(());
    };
    let Some(command) = text.strip_prefix('/') else {
        return Ok(());
    };
    let (name, rest) = command
        .split_once(char::is_whitespace)
        .unwrap_or((command, ""));
    let (prompts, _) = toolbox.prompts(None).await;
    let Some(prompt) = prompts.into_iter().find(|p| command_name(p) == name) else {
        return Ok(());
    };
    let mut arguments = Map::new();
    if let Some(first) = prompt.arguments.first() {
        arguments.insert(first.name.clone(), Value::String(rest.trim().to_string()));
    }
    let messages = toolbox
        .mcp(&prompt.source)?
        .prompt(&prompt.name, arguments)
        .await?;
    let parts: Vec<Part> = messages.into_iter().flat_map(|m| m.content).collect();
    message.content.splice(0..1, parts);
    Ok(())
}
