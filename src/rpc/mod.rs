//! The JSON-RPC 2.0 daemon over stdio: framing, typed protocol, per-connection loop.

pub mod framing;
pub mod protocol;
pub mod server;
