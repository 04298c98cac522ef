//! One request of a turn to the model: its messages compacted when they near the model's
//! context (`compact.rs`), through the agent's middleware (and the
//! reply back through it), images the model cannot take refused, and a provider's answer (the
//! agent's own or a fallback's, tried in `fallback.rs`) read whole or as it streams, within
//! the provider's reply tokens, with genai's keys masked in every piece and in the reply; its
//! span (`chat MODEL`) covers the whole request.
//!
//! It must never commit anything (the turn does, in `mod.rs`) nor talk to a client: streamed
//! pieces go to the caller's callbacks.

use futures::StreamExt;
use tracing::Instrument;

use super::{AIAgent, Answerer, Delta, ModelBinding, Notes, OnDelta};
use crate::error::{Error, Result};
use crate::format::{
    self, ModelConfiguration, ModelReply, ModelRequest, RequestOptions, ToolCallDelta,
};
use crate::message::Message;
use crate::middleware::{self, Capabilities};
use crate::provider::{ProviderResponse, PROGRESS_EVENT};
use crate::redact::StreamMask;
use crate::registry::ProviderInstance;
use crate::telemetry::spans;

impl AIAgent {
    /// Refuses images the binding's model cannot take, saying which middleware would turn
    /// them to text.
    pub(super) fn check_images(binding: &ModelBinding, messages: &[Message]) -> Result<()> {
        let model = &binding.model;
        format::check_images(
            messages,
            model.format.name(),
            model.images(),
            &binding.provider.name,
            binding.provider.provider.max_image_bytes(),
        )
        .map_err(|e| match e.message.contains("cannot take images") {
            true => Error::new(e.kind, format!("{}{}", e.message, middleware::image_hint())),
            false => e,
        })
    }

    /// What the middleware knows of this model.
    fn capabilities(&self, model: &ModelConfiguration) -> Capabilities {
        Capabilities {
            format: model.format.name(),
            model: model.model.clone(),
            images: model.images(),
            parameters: model.parameters.clone(),
        }
    }

    /// The messages one request sends: `messages` through the middleware, its notes kept.
    async fn through_middleware<'m>(
        &self,
        binding: &ModelBinding,
        model: &ModelConfiguration,
        messages: &'m [Message],
        noted: &Notes<'_>,
    ) -> Result<std::borrow::Cow<'m, [Message]>> {
        if self.middleware.is_empty() {
            return Ok(std::borrow::Cow::Borrowed(messages));
        }
        let mut notes = Vec::new();
        let sent = self
            .middleware
            .on_request(messages.to_vec(), &self.capabilities(model), &mut notes)
            .await;
        noted.add(notes);
        let sent = sent?;
        Self::check_images(binding, &sent)?;
        Ok(std::borrow::Cow::Owned(sent))
    }

    /// One request of a turn on `binding`, with `model` (the binding's, as this round asks
    /// it), streamed through `on_delta` when given (an event's reasoning before its text);
    /// pieces of streamed tool calls go to `on_call` when given. The reply comes with who
    /// answered it.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn call_model(
        &self,
        binding: &ModelBinding,
        model: &ModelConfiguration,
        messages: &[Message],
        options: &RequestOptions<'_>,
        on_delta: Option<OnDelta<'_>>,
        on_call: Option<&(dyn Fn(&ToolCallDelta) + Send + Sync)>,
        noted: &Notes<'_>,
    ) -> Result<(ModelReply, Answerer)> {
        let provider = &binding.provider;
        let span = spans::chat(&provider.name, provider.kind, &model.model, messages);
        let called = async {
            let messages = self.compacted(binding, model, messages, noted).await?;
            let messages = self
                .through_middleware(binding, model, &messages, noted)
                .await?;
            let (mut reply, answerer) = self
                .send_with_fallbacks(binding, model, &messages, options, on_delta, on_call, noted)
                .await?;
            if !self.middleware.is_empty() {
                let mut notes = Vec::new();
                let done = self.middleware.on_reply(&mut reply, &mut notes).await;
                noted.add(notes);
                done?;
            }
            Ok((reply, answerer))
        }
        .instrument(span.clone())
        .await;
        spans::chat_ended(&span, called.as_ref().map(|(r, _)| r));
        called
    }

    /// Sends a prepared request to `provider` and reads its reply as it comes.
    pub(super) async fn send(
        &self,
        provider: &ProviderInstance,
        model: &ModelConfiguration,
        request: &ModelRequest,
        on_delta: Option<OnDelta<'_>>,
        on_call: Option<&(dyn Fn(&ToolCallDelta) + Send + Sync)>,
    ) -> Result<ModelReply> {
        let max_tokens = provider.provider.max_reply_tokens();
        let over = |tokens: u64| {
            max_tokens.filter(|max| tokens > *max).map(|max| {
                Error::provider(format!(
                    "{}: the answer is over {max} tokens (max_reply_tokens): the turn is ended",
                    provider.name
                ))
            })
        };
        // The keys genai holds never come back out of a reply (a model may echo one):
        // masked in the streamed pieces and in the reply every front-end and the history get.
        let mut reply = match provider.provider.send_request(request).await? {
            ProviderResponse::Complete(body) => {
                let reply = model.extract(&body)?;
                match over(reply.usage.map_or(0, |u| u.output_tokens)) {
                    Some(e) => Err(e),
                    None => Ok(reply),
                }
            }
            ProviderResponse::Events(mut events) => {
                let mut decoder = model.decoder();
                let (mut text_mask, mut reasoning_mask) =
                    (StreamMask::default(), StreamMask::default());
                // Each streamed piece counts as a token; dropping `events` ends the request.
                let mut pieces = 0u64;
                while let Some(event) = events.next().await {
                    let event = event?;
                    if event.event.as_deref() == Some(PROGRESS_EVENT) {
                        if let Some(f) = on_delta {
                            f(Delta::Progress(&event.data));
                        }
                        continue;
                    }
                    let text = decoder.feed(&event)?;
                    let reasoning = decoder.take_reasoning_deltas();
                    let signatures = decoder.take_signature_deltas();
                    pieces += (text.len() + reasoning.len()) as u64;
                    if let Some(f) = on_delta {
                        for r in &reasoning {
                            emit(f, &reasoning_mask.push(r), |p| Delta::Reasoning(p));
                        }
                        signatures
                            .iter()
                            .for_each(|s| f(Delta::ReasoningSignature(s)));
                        if !text.is_empty() {
                            // The answer begins: the reasoning's held end goes before it.
                            emit(f, &reasoning_mask.finish(), |p| Delta::Reasoning(p));
                        }
                        for t in &text {
                            emit(f, &text_mask.push(t), |p| Delta::Text(p));
                        }
                    }
                    let calls = decoder.take_tool_call_deltas();
                    pieces += calls.len() as u64;
                    if let Some(f) = on_call {
                        calls.iter().for_each(f);
                    }
                    if let Some(e) = over(pieces) {
                        return Err(e);
                    }
                }
                if let Some(f) = on_delta {
                    emit(f, &reasoning_mask.finish(), |p| Delta::Reasoning(p));
                    emit(f, &text_mask.finish(), |p| Delta::Text(p));
                }
                decoder
                    .finish()
                    .map_err(|e| e.reworded(|m| format!("{}: {m}", provider.name)))
            }
        }?;
        reply.message.mask_secrets();
        Ok(reply)
    }
}

/// Hands `f` a streamed piece the redactor let out, when there is one.
fn emit(f: OnDelta<'_>, piece: &str, delta: for<'a> fn(&'a str) -> Delta<'a>) {
    if !piece.is_empty() {
        f(delta(piece));
    }
}
