//! The estimate of a request's input tokens that `/v1/messages/count_tokens` answers: genai
//! holds no provider's tokenizer, and asking the provider would cost a request (and most
//! providers have no such endpoint). About 4 bytes of text, tool arguments or tool schema a
//! token ([`cache::estimated_tokens`], the rule genai's prompt caching uses), and
//! [`IMAGE_TOKENS`] an image, and [`MESSAGE_TOKENS`] a message.
//!
//! It owns the estimate only. It must never send anything anywhere, and never be presented as
//! exact (the docs say it is an estimate).

use genai_core::format::{cache, ToolSpec};
use genai_core::message::{Message, Part};

/// What each message adds for its role and framing, as OpenAI counts it for its chat models.
pub(crate) const MESSAGE_TOKENS: u64 = 3;

/// What an image is counted as: about what Anthropic charges for one of 1.15 megapixels, the
/// largest it takes without scaling down.
pub(crate) const IMAGE_TOKENS: u64 = 1600;

pub(crate) fn estimate(messages: &[Message], tools: &[ToolSpec]) -> u64 {
    let mut bytes = 0;
    let mut images = 0;
    let mut add = |p: &Part| match p {
        Part::Text { text } | Part::Reasoning { text, .. } => bytes += text.len(),
        Part::Image { .. } => images += 1,
        Part::ToolCall {
            name, arguments, ..
        } => bytes += name.len() + arguments.to_string().len(),
        Part::Json { value } => bytes += value.to_string().len(),
        Part::ToolResult { .. } => {}
    };
    for m in messages {
        for p in &m.content {
            add(p);
            if let Part::ToolResult { content, .. } = p {
                content.iter().for_each(&mut add);
            }
        }
    }
    for t in tools {
        bytes += t.name.len() + t.description.len() + t.input_schema.to_string().len();
    }
    cache::estimated_tokens(bytes) + images * IMAGE_TOKENS + MESSAGE_TOKENS * messages.len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_calls_results_tools_and_images_all_count() {
        let text = vec![Message::user("x".repeat(400))];
        assert_eq!(estimate(&text, &[]), 103);
        let image = Part::Image {
            url: Some("https://example.com/a.png".into()),
            media_type: None,
            data: None,
        };
        let mut more = text.clone();
        more.push(Message {
            role: genai_core::message::Role::Tool,
            content: vec![Part::ToolResult {
                tool_call_id: "c".into(),
                content: vec![Part::text("y".repeat(40)), image],
                is_error: false,
            }],
            from: None,
        });
        assert_eq!(estimate(&more, &[]), 116 + IMAGE_TOKENS);
        let tool = ToolSpec {
            name: "t".repeat(4),
            description: String::new(),
            input_schema: json!({}),
        };
        // 4 bytes of name and 2 of schema.
        assert_eq!(estimate(&text, &[tool]), 104);
    }
}
