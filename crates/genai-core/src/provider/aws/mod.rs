//! What AWS services share, kept apart from any one provider: credentials and region
//! (`credentials`), SigV4 request signing (`sigv4`) and the binary event-stream framing
//! (`event_stream`).
//!
//! These modules own AWS conventions only. They must never build a request body, choose an
//! endpoint path, or print a credential.

pub(crate) mod credentials;
pub mod event_stream;
pub mod sigv4;
