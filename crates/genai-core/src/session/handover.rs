//! A conversation handed over to another model (`genai ask -c -m OTHER`): its stored history is
//! rewritten into what the new model's format can carry. Text goes over unchanged; an image the
//! format or provider cannot take becomes a line of text saying so; when the format changes,
//! tool calls and results become text (another format cannot replay a call id or a provider's
//! signature), and JSON parts become their JSON text. Every change is counted in a note for the
//! turn's details.
//!
//! This module only rewrites messages; it must never touch the store (the stored history stays
//! as it was) nor choose the model (that is `select.rs`).

use std::collections::HashMap;

use crate::format::{self, ImageSupport};
use crate::message::{Message, Part, Role};

/// What the new model can take.
pub(crate) struct Target<'a> {
    pub(crate) format: &'a str,
    pub(crate) images: ImageSupport,
    pub(crate) provider: &'a str,
    pub(crate) max_image_bytes: Option<usize>,
    /// The history was written for another format.
    pub(crate) format_changed: bool,
}

/// The history rewritten for `target`, and the notes saying what changed (none: nothing did).
pub(crate) fn carry_over(
    history: Vec<Message>,
    target: &Target<'_>,
) -> (Vec<Message>, Vec<String>) {
    let mut images = 0;
    let mut tool_parts = 0;
    let mut json_parts = 0;
    let mut names: HashMap<String, String> = HashMap::new();
    let mut out = Vec::with_capacity(history.len());
    for mut message in history {
        let mut content = Vec::with_capacity(message.content.len());
        for part in std::mem::take(&mut message.content) {
            match part {
                Part::Image { .. } => {
                    let probe = Message {
                        role: message.role,
                        content: vec![part],
                        from: None,
                    };
                    match format::check_images(
                        std::slice::from_ref(&probe),
                        target.format,
                        target.images,
                        target.provider,
                        target.max_image_bytes,
                    ) {
                        Ok(()) => content.extend(probe.content),
                        Err(e) => {
                            images += 1;
                            content.push(Part::text(format!(
                                "[an image was left out: {}]",
                                e.message
                            )));
                        }
                    }
                }
                Part::ToolCall {
                    id,
                    name,
                    arguments,
                    ..
                } if target.format_changed => {
                    tool_parts += 1;
                    content.push(Part::text(format!("[called tool {name} with {arguments}]")));
                    names.insert(id, name);
                }
                Part::ToolResult {
                    tool_call_id,
                    content: result,
                    is_error,
                } if target.format_changed => {
                    tool_parts += 1;
                    let name = names.get(&tool_call_id).map_or("a tool", String::as_str);
                    let text: String = result
                        .iter()
                        .filter_map(|p| match p {
                            Part::Text { text } => Some(text.as_str()),
                            _ => None,
                        })
                        .collect::<Vec<_>>()
                        .join("\n");
                    let what = if is_error { "failed" } else { "answered" };
                    content.push(Part::text(format!("[{name} {what}: {text}]")));
                }
                Part::Json { value } if target.format_changed => {
                    json_parts += 1;
                    content.push(Part::text(value.to_string()));
                }
                other => content.push(other),
            }
        }
        message.content = content;
        if target.format_changed && message.role == Role::Tool {
            // The results are text now: the model reads them as the user's.
            message.role = Role::User;
        }
        out.push(message);
    }
    let mut notes = Vec::new();
    if images > 0 {
        notes.push(format!(
            "handover: {images} image(s) of the history left out ({} cannot take them)",
            target.format
        ));
    }
    if tool_parts > 0 {
        notes.push(format!(
            "handover: {tool_parts} tool call(s) and result(s) of the history given as text"
        ));
    }
    if json_parts > 0 {
        notes.push(format!(
            "handover: {json_parts} JSON part(s) of the history given as text"
        ));
    }
    (out, notes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn target(images: ImageSupport, format_changed: bool) -> Target<'static> {
        Target {
            format: "ollama-chat",
            images,
            provider: "p",
            max_image_bytes: None,
            format_changed,
        }
    }

    fn history() -> Vec<Message> {
        let mut user = Message::user("what is in this picture?");
        user.content.push(Part::Image {
            url: None,
            media_type: Some("image/png".into()),
            data: Some("iVBORw0KGgo=".into()),
        });
        let mut call = Message::assistant("");
        call.content = vec![Part::ToolCall {
            id: "c1".into(),
            name: "calc.add".into(),
            arguments: json!({"a": 1, "b": 2}),
            signature: Some("sig".into()),
        }];
        let mut result = Message::new(Role::Tool, "");
        result.content = vec![Part::ToolResult {
            tool_call_id: "c1".into(),
            content: vec![Part::text("3")],
            is_error: false,
        }];
        vec![
            user,
            call,
            result,
            Message::assistant("a cat; and 1 + 2 = 3"),
        ]
    }

    #[test]
    fn the_same_format_keeps_everything_it_can_carry() {
        let h = history();
        let (out, notes) = carry_over(h.clone(), &target(ImageSupport::INLINE, false));
        assert_eq!(out, h);
        assert!(notes.is_empty(), "{notes:?}");
    }

    #[test]
    fn another_format_gets_images_it_cannot_take_and_tool_parts_as_text_with_notes() {
        let (out, notes) = carry_over(history(), &target(ImageSupport::NONE, true));
        assert_eq!(out.len(), 4);
        assert_eq!(out[0].content.len(), 2);
        assert!(
            out[0]
                .text()
                .contains("an image was left out: the ollama-chat format cannot take images"),
            "{:?}",
            out[0]
        );
        assert_eq!(
            out[1].text(),
            r#"[called tool calc.add with {"a":1,"b":2}]"#
        );
        assert_eq!(out[2].role, Role::User);
        assert_eq!(out[2].text(), "[calc.add answered: 3]");
        assert_eq!(out[3].text(), "a cat; and 1 + 2 = 3");
        assert!(out
            .iter()
            .all(|m| m.content.iter().all(|p| matches!(p, Part::Text { .. }))));
        assert_eq!(
            notes,
            [
                "handover: 1 image(s) of the history left out (ollama-chat cannot take them)",
                "handover: 2 tool call(s) and result(s) of the history given as text"
            ]
        );
    }
}
