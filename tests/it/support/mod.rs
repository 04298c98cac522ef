//! What the integration tests run the product against: one loopback HTTP/1.1 server
//! (`server.rs`, over the bytes of `http1.rs`) with one wire format per fake (their embeddings APIs in `fake_embeddings.rs`), and a JSON-RPC
//! client for `genai daemon` (`rpc_client.rs`, with the conversation steps of
//! `conversation.rs`, and `daemon.rs`, a daemon on the fake OpenAI server as the daemon's tests
//! start it). `cli.rs` runs the `genai` binary with folders of its own, `editor.rs`
//! runs a real editor headless against `genai lsp`, `tmux.rs` runs a command in a real terminal, `tls_front.rs` puts HTTPS in front of a server,
//! `loopback.rs` keeps every child process out of the caller's proxies and keys, `poll.rs`
//! waits with a deadline for what no message announces, `gateway.rs` reads the gateway's answers, `prometheus.rs` its metrics (with Debian's Prometheus), `fleet.rs` runs more replicas of a serve and a real Redis, `python_sdk.rs` runs a vendor's Python SDK, and `messages.rs` reads message lists.
//! Test support
//! only: nothing here is shipped, and nothing here reaches past 127.0.0.1.

pub mod bedrock_auth;
pub mod behavior;
pub mod cli;
pub mod conversation;
pub mod daemon;
pub mod editor;
pub mod fake_anthropic;
pub mod fake_bedrock;
pub mod fake_embeddings;
pub mod fake_gemini;
pub mod fake_ollama;
pub mod fake_openai;
pub mod fake_plugin;
pub mod fake_scripted;
pub mod file_server;
pub mod fleet;
pub mod gateway;
pub mod hostile;
pub mod http1;
pub mod loopback;
pub mod messages;
pub mod otlp;
pub mod poll;
pub mod postgres;
pub mod prometheus;
pub mod prompt_cache;
pub mod python_sdk;
pub mod rpc_client;
pub mod server;
pub mod tls_front;
pub mod tmux;
