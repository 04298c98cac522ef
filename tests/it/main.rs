//! The integration tests, one crate: each module drives the built `genai` binary (the CLI or
//! `genai daemon` over stdio) against the loopback fakes of [`support`], or checks what the
//! library generates (`schemas`). One crate links once, and the fakes are compiled once for all.
//!
//! Tests never reach a network beyond 127.0.0.1 and never read the caller's provider settings.

mod support;

mod caching;
mod cli;
mod cli_attach;
mod cli_chat;
mod cli_files;
mod cli_handover;
mod cli_json;
mod cli_output;
mod cli_params;
mod commands;
mod compaction;
mod crates;
mod cut_replies;
mod daemon;
mod daemon_react;
mod daemon_tools;
mod daemon_tools_client;
mod daemon_tools_formats;
mod editor_tools;
mod embeddings;
mod embeddings_gateway;
mod failed_turns;
mod fleet_tls;
mod gateway;
mod gateway_anthropic;
mod gateway_anthropic_errors;
mod gateway_anthropic_upstream;
mod gateway_clients;
mod gateway_codex;
mod gateway_errors;
mod gateway_fallback;
mod gateway_hostile;
mod gateway_keys;
mod gateway_redis;
mod gateway_responses;
mod gateway_routing;
mod hostile;
mod keys;
#[cfg(feature = "local")]
mod local_batching;
#[cfg(feature = "local")]
mod local_first_use;
#[cfg(feature = "local")]
mod local_model;
#[cfg(feature = "local")]
mod local_model_chat;
#[cfg(feature = "local")]
mod local_warm;
mod lsp;
mod lsp_emacs;
#[cfg(feature = "local")]
mod lsp_fim;
mod lsp_neovim;
mod mcp;
mod mcp_content;
mod mcp_http;
mod mcp_interop;
mod mcp_server;
mod mcp_server_claude;
mod mcp_server_codex;
mod mcp_server_http;
mod mcp_server_python;
mod middleware;
mod model_choice;
mod models;
mod models_demo;
mod plan_mode;
mod plugins;
mod provider_anthropic;
mod provider_anthropic_daemon;
mod provider_azure;
mod provider_bedrock;
mod provider_bedrock_daemon;
mod provider_gemini;
mod provider_http;
mod provider_ollama;
mod reasoning;
mod schemas;
mod serve;
mod serve_history;
mod serve_ops;
mod serve_postgres;
mod serve_postgres_faults;
mod serve_prometheus;
mod serve_roots;
mod serve_shutdown;
mod serve_web;
mod stream_json;
mod structured;
mod subagents;
mod subagents_daemon;
#[cfg(feature = "local")]
mod subagents_local;
mod telemetry;
mod workspace;
