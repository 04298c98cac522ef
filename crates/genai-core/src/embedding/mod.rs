//! Embeddings: a batch of texts turned into vectors by a model, with the input tokens it
//! counted. [`EmbedRequest`] is what a front-end asks (`genai embed`, the gateway's
//! `/v1/embeddings`), [`Embeddings`] what a provider answers; `wire` writes and reads each
//! provider's embeddings API (OpenAI's, Ollama's, Gemini's, Titan's and Cohere's on Bedrock).
//!
//! It owns those types, the request's checks and OpenAI's normalisation. It must never send
//! anything (each provider does, with its own auth and endpoint) and never guess a token
//! count a provider did not report.

pub mod wire;

use crate::error::{Error, ErrorKind, Result};

/// The provider kinds that embed, as the error of another kind names them.
pub const KINDS: &[&str] = &[
    "openai",
    "azure-openai",
    "gemini",
    "ollama",
    "bedrock",
    "local",
];

/// The most inputs one request may carry (OpenAI's limit).
pub const MAX_INPUTS: usize = 2048;

/// A batch of texts to embed with one model.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbedRequest {
    /// The model id, as the provider names it.
    pub model: String,
    pub inputs: Vec<String>,
    /// The vectors' length, where the model can shorten them.
    pub dimensions: Option<u32>,
}

/// The vectors of a batch, one per input in its order, and the input tokens counted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Embeddings {
    pub vectors: Vec<Vec<f32>>,
    /// `None`: the provider does not report them (Gemini, Cohere on Bedrock).
    pub input_tokens: Option<u64>,
}

impl EmbedRequest {
    /// Refuses an empty batch, an empty input, too many inputs or zero dimensions, saying what
    /// to send instead.
    pub fn check(&self) -> Result<()> {
        if self.inputs.is_empty() {
            return Err(Error::invalid_params(
                "nothing to embed: give at least one text",
            ));
        }
        if self.inputs.len() > MAX_INPUTS {
            return Err(Error::invalid_params(format!(
                "{} texts in one request: send at most {MAX_INPUTS} at a time",
                self.inputs.len()
            )));
        }
        if let Some(i) = self.inputs.iter().position(|t| t.is_empty()) {
            return Err(Error::invalid_params(format!(
                "text {} is empty: every text to embed needs at least one character",
                i + 1
            )));
        }
        if self.dimensions == Some(0) {
            return Err(Error::invalid_params(
                "dimensions must be at least 1 (or left out for the model's own length)",
            ));
        }
        Ok(())
    }
}

impl Embeddings {
    /// Refuses an answer whose vectors do not match the batch (`expected` inputs).
    pub fn checked(self, provider: &str, expected: usize) -> Result<Embeddings> {
        if self.vectors.len() != expected {
            return Err(Error::provider(format!(
                "{provider}: asked to embed {expected} texts, the answer has {} vectors",
                self.vectors.len()
            )));
        }
        Ok(self)
    }
}

/// The error of a provider kind that has no embeddings, naming those that have.
pub fn unsupported(kind: &str) -> Error {
    Error::new(
        ErrorKind::InvalidParams,
        format!(
            "the {kind} provider kind has no embeddings; use a provider of kind {}",
            KINDS.join(", ")
        ),
    )
}

/// Scales `v` to length 1, as OpenAI's embeddings are (a zero vector is left as it is).
pub fn normalize(v: &mut [f32]) {
    let norm = v
        .iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>()
        .sqrt();
    if norm > 0.0 {
        v.iter_mut()
            .for_each(|x| *x = (f64::from(*x) / norm) as f32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(inputs: &[&str], dimensions: Option<u32>) -> EmbedRequest {
        EmbedRequest {
            model: "m".into(),
            inputs: inputs.iter().map(|s| s.to_string()).collect(),
            dimensions,
        }
    }

    #[test]
    fn empty_batches_empty_texts_and_zero_dimensions_are_refused() {
        assert!(request(&["a", "b"], Some(8)).check().is_ok());
        let e = request(&[], None).check().unwrap_err();
        assert!(e.message.contains("at least one text"), "{}", e.message);
        let e = request(&["a", ""], None).check().unwrap_err();
        assert!(e.message.contains("text 2 is empty"), "{}", e.message);
        let e = request(&["a"], Some(0)).check().unwrap_err();
        assert!(e.message.contains("dimensions"), "{}", e.message);
        let many = vec!["x"; MAX_INPUTS + 1];
        assert!(request(&many, None).check().is_err());
    }

    #[test]
    fn vectors_are_scaled_to_length_one_and_zero_stays_zero() {
        let mut v = [3.0, 4.0];
        normalize(&mut v);
        assert_eq!(v, [0.6, 0.8]);
        let mut z = [0.0, 0.0];
        normalize(&mut z);
        assert_eq!(z, [0.0, 0.0]);
    }

    #[test]
    fn a_kind_without_embeddings_names_those_with_them() {
        let e = unsupported("anthropic");
        assert!(e
            .message
            .contains("anthropic provider kind has no embeddings"));
        assert!(e
            .message
            .contains("openai, azure-openai, gemini, ollama, bedrock, local"));
    }

    #[test]
    fn an_answer_with_the_wrong_number_of_vectors_is_refused() {
        let e = Embeddings {
            vectors: vec![vec![1.0]],
            input_tokens: None,
        };
        assert!(e.clone().checked("p", 1).is_ok());
        let err = e.checked("p", 2).unwrap_err();
        assert!(err
            .message
            .contains("asked to embed 2 texts, the answer has 1"));
    }
}
