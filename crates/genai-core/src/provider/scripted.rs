//! A test-only service provider that answers from a script, in-process, in the `openai-chat`
//! wire format (complete bodies, stream events, failures, answers that never come), so the
//! agent, the session and the front-ends run real turns with no socket. It records every
//! request. It must never be compiled outside tests.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use serde_json::{json, Value};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::{ProviderResponse, ServiceProvider};
use crate::error::{Error, Result};
use crate::format::{ModelRequest, StreamEvent};

/// One answer of the script.
pub enum Answer {
    /// A complete response body.
    Body(Value),
    /// The events of a streamed response.
    Events(Vec<StreamEvent>),
    /// The provider fails with this message.
    Fail(&'static str),
    /// The provider is unavailable (an HTTP 503): a failure fallbacks are tried after.
    Unavailable,
    /// The turn's token is cancelled, and the answer never comes.
    CancelAndHang(CancellationToken),
    /// The answer never comes (until the request is dropped).
    Hang,
}

/// A provider that answers each request with the next answer of its script.
pub struct ScriptedProvider {
    script: Mutex<VecDeque<Answer>>,
    requests: Mutex<Vec<ModelRequest>>,
    native_tools: bool,
    /// Notified at every request.
    pub asked: Notify,
}

impl ScriptedProvider {
    pub fn new(script: Vec<Answer>) -> Arc<ScriptedProvider> {
        ScriptedProvider::with(script, true)
    }

    /// A provider that, like the local engine, ignores the format's native tools.
    #[cfg(test)]
    pub(crate) fn without_native_tools(script: Vec<Answer>) -> Arc<ScriptedProvider> {
        ScriptedProvider::with(script, false)
    }

    fn with(script: Vec<Answer>, native_tools: bool) -> Arc<ScriptedProvider> {
        Arc::new(ScriptedProvider {
            script: Mutex::new(script.into()),
            requests: Mutex::new(Vec::new()),
            native_tools,
            asked: Notify::new(),
        })
    }

    /// The bodies of the requests sent so far.
    pub(crate) fn bodies(&self) -> Vec<Value> {
        let requests = self.requests.lock().expect("requests lock");
        requests.iter().map(|r| r.body().clone()).collect()
    }

    /// The messages of the `n`th request, as `role: text` lines.
    pub fn messages_of(&self, n: usize) -> Vec<String> {
        self.bodies()[n]["messages"]
            .as_array()
            .expect("an openai-chat body")
            .iter()
            .map(|m| {
                let text = match &m["content"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                format!("{}: {text}", m["role"].as_str().unwrap_or(""))
            })
            .collect()
    }
}

#[async_trait]
impl ServiceProvider for ScriptedProvider {
    fn kind(&self) -> &'static str {
        "scripted"
    }

    fn name(&self) -> &str {
        "scripted"
    }

    fn default_model(&self) -> Option<&str> {
        Some("m")
    }

    fn native_tools(&self) -> bool {
        self.native_tools
    }

    async fn send_request(&self, request: &ModelRequest) -> Result<ProviderResponse> {
        self.requests
            .lock()
            .expect("requests lock")
            .push(request.clone());
        self.asked.notify_waiters();
        let next = self.script.lock().expect("script lock").pop_front();
        match next {
            Some(Answer::Body(body)) => {
                Ok(ProviderResponse::Complete(Bytes::from(body.to_string())))
            }
            Some(Answer::Events(events)) => Ok(ProviderResponse::Events(Box::pin(
                futures::stream::iter(events.into_iter().map(Ok)),
            ))),
            Some(Answer::Fail(why)) => Err(Error::provider(why)),
            Some(Answer::Unavailable) => {
                Err(Error::provider("scripted: HTTP 503 Service Unavailable")
                    .with_upstream_status(503))
            }
            Some(Answer::CancelAndHang(token)) => {
                token.cancel();
                futures::future::pending().await
            }
            Some(Answer::Hang) => futures::future::pending().await,
            None => Err(Error::provider("the script has no answer left")),
        }
    }
}

/// An `openai-chat` completion with this text.
pub fn text_body(text: &str) -> Answer {
    Answer::Body(json!({
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1}
    }))
}

/// An `openai-chat` completion with these tool calls (id, name, arguments).
pub fn calls_body(calls: &[(&str, &str, Value)]) -> Answer {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| {
            json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}})
        })
        .collect();
    Answer::Body(json!({
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": calls}, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1}
    }))
}

/// An `openai-chat` stream of these text pieces, complete unless `cut`.
pub fn text_stream(pieces: &[&str], cut: bool) -> Answer {
    let mut events: Vec<StreamEvent> = pieces
        .iter()
        .map(|p| {
            StreamEvent::data(
                json!({"model": "m", "choices": [{"index": 0, "delta": {"content": p}}]})
                    .to_string(),
            )
        })
        .collect();
    if !cut {
        events.push(StreamEvent::data(
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}).to_string(),
        ));
        events.push(StreamEvent::data("[DONE]"));
    }
    Answer::Events(events)
}
