//! The pieces every layer of genai shares, below the core and the tools that act on the
//! user's machine (`genai-acting`): the error and its stable kinds (`error`), the one secret
//! redactor (`redact`), a child process's environment (`process`), downloads and a page as
//! text (`fetch`), the certificate authorities trusted besides the built-in ones (`tls`),
//! owner-only files (`private`), how an SQLite file is opened to be shared (`sqlite`) and what
//! a tool is (`tool`).
//!
//! It must never hold a conversation, a model or a policy: whatever decides belongs above it.
//! Its one genai dependency is the leaf `genai-protocol`, for the listed shape of a tool.

pub mod error;
pub mod fetch;
pub mod private;
pub mod process;
pub mod redact;
pub mod sqlite;
pub mod tls;
pub mod tool;
