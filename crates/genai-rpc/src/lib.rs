//! The JSON-RPC 2.0 daemon, a front-end on the core and a method table on the shared JSON-RPC
//! peer (`genai_peer`: framing, the bounded writer, requests to the client): typed protocol
//! and its schemas, error codes, the client port that turns core events into notifications,
//! (a subagent's through `subagents`), the method table (`methods`) naming the handler of each
//! request (`handlers`), the session
//! that dispatches by it (`dispatch`), and its two transports: stdio
//! (`server`) and WebSocket for several clients (`ws`, `genai serve`). Only the command line,
//! which starts it, and the serve's front door (`genai-server`, for `ws`) depend on this crate.
//!
//! Its surface is what they use: `server`, `ws` and `schema`; the rest is crate-private. The
//! listings it sends and the model-choice fields of its params are `genai-protocol`'s, the
//! records the core itself keeps. It owns the daemon's wire and must never run a conversation itself:
//! `dispatch` translates, the core acts.

pub(crate) mod command_handlers;
pub(crate) mod command_protocol;
pub(crate) mod dispatch;
pub(crate) mod editor_protocol;
pub(crate) mod errors;
pub(crate) mod handlers;
pub(crate) mod ids;
pub(crate) mod mcp_protocol;
pub(crate) mod methods;
pub(crate) mod port;
pub(crate) mod protocol;
pub mod schema;
pub mod server;
pub(crate) mod subagents;
pub(crate) mod tool_protocol;
pub mod ws;

// The listings' wire shapes, shared with the core and the command line's `--json`
// (`genai-protocol`).
use genai_protocol::listings;

#[cfg(test)]
mod tests;
