//! The `local` provider kind: a GGUF model run in-process by llama.cpp. Its interface is the
//! `openai-chat` format: it reads an openai-chat request body and answers with openai-chat JSON
//! (chunk events when streaming, one `chat.completion` body otherwise), so the openai-chat
//! decoder reads it unchanged.
//!
//! Config: `[service_providers.NAME] kind = "local"` with `model` (a name in the models folder
//! or a path to a `.gguf` file), `threads` (default: the physical cores less those other
//! processes keep busy when the engine starts), `context_size` (tokens each slot's sequence may
//! hold, default 4096 capped by the model's training context) and `slots` (conversations run at
//! once, each keeping its cached prefix, default 4, or 1 in a process that runs one conversation
//! at a time: `genai ask`, `genai chat`; one context of `context_size × slots` tokens holds them
//! all). No GPU offload. With nothing configured, the registry makes an implicit instance
//! `local` for the models folder's default model (`default_model`, read like `model`).
//!
//! The engine is not here: it is the `genai-local` crate (llama.cpp and its cmake build), which
//! the `genai` binary installs at start-up ([`install`], its cargo feature `local`). This file
//! owns the kind's name, the slot of the installed [`LocalEngine`] that `create` builds
//! instances with (without one, the kind's instances are refused with a config error), the
//! process's one-conversation setting and llama.cpp's log directive; `served` is the client of
//! the same model kept warm by a running `genai serve`, for `ask` and `chat`. It must never call
//! llama.cpp nor depend on a crate that does.

/// The kind's name, as a config writes it.
pub const KIND: &str = "local";

pub mod served;

use std::sync::{Arc, OnceLock};

use super::ServiceProvider;
use crate::config::LocalSettings;
use crate::error::{Error, ErrorKind, Result};

/// An engine that runs the `local` kind's instances (`genai-local`'s llama.cpp engine).
pub trait LocalEngine: Send + Sync {
    /// Builds the instance `name` of these settings (the registry's factory of the kind).
    fn create(&self, name: &str, c: &LocalSettings) -> Result<Arc<dyn ServiceProvider>>;
    /// Ends its threads before the process exits (each after the step it is running).
    fn stop(&self);
}

/// The installed engine, if any.
static ENGINE: OnceLock<&'static dyn LocalEngine> = OnceLock::new();

/// Makes `engine` the one the `local` kind builds its instances with, for the life of the
/// process. Installed before any registry is built (a registry made before has no implicit
/// `local` instance); the first engine installed stays, installing another does nothing.
pub fn install(engine: &'static dyn LocalEngine) {
    let _ = ENGINE.set(engine);
}

/// Whether an engine is installed: the `local` kind's instances can run.
pub fn installed() -> bool {
    ENGINE.get().is_some()
}

/// Builds a `local` provider instance (the registry's factory) with the installed engine.
pub(crate) fn create(name: &str, c: &LocalSettings) -> Result<Arc<dyn ServiceProvider>> {
    match ENGINE.get() {
        Some(engine) => engine.create(name, c),
        None => Err(Error::new(
            ErrorKind::Config,
            format!(
                "service_providers.{name}: this genai was built without the `local` feature: rebuild with default features (needs cmake and clang)"
            ),
        )),
    }
}

/// Whether this process runs one conversation at a time (set by `genai ask` and `genai chat`).
static ONE_CONVERSATION: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Tells the local providers made from now on that this process runs one conversation at a
/// time (`genai ask`, `genai chat`): their engines default to one slot instead of the
/// daemon's four (each slot is a share of the context's KV cache: one `ask` with four took
/// 513 MB and 1.11 s, with one 235 MB and 0.49 s). A configured `slots` still wins.
pub fn one_conversation_at_a_time() {
    ONE_CONVERSATION.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether this process runs one conversation at a time ([`one_conversation_at_a_time`]), for
/// the engine's default slots.
pub fn runs_one_conversation() -> bool {
    ONE_CONVERSATION.load(std::sync::atomic::Ordering::Relaxed)
}

/// The `tracing` target of llama.cpp's own log lines (llama-cpp-2 sends them there).
pub(crate) const LLAMA_LOG_TARGET: &str = "llama-cpp-2";

/// The directive that keeps llama.cpp's own log below genai's, for a log filter `spec` whose
/// most verbose level is `max`: its lines show from `info` on (at `warn` and `error` they
/// would only repeat, raw, what genai's own error line says), and never its debug lines (one
/// per tensor, thousands of them) unless `spec` names its target itself
/// (`GENAI_LOG=debug,llama-cpp-2=debug`), in which case `spec` is left alone (None).
pub fn llama_log_directive(
    spec: &str,
    max: Option<tracing::level_filters::LevelFilter>,
) -> Option<String> {
    use tracing::level_filters::LevelFilter;
    if spec.contains(LLAMA_LOG_TARGET) {
        return None;
    }
    let level = match max {
        Some(m) if m >= LevelFilter::INFO => "info",
        _ => "off",
    };
    Some(format!("{LLAMA_LOG_TARGET}={level}"))
}

/// Ends the local engines' threads before the process exits (each after the step it is
/// decoding): exiting under a running llama.cpp step crashes in its static destructors.
pub fn stop_engines() {
    if let Some(engine) = ENGINE.get() {
        engine.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing::level_filters::LevelFilter;

    #[test]
    fn llama_cpp_logs_show_from_info_on_and_their_debug_lines_only_when_named() {
        let directive = |spec: &str, max| llama_log_directive(spec, Some(max));
        assert_eq!(
            directive("error", LevelFilter::ERROR).as_deref(),
            Some("llama-cpp-2=off")
        );
        assert_eq!(
            directive("warn", LevelFilter::WARN).as_deref(),
            Some("llama-cpp-2=off")
        );
        assert_eq!(
            directive("debug", LevelFilter::DEBUG).as_deref(),
            Some("llama-cpp-2=info")
        );
        assert_eq!(
            directive("debug,llama-cpp-2=debug", LevelFilter::DEBUG),
            None
        );
        let parsed: tracing_subscriber::filter::Directive = directive("trace", LevelFilter::TRACE)
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(parsed.to_string(), "llama-cpp-2=info");
    }
}
