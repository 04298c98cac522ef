//! Test-only builders of what the formats' tests feed in: messages of given parts, tool calls
//! and results, image parts, named stream events, and SSE text run through a decoder. Every
//! format's tests (and the agent's) build their fixtures with these, so a fixture's shape is
//! written once; `assert_mentions` is the check of an error's words they all make. It must
//! never be compiled outside tests.

use serde_json::Value;

use super::{StreamDecoder, StreamEvent};
use crate::error::{Error, Result};
use crate::message::{Message, Part, Role};

/// A message of `role` with these parts.
pub(crate) fn said(role: Role, content: Vec<Part>) -> Message {
    Message {
        role,
        content,
        from: None,
    }
}

/// A tool call without a signature.
pub(crate) fn call(id: &str, name: &str, arguments: Value) -> Part {
    Part::ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
        signature: None,
    }
}

/// The result of tool call `id`.
pub(crate) fn result(id: &str, content: Vec<Part>, is_error: bool) -> Part {
    Part::ToolResult {
        tool_call_id: id.into(),
        content,
        is_error,
    }
}

/// An assistant message making one tool call.
pub(crate) fn calling(id: &str, name: &str, arguments: Value) -> Message {
    said(Role::Assistant, vec![call(id, name, arguments)])
}

/// A tool message answering call `id` with this text.
pub(crate) fn answered(id: &str, text: &str) -> Message {
    said(Role::Tool, vec![result(id, vec![Part::text(text)], false)])
}

/// An image part of inline bytes.
pub(crate) fn image(media_type: &str, data: &str) -> Part {
    Part::Image {
        url: None,
        media_type: Some(media_type.into()),
        data: Some(data.into()),
    }
}

/// An image part by URL.
pub(crate) fn image_url(url: &str) -> Part {
    Part::Image {
        url: Some(url.into()),
        media_type: None,
        data: None,
    }
}

/// A stream event of type `kind`.
pub(crate) fn event(kind: &str, data: &str) -> StreamEvent {
    StreamEvent {
        event: Some(kind.to_string()),
        data: data.to_string(),
    }
}

/// Feeds SSE text (`event:` and `data:` lines, blank-line separated) to a decoder and returns
/// the text deltas.
pub(crate) fn feed_sse(d: &mut StreamDecoder, sse: &str) -> Result<Vec<String>> {
    let mut deltas = Vec::new();
    for block in sse.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let mut event = None;
        let mut data = String::new();
        for line in block.lines() {
            if let Some(e) = line.strip_prefix("event: ") {
                event = Some(e.to_string());
            } else if let Some(d) = line.strip_prefix("data: ") {
                data.push_str(d);
            }
        }
        deltas.extend(d.feed(&StreamEvent { event, data })?);
    }
    Ok(deltas)
}

/// Asserts that error `e` says `words`, showing its message when it does not.
#[track_caller]
pub(crate) fn assert_mentions(e: &Error, words: &str) {
    assert!(e.message.contains(words), "{}", e.message);
}
