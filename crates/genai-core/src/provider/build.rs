//! Building provider instances: every kind genai registers (the HTTP kinds of the table, then
//! `local`) with the one factory that turns a kind's settings into an instance.
//!
//! It owns which implementation serves each kind. It must never hold the table's data
//! (`kinds` does) nor send a request.

use std::sync::Arc;

use serde::Serialize;

use super::kinds::{GEMINI, HTTP_KINDS, OPENAI};
use super::remote::{HttpProvider, Plain};
use super::{anthropic, azure_openai, bedrock, http_connector, local, ollama, ServiceProvider};
use crate::config::ProviderConfig;
use crate::error::Result;
use crate::format::openai_chat;

/// Builds a provider instance from its name and settings.
pub(crate) type ProviderFactory = fn(&str, &ProviderConfig) -> Result<Arc<dyn ServiceProvider>>;

/// A registered provider kind, as `ListComponents` shows it.
#[derive(Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderKind {
    pub name: &'static str,
    pub description: &'static str,
    /// The model formats this kind can send.
    pub formats: Vec<&'static str>,
    /// The format of an ad-hoc model configuration (`provider:model`).
    pub default_format: &'static str,
    #[serde(skip)]
    pub(crate) factory: ProviderFactory,
}

/// Every kind, as the registry registers them: the HTTP kinds, then `local`.
pub(crate) fn registrations() -> Vec<ProviderKind> {
    let http = HTTP_KINDS.iter().map(|k| ProviderKind {
        name: k.name,
        description: k.description,
        formats: k.formats(),
        default_format: k.routes[0].format,
        factory: create,
    });
    let local = ProviderKind {
        name: local::KIND,
        description:
            "A GGUF model run in-process by llama.cpp (model, threads, context_size, slots)",
        formats: vec![openai_chat::FORMAT],
        default_format: openai_chat::FORMAT,
        factory: create,
    };
    http.chain([local]).collect()
}

/// Builds an instance of the kind its settings are of.
pub(crate) fn create(name: &str, c: &ProviderConfig) -> Result<Arc<dyn ServiceProvider>> {
    Ok(match c {
        ProviderConfig::OpenAi(s) => {
            Arc::new(HttpProvider::from_settings(&OPENAI, name, s, Plain)?)
        }
        ProviderConfig::Anthropic(s) => Arc::new(anthropic::create(name, s)?),
        ProviderConfig::Ollama(s) => Arc::new(ollama::create(name, s)?),
        ProviderConfig::Gemini(s) => {
            Arc::new(HttpProvider::from_settings(&GEMINI, name, s, Plain)?)
        }
        ProviderConfig::AzureOpenAi(s) => Arc::new(azure_openai::create(name, s)?),
        ProviderConfig::Http(s) => Arc::new(http_connector::create(name, s)?),
        ProviderConfig::Bedrock(s) => Arc::new(bedrock::create(name, s)?),
        ProviderConfig::Local(s) => local::create(name, s)?,
    })
}
