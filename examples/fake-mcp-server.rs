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
//! which adds the tool `grown` and sends `notifications/tools/list_changed`, and `picture`,
//! which answers a text and a 1x1 PNG image; it then also offers the resource
//! `memo://greeting` and the prompt `review {code}`.
//!
//! With `--http` it is a streamable-HTTP MCP server instead: it prints
//! `listening on http://127.0.0.1:PORT/mcp` and answers each JSON-RPC `POST /mcp` with a JSON
//! body (202 for notifications; a `GET` for a server stream gets 405, as the transport allows).
//! With `FAKE_MCP_HTTP_KEY` set, a request without that `X-Test-Key` header gets 401.

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{json, Value};

/// The image `picture` answers: a 1x1 PNG.
const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

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
    if std::env::args().any(|a| a == "--http") {
        return serve_http();
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
        if !answer(&id, result_of(&msg, &params)) {
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

/// The result of one request.
fn result_of(msg: &Value, params: &Value) -> Result<Value, (i64, String)> {
    match msg["method"].as_str().unwrap_or("") {
        "initialize" => Ok(json!({
            "protocolVersion": params["protocolVersion"].as_str().unwrap_or("2025-06-18"),
            "capabilities": if more_tools() {
                json!({"tools": {"listChanged": true}, "resources": {}, "prompts": {}})
            } else {
                json!({"tools": {}})
            },
            "serverInfo": {"name": "fake-mcp-server", "version": "0.1.0"}
        })),
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({"tools": tools()})),
        "tools/call" => call(params),
        "resources/list" if more_tools() => Ok(json!({"resources": [
            {"uri": "memo://greeting", "name": "greeting", "description": "A greeting.", "mimeType": "text/plain"}
        ]})),
        "resources/read" if more_tools() && params["uri"] == "memo://greeting" => Ok(json!({
            "contents": [{"uri": "memo://greeting", "mimeType": "text/plain", "text": "Hello from a resource"}]
        })),
        "resources/read" => Err((-32002, format!("no resource {}", params["uri"]))),
        "prompts/list" if more_tools() => Ok(json!({"prompts": [
            {"name": "review", "description": "Asks for a code review.",
             "arguments": [{"name": "code", "description": "The code.", "required": true}]}
        ]})),
        "prompts/get" if more_tools() && params["name"] == "review" => Ok(json!({
            "messages": [{"role": "user", "content": {"type": "text",
                "text": format!("Review this code: {}", params["arguments"]["code"].as_str().unwrap_or(""))}}]
        })),
        other => Err((-32601, format!("no method {other}"))),
    }
}

/// The JSON-RPC response to `id`.
fn response(id: &Value, result: Result<Value, (i64, String)>) -> Value {
    match result {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
        }
    }
}

/// Serves MCP's streamable-HTTP transport on loopback, one thread per connection, until killed.
fn serve_http() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("an address").port();
    println!("listening on http://127.0.0.1:{port}/mcp");
    let _ = std::io::stdout().flush();
    for stream in listener.incoming().flatten() {
        std::thread::spawn(move || {
            let _ = http_connection(stream);
        });
    }
}

/// Answers the requests of one HTTP/1.1 connection.
fn http_connection(stream: std::net::TcpStream) -> std::io::Result<()> {
    use std::io::Read;
    let mut reader = std::io::BufReader::new(stream.try_clone()?);
    let mut out = stream;
    let key = std::env::var("FAKE_MCP_HTTP_KEY").ok();
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line)? == 0 {
            return Ok(());
        }
        let (mut length, mut key_ok) = (0usize, key.is_none());
        loop {
            let mut header = String::new();
            reader.read_line(&mut header)?;
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
                if name == "content-length" {
                    length = value.parse().unwrap_or(0);
                }
                if name == "x-test-key" && key.as_deref() == Some(value) {
                    key_ok = true;
                }
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        let (status, body) = if !key_ok {
            ("401 Unauthorized", String::new())
        } else if !request_line.starts_with("POST ") {
            ("405 Method Not Allowed", String::new())
        } else {
            match serde_json::from_slice::<Value>(&body) {
                Err(_) => ("400 Bad Request", String::new()),
                Ok(msg) => match msg.get("id").cloned() {
                    None => ("202 Accepted", String::new()),
                    Some(id) => {
                        let params = msg.get("params").cloned().unwrap_or(Value::Null);
                        (
                            "200 OK",
                            response(&id, result_of(&msg, &params)).to_string(),
                        )
                    }
                },
            }
        };
        let kind = if body.is_empty() {
            ""
        } else {
            "Content-Type: application/json\r\n"
        };
        write!(
            out,
            "HTTP/1.1 {status}\r\n{kind}Content-Length: {}\r\n\r\n{body}",
            body.len()
        )?;
        out.flush()?;
    }
}

/// Writes one response line; false once stdout is gone.
fn answer(id: &Value, result: Result<Value, (i64, String)>) -> bool {
    let response = response(id, result);
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
        list.push(
            json!({"name": "picture", "description": "Answers an image.",
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
        "picture" if more_tools() => Ok(json!({"content": [
            {"type": "text", "text": "a red dot"},
            {"type": "image", "mimeType": "image/png", "data": PNG}
        ], "isError": false})),
        "grown" if GROWN.load(Ordering::SeqCst) => Ok(text("I am new".to_string(), false)),
        "crash" => {
            eprintln!("fake-mcp-server: crashing as asked");
            std::process::exit(3);
        }
        other => Err((-32602, format!("no tool {other}"))),
    }
}
