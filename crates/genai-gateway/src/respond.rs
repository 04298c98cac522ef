//! The HTTP answer of a gateway turn, whatever API it came in: the request's tries
//! (`tries.rs`) run whole (one JSON body) or streamed (server-sent events as the model
//! streams), each API's own [`Shape`] writing the bodies. A streamed try that fails before its
//! first piece is another try or an error answer with its status, not a stream.
//!
//! It hands each turn's reply to its caller's row ([`Caller`]): a stream's row is recorded
//! when the stream ends, or as cancelled when the client drops it.
//!
//! It owns this plumbing only. It must never read a request's body nor write an API's JSON
//! (the API's files do), and never hold a piece back: each event goes out as it comes.

use crate::HttpResponse;
use bytes::Bytes;
use futures::StreamExt;

use std::time::Instant;

use super::tries::{Tries, Try};
use super::turn::{self, Piece, Served};
use super::{sse, Api, ApiError, Caller};
use genai_core::error::Error;
use genai_core::format::{self, ModelReply};

/// How one API writes a turn's answer.
pub(crate) trait Shape: Send + 'static {
    /// The whole answer's body, its JSON written.
    fn whole(&self, reply: &ModelReply) -> Bytes;
    /// The first events of a stream.
    fn start(&mut self) -> Vec<Bytes>;
    /// The events of one piece; `Piece::Done` is the last.
    fn piece(&mut self, piece: Piece) -> Vec<Bytes>;
}

/// Runs the request's tries and answers the first that succeeds in `shape`, streamed or
/// whole; the reply's usage goes to the `caller`'s row (a stream records it when it ends or is
/// dropped). A try that fails before any of its answer went out hands the request to the next
/// one, when [`Tries::failed`] says so.
pub(crate) async fn run(
    mut tries: Tries,
    stream: bool,
    api: Api,
    mut shape: impl Shape,
    caller: &mut Caller,
) -> HttpResponse {
    loop {
        let Try { turn, lease } = match tries.next(caller) {
            Ok(t) => t,
            Err(e) => return e.response_in(api),
        };
        let deployment = lease.as_ref().map(|l| l.deployment().to_string());
        if !stream {
            match turn::whole(turn).await {
                Ok((r, served)) => {
                    if let Some(l) = &lease {
                        l.answering(Instant::now());
                    }
                    let body = shape.whole(&r);
                    caller.served(&served);
                    caller.whole(&r, &body);
                    let mut answer = super::json_bytes_response(http::StatusCode::OK, body);
                    say_served(&mut answer, &served, deployment.as_deref());
                    return answer;
                }
                Err(e) => match tries.failed(lease, e) {
                    None => continue,
                    Some(e) => return ApiError::of(&e, None).response_in(api),
                },
            }
        }
        let (answering, pieces) = turn::streamed(turn);
        let mut pieces = Box::pin(pieces);
        // The status is decided by the first piece: a turn that fails before any text is an
        // error answer (or a try on another deployment), not a stream of one error event.
        let first = match pieces.next().await {
            Some(Piece::Done(Err(e))) => match tries.failed(lease, e) {
                None => continue,
                Some(e) => return ApiError::of(&e, None).response_in(api),
            },
            Some(p) => p,
            None => return ApiError::of(&Error::internal("the turn ended"), None).response_in(api),
        };
        if let Some(l) = &lease {
            l.answering(Instant::now());
        }
        let head = shape.start();
        // Who answers is known once the first piece came (a fallback is tried only before).
        let served = answering.served();
        caller.served(&served);
        let mut tally = caller.stream();
        let rest = futures::stream::once(async { first })
            .chain(pieces)
            .then(move |p| {
                // The deployment counts this request in flight until its stream ends.
                let _lease = &lease;
                let mut stored = None;
                if let Piece::Done(result) = &p {
                    let kept = match result {
                        Ok(reply) if tally.keeps_bodies() => Some(shape.whole(reply)),
                        _ => None,
                    };
                    stored = tally.done(result, kept);
                }
                let pieces = shape.piece(p);
                // The stream's end waits for its row on the shared store.
                async move {
                    if let Some(stored) = stored {
                        let _ = stored.await;
                    }
                    futures::stream::iter(pieces)
                }
            })
            .flatten();
        let mut answer = sse::response(futures::stream::iter(head).chain(rest));
        say_served(&mut answer, &served, deployment.as_deref());
        return answer;
    }
}

/// The header naming the model that answered (`x-genai-served-by: PROVIDER:MODEL`), the
/// fallback agent when one answered for the agent asked for (`x-genai-fallback: AGENT`), and
/// the deployment of the name asked for that answered (`x-genai-deployment: AGENT` or
/// `PROVIDER:MODEL`).
fn say_served(answer: &mut HttpResponse, served: &Served, deployment: Option<&str>) {
    let headers = answer.headers_mut();
    if let Ok(v) = http::HeaderValue::from_str(&served.model) {
        headers.insert("x-genai-served-by", v);
    }
    for (name, value) in [
        ("x-genai-fallback", served.fallback.as_deref()),
        ("x-genai-deployment", deployment),
    ] {
        if let Some(v) = value.and_then(|v| http::HeaderValue::from_str(v).ok()) {
            headers.insert(name, v);
        }
    }
}

/// How a reply ended, whatever the provider's words for it; each API says it in its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finish {
    /// It ended on its own.
    Stop,
    /// At one of the request's stop sequences (where the provider tells it apart).
    StopSequence,
    /// At its token limit.
    Length,
    /// With tool calls for the client to run.
    ToolCalls,
    /// Refused or filtered by the provider.
    Filtered,
}

impl Finish {
    pub(crate) fn of(reply: &ModelReply) -> Finish {
        if reply.message.has_tool_calls() {
            return Finish::ToolCalls;
        }
        match reply.finish_reason.as_deref() {
            Some(r) if format::at_token_limit(r) => Finish::Length,
            Some("stop_sequence") => Finish::StopSequence,
            Some("content_filter" | "SAFETY" | "RECITATION" | "PROHIBITED_CONTENT" | "refusal") => {
                Finish::Filtered
            }
            _ => Finish::Stop,
        }
    }
}

/// The reply's answer as text (a `Json` part as its JSON text).
pub(crate) fn reply_text(reply: &ModelReply) -> String {
    let mut out = String::new();
    for p in &reply.message.content {
        match p {
            genai_core::message::Part::Text { text } => out.push_str(text),
            genai_core::message::Part::Json { value } => out.push_str(&value.to_string()),
            _ => {}
        }
    }
    out
}
