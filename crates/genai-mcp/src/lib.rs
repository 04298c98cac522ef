//! `genai mcp`: genai as a Model Context Protocol server over stdio (and on `genai serve`), so that MCP clients
//! (Claude Code, Codex, editors, the official SDKs) use genai's workspace tools under genai's
//! one permission policy, its commands as prompts, any model genai reaches (`ask`) and the
//! stored history (`search_history`). A front-end on the core, beside `genai acp`.
//!
//! `server` owns the MCP session (the `rmcp` SDK's server: initialize, lists, calls; protocol
//! only on stdout), `tools` the tool list and each call, `prompts` the commands as MCP prompts,
//! `port` the core's client port: a call the policy asks about becomes an elicitation when the
//! client declared that capability, else a refusal naming the rule that would allow it.
//!
//! `http` is the same server over streamable HTTP, for `genai serve`'s `/mcp`.
//!
//! Its surface is the entry the command line starts (`serve`, with `Options`) and the serve's
//! endpoint (`http::HttpEndpoint`). It must never
//! decide whether a call may run (the core's guard does) nor depend on another front-end.

pub mod http;
mod port;
mod prompts;
mod server;
mod tools;

pub use server::{serve, Options};
