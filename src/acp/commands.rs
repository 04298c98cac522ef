//! The ACP slash commands: `/undo [force]` (genai's own), and the session's MCP servers'
//! prompts (`/SERVER.prompt`), announced as `available_commands_update`. A prompt that starts
//! with an MCP prompt's command is expanded: the rest of its first line is the prompt's first
//! argument, and the prompt's messages take the command's place in the user's message.
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

/// genai's own command.
pub const UNDO: &str = "undo";

/// Whether `message` is `/undo` (`Some(force)`), which genai answers without the model.
pub fn undo_asked(message: &Message) -> Option<bool> {
    let [Part::Text { text }] = message.content.as_slice() else {
        return None;
    };
    let rest = text.trim().strip_prefix('/')?.strip_prefix(UNDO)?;
    match rest.trim() {
        "" => Some(false),
        "force" => Some(true),
        _ => None,
    }
}

/// What `/undo` tells the user it did.
pub fn undone_text(u: &crate::checkpoint::Undone) -> String {
    let mut lines = vec![format!("Undid turn {}:", u.turn_id)];
    for f in &u.files {
        let action = match f.action {
            crate::checkpoint::UndoAction::Restored => "restored",
            crate::checkpoint::UndoAction::Removed => "removed",
            crate::checkpoint::UndoAction::Unchanged => "unchanged",
        };
        lines.push(format!("- {} ({action})", f.path));
    }
    lines.join("\n")
}

/// Tells the client the commands of the session `id`: `/undo`, and its MCP servers' prompts.
pub async fn announce(fw: &Framework, conn: &Connection, id: &str) {
    let Ok(toolbox) = fw.toolbox_of(id) else {
        return;
    };
    let (prompts, _) = toolbox.prompts(None).await;
    let undo = AvailableCommand::new(
        UNDO,
        "Put back the files the last turn that changed any changed (`/undo force`: even files changed since)",
    )
    .input(AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(
        "force (optional)",
    )));
    let commands = std::iter::once(undo)
        .chain(prompts.iter().map(|p| {
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
        }))
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
