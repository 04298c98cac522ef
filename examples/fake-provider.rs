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
//! It answers `POST /v1/embeddings` too (`tests/it/support/fake_embeddings.rs`): each text's
//! vector starts with the text's length in characters.
//!
//! It prints exactly one line, `listening on http://127.0.0.1:PORT/v1`, then
//! serves until it is killed.
//!
//! With `--plugin` it also serves the fake plugin module of `tests/it/support/fake_plugin.rs`
//! and prints a second line, `plugin on http://127.0.0.1:PORT`. With `--control` a test drives
//! it from stdin, one JSON object a line, each answered by one line on stdout, and it exits
//! when stdin ends:
//!
//! * `{"push": {"reply", "chunks", "delayMs", "toolCalls": [[NAME, ARGS_JSON, ID?], ...],
//!   "error": {"status", "message"}}}` queues how the next chat request is answered
//!   (omitted fields as the command line says; a call's id is `call_N` unless given) →
//!   `{"ok": true}`;
//! * `{"requests": true}` → `{"requests": [BODY, ...]}`, the chat requests' bodies so far;
//! * `{"plugin": {"method", "answer": BODY}}` queues the plugin's answer to its next call of
//!   `method` → `{"ok": true}`;
//! * `{"pluginRequests": true}` → `{"requests": [{"method", "path", "body"}, ...]}`.

// The fake and the server under it, from the integration tests' support (the other wire
// formats are not needed here, and parts of these go unused).
#[allow(dead_code)]
#[path = "../tests/it/support"]
mod support {
    pub mod behavior;
    pub mod fake_embeddings;
    pub mod fake_openai;
    pub mod fake_plugin;
    pub mod http1;
    pub mod server;
}

use std::io::Write;
use std::time::Duration;

use clap::Parser;

use serde_json::{json, Value};
use support::fake_openai::{Behavior, FakeOpenAi, Mode};
use support::fake_plugin::FakePlugin;

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
    /// Also serve the fake plugin module (its URL on a second line).
    #[arg(long)]
    plugin: bool,
    /// Take commands on stdin (see the module doc) and exit when stdin ends.
    #[arg(long)]
    control: bool,
}

/// A `push` command's behaviour over the default one.
fn pushed(spec: &Value, default: &Behavior) -> Behavior {
    let mut b = default.clone();
    if let Some(r) = spec["reply"].as_str() {
        b.reply = r.to_string();
    }
    if let Some(n) = spec["chunks"].as_u64() {
        b.chunks = n.max(1) as usize;
    }
    if let Some(ms) = spec["delayMs"].as_u64() {
        b.delay = Duration::from_millis(ms);
    }
    if let Some(calls) = spec["toolCalls"].as_array() {
        b.tool_calls = calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let text = |n: usize| c[n].as_str().unwrap_or("").to_string();
                let id = c[2]
                    .as_str()
                    .map_or_else(|| format!("call_{}", i + 1), str::to_string);
                (id, text(0), text(1))
            })
            .collect();
    }
    if let Some(e) = spec.get("error") {
        b.mode = Mode::Error {
            status: e["status"].as_u64().unwrap_or(500) as u16,
            message: e["message"].as_str().unwrap_or("fake failure").to_string(),
            code: String::new(),
        };
    }
    b
}

/// Answers the commands of stdin until it ends.
fn control(
    server: &FakeOpenAi,
    plugin: Option<&FakePlugin>,
    default: &Behavior,
) -> std::io::Result<()> {
    let mut out = std::io::stdout();
    for line in std::io::stdin().lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let answer = match serde_json::from_str::<Value>(&line) {
            Err(e) => json!({"error": format!("not JSON: {e}")}),
            Ok(c) if c.get("push").is_some() => {
                server.push(pushed(&c["push"], default));
                json!({"ok": true})
            }
            Ok(c) if c.get("requests").is_some() => {
                let bodies: Vec<Value> = server.requests().into_iter().map(|r| r.body).collect();
                json!({"requests": bodies})
            }
            Ok(c) => match (plugin, c.get("plugin"), c.get("pluginRequests")) {
                (Some(p), Some(spec), _) => {
                    let method = spec["method"].as_str().unwrap_or("");
                    p.push(
                        method,
                        support::fake_plugin::Answer::json(spec["answer"].clone()),
                    );
                    json!({"ok": true})
                }
                (Some(p), None, Some(_)) => {
                    let list: Vec<Value> = p
                        .requests()
                        .into_iter()
                        .map(|r| json!({"method": r.method, "path": r.path, "body": r.body}))
                        .collect();
                    json!({"requests": list})
                }
                _ => json!({"error": format!("unknown command: {line}")}),
            },
        };
        writeln!(out, "{answer}")?;
        out.flush()?;
    }
    Ok(())
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
    let server = FakeOpenAi::start(args.port, behavior.clone())?;
    if let Some(first) = first {
        server.push(first);
    }
    let plugin = args.plugin.then(|| FakePlugin::start(None));

    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "listening on {}", server.base_url())?;
    if let Some(p) = &plugin {
        writeln!(stdout, "plugin on {}", p.base_url())?;
    }
    stdout.flush()?;
    drop(stdout);
    if args.control {
        return control(&server, plugin.as_ref(), &behavior);
    }

    // The server runs on its own thread; keep it (and this process) alive
    // until the process is killed.
    loop {
        std::thread::park();
    }
}
