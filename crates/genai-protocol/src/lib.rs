//! The wire shapes of what genai lists, written once: stored conversations and messages,
//! registered components, tools, MCP resources and prompts (`listings.rs`), each converted
//! from the core's own type. The daemon's protocol sends them (its schemas are generated from
//! them) and the command line's `--json` prints them, so the two cannot drift apart.
//!
//! It owns these shapes only. It must never hold behaviour, and never depend on a front-end:
//! every front-end may depend on it.

pub mod listings;
