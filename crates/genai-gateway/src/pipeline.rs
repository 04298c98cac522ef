//! The one way a turn goes through the gateway, whatever API it came in: the API's type reads
//! the body into the core's terms ([`Asked`]), access control chooses the model the caller
//! may use (or the deployments of its name: `tries.rs`), the request's settings are set on
//! that model as a value, one turn runs on it (or a try on each deployment in turn), and
//! the API's [`Shape`] writes the answer, whole or streamed, while the caller's row is
//! accounted ([`Caller`]). The turn runs in its span (`invoke_agent MODEL`).
//!
//! It owns that order. It must never know an API's fields (each [`VendorApi`] reads its own)
//! nor write an answer's JSON.

use std::sync::Arc;

use tracing::Instrument;

use crate::HttpResponse;

use super::access::{self, Chosen};
use super::respond::{self, Shape};
use super::settings::{self, Setting};
use super::tries::{Request, Tries};
use super::turn::Turn;
use super::{Api, ApiError, Caller};
use genai_core::format::{ResponseSchema, ToolSpec};
use genai_core::message::Message;
use genai_core::session::Framework;

/// One vendor's API on the gateway: the route it answers and how it reads a request.
pub(crate) trait VendorApi {
    /// The route, `POST` only.
    const PATH: &'static str;
    /// The shape of its errors.
    const ERRORS: Api;
    /// How it writes an answer.
    type Shape: Shape;
    /// The request of a body, in the core's terms, or the refusal naming the field.
    fn read(body: &[u8]) -> Result<Asked<Self::Shape>, ApiError>;
}

/// What one request asks, read by its API.
pub(crate) struct Asked<S> {
    /// The model asked for: an agent, `PROVIDER:MODEL` or an alias of `[serve.models]`.
    pub(crate) model: String,
    /// The history, system message first when there is one.
    pub(crate) messages: Vec<Message>,
    /// The client's tools, offered as the format's native tools.
    pub(crate) tools: Vec<ToolSpec>,
    pub(crate) schema: Option<ResponseSchema>,
    /// What it asks of the model's configuration.
    pub(crate) settings: Vec<Setting>,
    pub(crate) stream: bool,
    /// How the answer is written.
    pub(crate) shape: S,
    /// Headers the answer carries besides the served model's.
    pub(crate) headers: Vec<(&'static str, String)>,
}

/// The answer to one request body of `A`.
pub(crate) async fn run<A: VendorApi>(
    body: &[u8],
    fw: &Arc<Framework>,
    caller: &mut Caller,
) -> HttpResponse {
    let asked = match A::read(body) {
        Ok(a) => a,
        Err(e) => return e.response_in(A::ERRORS),
    };
    let Asked {
        model,
        messages,
        tools,
        schema,
        settings,
        stream,
        shape,
        headers,
    } = asked;
    let request = Request {
        messages,
        tools,
        schema,
        settings,
    };
    let tries = match tries(fw, caller, &model, request) {
        Ok(t) => t,
        Err(e) => return e.response_in(A::ERRORS),
    };
    // The turn's span: each try's model request (`chat`) is its child.
    let span = genai_core::telemetry::spans::turn(None, None, &model);
    let mut answer = respond::run(tries, stream, A::ERRORS, shape, caller)
        .instrument(span)
        .await;
    for (name, value) in headers {
        if let Ok(v) = http::HeaderValue::from_str(&value) {
            answer.headers_mut().insert(name, v);
        }
    }
    answer
}

/// The tries of a request: its one model, chosen by access control with the request's
/// settings set on it as a value and its agent made; or the deployments of its name, each
/// try's model made so when its deployment is chosen.
fn tries(
    fw: &Arc<Framework>,
    caller: &mut Caller,
    model: &str,
    request: Request,
) -> Result<Tries, ApiError> {
    let mut model = match access::choose(fw, caller, model)? {
        Chosen::Model(m) => m,
        Chosen::Deployments(router) => return Ok(Tries::routed(fw.clone(), router, request)),
    };
    settings::apply(&mut model, request.settings)?;
    let agent = fw
        .request_agent(model)
        .map_err(|e| ApiError::of(&e, Some("model")))?;
    Ok(Tries::One(Some(Turn {
        agent,
        messages: request.messages,
        tools: request.tools,
        schema: request.schema,
        fails_over: false,
    })))
}
