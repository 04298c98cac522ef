//! Keeping a child process of the tests on 127.0.0.1 and out of the caller's settings: no
//! proxy, no provider key or endpoint, no log level of the caller's. It only removes and sets
//! variables; it never starts the process.

use std::process::Command;

/// Keeps a child process on loopback: no proxy of the caller's environment may carry its
/// requests away, and the caller's own keys, provider settings and log level do not leak in.
/// Call it before setting the variables a test means, since it removes some of them.
pub fn loopback_only(cmd: &mut Command) -> &mut Command {
    cmd.env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost");
    for var in [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
        "GENAI_LOG",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        // Other providers' settings, so built-in instances do not reach out of the test.
        "OLLAMA_HOST",
        "OLLAMA_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GEMINI_BASE_URL",
        "AZURE_OPENAI_ENDPOINT",
        "AZURE_OPENAI_API_KEY",
        "OPENAI_API_VERSION",
        // The caller's collector: a test names its own.
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    ] {
        cmd.env_remove(var);
    }
    cmd
}
