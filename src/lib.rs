//! genai: connects a chat user interface (an editor, a terminal, a CI script) to generative-AI
//! models through pluggable features, model configurations and service providers.
//!
//! The **core** runs conversations and keeps their history; its one entry is
//! [`session::Framework`]: `session` (the entry), `agent`, `feature`, `middleware`, `tools`,
//! `workspace` (the built-in tools on the user's files), `permission` (what a tool call may
//! do), `checkpoint` (undo) and `hooks`, `provider` and `format` (requests on the wire of each
//! service), `registry` and `select` (which components answer), `store` (the history),
//! `config`, `secrets`, `models` and `download` (local models), and the small shared pieces
//! (`message`, `error`, `pricing`, `redact`, `fetch`, `file_context`, `process`, `suggest`,
//! `tls`).
//!
//! The **front-ends** are thin adapters on the core, each speaking one protocol: `rpc` (the
//! daemon's JSON-RPC and `genai serve`), `acp` (Agent Client Protocol) and `lsp` (Language
//! Server Protocol); the CLI lives in the binary (`src/cli`). `gateway` (OpenAI's HTTP APIs
//! over the core, mounted by `genai serve`) is plumbing beside them, core-side. A core module never imports a
//! front-end, and no front-end imports another (`boundaries` tests it).
//!
//! See `docs/ARCHITECTURE.md` for the code map.

// The core.
pub mod agent;
pub mod checkpoint;
pub mod command;
pub mod config;
pub mod context_files;
pub mod download;
pub mod error;
pub mod feature;
pub mod fetch;
pub mod file_context;
pub mod format;
pub mod gateway;
pub mod hooks;
pub mod message;
pub mod middleware;
pub mod models;
pub mod peer;
pub mod permission;
pub mod pricing;
pub mod private;
pub(crate) mod process;
pub mod provider;
pub mod redact;
pub mod registry;
pub mod secrets;
pub mod select;
pub mod session;
pub mod store;
pub(crate) mod suggest;
pub mod tls;
pub mod tools;
pub mod workspace;

// The front-ends.
pub mod acp;
pub mod lsp;
pub mod rpc;

#[cfg(test)]
mod boundaries;
