//! A small MCP server for the tests (`tests/mcp.rs`): newline-delimited JSON-RPC 2.0 on stdin
//! and stdout with `initialize`, `notifications/initialized`, `ping`, `tools/list` and
//! `tools/call`. It is written by hand on purpose, so that the tests check genai's client (the
//! `rmcp` crate) against an independent reading of the protocol rather than against itself.
//!
//! Tools: `add {a, b}` answers the sum; `echo {text}` the text; `fail` a result with
//! `isError: true`; `slow {ms}` answers after `ms` milliseconds (from its own thread, so that other calls go on); `crash` exits with status 3 after a line
//! on stderr.
//!
//! Environment: `FAKE_MCP_PID_FILE` gets one line with the process id per start (appended);
//! `FAKE_MCP_DIE_ON_START=1` makes it write a line on stderr and exit with status 2 before it
//! reads anything; `FAKE_MCP_IGNORE_EOF=1` makes it stay after its stdin closes (only a kill ends it);
//! `FAKE_MCP_TOKEN`, when set, is what `echo` prefixes (to check `env`);
//! `FAKE_MCP_MORE_TOOLS=1` adds `shape {n}`, whose `outputSchema` wants `{double: number}` (it
//! answers `structuredContent` `{double: 2n}`, or a string for a negative `n`), and `grow`,
//! which adds the tool `grown` and sends `notifications/tools/list_changed`.

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{json, Value};

/// Set once `grow` was called: `grown` is listed.
static GROWN: AtomicBool = AtomicBool::new(false);

fn more_tools() -> bool {
    std::env::var("FAKE_MCP_MORE_TOOLS").is_ok_and(|v| v == "1")
}

fn main() {
    if let Some(path) = std::env::var_os("FAKE_MCP_PID_FILE") {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .expect("pid file");
        writeln!(f, "{}", std::process::id()).expect("pid file");
    }
    if std::env::var("FAKE_MCP_DIE_ON_START").is_ok_and(|v| v == "1") {
        eprintln!("fake-mcp-server: told to die on start");
        std::process::exit(2);
    }
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            eprintln!("fake-mcp-server: not JSON: {line}");
            continue;
        };
        let Some(id) = msg.get("id").cloned() else {
            continue; // a notification
        };
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        if msg["method"] == "tools/call" && params["name"] == "slow" {
            // Answered from its own thread, so other calls go on meanwhile.
            std::thread::spawn(move || {
                let ms = params["arguments"]["ms"].as_u64().unwrap_or(0);
                std::thread::sleep(Duration::from_millis(ms));
                answer(&id, Ok(text("done".to_string(), false)));
            });
            continue;
        }
        let result = match msg["method"].as_str().unwrap_or("") {
            "initialize" => Ok(json!({
                "protocolVersion": params["protocolVersion"].as_str().unwrap_or("2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake-mcp-server", "version": "0.1.0"}
            })),
            "ping" => Ok(json!({})),
            "tools/list" => Ok(json!({"tools": tools()})),
            "tools/call" => call(&params),
            other => Err((-32601, format!("no method {other}"))),
        };
        if !answer(&id, result) {
            break;
        }
        if msg["method"] == "tools/call" && params["name"] == "grow" {
            let note = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
            let mut out = std::io::stdout().lock();
            if writeln!(out, "{note}").and_then(|_| out.flush()).is_err() {
                break;
            }
        }
    }
    if std::env::var("FAKE_MCP_IGNORE_EOF").is_ok_and(|v| v == "1") {
        // A stubborn server that outlives its stdin: only a kill ends it.
        loop {
            std::thread::sleep(Duration::from_secs(60));
        }
    }
}

/// Writes one response line; false once stdout is gone.
fn answer(id: &Value, result: Result<Value, (i64, String)>) -> bool {
    let response = match result {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
        }
    };
    // `Stdout::lock` keeps the lines of concurrent answers whole.
    let mut out = std::io::stdout().lock();
    writeln!(out, "{response}")
        .and_then(|_| out.flush())
        .is_ok()
}

fn tools() -> Value {
    let object = |props: Value, required: Value| json!({"type": "object", "properties": props, "required": required});
    let mut tools = json!([
        {"name": "add", "description": "Adds two numbers.",
         "inputSchema": object(json!({"a": {"type": "number"}, "b": {"type": "number"}}), json!(["a", "b"]))},
        {"name": "echo", "description": "Says the text back.",
         "inputSchema": object(json!({"text": {"type": "string"}}), json!(["text"]))},
        {"name": "fail", "description": "Always fails.", "inputSchema": object(json!({}), json!([]))},
        {"name": "slow", "description": "Answers after `ms` milliseconds.",
         "inputSchema": object(json!({"ms": {"type": "integer"}}), json!(["ms"]))},
        {"name": "crash", "description": "Exits.", "inputSchema": object(json!({}), json!([]))}
    ]);
    let list = tools.as_array_mut().expect("a list");
    if more_tools() {
        list.push(
            json!({"name": "shape", "description": "Doubles n, as structured content.",
            "inputSchema": object(json!({"n": {"type": "number"}}), json!(["n"])),
            "outputSchema": object(json!({"double": {"type": "number"}}), json!(["double"]))}),
        );
        list.push(
            json!({"name": "grow", "description": "Adds the tool `grown`.",
            "inputSchema": object(json!({}), json!([]))}),
        );
    }
    if GROWN.load(Ordering::SeqCst) {
        list.push(
            json!({"name": "grown", "description": "Listed after `grow`.",
            "inputSchema": object(json!({}), json!([]))}),
        );
    }
    tools
}

fn text(t: String, is_error: bool) -> Value {
    json!({"content": [{"type": "text", "text": t}], "isError": is_error})
}

fn call(params: &Value) -> Result<Value, (i64, String)> {
    let args = &params["arguments"];
    match params["name"].as_str().unwrap_or("") {
        "add" => match (args["a"].as_f64(), args["b"].as_f64()) {
            (Some(a), Some(b)) => Ok(text(format!("{}", a + b), false)),
            _ => Err((-32602, "add needs numbers a and b".to_string())),
        },
        "echo" => {
            let prefix = std::env::var("FAKE_MCP_TOKEN").unwrap_or_default();
            Ok(text(
                format!("{prefix}{}", args["text"].as_str().unwrap_or("")),
                false,
            ))
        }
        "fail" => Ok(text("the fail tool failed, as it does".to_string(), true)),
        "shape" if more_tools() => {
            let n = args["n"].as_f64().unwrap_or(0.0);
            let structured = if n < 0.0 {
                json!({"double": "not a number"})
            } else {
                json!({"double": n * 2.0})
            };
            Ok(
                json!({"content": [{"type": "text", "text": structured.to_string()}],
                      "structuredContent": structured, "isError": false}),
            )
        }
        "grow" if more_tools() => {
            GROWN.store(true, Ordering::SeqCst);
            Ok(text("grown".to_string(), false))
        }
        "grown" if GROWN.load(Ordering::SeqCst) => Ok(text("I am new".to_string(), false)),
        "crash" => {
            eprintln!("fake-mcp-server: crashing as asked");
            std::process::exit(3);
        }
        other => Err((-32602, format!("no tool {other}"))),
    }
}
