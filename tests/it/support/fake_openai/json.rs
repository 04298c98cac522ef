//! The JSON bodies of the fake OpenAI server (`fake_openai.rs`), as structs rather than
//! `json!` so that fields keep the API's order on the wire. Shapes only: what goes in them is
//! the fake's.

use serde::Serialize;
use serde_json::Value;

#[derive(Serialize)]
pub struct ErrorBody<'a> {
    pub error: ErrorDetail<'a>,
}

#[derive(Serialize)]
pub struct ErrorDetail<'a> {
    pub message: &'a str,
    #[serde(rename = "type")]
    pub kind: &'a str,
    pub param: Option<&'a str>,
    pub code: Option<&'a str>,
}

pub fn error_body(message: &str, kind: &str, code: Option<&str>) -> Vec<u8> {
    to_json(&ErrorBody {
        error: ErrorDetail {
            message,
            kind,
            param: None,
            code,
        },
    })
}

#[derive(Serialize)]
pub struct ModelList<'a> {
    pub object: &'a str,
    pub data: [ModelEntry<'a>; 1],
}

#[derive(Serialize)]
pub struct ModelEntry<'a> {
    pub id: &'a str,
    pub object: &'a str,
    pub created: u64,
    pub owned_by: &'a str,
}

#[derive(Serialize, Clone, Copy, Debug)]
pub struct Usage {
    /// Every prompt token, the cached ones included.
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
    /// `{cached_tokens}`: the prompt tokens read from the automatic prompt cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
    /// `{reasoning_tokens}`: the completion tokens spent reasoning.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_tokens_details: Option<CompletionTokensDetails>,
}

#[derive(Serialize, Clone, Copy, Debug)]
pub struct CompletionTokensDetails {
    pub reasoning_tokens: u64,
}

#[derive(Serialize, Clone, Copy, Debug)]
pub struct PromptTokensDetails {
    pub cached_tokens: u64,
}

#[derive(Serialize)]
pub struct Completion<'a> {
    pub id: &'a str,
    pub object: &'a str,
    pub created: u64,
    pub model: &'a str,
    pub choices: [Choice<'a>; 1],
    pub usage: Usage,
    pub system_fingerprint: &'a str,
}

#[derive(Serialize)]
pub struct Choice<'a> {
    pub index: u32,
    pub message: Message<'a>,
    pub logprobs: Option<()>,
    pub finish_reason: &'a str,
}

#[derive(Serialize)]
pub struct Message<'a> {
    pub role: &'a str,
    pub content: Option<&'a str>,
    /// DeepSeek's and vLLM's reasoning, when the model reasons.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<&'a str>,
    pub refusal: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<Value>>,
}

#[derive(Serialize)]
pub struct Chunk<'a> {
    pub id: &'a str,
    pub object: &'a str,
    pub created: u64,
    pub model: &'a str,
    pub system_fingerprint: &'a str,
    pub choices: Vec<ChunkChoice<'a>>,
    /// Absent without `include_usage`; `null` on ordinary chunks with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Option<Usage>>,
}

#[derive(Serialize)]
pub struct ChunkChoice<'a> {
    pub index: u32,
    pub delta: Delta<'a>,
    pub logprobs: Option<()>,
    pub finish_reason: Option<&'a str>,
}

#[derive(Serialize, Default)]
pub struct Delta<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<&'a str>,
    /// `Some(None)` serializes as `"refusal":null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refusal: Option<Option<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Value>,
}

pub fn to_json<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).expect("serializing a fake response cannot fail")
}
