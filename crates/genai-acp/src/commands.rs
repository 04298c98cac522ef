//! The ACP slash commands: `/undo [force]` and `/compact` (genai's own), the commands seen from the
//! session's folder (command files, built-in ones) and its MCP servers' prompts
//! (`/SERVER.prompt`), announced as `available_commands_update` when a session opens and again
//! when the command files change. A prompt that starts with a command is expanded: the
//! rendered prompt takes the command's place in the user's message.
//!
//! It must never run a turn; it only shapes what the user sends.

use agent_client_protocol_schema::v1::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, SessionUpdate,
    UnstructuredCommandInput,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::connection::{AcpError, Connection};
use genai_core::command::{fingerprint, Command};
use genai_core::message::{Message, Part};
use genai_core::session::{mcp_command_name, Framework};

/// genai's own command.
pub(crate) const UNDO: &str = "undo";

/// genai's command that compacts the session now.
pub(crate) const COMPACT: &str = "compact";

/// Whether `message` is `/compact`, which genai answers without a turn.
pub(crate) fn compact_asked(message: &Message) -> bool {
    let [Part::Text { text }] = message.content.as_slice() else {
        return false;
    };
    text.trim().strip_prefix('/') == Some(COMPACT)
}

/// What `/compact` tells the user it did.
pub(crate) fn compacted_text(c: &genai_core::compaction::Compacted) -> String {
    let mut line = c.describe();
    if let Some(first) = line.get_mut(0..1) {
        first.make_ascii_uppercase();
    }
    format!("{line}.")
}

/// Whether `message` is `/undo` (`Some(force)`), which genai answers without the model.
pub(crate) fn undo_asked(message: &Message) -> Option<bool> {
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
pub(crate) fn undone_text(u: &genai_core::checkpoint::Undone) -> String {
    let mut lines = vec![format!("Undid turn {}:", u.turn_id)];
    for f in &u.files {
        let action = match f.action {
            genai_core::checkpoint::UndoAction::Restored => "restored",
            genai_core::checkpoint::UndoAction::Removed => "removed",
            genai_core::checkpoint::UndoAction::Unchanged => "unchanged",
        };
        lines.push(format!("- {} ({action})", f.path));
    }
    lines.join("\n")
}

/// How often the command files are looked at for changes while a session is open.
const WATCH_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// The input hint of a command: its arguments, or its `argument-hint`.
fn input_hint(c: &Command) -> String {
    if let Some(hint) = &c.argument_hint {
        return hint.clone();
    }
    let mut parts: Vec<String> = c
        .arguments
        .iter()
        .map(|a| match &a.default {
            Some(d) => format!("[{}={}]", a.name, if d.is_empty() { "…" } else { d }),
            None => format!("{}=VALUE", a.name),
        })
        .collect();
    parts.push("text (optional)".into());
    parts.join(" ")
}

/// Tells the client the commands of the session `id` working in `cwd`: `/undo`, `/compact`, the command
/// files and built-in commands, and its MCP servers' prompts.
pub(crate) async fn announce(fw: &Framework, conn: &Connection, id: &str, cwd: &Path) {
    let Ok(toolbox) = fw.toolbox_of(id) else {
        return;
    };
    let files = fw.commands(cwd);
    let (prompts, _) = toolbox.prompts(None).await;
    let undo = AvailableCommand::new(
        UNDO,
        "Put back the files the last turn that changed any changed (`/undo force`: even files changed since)",
    )
    .input(AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(
        "force (optional)",
    )));
    let compact = AvailableCommand::new(
        COMPACT,
        "Send the conversation's earlier turns as a summary from now on (the history keeps them all)",
    );
    let from_files = files
        .list()
        .filter(|c| c.name != UNDO && c.name != COMPACT)
        .map(|c| {
            AvailableCommand::new(c.name.clone(), c.description.clone()).input(
                AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(input_hint(c))),
            )
        });
    let from_mcp = prompts
        .iter()
        .filter(|p| !files.contains(&mcp_command_name(p)))
        .map(|p| {
            let command = AvailableCommand::new(
                mcp_command_name(p),
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
        });
    let commands = [undo, compact]
        .into_iter()
        .chain(from_files)
        .chain(from_mcp)
        .collect();
    conn.update(
        id,
        SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands)),
    );
}

/// Announces the session's commands again whenever its command files change, until `stop`
/// is cancelled or the session is closed. The files are first looked at before this returns,
/// so a change made once the session is open is never taken for the starting state, however
/// late the watching task first runs.
pub(crate) fn watch(
    fw: Arc<Framework>,
    conn: Arc<Connection>,
    id: String,
    cwd: PathBuf,
    stop: CancellationToken,
) {
    let config_dir = fw.config_dir().map(Path::to_path_buf);
    let mut seen = fingerprint(&cwd, config_dir.as_deref());
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(WATCH_EVERY) => {}
            }
            if fw.toolbox_of(&id).is_err() {
                return;
            }
            let now = fingerprint(&cwd, config_dir.as_deref());
            if now != seen {
                seen = now;
                announce(&fw, &conn, &id, &cwd).await;
            }
        }
    });
}

/// Expands a leading `/NAME rest` in `message` when NAME is a command (a file, a built-in
/// one, or an MCP server's prompt `SERVER.PROMPT`): the words of its first line are its
/// `NAME=VALUE` arguments and text, the lines after go with the text, and the rendered
/// prompt takes the command's place. Other messages are left as they are.
pub(crate) async fn expand(
    fw: &Framework,
    id: &str,
    cwd: &Path,
    message: &mut Message,
) -> Result<(), AcpError> {
    let Some(Part::Text { text }) = message.content.first() else {
        return Ok(());
    };
    let Some(command) = text.trim_start().strip_prefix('/') else {
        return Ok(());
    };
    let (name, rest) = command
        .split_once(char::is_whitespace)
        .unwrap_or((command, ""));
    let files = fw.commands(cwd);
    let known = files.contains(name)
        || (name.contains('.')
            && fw
                .mcp_commands(Some(id))
                .await
                .iter()
                .any(|p| mcp_command_name(p) == name));
    if !known {
        return Ok(());
    }
    let (first, more) = rest.split_once('\n').unwrap_or((rest, ""));
    let words: Vec<String> = first.split_whitespace().map(str::to_string).collect();
    let mut invocation = files.invocation(name, &words)?;
    if !more.trim().is_empty() {
        invocation.text = format!("{}\n{more}", invocation.text).trim().to_string();
    }
    let ready = fw
        .prepare_command(&files, cwd, Some(id), name, &invocation)
        .await?;
    message.content.splice(0..1, ready.parts);
    Ok(())
}
