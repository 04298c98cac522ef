//! The middleware chain: transformations of the messages an agent sends, run in order on every
//! request (every round of a tool loop included), each seeing the messages about to be sent
//! (history included) and the model's capabilities. Built-in kinds are rows of [`KINDS`]
//! (`describe-images`, `redact`, `fit-context`); a client may host one (`hosted`).
//!
//! This module owns the [`Middleware`] trait, the [`Chain`] and the building of a chain from
//! the config. A middleware must never change the stored history (it gets a copy and returns
//! what is sent), never talk to a client except through a port it was given, and never report
//! a secret it removed (its notes say what it did, never what it saw).

pub mod describe_images;
pub mod fit_context;
pub mod hosted;
pub mod redact;

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::config::MiddlewareConfig;
use crate::error::{Error, ErrorKind, Result};
use crate::format::{ImageSupport, ModelReply};
use crate::message::Message;

/// What a middleware knows of the model a request goes to.
#[derive(Debug, Clone)]
pub struct Capabilities {
    pub format: &'static str,
    pub model: String,
    /// The image parts the format carries with its parameters.
    pub images: ImageSupport,
    /// The provider's limit on one inline image, if any.
    pub max_image_bytes: Option<usize>,
    /// The model configuration's parameters (a context size or a reply limit may be there).
    pub parameters: Map<String, Value>,
}

/// What other agents a middleware may ask (describe an image, summarise turns): the session
/// implements it; a middleware only names the agent.
#[async_trait]
pub trait Helpers: Send + Sync {
    /// Sends `prompt` to a fresh agent of the config named `agent` (no history, nothing
    /// stored) and returns its reply's text.
    async fn ask_agent(&self, agent: &str, prompt: Vec<Message>) -> Result<String>;
}

/// One middleware of a chain.
#[async_trait]
pub trait Middleware: Send + Sync {
    /// Its name in the config (`[middleware.NAME]`) or as a client registered it.
    fn name(&self) -> &str;
    /// Its kind (`redact`, ...; `client` for a client-hosted one).
    fn kind(&self) -> &str;
    /// The messages to send instead of `messages`; what it did goes in `notes` (counts and
    /// actions, never the content it removed).
    async fn on_request(
        &self,
        messages: Vec<Message>,
        model: &Capabilities,
        notes: &mut Vec<String>,
    ) -> Result<Vec<Message>>;
    /// Sees the model's reply before it is stored and shown whole (by default, leaves it).
    async fn on_reply(&self, _reply: &mut ModelReply, _notes: &mut Vec<String>) -> Result<()> {
        Ok(())
    }
}

/// The middleware of one agent, in order.
#[derive(Clone, Default)]
pub struct Chain {
    items: Vec<Arc<dyn Middleware>>,
}

impl Chain {
    pub fn new(items: Vec<Arc<dyn Middleware>>) -> Chain {
        Chain { items }
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The names in order.
    pub fn names(&self) -> Vec<String> {
        self.items.iter().map(|m| m.name().to_string()).collect()
    }

    /// Runs every middleware in order on the messages of one request. A failure names the
    /// middleware and stops the request.
    pub async fn on_request(
        &self,
        mut messages: Vec<Message>,
        model: &Capabilities,
        notes: &mut Vec<String>,
    ) -> Result<Vec<Message>> {
        for m in &self.items {
            messages = m
                .on_request(messages, model, notes)
                .await
                .map_err(|e| failed(m.as_ref(), e))?;
        }
        Ok(messages)
    }

    /// Runs every middleware in order on a reply.
    pub async fn on_reply(&self, reply: &mut ModelReply, notes: &mut Vec<String>) -> Result<()> {
        for m in &self.items {
            m.on_reply(reply, notes)
                .await
                .map_err(|e| failed(m.as_ref(), e))?;
        }
        Ok(())
    }
}

/// A middleware's error, naming it.
fn failed(m: &dyn Middleware, e: Error) -> Error {
    Error::new(
        e.kind,
        format!("middleware {} ({}): {}", m.name(), m.kind(), e.message),
    )
}

/// What building a built-in middleware gets: its name, settings, and the helpers and caches
/// the session shares.
pub struct BuildContext<'a> {
    pub name: &'a str,
    pub settings: &'a Map<String, Value>,
    pub helpers: Arc<dyn Helpers>,
    pub cache: Arc<TextCache>,
}

/// Texts other agents wrote (image descriptions, summaries) by a hash of what they were asked,
/// shared by every chain of one core, so a replayed history does not ask again.
#[derive(Default)]
pub struct TextCache {
    texts: std::sync::Mutex<std::collections::HashMap<String, String>>,
}

impl TextCache {
    /// The key of some bytes: their SHA-256, in hex, after a label.
    pub fn key(label: &str, bytes: &[u8]) -> String {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(bytes);
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        format!("{label}:{hex}")
    }

    pub fn get(&self, key: &str) -> Option<String> {
        self.texts.lock().ok()?.get(key).cloned()
    }

    pub fn put(&self, key: String, text: String) {
        if let Ok(mut t) = self.texts.lock() {
            t.insert(key, text);
        }
    }
}

/// A built-in middleware kind: a row of the kinds table.
pub struct Kind {
    pub name: &'static str,
    pub description: &'static str,
    pub build: fn(&BuildContext<'_>) -> Result<Arc<dyn Middleware>>,
}

/// Every built-in kind.
pub const KINDS: &[Kind] = &[describe_images::KIND, redact::KIND, fit_context::KIND];

/// Builds the named middleware of the config (`[middleware.NAME]`); `hosted` finds the ones
/// clients registered. An unknown name or kind is an error naming what exists.
pub fn build_chain(
    names: &[String],
    config: &BTreeMap<String, MiddlewareConfig>,
    hosted: &dyn Fn(&str) -> Option<Arc<dyn Middleware>>,
    helpers: Arc<dyn Helpers>,
    cache: Arc<TextCache>,
) -> Result<Chain> {
    let mut items = Vec::with_capacity(names.len());
    for name in names {
        if let Some(c) = config.get(name) {
            let kind = KINDS.iter().find(|k| k.name == c.kind).ok_or_else(|| {
                let known: Vec<&str> = KINDS.iter().map(|k| k.name).collect();
                Error::new(
                    ErrorKind::Config,
                    format!(
                        "[middleware.{name}]: unknown kind `{}`; known: {}",
                        c.kind,
                        known.join(", ")
                    ),
                )
            })?;
            let ctx = BuildContext {
                name,
                settings: &c.settings,
                helpers: helpers.clone(),
                cache: cache.clone(),
            };
            items.push((kind.build)(&ctx)?);
        } else if let Some(m) = hosted(name) {
            items.push(m);
        } else {
            let known: Vec<&str> = config.keys().map(String::as_str).collect();
            return Err(Error::new(
                ErrorKind::UnknownComponent,
                format!(
                    "no middleware named `{name}`: neither [middleware.{name}] in the config ({}) nor one a client registered",
                    if known.is_empty() { "none there".to_string() } else { format!("there: {}", known.join(", ")) }
                ),
            ));
        }
    }
    Ok(Chain::new(items))
}

/// A setting's error, naming the middleware.
pub fn bad_setting(name: &str, why: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Config, format!("[middleware.{name}]: {why}"))
}

/// Refuses settings a kind does not have, naming the ones it has.
pub fn check_settings(name: &str, settings: &Map<String, Value>, known: &[&str]) -> Result<()> {
    match settings.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(bad_setting(
            name,
            format!(
                "unknown setting `{k}`; this kind takes: {}",
                known.join(", ")
            ),
        )),
        None => Ok(()),
    }
}

/// The hint added to a refusal of images the model cannot take.
pub fn image_hint() -> &'static str {
    "; or let the describe-images middleware turn them into text: [middleware.NAME] kind = \"describe-images\" with agent = \"AN_AGENT_THAT_SEES\", listed in the agent's middleware"
}

/// The string setting `key`, if set.
pub fn string_setting(
    name: &str,
    settings: &Map<String, Value>,
    key: &str,
) -> Result<Option<String>> {
    match settings.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(bad_setting(
            name,
            format!("`{key}` must be a string, not {other}"),
        )),
    }
}

/// The non-negative integer setting `key`, if set.
pub fn integer_setting(
    name: &str,
    settings: &Map<String, Value>,
    key: &str,
) -> Result<Option<u64>> {
    match settings.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| bad_setting(name, format!("`{key}` must be a whole number, not {v}"))),
    }
}

#[cfg(test)]
pub(crate) mod testing;
