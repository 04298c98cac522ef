//! OpenAI's `POST /v1/embeddings` over the core: the request (`input` a string or an array of
//! strings, `model`, `dimensions`, `encoding_format` `float` or `base64`), the model chosen by
//! access control as a turn's is (the caller's key may use it), the vectors from
//! `Framework::embed`, and the answer in OpenAI's shape, its usage and cost on the caller's row.
//!
//! It owns reading that request and writing that answer. It must never forward the client's
//! body upstream, and never accept token arrays it cannot turn back into text: they are a 400
//! that says to send strings.

use std::sync::Arc;

use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::access::{self, Chosen};
use super::error::INVALID_REQUEST;
use super::{json_bytes, json_bytes_response, Api, ApiError, Caller, HttpResponse};
use genai_core::session::{Embedded, Framework};

/// The route.
pub(crate) const PATH: &str = "/v1/embeddings";

/// The request's fields genai reads; `user` and unknown fields are accepted and ignored.
#[derive(Deserialize)]
struct Request {
    model: String,
    input: Value,
    dimensions: Option<u32>,
    encoding_format: Option<String>,
}

/// What a valid request asks.
#[derive(Debug, PartialEq)]
pub(crate) struct Asked {
    pub(crate) model: String,
    pub(crate) inputs: Vec<String>,
    pub(crate) dimensions: Option<u32>,
    pub(crate) base64: bool,
}

fn invalid(param: &'static str, message: impl Into<String>) -> ApiError {
    ApiError {
        param: Some(param.to_string()),
        ..ApiError::new(
            http::StatusCode::BAD_REQUEST,
            INVALID_REQUEST,
            message.into(),
        )
    }
}

/// The request of a body, or the 400 naming its field.
pub(crate) fn read(body: &[u8]) -> Result<Asked, ApiError> {
    let r: Request = serde_json::from_slice(body).map_err(|e| {
        ApiError::new(
            http::StatusCode::BAD_REQUEST,
            INVALID_REQUEST,
            format!("the body is not an embeddings request: {e} (send {{\"model\": ..., \"input\": \"text\" or [\"text\", ...]}})"),
        )
    })?;
    let tokens = || {
        invalid(
            "input",
            "token arrays are not supported by genai's gateway: send the texts as strings",
        )
    };
    let inputs = match r.input {
        Value::String(s) => vec![s],
        Value::Array(items) => items
            .into_iter()
            .map(|item| match item {
                Value::String(s) => Ok(s),
                Value::Number(_) | Value::Array(_) => Err(tokens()),
                _ => Err(invalid("input", "`input` holds strings only")),
            })
            .collect::<Result<_, _>>()?,
        _ => {
            return Err(invalid(
                "input",
                "`input` is a string or an array of strings",
            ))
        }
    };
    let base64 = match r.encoding_format.as_deref() {
        None | Some("float") => false,
        Some("base64") => true,
        Some(other) => {
            return Err(invalid(
                "encoding_format",
                format!("encoding_format `{other}` is not float or base64"),
            ))
        }
    };
    Ok(Asked {
        model: r.model,
        inputs,
        dimensions: r.dimensions,
        base64,
    })
}

#[derive(Serialize)]
struct Answer<'a> {
    object: &'static str,
    data: Vec<Item>,
    model: &'a str,
    usage: Usage,
}

#[derive(Serialize)]
struct Item {
    object: &'static str,
    index: usize,
    embedding: Value,
}

#[derive(Serialize)]
struct Usage {
    prompt_tokens: u64,
    total_tokens: u64,
}

/// The answer's JSON: each vector as numbers, or as base64 of its little-endian `f32`s.
pub(crate) fn answer_body(e: &Embedded, model: &str, base64: bool) -> bytes::Bytes {
    let data = e
        .embeddings
        .vectors
        .iter()
        .enumerate()
        .map(|(index, v)| Item {
            object: "embedding",
            index,
            embedding: match base64 {
                false => Value::from(v.clone()),
                true => {
                    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                    Value::from(base64::engine::general_purpose::STANDARD.encode(bytes))
                }
            },
        })
        .collect();
    let tokens = e.embeddings.input_tokens.unwrap_or(0);
    json_bytes(&Answer {
        object: "list",
        data,
        model,
        usage: Usage {
            prompt_tokens: tokens,
            total_tokens: tokens,
        },
    })
}

/// The answer to one embeddings request of `caller`.
pub(crate) async fn answer(body: &[u8], fw: &Arc<Framework>, caller: &mut Caller) -> HttpResponse {
    let asked = match read(body) {
        Ok(a) => a,
        Err(e) => return e.response_in(Api::OpenAi),
    };
    let model = match access::choose(fw, caller, &asked.model) {
        Ok(Chosen::Model(m)) => m,
        Ok(Chosen::Deployments(_)) => {
            return invalid(
                "model",
                format!(
                    "`{}` names deployments in [serve.models], which serve chat only: name an embeddings model (PROVIDER:MODEL or an alias)",
                    asked.model
                ),
            )
            .response_in(Api::OpenAi)
        }
        Err(e) => return e.response_in(Api::OpenAi),
    };
    match fw.embed(&model, asked.inputs, asked.dimensions).await {
        Ok(embedded) => {
            let body = answer_body(&embedded, &asked.model, asked.base64);
            caller.embedded(&embedded, &body);
            json_bytes_response(http::StatusCode::OK, body)
        }
        Err(e) => ApiError::of(&e, None).response_in(Api::OpenAi),
    }
}

#[cfg(test)]
#[path = "embeddings_tests.rs"]
mod tests;
