//! The embeddings APIs on the wire: the request bodies and the answers of OpenAI's
//! `POST /embeddings` (Azure's deployments and OpenAI-compatible servers too), Ollama's
//! `POST /api/embed`, Gemini's `batchEmbedContents`, and Bedrock's InvokeModel for Amazon Titan
//! Text Embeddings and Cohere Embed, each as its vendor documents it.
//!
//! It owns writing and reading those bodies. It must never do I/O (the provider sends them)
//! and never make up a token count an answer does not carry.

use serde::Deserialize;
use serde_json::{json, Value};

use super::{EmbedRequest, Embeddings};
use crate::error::{Error, Result};

/// The API names of the kinds' embeddings routes.
pub const OPENAI: &str = "openai-embeddings";
pub const OLLAMA: &str = "ollama-embed";
pub const GEMINI: &str = "gemini-embed";
pub const BEDROCK: &str = "bedrock-embed";

/// One embeddings API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    OpenAi,
    Ollama,
    Gemini,
    /// Amazon Titan Text Embeddings on Bedrock: one text a request.
    Titan,
    /// Cohere Embed on Bedrock.
    Cohere,
}

impl Wire {
    /// The API of a route (`api`) for `model`: on Bedrock the model's family says it.
    pub fn of(api: &str, model: &str) -> Result<Wire> {
        match api {
            OPENAI => Ok(Wire::OpenAi),
            OLLAMA => Ok(Wire::Ollama),
            GEMINI => Ok(Wire::Gemini),
            BEDROCK if model.contains("amazon.titan-embed") => Ok(Wire::Titan),
            BEDROCK if model.contains("cohere.embed") => Ok(Wire::Cohere),
            BEDROCK => Err(Error::invalid_params(format!(
                "Bedrock model `{model}` is not an embeddings model genai speaks: use Amazon Titan (amazon.titan-embed-text-v2:0) or Cohere (cohere.embed-english-v3, cohere.embed-multilingual-v3)"
            ))),
            other => Err(Error::internal(format!("no embeddings API `{other}`"))),
        }
    }

    /// The request bodies of a batch: one, or one per text for Titan.
    pub fn bodies(self, r: &EmbedRequest) -> Vec<Value> {
        let mut body = match self {
            Wire::OpenAi => {
                json!({"model": r.model, "input": r.inputs, "encoding_format": "float"})
            }
            Wire::Ollama => json!({"model": r.model, "input": r.inputs}),
            Wire::Gemini => {
                let model = format!("models/{}", r.model.trim().trim_start_matches("models/"));
                let requests: Vec<Value> = r
                    .inputs
                    .iter()
                    .map(|text| {
                        let mut one =
                            json!({"model": model, "content": {"parts": [{"text": text}]}});
                        if let Some(d) = r.dimensions {
                            one["outputDimensionality"] = d.into();
                        }
                        one
                    })
                    .collect();
                return vec![json!({ "requests": requests })];
            }
            Wire::Titan => {
                // Only V2 takes `dimensions` and `normalize`.
                let v2 = r.model.contains("text-v2");
                return r
                    .inputs
                    .iter()
                    .map(|text| {
                        let mut one = json!({ "inputText": text });
                        if v2 {
                            one["normalize"] = true.into();
                        }
                        if let Some(d) = r.dimensions {
                            one["dimensions"] = d.into();
                        }
                        one
                    })
                    .collect();
            }
            Wire::Cohere => {
                let mut body = json!({"texts": r.inputs, "input_type": "search_document"});
                if let Some(d) = r.dimensions {
                    body["output_dimension"] = d.into();
                }
                return vec![body];
            }
        };
        if let Some(d) = r.dimensions {
            body["dimensions"] = d.into();
        }
        vec![body]
    }

    /// The vectors and input tokens of one answer's body.
    pub fn read(self, provider: &str, body: &[u8]) -> Result<Embeddings> {
        let bad = |e: serde_json::Error| {
            Error::provider(format!(
                "{provider}: the embeddings answer is not the API's: {e}"
            ))
        };
        match self {
            Wire::OpenAi => {
                let mut a: OpenAiAnswer = serde_json::from_slice(body).map_err(bad)?;
                a.data.sort_by_key(|d| d.index);
                Ok(Embeddings {
                    vectors: a.data.into_iter().map(|d| d.embedding).collect(),
                    input_tokens: a.usage.map(|u| u.prompt_tokens),
                })
            }
            Wire::Ollama => {
                let a: OllamaAnswer = serde_json::from_slice(body).map_err(bad)?;
                Ok(Embeddings {
                    vectors: a.embeddings,
                    input_tokens: a.prompt_eval_count,
                })
            }
            Wire::Gemini => {
                let a: GeminiAnswer = serde_json::from_slice(body).map_err(bad)?;
                Ok(Embeddings {
                    vectors: a.embeddings.into_iter().map(|e| e.values).collect(),
                    input_tokens: None,
                })
            }
            Wire::Titan => {
                let a: TitanAnswer = serde_json::from_slice(body).map_err(bad)?;
                Ok(Embeddings {
                    vectors: vec![a.embedding],
                    input_tokens: a.input_text_token_count,
                })
            }
            Wire::Cohere => {
                let a: CohereAnswer = serde_json::from_slice(body).map_err(bad)?;
                let vectors = match a.embeddings {
                    CohereVectors::Floats(v) => v,
                    CohereVectors::ByType { float } => float,
                };
                Ok(Embeddings {
                    vectors,
                    input_tokens: None,
                })
            }
        }
    }
}

#[derive(Deserialize)]
struct OpenAiAnswer {
    data: Vec<OpenAiVector>,
    usage: Option<OpenAiUsage>,
}

#[derive(Deserialize)]
struct OpenAiVector {
    #[serde(default)]
    index: usize,
    embedding: Vec<f32>,
}

#[derive(Deserialize)]
struct OpenAiUsage {
    prompt_tokens: u64,
}

#[derive(Deserialize)]
struct OllamaAnswer {
    embeddings: Vec<Vec<f32>>,
    prompt_eval_count: Option<u64>,
}

#[derive(Deserialize)]
struct GeminiAnswer {
    embeddings: Vec<GeminiVector>,
}

#[derive(Deserialize)]
struct GeminiVector {
    values: Vec<f32>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TitanAnswer {
    embedding: Vec<f32>,
    input_text_token_count: Option<u64>,
}

#[derive(Deserialize)]
struct CohereAnswer {
    embeddings: CohereVectors,
}

/// `embeddings_floats` answers carry the vectors; `embeddings_by_type` ones (asked with
/// `embedding_types`, and Embed v4's) carry them under `float`.
#[derive(Deserialize)]
#[serde(untagged)]
enum CohereVectors {
    Floats(Vec<Vec<f32>>),
    ByType { float: Vec<Vec<f32>> },
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
