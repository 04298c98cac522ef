//! Runs the test-only fake OpenAI-compatible server from
//! `tests/it/support/fake_openai.rs` as a standalone process, for manual and
//! end-to-end runs of the CLI and the daemon against a predictable provider:
//!
//! ```text
//! cargo run --release --example fake-provider -- --port 0 --reply "Hi there" --chunks 3
//! ```
//!
//! With `--tool-call NAME:ARGS_JSON` (repeatable), the first request is answered
//! with those tool calls instead (ids `call_1`, `call_2`, ...; NAME is the wire name,
//! such as `events__getEvents`) and later requests with the reply:
//!
//! ```text
//! cargo run --example fake-provider -- --tool-call 'events__getEvents:{"day":"today"}'
//! ```
//!
//! With `--reasoning TEXT`, every answer streams `reasoning_content` (as DeepSeek and vLLM
//! do) before its reply.
//!
//! It prints exactly one line, `listening on http://127.0.0.1:PORT/v1`, then
//! serves until it is killed.

// The fake and the server under it, from the integration tests' support (the other wire
// formats are not needed here, and parts of these go unused).
#[allow(dead_code)]
#[path = "../tests/it/support"]
mod support {
    pub mod behavior;
    pub mod fake_openai;
    pub mod http1;
    pub mod server;
}

use std::io::Write;
use std::time::Duration;

use clap::Parser;

use support::fake_openai::{Behavior, FakeOpenAi};

/// A fake OpenAI-compatible chat-completions server on 127.0.0.1 (test use only).
#[derive(Parser, Debug)]
#[command(name = "fake-provider")]
struct Args {
    /// Port to listen on; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// The assistant's reply text.
    #[arg(long)]
    reply: Option<String>,
    /// Number of content chunks a streamed reply is split into.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..))]
    chunks: u64,
    /// Delay in milliseconds before each streamed chunk (and before a
    /// non-streaming body).
    #[arg(long, default_value_t = 0)]
    delay_ms: u64,
    /// Model name echoed in responses (default: the request's model).
    #[arg(long)]
    model: Option<String>,
    /// A tool call for the first request to answer with, as `NAME:ARGS_JSON`
    /// (NAME is the wire name; repeatable: several calls in one answer).
    #[arg(long = "tool-call", value_name = "NAME:ARGS_JSON", value_parser = parse_tool_call)]
    tool_calls: Vec<(String, String)>,
    /// What the model thinks before each answer, sent as `reasoning_content`.
    #[arg(long)]
    reasoning: Option<String>,
}

/// `NAME:ARGS_JSON`, split at the first `:`; the arguments must be JSON.
fn parse_tool_call(s: &str) -> Result<(String, String), String> {
    let (name, args) = s
        .split_once(':')
        .ok_or_else(|| format!("`{s}` is not NAME:ARGS_JSON"))?;
    if name.is_empty() {
        return Err(format!("`{s}` has no tool name before the `:`"));
    }
    serde_json::from_str::<serde_json::Value>(args)
        .map_err(|e| format!("the arguments of `{name}` are not JSON: {e}"))?;
    Ok((name.to_string(), args.to_string()))
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let defaults = Behavior::default();
    let behavior = Behavior {
        reply: args.reply.unwrap_or(defaults.reply),
        chunks: usize::try_from(args.chunks).unwrap_or(usize::MAX),
        delay: Duration::from_millis(args.delay_ms),
        model: args.model.unwrap_or_default(),
        reasoning: args.reasoning.unwrap_or_default(),
        ..defaults
    };
    let tool_calls: Vec<(String, String, String)> = args
        .tool_calls
        .into_iter()
        .enumerate()
        .map(|(i, (name, arguments))| (format!("call_{}", i + 1), name, arguments))
        .collect();
    let first = (!tool_calls.is_empty()).then(|| Behavior {
        reply: String::new(),
        chunks: 1,
        tool_calls,
        ..behavior.clone()
    });
    let server = FakeOpenAi::start(args.port, behavior)?;
    if let Some(first) = first {
        server.push(first);
    }

    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "listening on {}", server.base_url())?;
    stdout.flush()?;
    drop(stdout);

    // The server runs on its own thread; keep it (and this process) alive
    // until the process is killed.
    loop {
        std::thread::park();
    }
}
