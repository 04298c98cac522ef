//! Test-only helpers for middleware: building one from JSON settings, a model's capabilities,
//! running one, and fake helper agents that record what they were asked. Never compiled
//! outside tests.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::Value;

use super::{BuildContext, Capabilities, Helpers, Middleware, Request, TextCache, KINDS};
use crate::error::Result;
use crate::format::ImageSupport;
use crate::message::Message;

/// Helper agents that answer every prompt with one text and remember each (agent, prompt).
pub(crate) struct FakeHelpers {
    answer: String,
    asked: Mutex<Vec<(String, Vec<Message>)>>,
}

impl FakeHelpers {
    pub(crate) fn answering(answer: &str) -> Arc<FakeHelpers> {
        Arc::new(FakeHelpers {
            answer: answer.to_string(),
            asked: Mutex::new(Vec::new()),
        })
    }

    pub(crate) fn asked(&self) -> Vec<(String, Vec<Message>)> {
        self.asked.lock().unwrap().clone()
    }
}

#[async_trait]
impl Helpers for FakeHelpers {
    async fn ask_agent(&self, agent: &str, prompt: Vec<Message>) -> Result<String> {
        self.asked.lock().unwrap().push((agent.to_string(), prompt));
        Ok(self.answer.clone())
    }
}

/// A model that takes every image, with no parameter set.
pub(crate) fn caps() -> Capabilities {
    Capabilities {
        format: "openai-chat",
        model: "m".into(),
        images: ImageSupport::ALL,
        parameters: Default::default(),
    }
}

/// Builds a middleware of `settings` (with its `kind`) named `name`: the error of bad settings.
pub(crate) fn try_build(
    name: &str,
    settings: Value,
) -> std::result::Result<(), crate::error::Error> {
    try_build_with(name, settings, FakeHelpers::answering("")).map(|_| ())
}

fn try_build_with(
    name: &str,
    settings: Value,
    helpers: Arc<FakeHelpers>,
) -> Result<Arc<dyn Middleware>> {
    let settings = settings.as_object().cloned().unwrap_or_default();
    let kind = settings["kind"].as_str().unwrap_or_default().to_string();
    let row = KINDS.iter().find(|k| k.name == kind).expect("a known kind");
    (row.build)(&BuildContext {
        name,
        settings: &settings,
        helpers,
        cache: Arc::new(TextCache::default()),
    })
}

pub(crate) fn build(name: &str, settings: Value) -> Arc<dyn Middleware> {
    build_with(name, settings, FakeHelpers::answering(""))
}

pub(crate) fn build_with(
    name: &str,
    settings: Value,
    helpers: Arc<FakeHelpers>,
) -> Arc<dyn Middleware> {
    match try_build_with(name, settings, helpers) {
        Ok(m) => m,
        Err(e) => panic!("invalid settings: {e}"),
    }
}

/// Runs one middleware on `messages`: what it sends and its notes.
pub(crate) async fn run(
    m: &Arc<dyn Middleware>,
    messages: Vec<Message>,
    model: &Capabilities,
) -> Result<(Vec<Message>, Vec<String>)> {
    let mut notes = Vec::new();
    let request = Request {
        messages,
        model,
        notes: &mut notes,
    };
    let sent = m.on_request(request).await?;
    Ok((sent, notes))
}
