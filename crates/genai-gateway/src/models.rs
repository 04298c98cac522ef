//! `GET /v1/models`: what a request's `model` may name, in OpenAI's list shape. These are the
//! names `genai ask -m` takes and the aliases of `[serve.models]` (those without a `*`
//! pattern): the config's agents, its `[defaults] model`, and
//! `PROVIDER:MODEL` for each provider instance's default model when it is known without asking
//! the server and the provider has the key it needs (any other model id of a provider works
//! too, as with `-m`).
//!
//! It only lists what the selection and the registry already know. It must never ask a
//! provider over the network (a listing must answer at once) nor list a provider's key.

use serde_json::{json, Value};

use genai_core::session::Framework;

/// The model list.
pub(crate) fn list(fw: &Framework) -> Value {
    let selector = fw.selector();
    let mut data: Vec<Value> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    let mut add = |id: String, owned_by: &str| {
        if seen.insert(id.clone()) {
            data.push(json!({"id": id, "object": "model", "created": 0, "owned_by": owned_by}));
        }
    };
    for name in selector.config.agents.keys() {
        add(name.clone(), "genai");
    }
    for alias in selector.config.serve.models.keys() {
        if !alias.contains('*') {
            add(alias.clone(), "genai");
        }
    }
    if let Some(model) = &selector.config.defaults.model {
        add(model.clone(), "genai");
    }
    if let Ok(components) = selector.registry.components() {
        for p in &components.service_providers {
            // A provider with no key for it would only fail: a client's model picker should
            // not offer it (`-m` still takes it once a key is set).
            if p.provider.key_status() == genai_protocol::listings::KeyStatus::Missing {
                continue;
            }
            if let Some(model) = p.provider.default_model() {
                add(format!("{}:{model}", p.name), p.kind);
            }
        }
    }
    json!({"object": "list", "data": data})
}
