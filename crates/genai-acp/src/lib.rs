//! `genai acp`: an Agent Client Protocol (ACP v1) agent over stdio, so that ACP editors (Zed,
//! the JetBrains IDEs, Neovim, Emacs, ...) drive genai's conversations. A front-end on the
//! core's client port, beside the JSON-RPC daemon and never through it: sessions are the
//! conversations of the shared history, a `session/prompt` is a turn.
//!
//! `server` owns the transport (newline-delimited JSON-RPC 2.0: protocol only on stdout),
//! `connection` the envelope, errors and agent→client requests, `agent` the methods, `port`
//! the core's events as `session/update`s, `content` prompts and replays, `choices` the config
//! options, `commands` MCP prompts as slash commands. The message types are the official SDK's (`agent-client-protocol-schema`).
//!
//! Its surface is the one entry the command line starts (`serve`); the rest is crate-private.
//! It must never depend on the daemon's crate (`genai-rpc`): it shares only the core and the
//! peer.

mod agent;
mod choices;
mod commands;
mod connection;
mod content;
mod editor;
mod modes;
mod port;
mod server;

pub use server::serve;

#[cfg(test)]
mod tests;
