//! Embeddings through an HTTP kind: the kind's embeddings route (its row in the kinds table),
//! the bodies of its API (`embedding::wire`), each sent through the kind's hooks like a chat
//! request, so the kind's auth, base URL, deployment, signing, retries and errors are the ones
//! its chat requests have.
//!
//! It owns putting a batch on that route and gathering the answers. It must never build an
//! HTTP client, place a key or read an error body itself (`remote` and `http` do).

use super::remote::{Call, Endpoint, Hooks};
use super::ProviderResponse;
use crate::embedding::wire::Wire;
use crate::embedding::{unsupported, EmbedRequest, Embeddings};
use crate::error::{Error, Result};
use crate::format::ModelRequest;

/// The vectors of `request`'s texts from `endpoint`'s embeddings route.
pub(crate) async fn send(
    endpoint: &Endpoint,
    hooks: &dyn Hooks,
    request: &EmbedRequest,
) -> Result<Embeddings> {
    request.check()?;
    let route = endpoint
        .kind
        .embeddings
        .as_ref()
        .ok_or_else(|| unsupported(endpoint.kind.name))?;
    let wire = Wire::of(route.format, &request.model)?;
    let mut all = Embeddings {
        vectors: Vec::with_capacity(request.inputs.len()),
        input_tokens: Some(0),
    };
    for body in wire.bodies(request) {
        let sent = ModelRequest::new(route.format, &request.model, body, false);
        let call = Call {
            endpoint,
            route,
            request: &sent,
        };
        let bytes = match hooks.send(&call).await? {
            ProviderResponse::Complete(bytes) => bytes,
            ProviderResponse::Events(_) => {
                return Err(Error::provider(format!(
                    "{}: the embeddings answer came as a stream",
                    endpoint.name
                )))
            }
        };
        let one = wire.read(&endpoint.name, &bytes)?;
        all.vectors.extend(one.vectors);
        // Summed over Titan's one-text answers; unknown if any answer does not say.
        all.input_tokens = all.input_tokens.zip(one.input_tokens).map(|(a, b)| a + b);
    }
    all.checked(&endpoint.name, request.inputs.len())
}
