//! A Messages request as it comes on the wire: serde types with each known field typed, read
//! straight from the body (no JSON tree of the whole request). What a type does not name is
//! kept in its `other` map, so that a field genai cannot carry is still refused by name
//! (`messages[0].content[0].citations`), and the top level's other fields are the sampling
//! settings, the fields accepted and ignored, or refused.
//!
//! It owns the shape only. It must never decide what a field means to the core (the API's
//! file does: `anthropic.rs`).

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::fields::{self, TextOr};

/// The request body. Small objects whose shape `anthropic.rs` checks field by field
/// (`tool_choice`, `thinking`, `output_format`, `output_config`) and the number it checks
/// (`max_tokens`) stay JSON values.
#[derive(Deserialize)]
pub(crate) struct MessagesBody {
    pub(crate) model: Option<String>,
    pub(crate) messages: Option<Vec<WireMessage>>,
    pub(crate) system: Option<Content>,
    pub(crate) max_tokens: Option<Value>,
    pub(crate) stop_sequences: Option<Value>,
    pub(crate) stream: Option<bool>,
    pub(crate) tools: Option<Vec<WireTool>>,
    pub(crate) tool_choice: Option<Value>,
    pub(crate) thinking: Option<Value>,
    pub(crate) output_format: Option<Value>,
    pub(crate) output_config: Option<Value>,
    /// Sampling settings, the fields accepted and not carried, and every field not named
    /// above, in the body's order.
    #[serde(flatten)]
    pub(crate) other: Map<String, Value>,
}

impl MessagesBody {
    /// The named fields given (not null), in the order of the API's reference, for a caller
    /// that takes only some of them.
    pub(crate) fn given(&self) -> impl Iterator<Item = &'static str> + '_ {
        [
            ("model", self.model.is_some()),
            ("messages", self.messages.is_some()),
            ("system", self.system.is_some()),
            ("max_tokens", self.max_tokens.is_some()),
            ("stop_sequences", self.stop_sequences.is_some()),
            ("stream", self.stream.is_some()),
            ("tools", self.tools.is_some()),
            ("tool_choice", self.tool_choice.is_some()),
            ("thinking", self.thinking.is_some()),
            ("output_format", self.output_format.is_some()),
            ("output_config", self.output_config.is_some()),
        ]
        .into_iter()
        .filter(|(_, given)| *given)
        .map(|(name, _)| name)
    }
}

/// One message of the history.
#[derive(Deserialize)]
pub(crate) struct WireMessage {
    pub(crate) role: Option<String>,
    pub(crate) content: Option<Content>,
    #[serde(flatten)]
    pub(crate) other: Map<String, Value>,
}

/// A content: a string (one text block) or an array of blocks.
pub(crate) type Content = TextOr<Block>;

/// One content block; which fields it may have depends on its `type`.
#[derive(Deserialize)]
pub(crate) struct Block {
    #[serde(rename = "type")]
    pub(crate) kind: Option<String>,
    pub(crate) text: Option<String>,
    pub(crate) source: Option<Map<String, Value>>,
    pub(crate) thinking: Option<String>,
    /// A thinking block's signature; one that is not a non-empty string is dropped.
    pub(crate) signature: Option<Value>,
    pub(crate) data: Option<String>,
    pub(crate) id: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) input: Option<Value>,
    pub(crate) tool_name: Option<String>,
    pub(crate) tool_use_id: Option<String>,
    pub(crate) is_error: Option<bool>,
    pub(crate) content: Option<Content>,
    /// A prompt-cache breakpoint, named so that it is not refused, and skipped: genai places
    /// its own where the provider caches.
    #[serde(rename = "cache_control")]
    _cache_control: Option<IgnoredAny>,
    /// A text block's references into documents, from an earlier answer: not carried.
    pub(crate) citations: Option<Value>,
    #[serde(flatten)]
    pub(crate) other: Map<String, Value>,
}

impl Block {
    /// The first field present that a block of `kind` does not have (`type` and
    /// `cache_control` aside, which every block may have).
    pub(crate) fn stray(&self, kind: &str) -> Option<&str> {
        let takes: &[&str] = match kind {
            "text" => &["text", "citations"],
            "image" => &["source"],
            "thinking" => &["thinking", "signature"],
            "redacted_thinking" => &["data"],
            "tool_use" => &["id", "name", "input"],
            "tool_reference" => &["tool_name"],
            "tool_result" => &["tool_use_id", "is_error", "content"],
            _ => &[],
        };
        let named = [
            ("text", self.text.is_some()),
            ("source", self.source.is_some()),
            ("thinking", self.thinking.is_some()),
            ("signature", self.signature.is_some()),
            ("data", self.data.is_some()),
            ("id", self.id.is_some()),
            ("name", self.name.is_some()),
            ("input", self.input.is_some()),
            ("tool_name", self.tool_name.is_some()),
            ("tool_use_id", self.tool_use_id.is_some()),
            ("is_error", self.is_error.is_some()),
            ("content", self.content.is_some()),
            ("citations", self.citations.is_some()),
        ];
        fields::stray(&named, takes, &self.other)
    }
}

/// A tool the client offers: a custom tool, or one of the vendor's server tools (refused).
#[derive(Deserialize)]
pub(crate) struct WireTool {
    #[serde(rename = "type")]
    pub(crate) kind: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) input_schema: Option<Value>,
    /// Held back until a `tool_reference` loads it (Anthropic's tool search).
    pub(crate) defer_loading: Option<bool>,
    pub(crate) strict: Option<bool>,
    /// Skipped, as a block's.
    #[serde(rename = "cache_control")]
    _cache_control: Option<IgnoredAny>,
    #[serde(flatten)]
    pub(crate) other: Map<String, Value>,
}
