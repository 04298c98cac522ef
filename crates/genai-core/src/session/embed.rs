//! Embeddings for the front-ends (`genai embed`, the gateway's `/v1/embeddings`): the model a
//! name selects, chosen as `genai ask -m` chooses ([`Framework::request_model`]), its provider
//! asked for the vectors, and what its input cost at the model's price. It must never store
//! anything (an embedding is no turn) nor guess a cost: unknown tokens or price leave it unknown.

use tracing::Instrument;

use super::{Framework, RequestModel};
use crate::embedding::{EmbedRequest, Embeddings};
use crate::error::Result;
use crate::message::Usage;
use crate::telemetry::spans;

/// The model `genai embed` uses when none is named and `[defaults] embedding_model` is unset:
/// the built-in `local` engine's model.
pub const DEFAULT_EMBEDDING_MODEL: &str = "local";

/// What a batch's embeddings came back with.
#[derive(Debug, Clone, PartialEq)]
pub struct Embedded {
    pub embeddings: Embeddings,
    /// The provider instance that answered.
    pub provider: String,
    /// The model id it ran.
    pub model: String,
    /// US dollars for the input tokens; `None`: unknown (no price, or no count).
    pub cost: Option<f64>,
}

impl Framework {
    /// The model name `genai embed` uses when given none: `[defaults] embedding_model`, else
    /// [`DEFAULT_EMBEDDING_MODEL`].
    pub fn embedding_model(&self) -> String {
        self.config()
            .defaults
            .embedding_model
            .clone()
            .unwrap_or_else(|| DEFAULT_EMBEDDING_MODEL.to_string())
    }

    /// The vectors of `inputs` from `model` (shortened to `dimensions` where the model can),
    /// with their input tokens and cost.
    pub async fn embed(
        &self,
        model: &RequestModel,
        inputs: Vec<String>,
        dimensions: Option<u32>,
    ) -> Result<Embedded> {
        let provider = &model.provider;
        let request = EmbedRequest {
            model: model.configuration().model.clone(),
            inputs,
            dimensions,
        };
        request.check()?;
        let span = spans::embeddings(&provider.name, provider.kind, &request.model);
        let answer = provider
            .provider
            .embed(&request)
            .instrument(span.clone())
            .await;
        spans::embeddings_ended(&span, answer.as_ref().map(|e| e.input_tokens));
        let embeddings = answer?;
        let price = self.price_of(provider, &request.model);
        let cost = embeddings.input_tokens.zip(price).map(|(tokens, p)| {
            p.price.cost(&Usage {
                input_tokens: tokens,
                ..Usage::default()
            })
        });
        Ok(Embedded {
            embeddings,
            provider: provider.name.clone(),
            model: request.model,
            cost,
        })
    }
}
