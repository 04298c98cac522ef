//! The one way a turn goes through the gateway, whatever API it came in: the API's type reads
//! the body into the core's terms ([`Asked`]), access control chooses the model the caller
//! may use, the request's settings are set on that model as a value, one turn runs on it, and
//! the API's [`Shape`] writes the answer, whole or streamed, while the caller's row is
//! accounted ([`Caller`]).
//!
//! It owns that order. It must never know an API's fields (each [`VendorApi`] reads its own)
//! nor write an answer's JSON.

use std::sync::Arc;

use crate::HttpResponse;

use super::respond::{self, Shape};
use super::settings::{self, Setting};
use super::turn::Turn;
use super::{access, Api, ApiError, Caller};
use genai_core::agent::AIAgent;
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
    let agent = match agent(fw, caller, &asked.model, asked.settings) {
        Ok(a) => a,
        Err(e) => return e.response_in(A::ERRORS),
    };
    let turn = Turn {
        agent,
        messages: asked.messages,
        tools: asked.tools,
        schema: asked.schema,
    };
    let mut answer = respond::run(turn, asked.stream, A::ERRORS, asked.shape, caller).await;
    for (name, value) in asked.headers {
        if let Ok(v) = http::HeaderValue::from_str(&value) {
            answer.headers_mut().insert(name, v);
        }
    }
    answer
}

/// The agent of a request asking for `model`: chosen by access control, `settings` set on the
/// model as a value, then made.
fn agent(
    fw: &Arc<Framework>,
    caller: &mut Caller,
    model: &str,
    settings: Vec<Setting>,
) -> Result<AIAgent, ApiError> {
    let mut model = access::choose(fw, caller, model)?;
    settings::apply(&mut model, settings)?;
    fw.request_agent(model)
        .map_err(|e| ApiError::of(&e, Some("model")))
}
