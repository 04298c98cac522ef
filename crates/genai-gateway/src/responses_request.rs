//! A Responses request as it comes on the wire: serde types with each known field typed, read
//! straight from the body (no JSON tree of the whole request). What a type does not name is
//! kept in its `other` map, so that a field genai cannot carry is still refused by name
//! (`input[0].audio`), and the top level's other fields are refused, or accepted and echoed.
//!
//! It owns the shape only. It must never decide what a field means to the core (the API's
//! file does: `responses.rs`).

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::fields::{self, TextOr};

/// The request body. The fields the `response` object says back as they were sent (`tools`,
/// `tool_choice`, `text`, `reasoning`, the sampling settings) stay JSON values: they are
/// echoed whole, and small.
#[derive(Deserialize)]
pub(crate) struct ResponsesBody {
    pub(crate) model: Option<String>,
    pub(crate) instructions: Option<String>,
    pub(crate) input: Option<Content>,
    pub(crate) stream: Option<bool>,
    pub(crate) tools: Option<Value>,
    pub(crate) tool_choice: Option<Value>,
    pub(crate) parallel_tool_calls: Option<bool>,
    pub(crate) text: Option<Value>,
    pub(crate) reasoning: Option<Value>,
    pub(crate) store: Option<Value>,
    pub(crate) background: Option<Value>,
    /// The fields refused, the sampling settings and the hints accepted, and every field not
    /// named above, in the body's order.
    #[serde(flatten)]
    pub(crate) other: Map<String, Value>,
}

/// A string, or an array of items (`input`) or of parts (a message's content, an output).
pub(crate) type Content = TextOr<Item>;

/// One item of the input, or one part of a content: which fields it may have depends on its
/// `type` (an item without one is a message).
#[derive(Deserialize)]
pub(crate) struct Item {
    #[serde(rename = "type")]
    pub(crate) kind: Option<String>,
    /// What a client keeps of an item genai gave (its id, its status): read no further.
    pub(crate) id: Option<IgnoredAny>,
    pub(crate) status: Option<IgnoredAny>,
    pub(crate) role: Option<String>,
    pub(crate) content: Option<Content>,
    pub(crate) call_id: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) namespace: Option<String>,
    pub(crate) arguments: Option<Value>,
    pub(crate) output: Option<Content>,
    pub(crate) summary: Option<Vec<Item>>,
    pub(crate) encrypted_content: Option<String>,
    pub(crate) text: Option<String>,
    pub(crate) refusal: Option<String>,
    pub(crate) image_url: Option<String>,
    pub(crate) detail: Option<Value>,
    /// An `output_text`'s annotations and log probabilities, which say nothing the text
    /// does not: read no further.
    pub(crate) annotations: Option<IgnoredAny>,
    pub(crate) logprobs: Option<IgnoredAny>,
    #[serde(flatten)]
    pub(crate) other: Map<String, Value>,
}

impl Item {
    /// The first field present that an item or part of `kind` does not have.
    pub(crate) fn stray(&self, kind: &str) -> Option<&str> {
        let takes: &[&str] = match kind {
            "message" => &["id", "status", "role", "content"],
            "function_call" => &["id", "status", "call_id", "name", "namespace", "arguments"],
            "function_call_output" => &["id", "status", "call_id", "output"],
            "reasoning" => &["id", "status", "summary", "content", "encrypted_content"],
            "input_image" => &["image_url", "detail"],
            "refusal" => &["refusal"],
            // A reasoning item's summary or content.
            "reasoning_part" => &["text"],
            // input_text, output_text
            _ => &["text", "annotations", "logprobs"],
        };
        let named = [
            ("id", self.id.is_some()),
            ("status", self.status.is_some()),
            ("role", self.role.is_some()),
            ("content", self.content.is_some()),
            ("call_id", self.call_id.is_some()),
            ("name", self.name.is_some()),
            ("namespace", self.namespace.is_some()),
            ("arguments", self.arguments.is_some()),
            ("output", self.output.is_some()),
            ("summary", self.summary.is_some()),
            ("encrypted_content", self.encrypted_content.is_some()),
            ("text", self.text.is_some()),
            ("refusal", self.refusal.is_some()),
            ("image_url", self.image_url.is_some()),
            ("detail", self.detail.is_some()),
            ("annotations", self.annotations.is_some()),
            ("logprobs", self.logprobs.is_some()),
        ];
        fields::stray(&named, takes, &self.other)
    }
}
