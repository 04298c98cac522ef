//! What an agent's turns run on, as one immutable value ([`ModelBinding`]): a model
//! configuration, the provider instance that serves it, its price, the response schema its
//! replies must match, and the fallbacks tried when the provider fails before answering.
//!
//! The agent holds its current binding; a turn takes it once, at its start, and every step of
//! the turn (each request, the fallbacks, the cost, the outcome) reads that one. It must never
//! be changed in place: a parameter set makes a new binding ([`ModelBinding::with_parameter`])
//! that the agent swaps in for the turns after, never under a running one.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::Fallback;
use crate::error::Result;
use crate::format::{ModelConfiguration, ResponseSchema};
use crate::pricing::Priced;
use crate::registry::ProviderInstance;

/// A model configuration plus its provider, its price, its response schema and fallbacks.
#[derive(Clone)]
pub struct ModelBinding {
    pub provider: ProviderInstance,
    pub model: ModelConfiguration,
    /// The model's price, when one is known (from `[pricing]` or the built-in table).
    pub price: Option<Priced>,
    /// The JSON Schema every reply must match unless a prompt gives its own (the
    /// conversation's or its model configuration's `response_schema`).
    pub(crate) response_schema: Option<Arc<ResponseSchema>>,
    /// The agents tried in order when this provider fails before answering.
    pub(crate) fallbacks: Vec<Fallback>,
}

impl ModelBinding {
    /// `model` on `provider`, with no price, schema or fallbacks.
    pub(crate) fn new(provider: ProviderInstance, model: ModelConfiguration) -> ModelBinding {
        ModelBinding {
            provider,
            model,
            price: None,
            response_schema: None,
            fallbacks: Vec::new(),
        }
    }

    /// This binding with a parameter set on its model configuration (as its format takes it)
    /// and given to the fallbacks (one whose format refuses it becomes unfit, not run without).
    pub(crate) fn with_parameter(&self, name: &str, value: Value) -> Result<ModelBinding> {
        let mut next = self.clone();
        next.model.set_parameter(name, value.clone())?;
        for f in &mut next.fallbacks {
            f.set_parameter(name, value.clone());
        }
        Ok(next)
    }

    /// The format and model id, and the parameters set.
    pub fn model_info(&self) -> (&'static str, String, Map<String, Value>) {
        let m = &self.model;
        (m.format.name(), m.model.clone(), m.parameters.clone())
    }
}
