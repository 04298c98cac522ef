//! Structured output in a turn: the final reply is read as JSON and checked against the
//! response schema; a reply that does not match gets one retry, with what was wrong.
//!
//! It owns turning a checked reply into its JSON text and the messages of the retry. It must
//! never send a request (the tool loop does) nor commit anything: a retry's messages go to the
//! model once and are never stored.

use crate::format::{ModelReply, ResponseSchema};
use crate::message::{Message, Part, Role};

/// Checks `reply` against `schema`. When it matches, the reply's answer becomes the JSON text
/// (compact, its reasoning kept), which is returned; else the validation errors.
pub(super) fn settle(
    schema: &ResponseSchema,
    reply: &mut ModelReply,
) -> std::result::Result<String, Vec<String>> {
    let value = schema.check(&reply.message)?;
    let json = value.to_string();
    reply.message.content.retain(Part::is_reasoning);
    reply.message.content.push(Part::text(json.clone()));
    Ok(json)
}

/// What the retry adds to the request: the reply that failed, then the errors (as the answer
/// tool's failed result when the reply came as that tool's call).
pub(super) fn retry_messages(
    schema: &ResponseSchema,
    failed: &Message,
    errors: &[String],
) -> Vec<Message> {
    let text = crate::format::schema::retry_text(errors);
    let call = failed.content.iter().find_map(|p| match p {
        Part::ToolCall { id, name, .. } if *name == schema.name => Some(id.clone()),
        _ => None,
    });
    let answer = match call {
        Some(id) => Message {
            role: Role::Tool,
            content: vec![Part::ToolResult {
                tool_call_id: id,
                content: vec![Part::text(text)],
                is_error: true,
            }],
            from: None,
        },
        None => Message::user(text),
    };
    vec![failed.clone(), answer]
}
