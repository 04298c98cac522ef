//! The middleware chain: transformations of the messages an agent sends, run in order on every
//! request (every round of a tool loop included), each seeing the messages about to be sent
//! (history included) and the model's capabilities. Built-in kinds are rows of [`KINDS`]
//! (`describe-images`, `redact`, `fit-context`); a client may host one (`hosted`).
//!
//! This module owns the [`Middleware`] trait, the [`Chain`] and the building of a chain from
//! the config. A middleware must never change the stored history (it gets a copy and returns
//! what is sent), never talk to a client except through a port it was given, and never report
//! a secret it removed (its notes say what it did, never what it saw).

pub(crate) mod describe_images;
pub(crate) mod fit_context;
pub(crate) mod hosted;
pub(crate) mod redact;

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
pub(crate) struct Capabilities {
    pub(crate) format: &'static str,
    pub(crate) model: String,
    /// The image parts the format carries with its parameters.
    pub(crate) images: ImageSupport,
    /// The model configuration's parameters (a context size or a reply limit may be there).
    pub(crate) parameters: Map<String, Value>,
}

/// What other agents a middleware may ask (describe an image, summarise turns): the session
/// implements it; a middleware only names the agent.
#[async_trait]
pub(crate) trait Helpers: Send + Sync {
    /// Sends `prompt` to a fresh agent of the config named `agent` (no history, nothing
    /// stored) and returns its reply's text.
    async fn ask_agent(&self, agent: &str, prompt: Vec<Message>) -> Result<String>;
}

/// One request as a middleware sees it.
pub struct Request<'a> {
    /// The messages about to be sent (a copy: the stored history stays as it is).
    pub(crate) messages: Vec<Message>,
    /// The model they go to.
    pub(crate) model: &'a Capabilities,
    /// What the middleware did, one line each (counts and actions, never the content it
    /// removed; the chain names the middleware).
    pub(crate) notes: &'a mut Vec<String>,
}

/// One middleware of a chain.
#[async_trait]
pub(crate) trait Middleware: Send + Sync {
    /// The messages to send instead of the request's.
    async fn on_request(&self, request: Request<'_>) -> Result<Vec<Message>>;
    /// Sees the model's reply before it is stored and shown whole (by default, leaves it).
    async fn on_reply(&self, _reply: &mut ModelReply, _notes: &mut Vec<String>) -> Result<()> {
        Ok(())
    }
}

/// A middleware of a chain with its name (`[middleware.NAME]`, or as a client registered it)
/// and kind (`redact`, ...; `client` for a client-hosted one).
#[derive(Clone)]
pub(crate) struct Link {
    pub(crate) name: String,
    pub(crate) kind: String,
    pub(crate) middleware: Arc<dyn Middleware>,
}

impl Link {
    /// `middleware NAME (KIND): TEXT`, how its notes and errors read.
    fn say(&self, text: &str) -> String {
        format!("middleware {} ({}): {text}", self.name, self.kind)
    }
}

/// The middleware of one agent, in order.
#[derive(Clone, Default)]
pub(crate) struct Chain {
    links: Vec<Link>,
}

impl Chain {
    pub(crate) fn new(links: Vec<Link>) -> Chain {
        Chain { links }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.links.is_empty()
    }

    /// Whether a middleware of this kind is in the chain.
    pub(crate) fn has_kind(&self, kind: &str) -> bool {
        self.links.iter().any(|l| l.kind == kind)
    }

    /// Runs every middleware in order on the messages of one request. Notes and a failure
    /// name the middleware; a failure stops the request.
    pub(crate) async fn on_request(
        &self,
        mut messages: Vec<Message>,
        model: &Capabilities,
        notes: &mut Vec<String>,
    ) -> Result<Vec<Message>> {
        for link in &self.links {
            let mut own = Vec::new();
            let request = Request {
                messages,
                model,
                notes: &mut own,
            };
            let done = link.middleware.on_request(request).await;
            notes.extend(own.iter().map(|n| link.say(n)));
            messages = done.map_err(|e| e.reworded(|m| link.say(m)))?;
        }
        Ok(messages)
    }

    /// Runs every middleware in order on a reply.
    pub(crate) async fn on_reply(
        &self,
        reply: &mut ModelReply,
        notes: &mut Vec<String>,
    ) -> Result<()> {
        for link in &self.links {
            let mut own = Vec::new();
            let done = link.middleware.on_reply(reply, &mut own).await;
            notes.extend(own.iter().map(|n| link.say(&format!("(reply) {n}"))));
            done.map_err(|e| e.reworded(|m| link.say(m)))?;
        }
        Ok(())
    }
}

/// What building a built-in middleware gets: its name, settings, and the helpers and caches
/// the session shares.
pub(crate) struct BuildContext<'a> {
    pub(crate) name: &'a str,
    pub(crate) settings: &'a Map<String, Value>,
    pub(crate) helpers: Arc<dyn Helpers>,
    pub(crate) cache: Arc<TextCache>,
}

/// Texts other agents wrote (image descriptions, summaries) by a hash of what they were asked,
/// shared by every chain of one core, so a replayed history does not ask again.
#[derive(Default)]
pub(crate) struct TextCache {
    texts: std::sync::Mutex<std::collections::HashMap<String, String>>,
}

impl TextCache {
    /// The key of some bytes: their SHA-256, in hex, after a label.
    pub(crate) fn key(label: &str, bytes: &[u8]) -> String {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(bytes);
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        format!("{label}:{hex}")
    }

    pub(crate) fn get(&self, key: &str) -> Option<String> {
        self.texts.lock().ok()?.get(key).cloned()
    }

    pub(crate) fn put(&self, key: String, text: String) {
        if let Ok(mut t) = self.texts.lock() {
            t.insert(key, text);
        }
    }
}

/// A built-in middleware kind: a row of the kinds table.
pub(crate) struct Kind {
    pub(crate) name: &'static str,
    pub(crate) build: fn(&BuildContext<'_>) -> Result<Arc<dyn Middleware>>,
}

/// Every built-in kind.
pub(crate) const KINDS: &[Kind] = &[describe_images::KIND, redact::KIND, fit_context::KIND];

/// Builds the named middleware of the config (`[middleware.NAME]`); `hosted` finds the ones
/// clients registered. An unknown name or kind is an error naming what exists.
pub(crate) fn build_chain(
    names: &[String],
    config: &BTreeMap<String, MiddlewareConfig>,
    hosted: &dyn Fn(&str) -> Option<Link>,
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
            items.push(Link {
                name: name.clone(),
                kind: kind.name.to_string(),
                middleware: (kind.build)(&ctx)?,
            });
        } else if let Some(link) = hosted(name) {
            items.push(link);
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

impl BuildContext<'_> {
    /// A setting's error, naming the middleware.
    pub(crate) fn bad(&self, why: impl std::fmt::Display) -> Error {
        Error::new(
            ErrorKind::Config,
            format!("[middleware.{}]: {why}", self.name),
        )
    }

    /// Refuses settings the kind does not have, naming the ones it has.
    pub(crate) fn check_settings(&self, known: &[&str]) -> Result<()> {
        match self.settings.keys().find(|k| !known.contains(&k.as_str())) {
            Some(k) => Err(self.bad(format!(
                "unknown setting `{k}`; this kind takes: {}",
                known.join(", ")
            ))),
            None => Ok(()),
        }
    }

    /// The string setting `key`, if set.
    pub(crate) fn string(&self, key: &str) -> Result<Option<String>> {
        match self.settings.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(self.bad(format!("`{key}` must be a string, not {other}"))),
        }
    }

    /// The non-negative integer setting `key`, if set.
    pub(crate) fn integer(&self, key: &str) -> Result<Option<u64>> {
        match self.settings.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| self.bad(format!("`{key}` must be a whole number, not {v}"))),
        }
    }

    /// The boolean setting `key`, else `default`.
    pub(crate) fn flag(&self, key: &str, default: bool) -> Result<bool> {
        match self.settings.get(key) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(self.bad(format!("`{key}` must be true or false, not {other}"))),
        }
    }
}

/// The hint added to a refusal of images the model cannot take.
pub(crate) fn image_hint() -> &'static str {
    "; or let the describe-images middleware turn them into text: [middleware.NAME] kind = \"describe-images\" with agent = \"AN_AGENT_THAT_SEES\", listed in the agent's middleware"
}

#[cfg(test)]
pub(crate) mod testing;
