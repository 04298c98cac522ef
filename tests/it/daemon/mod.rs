//! End-to-end tests of `genai daemon`: the real binary over stdio (both framings), against the
//! fake OpenAI-compatible server in `support/fake_openai.rs`, started as `support/daemon.rs`
//! starts it. One file per subject: framing, provider failures, turns, a daemon's life,
//! client-hosted features, secrets, components and history.
//!
//! Every test has its own temp folders for data and config and its own fake server, and waits
//! on events with deadlines (never sleeps to let time pass).

mod client_features;
mod components;
mod framing;
mod lifecycle;
mod provider_failures;
mod secrets;
mod turns;
