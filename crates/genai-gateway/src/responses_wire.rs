//! The shapes of the Responses API's answers as genai writes them: output items, stream
//! events' data, the `response` object and its usage, each kind's keys in the API's order, with
//! the few constructors `responses_reply.rs` builds them with.
//!
//! It owns these shapes only. It must never decide what an answer says (`responses_reply.rs`
//! does) nor read a request.

use std::sync::LazyLock;

use serde::Serialize;
use serde_json::{json, Map, Value};

use genai_core::message::Usage;

/// An output item, as sent (each kind's keys in the API's order).
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub(super) enum Item {
    Message(MessageItem),
    Reasoning(ReasoningItem),
    Call(CallItem),
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct MessageItem {
    pub(super) id: String,
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) status: &'static str,
    pub(super) role: &'static str,
    pub(super) content: Vec<OutputText>,
}

/// A message's `output_text` part; its `logprobs` only once it is done.
#[derive(Debug, Clone, Serialize)]
pub(super) struct OutputText {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) text: String,
    pub(super) annotations: [(); 0],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) logprobs: Option<[(); 0]>,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct ReasoningItem {
    pub(super) id: String,
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) summary: Vec<SummaryText>,
    /// Absent while it streams; then the signature, or `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) encrypted_content: Option<Option<String>>,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct SummaryText {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) text: String,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct CallItem {
    pub(super) id: String,
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) status: &'static str,
    pub(super) call_id: String,
    pub(super) name: String,
    pub(super) arguments: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) namespace: Option<String>,
}

/// A content or summary part of an event.
#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum EventPart {
    Text(OutputText),
    Summary(SummaryText),
}

/// One stream event's data: the fields its type has, in the API's order, then its type and
/// number.
#[derive(Default, Serialize)]
pub(super) struct Event<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) item_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) output_index: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) content_index: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) summary_index: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) arguments: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) delta: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) logprobs: Option<[(); 0]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) part: Option<EventPart>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) item: Option<&'a Item>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) response: Option<Response<'a>>,
    #[serde(rename = "type")]
    pub(super) kind: &'a str,
    pub(super) sequence_number: u64,
}

/// The `response` object.
#[derive(Serialize)]
pub(super) struct Response<'a> {
    pub(super) id: &'a str,
    pub(super) object: &'static str,
    pub(super) created_at: u64,
    pub(super) status: &'static str,
    pub(super) background: bool,
    pub(super) error: Option<ErrorOut<'a>>,
    pub(super) incomplete_details: Option<Incomplete>,
    pub(super) instructions: &'a Value,
    pub(super) max_output_tokens: &'a Value,
    pub(super) metadata: &'a Value,
    pub(super) model: &'a Value,
    pub(super) output: &'a [Item],
    pub(super) parallel_tool_calls: &'a Value,
    pub(super) previous_response_id: Option<()>,
    pub(super) reasoning: &'a Value,
    pub(super) service_tier: &'a Value,
    /// genai keeps no response on the server, whatever the request asked.
    pub(super) store: bool,
    pub(super) temperature: &'a Value,
    pub(super) text: &'a Value,
    pub(super) tool_choice: &'a Value,
    pub(super) tools: &'a Value,
    pub(super) top_p: &'a Value,
    pub(super) truncation: &'a Value,
    pub(super) usage: Option<UsageOut>,
    pub(super) user: &'a Value,
}

#[derive(Serialize)]
pub(super) struct ErrorOut<'a> {
    pub(super) code: &'a str,
    pub(super) message: &'a str,
}

#[derive(Serialize)]
pub(super) struct Incomplete {
    pub(super) reason: &'static str,
}

/// The usage in this API's words.
#[derive(Serialize)]
pub(super) struct UsageOut {
    pub(super) input_tokens: u64,
    pub(super) input_tokens_details: CachedTokens,
    pub(super) output_tokens: u64,
    pub(super) output_tokens_details: ReasoningTokens,
    pub(super) total_tokens: u64,
}

#[derive(Serialize)]
pub(super) struct CachedTokens {
    pub(super) cached_tokens: u64,
}

#[derive(Serialize)]
pub(super) struct ReasoningTokens {
    pub(super) reasoning_tokens: u64,
}

/// What a `response` says of a setting the request did not send.
pub(super) static DEFAULTS: LazyLock<Map<String, Value>> = LazyLock::new(|| {
    let defaults = json!({
        "metadata": {},
        "parallel_tool_calls": true,
        "reasoning": {"effort": null, "summary": null},
        "service_tier": "default",
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "truncation": "disabled",
    });
    match defaults {
        Value::Object(m) => m,
        _ => Map::new(),
    }
});

/// An `output_text` part; a done one carries `logprobs`.
pub(super) fn output_text(text: &str, done: bool) -> OutputText {
    OutputText {
        kind: "output_text",
        text: text.to_string(),
        annotations: [],
        logprobs: done.then_some([]),
    }
}

pub(super) fn summary_text(text: &str) -> SummaryText {
    SummaryText {
        kind: "summary_text",
        text: text.to_string(),
    }
}

/// A message item: empty while it streams (`text` None), else with its one `output_text`.
pub(super) fn message_item(id: &str, text: Option<&str>, status: &'static str) -> Item {
    Item::Message(MessageItem {
        id: id.to_string(),
        kind: "message",
        status,
        role: "assistant",
        content: text.map(|t| output_text(t, true)).into_iter().collect(),
    })
}

/// A reasoning item; `signature` None while it streams (no `encrypted_content` yet).
pub(super) fn reasoning_item(id: &str, text: &str, signature: Option<Option<String>>) -> Item {
    Item::Reasoning(ReasoningItem {
        id: id.to_string(),
        kind: "reasoning",
        summary: (!text.is_empty())
            .then(|| summary_text(text))
            .into_iter()
            .collect(),
        encrypted_content: signature,
    })
}

/// What separates a namespace from its tool's name in the name offered to the model (a name
/// OpenAI's and others' function names allow).
pub(super) const NAMESPACE_SEPARATOR: &str = "__";

/// `NS__NAME` as (`NS`, `NAME`) when `NS` is one of the request's tool namespaces.
pub(super) fn split_namespaced<'a>(
    name: &'a str,
    namespaces: &'a [String],
) -> Option<(&'a str, &'a str)> {
    namespaces.iter().find_map(|ns| {
        name.strip_prefix(ns.as_str())?
            .strip_prefix(NAMESPACE_SEPARATOR)
            .map(|short| (ns.as_str(), short))
    })
}

pub(super) fn call_item(
    id: &str,
    call_id: &str,
    name: &str,
    arguments: &str,
    status: &'static str,
    namespaces: &[String],
) -> Item {
    let (namespace, name) = match split_namespaced(name, namespaces) {
        Some((ns, short)) => (Some(ns.to_string()), short),
        None => (None, name),
    };
    Item::Call(CallItem {
        id: id.to_string(),
        kind: "function_call",
        status,
        call_id: call_id.to_string(),
        name: name.to_string(),
        arguments: arguments.to_string(),
        namespace,
    })
}

/// The usage in this API's words.
pub(super) fn usage(u: Usage) -> UsageOut {
    UsageOut {
        input_tokens: u.input_tokens,
        input_tokens_details: CachedTokens {
            cached_tokens: u.cache_read_tokens.unwrap_or(0),
        },
        output_tokens: u.output_tokens,
        output_tokens_details: ReasoningTokens {
            reasoning_tokens: u.reasoning_tokens.unwrap_or(0),
        },
        total_tokens: u.total(),
    }
}
