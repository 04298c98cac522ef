//! An MCP server as a tool source: a configured program started as a child process that
//! speaks MCP (newline-delimited JSON-RPC) on its stdin and stdout, or a streamable-HTTP
//! server at a URL (its headers sent with every request), through the `rmcp` client. Its
//! tools are listed when it starts and again after it sends
//! `notifications/tools/list_changed`, and named `NAME.tool`; a call's text parts are joined
//! into the answer, images become image parts of the tool result (formats whose tool results
//! take images pass them on), and `isError` makes it a tool error the model sees. A tool that
//! declares an
//! `outputSchema` must answer `structuredContent` that the schema accepts, else the call is a
//! tool error naming what is wrong.
//!
//! It owns the child process, started with a minimal environment (`process`) plus the
//! config's `inherit_env` and `env`: its stdin and stdout are the MCP channel, its stderr goes to the
//! tracing log (its last line is kept for error messages), and it is killed when the server is
//! dropped or shut down. A server that dies (or an HTTP session that closes) is started again
//! once, on its next use; after a second death it is reported and left alone. It must never
//! write to the daemon's stdout (the JSON-RPC channel to the client), never show the values of
//! `env` or `headers` (they may be secrets), and never decide when a tool is called.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::CallToolRequestParams;
use rmcp::service::{NotificationContext, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::mcp_answer::answer_of;
use super::plugin::ModuleAnswer;
use super::Tool;
use crate::config::McpServerConfig;
use crate::error::{Error, ErrorKind, Result};

/// Seconds allowed for one tool call when the config says nothing.
pub(crate) const DEFAULT_TIMEOUT_SECS: u64 = 60;
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
    service: RunningService<RoleClient, Listener>,
    /// The process of a stdio server (an HTTP server has none).
    child: Option<tokio::sync::Mutex<Child>>,
    listed: Mutex<Listed>,
    /// Set when the server said its tool list changed: it is listed again before next use.
    stale: Arc<AtomicBool>,
    stderr_tail: Arc<Mutex<String>>,
}

/// The server's tools as last listed.
#[derive(Default, Clone)]
struct Listed {
    tools: Vec<Tool>,
    /// The `outputSchema` of the tools that declare one, by their name on the server.
    output_schemas: HashMap<String, Value>,
}

/// What genai hears from a server besides answers: that its tool list changed.
struct Listener {
    stale: Arc<AtomicBool>,
}

impl ClientHandler for Listener {
    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        self.stale.store(true, Ordering::SeqCst);
    }
}

impl Listed {
    fn of(server: &str, listed: Vec<rmcp::model::Tool>) -> Listed {
        let output_schemas = listed
            .iter()
            .filter_map(|t| {
                let schema = t.output_schema.as_ref()?;
                Some((t.name.to_string(), Value::Object((**schema).clone())))
            })
            .collect();
        let tools = listed
            .into_iter()
            .map(|t| Tool {
                name: format!("{server}.{}", t.name),
                description: t.description.map(|d| d.to_string()).unwrap_or_default(),
                input_schema: Value::Object((*t.input_schema).clone()),
                source: format!("mcp:{server}"),
                read_only: t
                    .annotations
                    .as_ref()
                    .and_then(|a| a.read_only_hint)
                    .unwrap_or(false),
            })
            .collect();
        Listed {
            tools,
            output_schemas,
        }
    }
}

fn server_error(name: &str, message: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::FeatureError,
        format!("MCP server `{name}`: {message}"),
    )
}

impl McpServer {
    pub(crate) fn new(name: &str, config: McpServerConfig) -> McpServer {
        McpServer {
            name: name.to_string(),
            config,
            state: tokio::sync::Mutex::new(State::default()),
        }
    }

    pub(crate) fn enabled(&self) -> bool {
        self.config.enabled
    }

    /// The server's name in the config.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The MCP session with the running server, starting it if needed.
    pub(super) async fn peer(&self) -> Result<rmcp::Peer<RoleClient>> {
        Ok(self.running().await?.service.peer().clone())
    }

    /// The server's tools, starting it if needed.
    pub(crate) async fn tools(&self) -> Result<Vec<Tool>> {
        let running = self.running().await?;
        Ok(self.listed(&running).await.tools)
    }

    /// The tools of `running`, listed again first when the server said they changed (a failed
    /// listing keeps the last list and tries again next time).
    async fn listed(&self, running: &Running) -> Listed {
        if running.stale.swap(false, Ordering::SeqCst) {
            match running.service.peer().list_all_tools().await {
                Ok(tools) => {
                    let fresh = Listed::of(&self.name, tools);
                    tracing::info!(server = %self.name, tools = fresh.tools.len(), "MCP server's tools listed again");
                    if let Ok(mut l) = running.listed.lock() {
                        *l = fresh;
                    }
                }
                Err(e) => {
                    running.stale.store(true, Ordering::SeqCst);
                    tracing::warn!(server = %self.name, "listing the changed tools failed: {e}");
                }
            }
        }
        running.listed.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// The running server, started now if it is not running and may be (again). A server
    /// found dead since its last use counts as a death.
    async fn running(&self) -> Result<Arc<Running>> {
        let mut state = self.state.lock().await;
        if let Some(running) = state.running.clone() {
            let exited = match &running.child {
                Some(child) => child.lock().await.try_wait().ok().flatten().is_some(),
                None => false,
            };
            if !exited && !running.service.peer().is_transport_closed() {
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

    /// Connects to a streamable-HTTP server, initializes the session and lists the tools.
    async fn start_http(&self, generation: u64, url: &str) -> Result<Running> {
        // The HTTP client takes rustls's process-wide crypto provider; ring is genai's (set
        // once, so a second call does nothing).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
        let mut headers = HashMap::new();
        for (name, value) in &self.config.headers {
            if name.eq_ignore_ascii_case("authorization") {
                let token = value.strip_prefix("Bearer ").unwrap_or(value);
                config = config.auth_header(token.to_string());
                continue;
            }
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| server_error(&self.name, format!("`{name}` is not a header name")))?;
            // The value may be a secret: the error names the header only.
            let value = HeaderValue::from_str(value).map_err(|_| {
                server_error(
                    &self.name,
                    format!("the value of header `{name}` is not valid"),
                )
            })?;
            headers.insert(name, value);
        }
        let transport = StreamableHttpClientTransport::from_config(config.custom_headers(headers));
        let stale = Arc::new(AtomicBool::new(false));
        let failure = format!("the MCP handshake with {url} failed");
        let started = Self::handshake(transport, stale.clone(), &failure);
        let (service, listed) = match tokio::time::timeout(START_TIMEOUT, started).await {
            Ok(Ok(started)) => started,
            Ok(Err(why)) => return Err(server_error(&self.name, why)),
            Err(_) => {
                return Err(server_error(
                    &self.name,
                    format!("{url} did not answer within {} s", START_TIMEOUT.as_secs()),
                ))
            }
        };
        tracing::info!(server = %self.name, %url, "MCP server connected");
        Ok(Running {
            generation,
            service,
            child: None,
            listed: Mutex::new(Listed::of(&self.name, listed)),
            stale,
            stderr_tail: Arc::default(),
        })
    }

    /// Spawns the program (or connects to the URL), initializes the session and lists the
    /// tools.
    async fn start(&self, generation: u64) -> Result<Running> {
        if let Some(url) = &self.config.url {
            return self.start_http(generation, url).await;
        }
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
        let stale = Arc::new(AtomicBool::new(false));
        let failure = "the MCP handshake failed (is it an MCP server?)";
        let started = Self::handshake((lines, stdin), stale.clone(), failure);
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
        tracing::info!(server = %self.name, pid = ?child.id(), "MCP server started");
        Ok(Running {
            generation,
            service,
            child: Some(tokio::sync::Mutex::new(child)),
            listed: Mutex::new(Listed::of(&self.name, listed)),
            stale,
            stderr_tail,
        })
    }

    /// Calls `tool` (its name on the server) with a JSON object of arguments.
    pub(crate) async fn call(&self, tool: &str, arguments: &Value) -> Result<ModuleAnswer> {
        let running = self.running().await?;
        let listed = self.listed(&running).await;
        if !listed.tools.iter().any(|t| tool_name(t) == tool) {
            let names: Vec<&str> = listed.tools.iter().map(tool_name).collect();
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
            Ok(result) => Ok(answer_of(tool, &result, listed.output_schemas.get(tool))),
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

    /// Starts the MCP session over `transport` (`initialize`, then `tools/list`); a failed
    /// handshake is `failure` and the reason.
    async fn handshake<T, E, A>(
        transport: T,
        stale: Arc<AtomicBool>,
        failure: &str,
    ) -> std::result::Result<(RunningService<RoleClient, Listener>, Vec<rmcp::model::Tool>), String>
    where
        T: rmcp::transport::IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let service = Listener { stale }
            .serve(transport)
            .await
            .map_err(|e| format!("{failure}: {e}"))?;
        let tools = service
            .peer()
            .list_all_tools()
            .await
            .map_err(|e| format!("tools/list failed: {e}"))?;
        Ok((service, tools))
    }

    /// `why`, with the child's exit status and its last stderr line when there are any.
    async fn why_dead(&self, running: &Running, why: String) -> String {
        match &running.child {
            Some(child) => describe_exit(&mut *child.lock().await, &running.stderr_tail, why).await,
            None => why,
        }
    }

    /// Ends the session and the child: stdin is closed, then the child is killed if it is
    /// still there after a moment.
    pub(crate) async fn shutdown(&self) {
        let Some(running) = self.state.lock().await.running.take() else {
            return;
        };
        running.service.cancellation_token().cancel();
        let Some(child) = &running.child else {
            return;
        };
        let mut child = child.lock().await;
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
