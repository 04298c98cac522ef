//! The wire shapes genai's front-ends share, written once: the records of what genai lists —
//! stored conversations and messages, registered components, tools, MCP resources and prompts
//! (`listings.rs`) — the model-choice fields of the daemon's requests (`choice.rs`), the
//! events of `genai ask --output-format stream-json` (`events.rs`), a plan's steps (`plan.rs`)
//! and what a subagent does (`subagent.rs`, the daemon's `OnSubagentEvent`). The daemon's
//! protocol sends them (its schemas are generated from them), the command line's `--json`
//! prints them, and the core keeps its records in them: its store reads rows straight
//! into them, so they cannot drift apart.
//!
//! It owns these shapes only. It is a leaf: it must never hold behaviour, and never depend on
//! another crate of genai, the core included (the core depends on it; where a core type holds
//! more than a listing shows, the core maps it).

pub mod choice;
pub mod events;
pub mod listings;
pub mod plan;
pub mod subagent;
