//! Runs the test-only fake OpenAI-compatible server from
//! `tests/support/fake_openai.rs` as a standalone process, for manual and
//! end-to-end runs of the CLI and the daemon against a predictable provider:
//!
//! ```text
//! cargo run --release --example fake-provider -- --port 0 --reply "Hi there" --chunks 3
//! ```
//!
//! It prints exactly one line, `listening on http://127.0.0.1:PORT/v1`, then
//! serves until it is killed.

#[path = "../tests/support/fake_openai.rs"]
mod fake_openai;

use std::io::Write;
use std::time::Duration;

use clap::Parser;

use fake_openai::{Behavior, FakeOpenAi};

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
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let defaults = Behavior::default();
    let behavior = Behavior {
        reply: args.reply.unwrap_or(defaults.reply),
        chunks: usize::try_from(args.chunks).unwrap_or(usize::MAX),
        delay: Duration::from_millis(args.delay_ms),
        model: args.model.unwrap_or_default(),
        ..defaults
    };
    let server = FakeOpenAi::start(args.port, behavior)?;

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
