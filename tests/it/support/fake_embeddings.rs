//! The embeddings APIs of the loopback fakes, each answer shaped as its vendor documents it:
//! OpenAI's `POST /v1/embeddings` (and Azure's deployment paths: `fake_openai`), Ollama's
//! `POST /api/embed`, Gemini's `:batchEmbedContents`, and Bedrock's InvokeModel for Titan Text
//! Embeddings and Cohere Embed. Test use only.
//!
//! A text's vector says which text it was: its first component is the text's length in
//! characters, the others 0.5, so a test checks order and count; its length is the request's
//! dimensions, else [`DIMENSIONS`]. Tokens are counted as words. A request the API would
//! refuse (no input, token arrays on Ollama) gets the API's 400.

use base64::Engine;
use serde_json::{json, Value};

/// A vector's length when the request names none.
pub const DIMENSIONS: usize = 4;

/// The fake vector of `text`.
pub fn vector(text: &str, dimensions: Option<u64>) -> Vec<f32> {
    let n = dimensions.map_or(DIMENSIONS, |d| d as usize).max(1);
    let mut v = vec![0.5; n];
    v[0] = text.chars().count() as f32;
    v
}

fn words(texts: &[String]) -> u64 {
    texts
        .iter()
        .map(|t| t.split_whitespace().count() as u64)
        .sum()
}

/// The texts of a JSON string or array of strings.
fn texts(v: &Value) -> Option<Vec<String>> {
    match v {
        Value::String(s) => Some(vec![s.clone()]),
        Value::Array(items) => items.iter().map(|i| i.as_str().map(String::from)).collect(),
        _ => None,
    }
}

/// OpenAI's answer to an embeddings body (floats, or base64 when asked).
pub fn openai(body: &Value) -> (u16, Value) {
    let Some(inputs) = texts(&body["input"]).filter(|t| !t.is_empty()) else {
        let error = json!({"error": {"message": "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.", "type": "invalid_request_error", "param": null, "code": null}});
        return (400, error);
    };
    let dimensions = body["dimensions"].as_u64();
    let base64 = body["encoding_format"] == "base64";
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(index, text)| {
            let v = vector(text, dimensions);
            let embedding = match base64 {
                false => json!(v),
                true => {
                    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                    json!(base64::engine::general_purpose::STANDARD.encode(bytes))
                }
            };
            json!({"object": "embedding", "index": index, "embedding": embedding})
        })
        .collect();
    let tokens = words(&inputs);
    let answer = json!({
        "object": "list",
        "data": data,
        "model": body["model"],
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens}
    });
    (200, answer)
}

/// Ollama's answer to `POST /api/embed`.
pub fn ollama(body: &Value) -> (u16, Value) {
    let Some(inputs) = texts(&body["input"]) else {
        return (400, json!({"error": "invalid input type"}));
    };
    let dimensions = body["dimensions"].as_u64();
    let vectors: Vec<Vec<f32>> = inputs.iter().map(|t| vector(t, dimensions)).collect();
    let answer = json!({
        "model": body["model"],
        "embeddings": vectors,
        "total_duration": 14_143_917,
        "load_duration": 1_019_500,
        "prompt_eval_count": words(&inputs)
    });
    (200, answer)
}

/// Gemini's answer to `batchEmbedContents` (no usage: the API reports none).
pub fn gemini(body: &Value) -> (u16, Value) {
    let requests = body["requests"].as_array().cloned().unwrap_or_default();
    if requests.is_empty() {
        let error = json!({"error": {"code": 400, "message": "* BatchEmbedContentsRequest.requests: contents is not specified\n", "status": "INVALID_ARGUMENT"}});
        return (400, error);
    }
    let embeddings: Vec<Value> = requests
        .iter()
        .map(|r| {
            let text = r["content"]["parts"][0]["text"]
                .as_str()
                .unwrap_or_default();
            json!({"values": vector(text, r["outputDimensionality"].as_u64())})
        })
        .collect();
    (200, json!({ "embeddings": embeddings }))
}

/// Bedrock's InvokeModel answer for an embeddings model (`None`: not one).
pub fn bedrock(model: &str, body: &Value) -> Option<(u16, Value)> {
    if model.contains("amazon.titan-embed") {
        let Some(text) = body["inputText"].as_str() else {
            return Some((
                400,
                json!({"message": "Malformed input request: #: required key [inputText] not found, please reformat your input and try again."}),
            ));
        };
        let v = vector(text, body["dimensions"].as_u64());
        let answer = json!({
            "embedding": v,
            "embeddingsByType": {"float": v},
            "inputTextTokenCount": words(&[text.to_string()])
        });
        return Some((200, answer));
    }
    if model.contains("cohere.embed") {
        let Some(inputs) = texts(&body["texts"]) else {
            return Some((
                400,
                json!({"message": "Malformed input request: #: required key [texts] not found, please reformat your input and try again."}),
            ));
        };
        let vectors: Vec<Vec<f32>> = inputs.iter().map(|t| vector(t, None)).collect();
        let answer = json!({
            "embeddings": vectors,
            "id": "fake-cohere-1",
            "response_type": "embeddings_floats",
            "texts": inputs
        });
        return Some((200, answer));
    }
    None
}
