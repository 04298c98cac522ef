//! The commands as MCP prompts: those `genai commands list` shows from the workspace root (the
//! project's, the user's, Claude Code's and Codex's files, the built-in ones), each with its
//! named arguments, plus `text` (the free text after them) and `input` (what `genai ask -t`
//! reads from piped stdin). `prompts/get` renders one as `genai ask -t` would send it.
//!
//! It maps names and arguments. It must never run a turn; the rendering is the core's.

use std::path::Path;

use genai_core::command::Invocation;
use genai_core::session::Framework;
use rmcp::model::{GetPromptResult, JsonObject, Prompt, PromptArgument, PromptMessage, Role};
use rmcp::ErrorData;
use serde_json::Value;

/// The argument holding the free text after the command's arguments.
const TEXT: &str = "text";
/// The argument holding the command's input (piped stdin for `genai ask -t`).
const INPUT: &str = "input";

/// The prompts of the commands seen from `root`.
pub(crate) fn list(fw: &Framework, root: &Path) -> Vec<Prompt> {
    let commands = fw.commands(root);
    commands
        .list()
        .map(|c| {
            let mut arguments: Vec<PromptArgument> = c
                .arguments
                .iter()
                .map(|a| {
                    let described =
                        PromptArgument::new(a.name.clone()).with_required(a.default.is_none());
                    match &a.description {
                        Some(d) => described.with_description(d.clone()),
                        None => described,
                    }
                })
                .collect();
            let named = |n: &str| c.arguments.iter().any(|a| a.name == n);
            if !named(TEXT) {
                let hint = c
                    .argument_hint
                    .clone()
                    .unwrap_or_else(|| "Free text after the command's arguments".to_string());
                arguments.push(
                    PromptArgument::new(TEXT)
                        .with_description(hint)
                        .with_required(false),
                );
            }
            if !named(INPUT) {
                arguments.push(
                    PromptArgument::new(INPUT)
                        .with_description(
                            "The command's input: what `genai ask -t` reads from piped stdin",
                        )
                        .with_required(false),
                );
            }
            Prompt::new(c.name.clone(), Some(c.description.clone()), Some(arguments))
                .with_title(c.title.clone())
        })
        .collect()
}

/// Command `name` rendered with `arguments` as the text of one user message.
pub(crate) async fn get(
    fw: &Framework,
    root: &Path,
    name: &str,
    arguments: Option<JsonObject>,
) -> Result<GetPromptResult, ErrorData> {
    let commands = fw.commands(root);
    let command = commands
        .find(name)
        .map_err(|e| ErrorData::invalid_params(e.message, None))?;
    let named = |n: &str| command.arguments.iter().any(|a| a.name == n);
    let mut invocation = Invocation::default();
    for (key, value) in arguments.unwrap_or_default() {
        let value = match value {
            Value::String(s) => s,
            Value::Null => continue,
            other => other.to_string(),
        };
        match key.as_str() {
            TEXT if !named(TEXT) => invocation.text = value,
            INPUT if !named(INPUT) => invocation.input = Some(value),
            _ => {
                invocation.arguments.insert(key, value);
            }
        }
    }
    let description = command.description.clone();
    let ready = fw
        .prepare_command(&commands, root, None, name, &invocation)
        .await
        .map_err(|e| ErrorData::invalid_params(e.message, None))?;
    Ok(
        GetPromptResult::new(vec![PromptMessage::new_text(Role::User, ready.text())])
            .with_description(description),
    )
}
