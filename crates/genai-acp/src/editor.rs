//! The ACP editor's side of the workspace tools: when the client offered `fs.readTextFile`,
//! `fs.writeTextFile` or `terminal` in `initialize`, the tools read its buffers
//! (`fs/read_text_file`), write through it (`fs/write_text_file`) and run commands in its
//! terminal (`terminal/create`, shown in the tool call, then `terminal/wait_for_exit`,
//! `terminal/output`, `terminal/release`; `terminal/kill` on time-out or cancel). `/undo`
//! restores files the same way.
//!
//! It owns the mapping to those requests. It must never decide whether a call may run (the
//! guard has, before the workspace comes here), nor touch the disk but to learn whether a file
//! exists.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol_schema::v1::{
    CreateTerminalRequest, CreateTerminalResponse, KillTerminalRequest, ReadTextFileRequest,
    ReadTextFileResponse, ReleaseTerminalRequest, SessionUpdate, Terminal, TerminalExitStatus,
    TerminalId, TerminalOutputRequest, TerminalOutputResponse, ToolCallContent, ToolCallUpdate,
    ToolCallUpdateFields, WaitForTerminalExitRequest, WaitForTerminalExitResponse,
    WriteTextFileRequest,
};
use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::connection::Connection;
use super::port::{ClientOffers, SessionPort};
use genai_core::checkpoint::Holder;
use genai_core::error::{Error, ErrorKind, Result};
use genai_core::workspace::command::{CommandOutput, MAX_OUTPUT};
use genai_core::workspace::{Editor, EditorCall};

/// Sends `method` and reads its answer as `T`.
async fn ask<T: DeserializeOwned>(
    conn: &Connection,
    method: &str,
    params: impl Serialize,
) -> Result<T> {
    let answer = conn
        .request(method, params)
        .await
        .map_err(|e| Error::new(ErrorKind::FeatureError, format!("{method}: {}", e.message)))?;
    serde_json::from_value(answer).map_err(|e| {
        Error::new(
            ErrorKind::FeatureError,
            format!("the client's answer to {method} is not one: {e}"),
        )
    })
}

/// A terminal of the client, killed and released when dropped before its command ended (the
/// turn was cancelled).
struct OpenTerminal {
    conn: Arc<Connection>,
    session: String,
    id: TerminalId,
    done: bool,
}

impl Drop for OpenTerminal {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let (conn, session, id) = (self.conn.clone(), self.session.clone(), self.id.clone());
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let _ = conn
                    .request(
                        "terminal/kill",
                        KillTerminalRequest::new(session.clone(), id.clone()),
                    )
                    .await;
                let _ = conn
                    .request("terminal/release", ReleaseTerminalRequest::new(session, id))
                    .await;
            });
        }
    }
}

impl SessionPort {
    /// The text the client holds for `path`.
    async fn read_from_client(&self, session: &str, path: &Path) -> Result<String> {
        let request = ReadTextFileRequest::new(session.to_string(), path.to_path_buf());
        let answer: ReadTextFileResponse = ask(&self.conn, "fs/read_text_file", request).await?;
        Ok(answer.content)
    }

    async fn write_to_client(&self, session: &str, path: &Path, text: &str) -> Result<()> {
        let request = WriteTextFileRequest::new(session.to_string(), path.to_path_buf(), text);
        self.conn
            .request("fs/write_text_file", request)
            .await
            .map_err(|e| {
                Error::new(
                    ErrorKind::FeatureError,
                    format!("the editor did not write {}: {}", path.display(), e.message),
                )
            })?;
        Ok(())
    }

    /// The session's files as `/undo` sees them: the client's when it reads or writes them.
    pub(crate) fn holder<'a>(&'a self, session: &'a str) -> Option<impl Holder + 'a> {
        let offers = self.offers();
        (offers.reads || offers.writes).then_some(SessionFiles {
            port: self,
            session,
            offers,
        })
    }
}

#[async_trait]
impl Editor for SessionPort {
    fn reads(&self) -> bool {
        self.offers().reads
    }

    fn writes(&self) -> bool {
        self.offers().writes
    }

    fn runs_commands(&self) -> bool {
        self.offers().terminal
    }

    async fn read_text(&self, call: &EditorCall, path: &Path) -> Result<String> {
        self.read_from_client(&call.conversation_id, path).await
    }

    async fn write_text(&self, call: &EditorCall, path: &Path, text: &str) -> Result<()> {
        self.write_to_client(&call.conversation_id, path, text)
            .await
    }

    async fn run_command(
        &self,
        call: &EditorCall,
        command: &str,
        cwd: &Path,
        timeout: Duration,
    ) -> Result<CommandOutput> {
        let session = call.conversation_id.clone();
        let create = CreateTerminalRequest::new(session.clone(), "sh")
            .args(vec!["-c".to_string(), command.to_string()])
            .cwd(cwd.to_path_buf())
            .output_byte_limit(MAX_OUTPUT as u64);
        let created: CreateTerminalResponse = ask(&self.conn, "terminal/create", create).await?;
        let mut terminal = OpenTerminal {
            conn: self.conn.clone(),
            session: session.clone(),
            id: created.terminal_id.clone(),
            done: false,
        };
        // The client shows the live terminal in the tool call.
        let shown = ToolCallContent::Terminal(Terminal::new(created.terminal_id.clone()));
        self.conn.update(
            &session,
            SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                call.call_id.clone(),
                ToolCallUpdateFields::new().content(vec![shown]),
            )),
        );
        let id = created.terminal_id;
        let wait = WaitForTerminalExitRequest::new(session.clone(), id.clone());
        let waited = tokio::time::timeout(
            timeout,
            ask::<WaitForTerminalExitResponse>(&self.conn, "terminal/wait_for_exit", wait),
        )
        .await;
        let timed_out = waited.is_err();
        if timed_out {
            let kill = KillTerminalRequest::new(session.clone(), id.clone());
            if let Err(e) = self.conn.request("terminal/kill", kill).await {
                tracing::warn!("terminal/kill: {}", e.message);
            }
        }
        let output = TerminalOutputRequest::new(session.clone(), id.clone());
        let out: TerminalOutputResponse = ask(&self.conn, "terminal/output", output).await?;
        terminal.done = true;
        let release = ReleaseTerminalRequest::new(session, id);
        if let Err(e) = self.conn.request("terminal/release", release).await {
            tracing::debug!("terminal/release: {}", e.message);
        }
        let status: Option<TerminalExitStatus> = match waited {
            Ok(Ok(w)) => Some(w.exit_status),
            Ok(Err(e)) if out.exit_status.is_none() => return Err(e),
            _ => out.exit_status,
        };
        let mut notes = Vec::new();
        if out.truncated {
            notes.push("the editor kept only the end of the output".to_string());
        }
        if let Some(signal) = status.as_ref().and_then(|s| s.signal.clone()) {
            notes.push(format!("ended by signal {signal}"));
        }
        Ok(CommandOutput {
            text: out.output,
            exit: status
                .and_then(|s| s.exit_code)
                .and_then(|c| i32::try_from(c).ok()),
            signal: None,
            timed_out,
            timeout,
            notes,
        })
    }
}

/// A session's files, held by the client, for `/undo`.
struct SessionFiles<'a> {
    port: &'a SessionPort,
    session: &'a str,
    offers: ClientOffers,
}

#[async_trait]
impl Holder for SessionFiles<'_> {
    async fn read(&self, path: &Path) -> Result<Option<Vec<u8>>> {
        if !self.offers.reads {
            return genai_core::checkpoint::read_disk(path);
        }
        match self.port.read_from_client(self.session, path).await {
            Ok(text) => Ok(Some(text.into_bytes())),
            // The client cannot read what does not exist.
            Err(_) if !path.exists() => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn write(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        let text = String::from_utf8_lossy(bytes);
        if self.offers.writes {
            self.port.write_to_client(self.session, path, &text).await
        } else {
            genai_core::checkpoint::write_disk(path, bytes)
        }
    }
}
