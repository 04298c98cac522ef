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
//! The front-ends are crates above this one, each speaking one protocol: `genai-rpc` (the
//! daemon's JSON-RPC and `genai serve`), `genai-acp`, `genai-lsp` and the `genai` binary's
//! command line; `genai-gateway` serves other vendors' HTTP APIs over this core. This crate
//! depends on none of them: it must never know a wire protocol of a front-end.
//!
//! Below it is `genai-protocol`, the shapes it shares with every front-end: the records of its
//! listings (the store reads rows straight into them; `provider`, `tools` hand them out) and
//! the model-choice fields `select` reads. Where a core type holds more than a listing shows
//! (a tool's permission hint, the registry's live instances), the core maps it there.
//!
//! The `local` provider kind's engine is `genai-local` (llama.cpp), also above: the binary
//! installs it at start-up (`provider::local::install`). This crate must never build llama.cpp
//! nor depend on a crate that does: the front-ends build without cmake.
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
pub(crate) mod file_context;
pub mod format;
pub(crate) mod hooks;
pub mod message;
pub(crate) mod middleware;
pub mod models;
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
pub mod suggest;
pub(crate) mod tls;
pub mod tools;
pub mod workspace;
