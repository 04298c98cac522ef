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
use genai_core::format::{ResponseSchema, ToolSpec};
use genai_core::message::Message;
use genai_core::session::Framework;

/// One vendor's API on the gateway: the route it answers and how it reads a request.
pub trait VendorApi {
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
pub struct Asked<S> {
    /// The model asked for: an agent, `PROVIDER:MODEL` or an alias of `[serve.models]`.
    pub model: String,
    /// The history, system message first when there is one.
    pub messages: Vec<Message>,
    /// The client's tools, offered as the format's native tools.
    pub tools: Vec<ToolSpec>,
    pub schema: Option<ResponseSchema>,
    /// What it asks of the model's configuration.
    pub settings: Vec<Setting>,
    pub stream: bool,
    /// How the answer is written.
    pub shape: S,
    /// Headers the answer carries besides the served model's.
    pub headers: Vec<(&'static str, String)>,
}

/// The answer to one request body of `A`.
pub async fn run<A: VendorApi>(
    body: &[u8],
    fw: &Arc<Framework>,
    caller: &mut Caller,
) -> HttpResponse {
    let (turn, rest) = match prepare::<A>(body, fw, caller) {
        Ok(t) => t,
        Err(e) => return e.response_in(A::ERRORS),
    };
    let mut answer = respond::run(turn, rest.stream, A::ERRORS, rest.shape, caller).await;
    for (name, value) in rest.headers {
        if let Ok(v) = http::HeaderValue::from_str(&value) {
            answer.headers_mut().insert(name, v);
        }
    }
    answer
}

/// What `run` needs besides the turn.
struct Rest<S> {
    stream: bool,
    shape: S,
    headers: Vec<(&'static str, String)>,
}

/// The request read, its model chosen and set, its turn ready.
fn prepare<A: VendorApi>(
    body: &[u8],
    fw: &Arc<Framework>,
    caller: &mut Caller,
) -> Result<(Turn, Rest<A::Shape>), ApiError> {
    let asked = A::read(body)?;
    let mut model = access::choose(fw, caller, &asked.model)?;
    settings::apply(&mut model, asked.settings)?;
    let agent = fw
        .request_agent(model)
        .map_err(|e| ApiError::of(&e, Some("model")))?;
    let turn = Turn {
        agent,
        messages: asked.messages,
        tools: asked.tools,
        schema: asked.schema,
    };
    let rest = Rest {
        stream: asked.stream,
        shape: asked.shape,
        headers: asked.headers,
    };
    Ok((turn, rest))
}
