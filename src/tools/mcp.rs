//! An MCP server as a tool source: a configured program started as a child process
//! that speaks MCP (newline-delimited JSON-RPC) on its stdin and stdout, through the `rmcp`
//! client. Its tools are listed once when it starts and named `NAME.tool`; a call's text parts
//! are joined into the answer, and `isError` makes it a tool error the model sees.
//!
//! It owns the child process, started with a minimal environment (`process`) plus the
//! config's `inherit_env` and `env`: its stdin and stdout are the MCP channel, its stderr goes
//! to the tracing log (its last line is kept for error messages), and it is killed when the
//! server is dropped or shut down. A server that dies is started again once, on its next use; after a
//! second death it is reported and left alone. It must never write to the daemon's stdout (the
//! JSON-RPC channel to the client), never show the values of `env` (they may be secrets), and
//! never decide when a tool is called.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ContentBlock};
use rmcp::service::{RunningService, ServiceError};
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::plugin::ModuleAnswer;
use super::Tool;
use crate::config::McpServerConfig;
use crate::error::{Error, ErrorKind, Result};

/// Seconds allowed for one tool call when the config says nothing.
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;
/// Seconds allowed to start a server: spawn, `initialize` and `tools/list`.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How many times a server that died is started again.
const RESTARTS: u32 = 1;

/// One configured MCP server, started on first use.
pub struct McpServer {
    name: String,
    config: McpServerConfig,
    state: tokio::sync::Mutex<State>,
}

#[derive(Default)]
struct State {
    running: Option<Arc<Running>>,
    /// How many times it was started after it died.
    restarts: u32,
    /// Why it last died, once it died more often than it may be restarted.
    gave_up: Option<String>,
    /// Bumped at each start, so that a failure is charged to the process that had it.
    generation: u64,
}

/// A started server: the MCP session, the child and what it said on stderr.
struct Running {
    generation: u64,
    service: RunningService<RoleClient, ()>,
    child: tokio::sync::Mutex<Child>,
    tools: Vec<Tool>,
    stderr_tail: Arc<Mutex<String>>,
}

fn server_error(name: &str, message: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::FeatureError,
        format!("MCP server `{name}`: {message}"),
    )
}

impl McpServer {
    pub fn new(name: &str, config: McpServerConfig) -> McpServer {
        McpServer {
            name: name.to_string(),
            config,
            state: tokio::sync::Mutex::new(State::default()),
        }
    }

    pub fn enabled(&self) -> bool {
        self.config.enabled
    }

    /// The server's tools, starting it if needed.
    pub async fn tools(&self) -> Result<Vec<Tool>> {
        Ok(self.running().await?.tools.clone())
    }

    /// The running server, started now if it is not running and may be (again). A server
    /// found dead since its last use counts as a death.
    async fn running(&self) -> Result<Arc<Running>> {
        let mut state = self.state.lock().await;
        if let Some(running) = state.running.clone() {
            let exited = running.child.lock().await.try_wait().ok().flatten();
            if exited.is_none() && !running.service.peer().is_transport_closed() {
                return Ok(running);
            }
            let why = self
                .why_dead(&running, "it exited while idle".to_string())
                .await;
            self.record_death(&mut state, &running, &why);
        }
        if let Some(why) = &state.gave_up {
            return Err(server_error(
                &self.name,
                format!("it died again after a restart ({why}); it is not restarted any more"),
            ));
        }
        state.generation += 1;
        let running = Arc::new(self.start(state.generation).await?);
        state.running = Some(running.clone());
        Ok(running)
    }

    /// Spawns the program, initializes the session and lists the tools.
    async fn start(&self, generation: u64) -> Result<Running> {
        let c = &self.config;
        let mut command = Command::new(&c.command);
        command
            .args(&c.args)
            .env_clear()
            .envs(crate::process::minimal_env(&c.inherit_env))
            .envs(&c.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|e| {
            let why = if e.kind() == std::io::ErrorKind::NotFound {
                "command not found".to_string()
            } else {
                e.to_string()
            };
            server_error(&self.name, format!("cannot start `{}`: {why}", c.command))
        })?;
        let stderr_tail = Arc::new(Mutex::new(String::new()));
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(log_stderr(self.name.clone(), stderr, stderr_tail.clone()));
        }
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            return Err(Error::internal("a child process without piped stdio"));
        };
        let (lines, relayed) = tokio::io::simplex(64 * 1024);
        let (bad_tx, bad_rx) = tokio::sync::oneshot::channel();
        tokio::spawn(relay_stdout(self.name.clone(), stdout, relayed, bad_tx));
        let started = async {
            let service = ()
                .serve((lines, stdin))
                .await
                .map_err(|e| format!("the MCP handshake failed (is it an MCP server?): {e}"))?;
            let tools = service
                .peer()
                .list_all_tools()
                .await
                .map_err(|e| format!("tools/list failed: {e}"))?;
            Ok::<_, String>((service, tools))
        };
        // A line that is not JSON-RPC while starting: not an MCP server, no need to wait.
        let started = async {
            tokio::select! {
                outcome = started => outcome,
                Ok(line) = bad_rx => Err(format!(
                    "it is not an MCP server: it wrote a line that is not JSON-RPC on stdout: {line}"
                )),
            }
        };
        let outcome = tokio::time::timeout(START_TIMEOUT, started).await;
        let (service, listed) = match outcome {
            Ok(Ok(started)) => started,
            Ok(Err(why)) => {
                let why = describe_exit(&mut child, &stderr_tail, why).await;
                return Err(server_error(&self.name, why));
            }
            Err(_) => {
                let _ = child.start_kill();
                return Err(server_error(
                    &self.name,
                    format!(
                        "it did not finish starting within {} s",
                        START_TIMEOUT.as_secs()
                    ),
                ));
            }
        };
        let tools = listed
            .into_iter()
            .map(|t| Tool {
                name: format!("{}.{}", self.name, t.name),
                description: t.description.map(|d| d.to_string()).unwrap_or_default(),
                input_schema: Value::Object((*t.input_schema).clone()),
                source: format!("mcp:{}", self.name),
            })
            .collect();
        tracing::info!(server = %self.name, pid = ?child.id(), "MCP server started");
        Ok(Running {
            generation,
            service,
            child: tokio::sync::Mutex::new(child),
            tools,
            stderr_tail,
        })
    }

    /// Calls `tool` (its name on the server) with a JSON object of arguments.
    pub async fn call(&self, tool: &str, arguments: &Value) -> Result<ModuleAnswer> {
        let running = self.running().await?;
        if !running.tools.iter().any(|t| tool_name(t) == tool) {
            let names: Vec<&str> = running.tools.iter().map(tool_name).collect();
            return Err(server_error(
                &self.name,
                format!("no tool `{tool}`; it has: {}", names.join(", ")),
            ));
        }
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = arguments.as_object().cloned();
        let secs = self
            .config
            .timeout_secs
            .filter(|s| *s > 0)
            .unwrap_or(DEFAULT_TIMEOUT_SECS);
        let call = running.service.peer().call_tool(params);
        let result = match tokio::time::timeout(Duration::from_secs(secs), call).await {
            Ok(result) => result,
            Err(_) => {
                return Err(Error::new(
                    ErrorKind::Timeout,
                    format!(
                        "MCP server `{}`: `{tool}` did not answer within {secs} s",
                        self.name
                    ),
                ))
            }
        };
        match result {
            Ok(result) => {
                let text: Vec<String> = result
                    .content
                    .iter()
                    .filter_map(|part| match part {
                        ContentBlock::Text(t) => Some(t.text.clone()),
                        _ => None,
                    })
                    .collect();
                let mut text = text.join("\n");
                if text.is_empty() {
                    if let Some(structured) = &result.structured_content {
                        text = structured.to_string();
                    }
                }
                Ok(ModuleAnswer {
                    text,
                    is_error: result.is_error.unwrap_or(false),
                    ..ModuleAnswer::default()
                })
            }
            Err(ServiceError::McpError(e)) => Err(server_error(
                &self.name,
                format!("`{tool}` failed: {} (code {})", e.message, e.code.0),
            )),
            Err(e @ (ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                Err(self.died(&running, e.to_string()).await)
            }
            Err(e) => Err(server_error(&self.name, format!("`{tool}` failed: {e}"))),
        }
    }

    /// Records that the server behind `running` died during a call, and says so.
    async fn died(&self, running: &Arc<Running>, why: String) -> Error {
        let why = self.why_dead(running, why).await;
        let mut state = self.state.lock().await;
        self.record_death(&mut state, running, &why);
        let next = if state.gave_up.is_some() {
            "it is not restarted any more"
        } else {
            "it is restarted on its next use"
        };
        server_error(&self.name, format!("it died ({why}); {next}"))
    }

    /// Forgets `running` if it is still the current process, and charges its death: the first
    /// is restarted, the next one gives up.
    fn record_death(&self, state: &mut State, running: &Running, why: &str) {
        let current = state
            .running
            .as_ref()
            .is_some_and(|r| r.generation == running.generation);
        if !current {
            return;
        }
        state.running = None;
        tracing::warn!(server = %self.name, "MCP server died: {why}");
        if state.restarts < RESTARTS {
            state.restarts += 1;
        } else {
            state.gave_up = Some(why.to_string());
        }
    }

    /// `why`, with the child's exit status and its last stderr line when there are any.
    async fn why_dead(&self, running: &Running, why: String) -> String {
        let mut child = running.child.lock().await;
        describe_exit(&mut child, &running.stderr_tail, why).await
    }

    /// Ends the session and the child: stdin is closed, then the child is killed if it is
    /// still there after a moment.
    pub async fn shutdown(&self) {
        let Some(running) = self.state.lock().await.running.take() else {
            return;
        };
        running.service.cancellation_token().cancel();
        let mut child = running.child.lock().await;
        if tokio::time::timeout(Duration::from_secs(2), child.wait())
            .await
            .is_err()
        {
            let _ = child.kill().await;
        }
    }
}

/// `why`, with the child's exit status (once it exits, or killed after a moment) and its last
/// stderr line when there is one.
async fn describe_exit(child: &mut Child, stderr_tail: &Mutex<String>, why: String) -> String {
    let status = match tokio::time::timeout(Duration::from_secs(2), child.wait()).await {
        Ok(Ok(status)) => Some(status.to_string()),
        _ => {
            let _ = child.kill().await;
            None
        }
    };
    // The stderr reader may still be on its last line.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let last = stderr_tail.lock().map(|s| s.clone()).unwrap_or_default();
    let mut out = why;
    if let Some(status) = status {
        out.push_str(&format!(", {status}"));
    }
    if !last.is_empty() {
        out.push_str(&format!(", last stderr line: {last}"));
    }
    out
}

/// A tool's name on its server (without the `NAME.` prefix).
fn tool_name(tool: &Tool) -> &str {
    tool.name.split_once('.').map_or(&tool.name, |(_, t)| t)
}

/// Passes the server's stdout on to the MCP client line by line, keeping only JSON lines: the
/// first other line goes to `bad` (a start fails on it), later ones are logged and dropped.
/// The end of its stdout ends `to`, which the client sees as the transport closing.
async fn relay_stdout(
    name: String,
    stdout: tokio::process::ChildStdout,
    mut to: tokio::io::WriteHalf<tokio::io::SimplexStream>,
    bad: tokio::sync::oneshot::Sender<String>,
) {
    use tokio::io::AsyncWriteExt;
    let mut bad = Some(bad);
    let mut lines = BufReader::new(stdout).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if line.trim().is_empty() {
            continue;
        }
        if serde_json::from_str::<Value>(&line).is_err() {
            let shown: String = line.chars().take(200).collect();
            tracing::warn!(server = %name, "MCP server wrote a line that is not JSON: {shown}");
            if let Some(bad) = bad.take() {
                let _ = bad.send(shown);
            }
            continue;
        }
        if to.write_all(line.as_bytes()).await.is_err() || to.write_all(b"\n").await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

/// Copies the server's stderr to the log, line by line, keeping the last line.
async fn log_stderr(name: String, stderr: tokio::process::ChildStderr, tail: Arc<Mutex<String>>) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let line = line.trim_end().to_string();
        if line.is_empty() {
            continue;
        }
        tracing::debug!(server = %name, "MCP server stderr: {line}");
        if let Ok(mut t) = tail.lock() {
            *t = line.chars().take(300).collect();
        }
    }
}
