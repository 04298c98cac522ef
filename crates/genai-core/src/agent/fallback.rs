//! Fallback agents: when an agent's provider fails before its answer starts (rate limited,
//! a 5xx, no answer in time, or unreachable), the same request goes to the agents its config
//! names in `fallback = [...]`, in order, each on its own provider and model; the turn says
//! which one served it.
//!
//! It owns the fallbacks of an agent, which failures let the next one try, and the one model
//! request tried down that list. It must never try another agent once a byte of the answer
//! went to the caller (the client would see two answers run together), never drop a part of
//! the request a fallback cannot carry (such a fallback is skipped, and said), and never
//! follow a fallback's own fallbacks.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;

use super::{AIAgent, Delta, ModelBinding, Notes, OnDelta};
use crate::error::{Error, ErrorKind, Result};
use crate::format::{self, ModelConfiguration, ModelReply, RequestOptions, ToolCallDelta};
use crate::message::Message;
use crate::pricing::Priced;
use crate::registry::ProviderInstance;

/// Another agent of the config, tried when the ones before it failed; a value of the
/// agent's [`ModelBinding`](super::ModelBinding).
#[derive(Clone)]
pub(crate) struct Fallback {
    /// Its name in `[agents]`.
    pub(crate) name: String,
    pub(crate) provider: ProviderInstance,
    model: ModelConfiguration,
    pub(crate) price: Option<Priced>,
    /// Why it cannot carry this agent's requests (a parameter its format refuses).
    unfit: Option<String>,
}

impl Fallback {
    pub(crate) fn new(
        name: String,
        provider: ProviderInstance,
        model: ModelConfiguration,
        price: Option<Priced>,
    ) -> Fallback {
        Fallback {
            name,
            provider,
            model,
            price,
            unfit: None,
        }
    }

    /// Sets a parameter the agent was given; a format that refuses it makes this fallback
    /// unfit for the agent's requests, rather than have it run them without.
    pub(crate) fn set_parameter(&mut self, name: &str, value: Value) {
        if let Err(e) = self.model.set_parameter(name, value) {
            self.unfit = Some(format!(
                "it cannot take the parameter `{name}`: {}",
                e.message
            ));
        }
    }
}

/// Whether the next fallback may try after this failure: rate limited (429), the provider
/// failed or is overloaded (5xx), no answer in time, or it could not be reached.
pub fn falls_back(e: &Error) -> bool {
    e.kind == ErrorKind::Timeout
        || e.unreachable
        || e.upstream_status.is_some_and(|s| s == 429 || s >= 500)
}

/// Who answers one request: the agent itself or one of its fallbacks.
struct Candidate<'a> {
    /// `None`: the agent itself.
    fallback: Option<&'a Fallback>,
    provider: &'a ProviderInstance,
    model: Cow<'a, ModelConfiguration>,
}

/// Who answers a request: the agent's own provider and model, or one of its fallbacks'.
#[derive(Debug, Clone, PartialEq)]
pub struct Answerer {
    /// The provider instance's name.
    pub provider: String,
    /// The provider's kind (`openai`, `local`, ...).
    pub kind: &'static str,
    /// The model id as it was asked for.
    pub model: String,
    /// The fallback agent's name when one answers for the agent.
    pub fallback: Option<String>,
    /// The model's price, when one is known.
    pub price: Option<Priced>,
}

impl Answerer {
    /// `NAME (KIND)` of the provider.
    pub fn described(&self) -> String {
        format!("{} ({})", self.provider, self.kind)
    }
}

impl ModelBinding {
    /// Who answers when `provider` runs `model` for this binding, as itself or as `fallback`.
    fn answerer(
        &self,
        provider: &ProviderInstance,
        model: &str,
        fallback: Option<&Fallback>,
    ) -> Answerer {
        Answerer {
            provider: provider.name.clone(),
            kind: provider.kind,
            model: model.to_string(),
            fallback: fallback.map(|f| f.name.clone()),
            price: fallback.map_or(&self.price, |f| &f.price).clone(),
        }
    }
}

impl AIAgent {
    /// One request (`messages` already through the middleware) to the turn's `binding` with
    /// `model` (its model as this round asks it), then to each of its fallbacks in turn while
    /// the failure [`falls_back`] and nothing was streamed yet.
    /// Each one tried is told to `on_delta` ([`Delta::Answering`]) before its request goes;
    /// the reply comes with the one that answered.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn send_with_fallbacks(
        &self,
        binding: &ModelBinding,
        model: &ModelConfiguration,
        messages: &[Message],
        options: &RequestOptions<'_>,
        on_delta: Option<OnDelta<'_>>,
        on_call: Option<&(dyn Fn(&ToolCallDelta) + Send + Sync)>,
        notes: &Notes<'_>,
    ) -> Result<(ModelReply, Answerer)> {
        if binding.fallbacks.is_empty() {
            let request = model.prepare(messages, options)?;
            let answerer = binding.answerer(&binding.provider, &model.model, None);
            if let Some(f) = on_delta {
                f(Delta::Answering(&answerer));
            }
            let reply = self
                .send(&binding.provider, model, &request, on_delta, on_call)
                .await?;
            return Ok((reply, answerer));
        }
        // Whether a piece of the answer went to the caller: then no one else may answer.
        let started = AtomicBool::new(false);
        let delta = |d: Delta<'_>| {
            if !matches!(d, Delta::Progress(_) | Delta::Answering(_)) {
                started.store(true, Ordering::Relaxed);
            }
            if let Some(f) = on_delta {
                f(d);
            }
        };
        let call = |c: &ToolCallDelta| {
            started.store(true, Ordering::Relaxed);
            if let Some(f) = on_call {
                f(c);
            }
        };
        let delta = on_delta.map(|_| &delta as OnDelta<'_>);
        let call = on_call.map(|_| &call as &(dyn Fn(&ToolCallDelta) + Send + Sync));
        let own = Candidate {
            fallback: None,
            provider: &binding.provider,
            model: Cow::Borrowed(model),
        };
        let others = binding.fallbacks.iter().map(|f| Candidate {
            fallback: Some(f),
            provider: &f.provider,
            model: relaxed_like(model, &f.model),
        });
        let mut failed: Option<Error> = None;
        for c in std::iter::once(own).chain(others) {
            if let Some(f) = c.fallback {
                if let Some(why) = cannot_carry(f, &c.model, messages, options) {
                    notes.add([format!("fallback {} skipped: {why}", f.name)]);
                    continue;
                }
            }
            let request = c.model.prepare(messages, options)?;
            // Told before the answer starts: the caller knows who answers its first piece.
            let answerer = binding.answerer(c.provider, &c.model.model, c.fallback);
            if let Some(f) = delta {
                f(Delta::Answering(&answerer));
            }
            match self.send(c.provider, &c.model, &request, delta, call).await {
                Ok(reply) => {
                    if let Some(f) = c.fallback {
                        notes.add([format!("served by fallback {}", f.name)]);
                    }
                    return Ok((reply, answerer));
                }
                Err(e) if falls_back(&e) && !started.load(Ordering::Relaxed) => {
                    let who = c
                        .fallback
                        .map_or(binding.provider.name.as_str(), |f| &f.name);
                    tracing::info!("{who} failed before answering, trying a fallback: {e}");
                    notes.add([format!("{who} failed: {}", e.message)]);
                    failed = Some(e);
                }
                Err(e) => return Err(e),
            }
        }
        Err(failed.map_or_else(
            || Error::provider("no fallback could carry the request"),
            |e| e.reworded(|m| format!("{m} (every fallback failed too)")),
        ))
    }
}

/// Why fallback `f` cannot carry this request without dropping a part of it, if so.
fn cannot_carry(
    f: &Fallback,
    model: &ModelConfiguration,
    messages: &[Message],
    options: &RequestOptions<'_>,
) -> Option<String> {
    if let Some(why) = &f.unfit {
        return Some(why.clone());
    }
    let native = model.format.spec().native_tools && f.provider.provider.native_tools();
    if !options.tools.is_empty() && !native {
        return Some(format!(
            "provider {} ({}) has no native tool calls",
            f.provider.name,
            model.format.name()
        ));
    }
    format::check_images(
        messages,
        model.format.name(),
        model.images(),
        &f.provider.name,
        f.provider.provider.max_image_bytes(),
    )
    .err()
    .map(|e| e.message)
}

/// A fallback's model as the request's model stands: without a forced tool choice when the
/// agent's round has dropped its own (after the first round of tool calls).
fn relaxed_like<'a>(
    asked: &ModelConfiguration,
    fallback: &'a ModelConfiguration,
) -> Cow<'a, ModelConfiguration> {
    let choice = format::schema::TOOL_CHOICE.name;
    if asked.parameters.contains_key(choice) || !fallback.parameters.contains_key(choice) {
        return Cow::Borrowed(fallback);
    }
    let mut m = fallback.clone();
    m.parameters.remove(choice);
    Cow::Owned(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_limits_server_failures_time_outs_and_refused_connections_fall_back() {
        let status = |s| Error::provider("p: failed").with_upstream_status(s);
        assert!(falls_back(&status(429)));
        assert!(falls_back(&status(500)));
        assert!(falls_back(&status(529)));
        assert!(falls_back(&Error::new(ErrorKind::Timeout, "slow")));
        assert!(falls_back(
            &Error::provider("p: cannot connect").unreachable()
        ));
        assert!(!falls_back(&status(400)));
        assert!(!falls_back(&status(401)));
        assert!(!falls_back(&Error::provider("the stream broke")));
        assert!(!falls_back(&Error::invalid_params("bad")));
        assert!(!falls_back(&Error::cancelled()));
    }
}
