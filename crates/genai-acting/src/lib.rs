//! What genai's tools do on the user's machine, and under which rules: the workspace's
//! built-in tools and the kernel sandbox their commands run in (`workspace`), the permission
//! policy every tool call passes (`permission`), the checkpoints that undo a turn's edits
//! (`checkpoint`) and the hooks a project runs around a tool call (`hooks`).
//!
//! It sits on `genai-base` and under the core, which decides when a tool runs and asks this
//! crate whether it may and what it does. It must never hold a conversation or a model (a
//! turn is only its ids here), nor speak a front-end's protocol, and a tool here must never
//! reach outside its workspace or sandbox.

pub mod checkpoint;
pub mod hooks;
pub mod permission;
pub mod workspace;
