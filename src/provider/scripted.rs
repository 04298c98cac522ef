//! A test-only service provider that answers from a script, in-process, in the `openai-chat`
//! wire format (the events a real server streams), so the agent, the session and the
//! front-ends can be tested fast without a socket. It records every request it gets. Never
//! built into the product.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::sync::Notify;

use super::{ProviderResponse, ServiceProvider, StreamEvent};
use crate::error::{Error, Result};
use crate::model::ModelRequest;

/// One answer of the script.
pub enum Step {
    /// A reply streamed in these pieces.
    Reply(Vec<&'static str>),
    /// The provider fails with this error.
    Fail(Error),
    /// The provider never answers (until the request is dropped).
    Hang,
}

/// The scripted provider; `requests` has the body of every request, in order.
#[derive(Default)]
pub struct Scripted {
    script: Mutex<VecDeque<Step>>,
    pub requests: Mutex<Vec<Value>>,
    /// Notified at every request.
    pub asked: Notify,
}

impl Scripted {
    pub fn new(steps: Vec<Step>) -> Arc<Scripted> {
        Arc::new(Scripted {
            script: Mutex::new(steps.into()),
            ..Default::default()
        })
    }

    /// The messages of the `n`th request, as `role: text` lines.
    pub fn messages_of(&self, n: usize) -> Vec<String> {
        let requests = self.requests.lock().unwrap();
        requests[n]["messages"]
            .as_array()
            .unwrap()
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

/// The streamed events of a reply in these pieces, as an OpenAI-compatible server sends them.
fn events(pieces: &[&str]) -> Vec<Result<StreamEvent>> {
    let chunk = |delta: Value, finish: Value| {
        Ok(StreamEvent::data(
            json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}).to_string(),
        ))
    };
    let mut out: Vec<_> = pieces
        .iter()
        .map(|p| chunk(json!({"content": p}), Value::Null))
        .collect();
    out.push(chunk(json!({}), json!("stop")));
    out.push(Ok(StreamEvent::data("[DONE]")));
    out
}

#[async_trait]
impl ServiceProvider for Scripted {
    fn kind(&self) -> &'static str {
        "openai"
    }

    fn name(&self) -> &str {
        "scripted"
    }

    fn default_model(&self) -> Option<&str> {
        Some("scripted-model")
    }

    async fn send_request(&self, request: &ModelRequest) -> Result<ProviderResponse> {
        self.requests.lock().unwrap().push(request.body.clone());
        self.asked.notify_waiters();
        let step = self.script.lock().unwrap().pop_front();
        match step {
            Some(Step::Reply(pieces)) if request.stream => Ok(ProviderResponse::Events(
                futures::stream::iter(events(&pieces)).boxed(),
            )),
            Some(Step::Reply(pieces)) => {
                let body = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": pieces.concat()}, "finish_reason": "stop"}]});
                Ok(ProviderResponse::Complete(body.to_string().into()))
            }
            Some(Step::Fail(e)) => Err(e),
            Some(Step::Hang) => futures::future::pending().await,
            None => Err(Error::provider("the script has no more answers")),
        }
    }
}
