//! Tools the model can call: plugin modules (HTTP services with a manifest) and MCP servers
//! (child processes speaking MCP over stdio, or streamable-HTTP servers). Each tool has a name
//! (`SOURCE.function`), a description and a JSON input schema. The built-in `workspace` source
//! is `crate::workspace`.
//!
//! This module owns what a tool is and how a source describes its tools (plugin modules, MCP
//! servers, the toolbox that gathers them). It must never run the model's tool loops (native
//! or ReAct: the agent runs them) nor talk JSON-RPC to a client.

pub mod manifest;
pub(crate) mod mcp;
mod mcp_answer;
pub mod mcp_context;
pub mod plugin;
pub mod signature;
pub mod toolbox;

pub use genai_base::tool::{FileEdit, Tool};
