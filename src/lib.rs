//! genai: connects a chat user interface (an editor, a terminal, a CI script) to generative-AI
//! models through pluggable features, model configurations and service providers.
//!
//! See `docs/ARCHITECTURE.md` for the code map.

pub mod acp;
pub mod agent;
pub mod config;
pub mod download;
pub mod error;
pub mod feature;
pub mod file_context;
pub mod format;
pub mod lsp;
pub mod message;
pub mod middleware;
pub mod models;
pub mod peer;
pub mod pricing;
pub mod process;
pub mod provider;
pub mod redact;
pub mod registry;
pub mod rpc;
pub mod secrets;
pub mod select;
pub mod session;
pub mod store;
pub mod suggest;
pub mod tools;

#[cfg(test)]
mod boundaries;
