//! The ACP agent's methods: each request of a client (`initialize`, `session/new`, `load`,
//! `list`, `resume`, `close`, `prompt`, `set_config_option`) and the `session/cancel`
//! notification, turned into calls on the core (`Framework`) and answered with the SDK's
//! types. Sessions are genai conversations in the shared history; their id is the
//! conversation id.
//!
//! It owns what this connection knows of its client (capabilities) and of the sessions it
//! opened. It must never run a turn itself (the core does), nor import the JSON-RPC daemon.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use agent_client_protocol_schema::v1::{
    AgentCapabilities, AuthMethod, AuthMethodAgent, AuthenticateRequest, AuthenticateResponse,
    CancelNotification, CloseSessionRequest, Implementation, InitializeRequest, InitializeResponse,
    ListSessionsRequest, ListSessionsResponse, LoadSessionRequest, LoadSessionResponse,
    McpCapabilities, McpServer, NewSessionRequest, NewSessionResponse, PromptCapabilities,
    PromptRequest, PromptResponse, ResumeSessionRequest, ResumeSessionResponse,
    SessionCapabilities, SessionCloseCapabilities, SessionInfo, SessionListCapabilities,
    SessionResumeCapabilities, SetSessionConfigOptionRequest, SetSessionConfigOptionResponse,
    SetSessionModeRequest, SetSessionModeResponse, StopReason,
};
use agent_client_protocol_schema::ProtocolVersion;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

use super::choices;
use super::commands;
use super::connection::{AcpError, Connection};
use super::content::{prompt_message, replay, FileReader};
use super::modes;
use super::port::{ClientOffers, SessionPort};
use genai_core::config::McpServerConfig;
use genai_core::error::ErrorKind;
use genai_core::feature::TurnOutcome;
use genai_core::session::{CancelTarget, ConversationSpec, Framework};
use genai_core::store::UtcTime;

/// genai's one auth method: its own keys and config.
const KEYS_METHOD: &str = "genai-keys";

/// Sessions per `session/list` page.
const PAGE_SIZE: usize = 50;

/// A session this connection opened.
struct OpenSession {
    cwd: String,
    /// The MCP servers its client brought (kept when the model or mode changes).
    mcp_servers: BTreeMap<String, McpServerConfig>,
    /// Stops the watch on its command files when the session is forgotten.
    _watch: tokio_util::sync::DropGuard,
}

pub(crate) struct AcpAgent {
    pub(crate) fw: Arc<Framework>,
    pub(crate) conn: Arc<Connection>,
    port: Arc<SessionPort>,
    /// The client offered `fs.readTextFile` in `initialize`.
    client_reads_files: AtomicBool,
    sessions: Mutex<HashMap<String, OpenSession>>,
}

/// A request's params as the SDK's type; -32602 naming what is wrong.
fn params<T: DeserializeOwned>(method: &str, p: Value) -> Result<T, AcpError> {
    serde_json::from_value(p)
        .map_err(|e| AcpError::invalid_params(format!("invalid params for {method}: {e}")))
}

fn answer(v: impl Serialize) -> Result<Value, AcpError> {
    serde_json::to_value(v).map_err(|e| {
        AcpError::new(
            agent_client_protocol_schema::v1::ErrorCode::InternalError,
            e.to_string(),
        )
    })
}

/// The stop reason of a finished turn.
pub(crate) fn stop_reason(outcome: &TurnOutcome) -> StopReason {
    if outcome
        .error
        .as_ref()
        .is_some_and(|e| e.kind == ErrorKind::Cancelled)
    {
        return StopReason::Cancelled;
    }
    match outcome.finish_reason.as_deref() {
        Some(r) if genai_core::format::at_token_limit(r) => StopReason::MaxTokens,
        Some("content_filter" | "refusal" | "SAFETY" | "guardrail_intervened") => {
            StopReason::Refusal
        }
        _ => StopReason::EndTurn,
    }
}

/// The client's MCP servers as genai's: stdio and streamable-HTTP ones (`mcpCapabilities`
/// says so).
fn mcp_servers(list: Vec<McpServer>) -> Result<BTreeMap<String, McpServerConfig>, AcpError> {
    let mut out = BTreeMap::new();
    for server in list {
        let (name, config) = match server {
            McpServer::Stdio(s) => (
                s.name,
                McpServerConfig {
                    command: s.command.to_string_lossy().into_owned(),
                    args: s.args,
                    env: s.env.into_iter().map(|e| (e.name, e.value)).collect(),
                    enabled: true,
                    ..Default::default()
                },
            ),
            McpServer::Http(h) => (
                h.name,
                McpServerConfig {
                    url: Some(h.url),
                    headers: h.headers.into_iter().map(|h| (h.name, h.value)).collect(),
                    enabled: true,
                    ..Default::default()
                },
            ),
            _ => {
                return Err(AcpError::invalid_params(
                    "genai runs MCP servers over stdio and streamable HTTP, not SSE (mcpCapabilities.sse is false)",
                ))
            }
        };
        if name.is_empty() || name.contains('.') {
            return Err(AcpError::invalid_params(format!(
                "the MCP server name `{name}` must be non-empty and without `.`"
            )));
        }
        if out.insert(name.clone(), config).is_some() {
            return Err(AcpError::invalid_params(format!(
                "two MCP servers are named `{name}`"
            )));
        }
    }
    Ok(out)
}

fn absolute(cwd: &Path) -> Result<String, AcpError> {
    if !cwd.is_absolute() {
        return Err(AcpError::invalid_params(format!(
            "cwd must be an absolute path, got `{}`",
            cwd.display()
        )));
    }
    Ok(cwd.to_string_lossy().into_owned())
}

impl AcpAgent {
    pub(crate) fn new(fw: Arc<Framework>, conn: Arc<Connection>) -> AcpAgent {
        AcpAgent {
            port: Arc::new(SessionPort::new(conn.clone())),
            fw,
            conn,
            client_reads_files: AtomicBool::new(false),
            sessions: Mutex::default(),
        }
    }

    /// Answers one request.
    pub(crate) async fn request(&self, method: &str, p: Value) -> Result<Value, AcpError> {
        match method {
            "initialize" => self.initialize(params(method, p)?),
            "authenticate" => self.authenticate(params(method, p)?),
            "session/new" => self.new_session(params(method, p)?),
            "session/load" => self.load_session(params(method, p)?),
            "session/resume" => self.resume_session(params(method, p)?),
            "session/list" => self.list_sessions(params(method, p)?),
            "session/close" => self.close_session(params(method, p)?),
            "session/prompt" => self.prompt(params(method, p)?).await,
            "session/set_config_option" => self.set_config_option(params(method, p)?),
            "session/set_mode" => self.set_mode(params(method, p)?),
            _ => Err(AcpError::new(
                agent_client_protocol_schema::v1::ErrorCode::MethodNotFound,
                format!("genai has no method `{method}`"),
            )),
        }
    }

    /// What follows a request's answer: a session just opened gets its slash commands.
    pub(crate) async fn after(&self, method: &str, session_id: Option<&str>) {
        if let ("session/new" | "session/load" | "session/resume", Some(id)) = (method, session_id)
        {
            let cwd = self.session_cwd(id);
            commands::announce(&self.fw, &self.conn, id, &cwd).await;
        }
    }

    /// Handles one notification; unknown ones are ignored, as JSON-RPC wants.
    pub(crate) fn notification(&self, method: &str, p: Value) {
        if method == "session/cancel" {
            match serde_json::from_value::<CancelNotification>(p) {
                Ok(c) => {
                    let target = CancelTarget {
                        conversation_id: Some(c.session_id.0.to_string()),
                        ..Default::default()
                    };
                    if let Err(e) = self.fw.cancel(&target) {
                        tracing::debug!("session/cancel: {}", e.message);
                    }
                }
                Err(e) => tracing::warn!("session/cancel with invalid params: {e}"),
            }
        }
    }

    fn initialize(&self, r: InitializeRequest) -> Result<Value, AcpError> {
        let caps = &r.client_capabilities;
        self.client_reads_files
            .store(caps.fs.read_text_file, Ordering::Relaxed);
        self.port.set_offers(ClientOffers {
            reads: caps.fs.read_text_file,
            writes: caps.fs.write_text_file,
            terminal: caps.terminal,
        });
        let capabilities = AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(PromptCapabilities::new().image(true).embedded_context(true))
            .mcp_capabilities(McpCapabilities::new().http(true))
            .session_capabilities(
                SessionCapabilities::new()
                    .list(SessionListCapabilities::new())
                    .resume(SessionResumeCapabilities::new())
                    .close(SessionCloseCapabilities::new()),
            );
        answer(
            InitializeResponse::new(ProtocolVersion::V1)
                .agent_capabilities(capabilities)
                .auth_methods(vec![AuthMethod::Agent(
                    AuthMethodAgent::new(KEYS_METHOD, "genai's keys").description(
                        "genai uses the keys of its config, the environment or the keyring \
                         (`genai keys set PROVIDER`), or a local model (`genai models pull demo`); \
                         this checks that a model is set up"
                            .to_string(),
                    ),
                )])
                .agent_info(Implementation::new("genai", env!("CARGO_PKG_VERSION")).title("genai")),
        )
    }

    /// `authenticate` with genai's one method: answers once a default model is set up, else
    /// says how to set one up.
    fn authenticate(&self, r: AuthenticateRequest) -> Result<Value, AcpError> {
        if &*r.method_id.0 != KEYS_METHOD {
            return Err(AcpError::invalid_params(format!(
                "no auth method `{}`; genai has `{KEYS_METHOD}`",
                r.method_id.0
            )));
        }
        let ready = self
            .fw
            .selector()
            .select(&genai_core::select::ModelChoice::Default)
            .and_then(|sel| self.fw.selector().provider(&sel).map(|_| ()));
        match ready {
            Ok(()) => answer(AuthenticateResponse::new()),
            Err(e) => Err(AcpError::new(
                agent_client_protocol_schema::v1::ErrorCode::AuthRequired,
                format!(
                    "{} (in a terminal: `genai keys set PROVIDER` stores a key, `genai models pull demo` installs a local model)",
                    e.message
                ),
            )),
        }
    }

    /// The folder session `id` works in (the process's when it is not open here).
    fn session_cwd(&self, id: &str) -> PathBuf {
        self.sessions
            .lock()
            .ok()
            .and_then(|s| s.get(id).map(|o| PathBuf::from(&o.cwd)))
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_default()
    }

    fn remember(&self, id: &str, cwd: String, mcp_servers: BTreeMap<String, McpServerConfig>) {
        self.port.set_root(id, Path::new(&cwd));
        let stop = tokio_util::sync::CancellationToken::new();
        commands::watch(
            self.fw.clone(),
            self.conn.clone(),
            id.to_string(),
            PathBuf::from(&cwd),
            stop.clone(),
        );
        if let Ok(mut s) = self.sessions.lock() {
            let watch = stop.drop_guard();
            s.insert(
                id.to_string(),
                OpenSession {
                    cwd,
                    mcp_servers,
                    _watch: watch,
                },
            );
        }
    }

    fn new_session(&self, r: NewSessionRequest) -> Result<Value, AcpError> {
        let cwd = absolute(&r.cwd)?;
        let servers = mcp_servers(r.mcp_servers)?;
        // An ACP agent acts: the workspace's tools, and the config's enabled sources with the
        // client's servers (which join them enabled).
        let tools = vec![
            genai_core::workspace::SOURCE.to_string(),
            genai_core::tools::toolbox::ENABLED.to_string(),
        ];
        let spec = ConversationSpec {
            cwd: Some(cwd.clone()),
            mcp_servers: servers.clone(),
            tools: Some(tools),
            ..Default::default()
        };
        let open = self.fw.create_conversation(spec, self.port.clone())?;
        self.remember(&open.conversation_id, cwd, servers);
        let options = choices::options(&self.fw, &open.conversation_id)?;
        let modes = modes::state(&self.fw, &open.conversation_id);
        answer(
            NewSessionResponse::new(open.conversation_id)
                .config_options(options)
                .modes(modes),
        )
    }

    /// Opens a stored session (`load` and `resume`); an unknown one is -32002.
    fn reopen(&self, id: &str, cwd: &Path, servers: Vec<McpServer>) -> Result<String, AcpError> {
        let cwd = absolute(cwd)?;
        let servers = mcp_servers(servers)?;
        let open = self
            .fw
            .resume_conversation_with(id, None, &servers, self.port.clone())
            .map_err(|e| match e.kind {
                ErrorKind::UnknownConversation => AcpError::not_found(format!("no session {id}")),
                _ => AcpError::from(e),
            })?;
        self.remember(&open.conversation_id, cwd, servers);
        Ok(open.conversation_id)
    }

    fn load_session(&self, r: LoadSessionRequest) -> Result<Value, AcpError> {
        let id = self.reopen(&r.session_id.0, &r.cwd, r.mcp_servers)?;
        let (_, messages) = self.fw.full_history(&id)?;
        for update in replay(&messages) {
            self.conn.update(&id, update);
        }
        let options = choices::options(&self.fw, &id)?;
        let modes = modes::state(&self.fw, &id);
        answer(
            LoadSessionResponse::new()
                .config_options(options)
                .modes(modes),
        )
    }

    fn resume_session(&self, r: ResumeSessionRequest) -> Result<Value, AcpError> {
        let id = self.reopen(&r.session_id.0, &r.cwd, r.mcp_servers)?;
        let options = choices::options(&self.fw, &id)?;
        let modes = modes::state(&self.fw, &id);
        answer(
            ResumeSessionResponse::new()
                .config_options(options)
                .modes(modes),
        )
    }

    fn close_session(&self, r: CloseSessionRequest) -> Result<Value, AcpError> {
        let id = r.session_id.0.to_string();
        let known = self
            .sessions
            .lock()
            .map(|mut s| s.remove(&id))
            .ok()
            .flatten();
        if known.is_none() || !self.fw.close_conversation(&id)? {
            return Err(AcpError::not_found(format!("no open session {id}")));
        }
        Ok(json!({}))
    }

    fn list_sessions(&self, r: ListSessionsRequest) -> Result<Value, AcpError> {
        let cwd = r.cwd.as_deref().map(absolute).transpose()?;
        let (records, next) =
            self.fw
                .list_conversations_in(cwd.as_deref(), PAGE_SIZE, r.cursor.as_deref())?;
        // Conversations of `genai ask` or the daemon have no directory: they show the agent's.
        let here = std::env::current_dir()
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap_or_else(|_| "/".into());
        let sessions = records
            .into_iter()
            .map(|c| {
                SessionInfo::new(c.id, c.cwd.unwrap_or_else(|| here.clone()))
                    .title((!c.title.is_empty()).then_some(c.title))
                    .updated_at(UtcTime::of(c.updated_at).rfc3339())
            })
            .collect();
        answer(ListSessionsResponse::new(sessions).next_cursor(next))
    }

    /// The session `id` if this connection opened it; -32002 otherwise.
    fn open_session(&self, id: &str) -> Result<String, AcpError> {
        let sessions = self.sessions.lock().map_err(|_| {
            AcpError::new(
                agent_client_protocol_schema::v1::ErrorCode::InternalError,
                "lock poisoned",
            )
        })?;
        sessions.get(id).map(|s| s.cwd.clone()).ok_or_else(|| {
            AcpError::not_found(format!(
                "no open session {id} (session/new or session/load it first)"
            ))
        })
    }

    async fn prompt(&self, r: PromptRequest) -> Result<Value, AcpError> {
        let id = r.session_id.0.to_string();
        self.open_session(&id)?;
        let files = FileReader {
            conn: &self.conn,
            session_id: &id,
            through_client: self.client_reads_files.load(Ordering::Relaxed),
            toolbox: self.fw.toolbox_of(&id).ok(),
            secrets: self
                .fw
                .context_secrets()
                .map_err(|e| AcpError::invalid_params(e.message))?,
        };
        let mut message = prompt_message(r.prompt, &files).await?;
        if let Some(force) = commands::undo_asked(&message) {
            self.undo(&id, force).await;
            return answer(PromptResponse::new(StopReason::EndTurn));
        }
        if commands::compact_asked(&message) {
            let text = match self.fw.compact_conversation(&id).await {
                Ok(c) => commands::compacted_text(&c),
                Err(e) => format!("genai: nothing was compacted: {}", e.message),
            };
            self.conn.update(
                &id,
                agent_client_protocol_schema::v1::SessionUpdate::AgentMessageChunk(
                    super::port::text_chunk(text),
                ),
            );
            return answer(PromptResponse::new(StopReason::EndTurn));
        }
        commands::expand(&self.fw, &id, &self.session_cwd(&id), &mut message).await?;
        // The session's updates go out through the port as the turn runs; its end answers.
        let outcome = self.fw.run_turn(&id, message, None)?.outcome().await;
        answer(PromptResponse::new(stop_reason(&outcome)))
    }

    /// `/undo [force]`: puts back the files of the session's newest turn that changed any,
    /// through the client when it holds them, and says what was done.
    async fn undo(&self, id: &str, force: bool) {
        let target = genai_core::checkpoint::UndoTarget {
            conversation: Some(id.to_string()),
            turn: None,
            project: None,
        };
        let undone = match self.port.holder(id) {
            Some(holder) => self.fw.undo_through(target, force, &holder).await,
            None => self.fw.undo(target, force),
        };
        let text = match undone {
            Ok(u) => commands::undone_text(&u),
            Err(e) => format!("genai: nothing was undone: {}", e.message),
        };
        self.conn.update(
            id,
            agent_client_protocol_schema::v1::SessionUpdate::AgentMessageChunk(
                super::port::text_chunk(text),
            ),
        );
    }

    fn set_mode(&self, r: SetSessionModeRequest) -> Result<Value, AcpError> {
        let id = r.session_id.0.to_string();
        self.open_session(&id)?;
        let mode = modes::parse(&r.mode_id.0)?;
        let now = self.fw.set_permission_mode(&id, mode)?;
        modes::announce(&self.conn, &id, now);
        answer(SetSessionModeResponse::new())
    }

    fn set_config_option(&self, r: SetSessionConfigOptionRequest) -> Result<Value, AcpError> {
        let id = r.session_id.0.to_string();
        self.open_session(&id)?;
        let servers = self
            .sessions
            .lock()
            .ok()
            .and_then(|s| s.get(&id).map(|o| o.mcp_servers.clone()))
            .unwrap_or_default();
        choices::set(
            &self.fw,
            &id,
            &r.config_id.0,
            &r.value,
            &servers,
            self.port.clone(),
        )?;
        let options = choices::options(&self.fw, &id)?;
        answer(SetSessionConfigOptionResponse::new(options))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_in_utc() {
        let rfc3339 = |ms| UtcTime::of(ms).rfc3339();
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(rfc3339(1_767_323_045_678), "2026-01-02T03:04:05.678Z");
        assert_eq!(rfc3339(-1), "1969-12-31T23:59:59.999Z");
    }
}
