//! The JSON-RPC 2.0 daemon over stdio, a front-end on the core: framing, typed protocol and
//! its schemas, error codes, the client port that turns core events into notifications, and
//! the dispatcher that turns requests into core calls. Nothing outside this module (but the
//! command line, which starts it) may use it.

pub mod dispatch;
pub mod errors;
pub mod framing;
pub mod listings;
pub mod port;
pub mod protocol;
pub mod schema;
pub mod server;
pub mod ws;

#[cfg(test)]
mod tests;
