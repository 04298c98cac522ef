//! genai-local: the `local` service provider kind, GGUF models run in-process by llama.cpp
//! (through `llama-cpp-2`, whose build script compiles llama.cpp with cmake: this crate is the
//! one that needs cmake and clang). The core keeps the kind's name, its settings
//! (`LocalSettings`), the warm route's client (`served`) and the slot of an installable engine;
//! [`install`] puts this crate's engine in that slot, and the `genai` binary calls it at
//! start-up (its cargo feature `local`), before any registry is built.
//!
//! The parts, one job each: `provider.rs` (the [`ServiceProvider`] of an instance: model
//! resolution, blocking threads, the channel to the caller), `engine.rs` (llama.cpp: the
//! process's backend and model cache, template, tokens, samplers), `load.rs` (how busy the
//! machine is, for the default threads), `scheduler.rs` (the one thread that owns a model's
//! context: continuous batching), `slots.rs` (which sequence a request takes), `sampling.rs` (a
//! request's sampler chain, its grammar asked one token at a time), `template.rs` (chat
//! template and its ChatML fallback), `infill.rs` (the fill-in-the-middle prompt of models with
//! FIM tokens), `embed.rs` (pooled embeddings in a context of their own), `output.rs` (UTF-8
//! across tokens, stop strings), `repetition.rs` (a reply stuck in a loop), `grammar.rs`
//! (structured output and tool calls by grammar), `wire.rs` (openai-chat in and out).
//!
//! This file owns installing the engine and nothing else. The crate must never hold a
//! conversation, choose a model for one or speak a front-end's protocol (the core and the
//! front-ends do), and no front-end crate may depend on it: only the binary does.

mod embed;
mod engine;
mod grammar;
mod infill;
mod load;
mod output;
mod provider;
mod repetition;
mod sampling;
mod scheduler;
mod slots;
mod template;
mod wire;

use std::sync::Arc;

use genai_core::config::LocalSettings;
use genai_core::error::Result;
use genai_core::provider::local::LocalEngine;
use genai_core::provider::ServiceProvider;

use provider::LocalProvider;

/// The llama.cpp engine as the core's `local` kind sees it.
struct Llama;

impl LocalEngine for Llama {
    fn create(&self, name: &str, c: &LocalSettings) -> Result<Arc<dyn ServiceProvider>> {
        Ok(Arc::new(LocalProvider::from_config(name, c)?))
    }

    fn stop(&self) {
        engine::stop_all();
    }
}

/// Makes this crate's engine the one the core's `local` kind builds its instances with. Call it
/// once at start-up, before any registry is built (one made before has no `local` instance);
/// calling it again does nothing.
pub fn install() {
    genai_core::provider::local::install(&Llama);
}
