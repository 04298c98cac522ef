//! A stored conversation as people read it: each message's text, the tool calls it made with
//! their arguments, the tools' results (cut to a few lines), images as `[image]`; as plain
//! lines (`genai sessions show`, chat's `/history`) or as Markdown (`genai sessions export
//! --format md`). The JSON export is the stored messages themselves.
//!
//! It renders only: it never reads the history nor decides what a message is.

use std::collections::HashMap;

use genai_core::message::{Message, Part};
use serde_json::Value;

/// Lines of a tool's result shown; the rest is counted.
const RESULT_LINES: usize = 12;
/// Characters of a call's arguments shown on one plain line.
const ARGUMENT_CHARS: usize = 300;

/// Renders a conversation's messages in order, naming each result by the call it answers.
#[derive(Default)]
pub struct Transcript {
    /// The tool of each call seen so far, by call id.
    calls: HashMap<String, String>,
}

/// `text` cut to `max` characters with an ellipsis.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// The first [`RESULT_LINES`] lines of `text`, and how many more there were.
fn first_lines(text: &str) -> (String, usize) {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    let shown = lines.len().min(RESULT_LINES);
    (lines[..shown].join("\n"), lines.len() - shown)
}

/// The text of a tool result's parts.
fn result_text(content: &[Part]) -> String {
    content
        .iter()
        .map(|p| match p {
            Part::Text { text } => text.clone(),
            Part::Json { value } => value.to_string(),
            Part::Image { .. } => "[image]".to_string(),
            _ => String::new(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// One thing a message holds, as both renderings show it.
enum Item<'m> {
    Text(String),
    Call {
        name: &'m str,
        arguments: &'m Value,
    },
    Result {
        tool: String,
        /// Its first lines, and how many more there were.
        shown: String,
        more: usize,
        error: bool,
    },
    Image,
    Json(&'m Value),
}

impl Transcript {
    fn tool_of(&self, id: &str) -> &str {
        self.calls.get(id).map_or("a tool", String::as_str)
    }

    /// What `m` holds, in order: its text, then its calls, results, images and JSON (shown
    /// when there is no text); each result named by the call it answers.
    fn items<'m>(&mut self, m: &'m Message) -> Vec<Item<'m>> {
        let mut items = Vec::new();
        let text = m.text();
        let has_text = !text.trim().is_empty();
        if has_text {
            items.push(Item::Text(text.trim_end().to_string()));
        }
        for part in &m.content {
            match part {
                Part::ToolCall {
                    id,
                    name,
                    arguments,
                    ..
                } => {
                    self.calls.insert(id.clone(), name.clone());
                    items.push(Item::Call { name, arguments });
                }
                Part::ToolResult {
                    tool_call_id,
                    content,
                    is_error,
                } => {
                    let (shown, more) = first_lines(&result_text(content));
                    items.push(Item::Result {
                        tool: self.tool_of(tool_call_id).to_string(),
                        shown,
                        more,
                        error: *is_error,
                    });
                }
                Part::Image { .. } => items.push(Item::Image),
                Part::Json { value } if !has_text => items.push(Item::Json(value)),
                _ => {}
            }
        }
        items
    }

    /// The message's body as plain lines: its text, then a line per call (`→ tool {args}`),
    /// result (`← tool: lines`) and image.
    pub fn plain(&mut self, m: &Message) -> String {
        let lines: Vec<String> = self
            .items(m)
            .into_iter()
            .map(|item| match item {
                Item::Text(text) => text,
                Item::Call { name, arguments } => {
                    format!("→ {name} {}", cut(&arguments.to_string(), ARGUMENT_CHARS))
                }
                Item::Result {
                    tool,
                    shown,
                    more,
                    error,
                } => {
                    let error = if error { " (error)" } else { "" };
                    let mut line = format!("← {tool}{error}:");
                    match shown.contains('\n') {
                        true => line.push_str(&format!("\n  {}", shown.replace('\n', "\n  "))),
                        false => line.push_str(&format!(" {shown}")),
                    }
                    if more > 0 {
                        line.push_str(&format!("\n  … {more} more lines"));
                    }
                    line
                }
                Item::Image => "[image]".to_string(),
                Item::Json(value) => value.to_string(),
            })
            .collect();
        lines.join("\n")
    }

    /// The message's body as Markdown: its text, then each call's arguments and each result
    /// in fenced blocks.
    pub fn markdown(&mut self, m: &Message) -> String {
        let pretty = |v: &Value| serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string());
        let blocks: Vec<String> = self
            .items(m)
            .into_iter()
            .map(|item| match item {
                Item::Text(text) => text,
                Item::Call { name, arguments } => {
                    format!("Calls `{name}`:\n\n{}", fenced("json", &pretty(arguments)))
                }
                Item::Result {
                    tool,
                    shown,
                    more,
                    error,
                } => {
                    let what = if error { "Error from" } else { "Result of" };
                    let mut block = format!("{what} `{tool}`:\n\n{}", fenced("", &shown));
                    if more > 0 {
                        block.push_str(&format!("\n\n({more} more lines)"));
                    }
                    block
                }
                Item::Image => "*[image]*".to_string(),
                Item::Json(value) => fenced("json", &pretty(value)),
            })
            .collect();
        blocks.join("\n\n")
    }
}

/// `text` in a fenced block longer than any fence inside it.
fn fenced(lang: &str, text: &str) -> String {
    let mut fence = "```".to_string();
    while text.contains(fence.as_str()) {
        fence.push('`');
    }
    format!("{fence}{lang}\n{text}\n{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use genai_core::message::Role;
    use serde_json::json;

    fn turn() -> Vec<Message> {
        let call = Message {
            role: Role::Assistant,
            content: vec![
                Part::text("I will fix it."),
                Part::ToolCall {
                    id: "c1".into(),
                    name: "workspace.edit_file".into(),
                    arguments: json!({"path": "calc.py", "old_text": "a-b", "new_text": "a+b"}),
                    signature: None,
                },
            ],
            from: None,
        };
        let long: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let result = Message {
            role: Role::Tool,
            content: vec![Part::ToolResult {
                tool_call_id: "c1".into(),
                content: vec![Part::text(long)],
                is_error: false,
            }],
            from: None,
        };
        vec![call, result, Message::new(Role::Assistant, "Fixed.")]
    }

    #[test]
    fn calls_and_results_are_shown_with_their_tool() {
        let mut t = Transcript::default();
        let shown: Vec<String> = turn().iter().map(|m| t.plain(m)).collect();
        assert_eq!(
            shown[0],
            "I will fix it.\n→ workspace.edit_file {\"path\":\"calc.py\",\"old_text\":\"a-b\",\"new_text\":\"a+b\"}"
        );
        assert!(
            shown[1].starts_with("← workspace.edit_file:\n  line 1\n  line 2"),
            "{}",
            shown[1]
        );
        assert!(
            shown[1].ends_with("  line 12\n  … 8 more lines"),
            "{}",
            shown[1]
        );
        assert_eq!(shown[2], "Fixed.");
    }

    #[test]
    fn markdown_fences_calls_and_results() {
        let mut t = Transcript::default();
        let md: Vec<String> = turn().iter().map(|m| t.markdown(m)).collect();
        assert!(
            md[0].contains("Calls `workspace.edit_file`:\n\n```json\n{\n  \"path\": \"calc.py\""),
            "{}",
            md[0]
        );
        assert!(
            md[1].starts_with("Result of `workspace.edit_file`:\n\n```\nline 1\n"),
            "{}",
            md[1]
        );
        assert!(
            md[1].ends_with("line 12\n```\n\n(8 more lines)"),
            "{}",
            md[1]
        );
        assert_eq!(fenced("", "a ``` b"), "````\na ``` b\n````");
    }
}
