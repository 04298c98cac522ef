//! The tries of one gateway request. A request naming one model has one try. A request naming
//! a `[serve.models]` entry with deployments has a try on the deployment its router chooses,
//! then, when that one failed before answering (it refused the connection, answered 429 or
//! 5xx, or did not answer in time: the core's `falls_back`, as for an agent's fallbacks), one
//! on another, until one answers, the entry's `retries` are spent, its `deadline` has passed
//! or no deployment is left. A failure that is the request's own (a 400) is answered at once.
//!
//! It owns that sequence and each try's agent. It must never try again once a piece of an
//! answer went to the client (the answer's plumbing asks for a next try only before), and never
//! let a provider retry on its own while another deployment could take the try.

use std::sync::Arc;
use std::time::Instant;

use super::routing::{Lease, NoDeployment, Router};
use super::settings::{self, Setting};
use super::turn::Turn;
use super::{ApiError, Caller};
use genai_core::agent::falls_back;
use genai_core::error::Error;
use genai_core::format::{ResponseSchema, ToolSpec};
use genai_core::message::Message;
use genai_core::select::ModelChoice;
use genai_core::session::Framework;

/// What every try of a routed request sends.
pub(crate) struct Request {
    pub(crate) messages: Vec<Message>,
    pub(crate) tools: Vec<ToolSpec>,
    pub(crate) schema: Option<ResponseSchema>,
    pub(crate) settings: Vec<Setting>,
}

/// One try: its turn, and its hold on the deployment it runs on (none for a request that
/// names one model).
pub(crate) struct Try {
    pub(crate) turn: Turn,
    pub(crate) lease: Option<Lease>,
}

/// The tries of one request. A request naming one model is the common case: its turn is
/// kept in place (boxing it would add an allocation to every request), the routed one boxed.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Tries {
    /// The one try of a request naming one model, until it is taken.
    One(Option<Turn>),
    Routed(Box<Routed>),
}

/// The tries of a request on a router's deployments.
pub(crate) struct Routed {
    fw: Arc<Framework>,
    router: Arc<Router>,
    request: Request,
    /// Which deployments were tried.
    tried: Vec<bool>,
    came: Instant,
    /// The last failure, answered when no other try follows.
    last: Option<Error>,
}

impl Tries {
    pub(crate) fn routed(fw: Arc<Framework>, router: Arc<Router>, request: Request) -> Tries {
        Tries::Routed(Box::new(Routed {
            tried: vec![false; router.deployments.len()],
            fw,
            router,
            request,
            came: Instant::now(),
            last: None,
        }))
    }

    /// The next try, or the answer when there is none.
    pub(crate) fn next(&mut self, caller: &mut Caller) -> Result<Try, ApiError> {
        let r = match self {
            Tries::One(turn) => {
                return turn
                    .take()
                    .map(|turn| Try { turn, lease: None })
                    .ok_or_else(|| ApiError::of(&Error::internal("the request was tried"), None))
            }
            Tries::Routed(r) => r,
        };
        let lease = match r.router.choose(&r.tried, Instant::now(), fastrand::f64()) {
            Ok(lease) => lease,
            Err(none) => return Err(r.none_left(none)),
        };
        r.tried[lease.index] = true;
        let mut model =
            r.fw.request_model(&ModelChoice::Named(lease.deployment().to_string()))
                .map_err(|e| ApiError::of(&e, Some("model")))?;
        caller.chose(&model);
        settings::apply(&mut model, r.request.settings.clone())?;
        let agent =
            r.fw.request_agent(model)
                .map_err(|e| ApiError::of(&e, Some("model")))?;
        let turn = Turn {
            agent,
            messages: r.request.messages.clone(),
            tools: r.request.tools.clone(),
            schema: r.request.schema.clone(),
            fails_over: r.may_try_again(),
        };
        Ok(Try {
            turn,
            lease: Some(lease),
        })
    }

    /// A try failed with `e` before any of its answer went out. `None`: the request is to be
    /// tried again ([`Tries::next`]); else the error to answer.
    pub(crate) fn failed(&mut self, lease: Option<Lease>, e: Error) -> Option<Error> {
        let (Tries::Routed(r), Some(lease)) = (self, lease) else {
            return Some(e);
        };
        if !falls_back(&e) {
            return Some(e);
        }
        lease.failed(&e, Instant::now());
        let again = r.may_try_again();
        r.last = Some(e);
        drop(lease);
        match again {
            true => None,
            false => Some(r.failure()),
        }
    }
}

impl Routed {
    /// Whether another try may follow this one: retries are left, the deadline has not
    /// passed, and a deployment was not tried yet.
    fn may_try_again(&self) -> bool {
        let tries = self.tried.iter().filter(|t| **t).count();
        tries <= self.router.retries
            && self.came.elapsed() < self.router.deadline
            && self.tried.iter().any(|t| !*t)
    }

    /// The last failure, saying which deployments were tried.
    fn failure(&mut self) -> Error {
        let tried: Vec<&str> = (self.router.deployments.iter().zip(&self.tried))
            .filter(|(_, t)| **t)
            .map(|(d, _)| d.name.as_str())
            .collect();
        let e = self
            .last
            .take()
            .unwrap_or_else(|| Error::provider("no deployment answered"));
        let name = &self.router.name;
        e.reworded(|m| {
            format!(
                "{m} (model `{name}`: deployments tried: {})",
                tried.join(", ")
            )
        })
    }

    /// The answer when no deployment can take the next try.
    fn none_left(&mut self, none: NoDeployment) -> ApiError {
        match none {
            NoDeployment::Cooling(_) | NoDeployment::AllTried if self.last.is_some() => {
                ApiError::of(&self.failure(), None)
            }
            NoDeployment::Cooling(wait) => {
                let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
                ApiError {
                    code: Some("deployments_cooling_down"),
                    retry_after: Some(secs.max(1)),
                    ..ApiError::new(
                        http::StatusCode::SERVICE_UNAVAILABLE,
                        "upstream_error",
                        format!(
                            "model `{}`: every deployment failed lately and is left out for a while; the first is back in {} s (retry then)",
                            self.router.name,
                            secs.max(1)
                        ),
                    )
                }
            }
            NoDeployment::AllTried => ApiError::of(&self.failure(), None),
        }
    }
}
