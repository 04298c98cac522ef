//! genai: connects a chat user interface (an editor, a terminal, a CI script) to generative-AI
//! models through pluggable features, model configurations and service providers.
//!
//! The **core** runs conversations and keeps their history; its one entry is
//! [`session::Framework`]: `session` (the entry), `agent`, `feature`, `middleware`, `tools`
//! (the tool sources), `provider` and `format` (requests on the wire of each service),
//! `registry` and `select` (which components answer), `store` (the history), `config`,
//! `secrets`, `models` and `download` (local models), `embedding` (texts to vectors), `command` and `context_files`, `telemetry` (OpenTelemetry traces), and the
//! small pieces of its own (`message`, `pricing`, `file_context`, `suggest`).
//!
//! Below it are three crates it builds on and re-exports where its callers always found them:
//! `genai-acting`, what the tools do on the user's machine (`workspace`, its built-in tools and
//! sandbox; `permission`; `checkpoint`, undo; `hooks`); `genai-base`, what every layer shares
//! (`error`, `redact`, `process`, `fetch`, `tls`, `private`, the SQLite files' setup, what a
//! tool is); and `genai-protocol`, the shapes it shares with every front-end: the records of
//! its listings (the store reads rows straight into them; `provider`, `tools` hand them out)
//! and the model-choice fields `select` reads. Where a core type holds more than a listing
//! shows (the registry's live instances), the core maps it there.
//!
//! The front-ends are crates above this one, each speaking one protocol: `genai-rpc` (the
//! daemon's JSON-RPC and `genai serve`), `genai-acp`, `genai-lsp` and the `genai` binary's
//! command line; `genai-gateway` serves other vendors' HTTP APIs over this core. This crate
//! depends on none of them: it must never know a wire protocol of a front-end.
//!
//! The `local` provider kind's engine is `genai-local` (llama.cpp), also above: the binary
//! installs it at start-up (`provider::local::install`). This crate must never build llama.cpp
//! nor depend on a crate that does: the front-ends build without cmake.
//!
//! See `docs/ARCHITECTURE.md` for the code map.

// The core.
pub mod agent;
pub mod command;
pub mod compaction;
pub mod config;
pub mod context_files;
pub mod download;
pub mod embedding;
pub mod feature;
pub(crate) mod file_context;
pub mod format;
pub mod message;
pub(crate) mod middleware;
pub mod models;
pub mod pricing;
pub mod provider;
pub mod registry;
pub mod secrets;
pub mod select;
pub mod session;
pub mod store;
pub mod subagent;
pub mod suggest;
pub mod telemetry;
pub mod tools;

// Below the core, named here as they always were: the shared pieces (`genai-base`) and what
// the tools do on the user's machine (`genai-acting`).
pub(crate) use genai_acting::hooks;
pub use genai_acting::{checkpoint, permission, workspace};
pub(crate) use genai_base::process;
pub use genai_base::{error, fetch, private, redact, tls};
