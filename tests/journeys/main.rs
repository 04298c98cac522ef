//! The journeys: scripted stories of a user across features, each from a fresh home (its own
//! `HOME`, no XDG or genai folders set, no keyring, no keys of the caller's), on the release
//! binary, against the loopback fakes of `tests/it/support` and the demo model. A journey
//! asserts what the user sees: stdout, stderr lines, exit codes, the screen, the page; never
//! the store or other internals.
//!
//! The binary is `GENAI_JOURNEY_BIN` (scripts/test.sh sets it to the release build), else the
//! test build's own `genai`. The demo model is `GENAI_TEST_MODEL`; journeys that need it fail
//! without it when `CI` is set and are skipped, saying why, otherwise.

#[allow(dead_code, unused_imports)]
#[path = "../it/support/mod.rs"]
mod support;

mod home;

mod acting;
mod agents_use_genai;
mod cancelled_turn;
mod chat_across_models;
mod ci_run;
mod commands;
mod editor_acts;
mod failed_turn;
mod fallback_local;
mod fleet;
mod gateway;
mod gateway_keys;
mod gateway_streams;
mod history_backup;
mod keys_and_servers;
mod local_then_provider;
mod long_local_chat;
mod mistakes;
mod pipes;
mod plan_then_edit;
mod redacted_across_models;
mod secrets;
mod serve_page;
mod subagents_in_parallel;
mod terminal_asks;
mod warm_model;
