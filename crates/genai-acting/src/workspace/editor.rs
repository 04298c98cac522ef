//! The editor's side of the workspace tools: where a client holds the files (an ACP editor's
//! `fs/*`, a daemon client's `ReadTextFile`/`WriteTextFile`, an LSP client's
//! `workspace/applyEdit`) or runs commands (ACP's `terminal/*`), the tools read the editor's
//! buffers, unsaved changes included, write through the editor, and run commands in its
//! terminal.
//!
//! It owns only the trait a client's port implements; the workspace decides when to use it.
//! An editor must never be asked about a path the root did not resolve.

use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;

use super::command::CommandOutput;
use genai_base::error::{Error, Result};

/// Which call an editor request belongs to (ACP's session is the conversation).
#[derive(Debug, Clone)]
pub struct EditorCall {
    pub conversation_id: String,
    pub turn_id: String,
    pub call_id: String,
}

/// What a client does itself of the workspace tools' work.
#[async_trait]
pub trait Editor: Send + Sync {
    /// The client reads files: its buffers are what the model reads.
    fn reads(&self) -> bool;
    /// The client writes files: genai writes nothing itself.
    fn writes(&self) -> bool;
    /// Commands run in the client's terminal (by default they do not).
    fn runs_commands(&self) -> bool {
        false
    }
    /// The text the editor holds for `path` (absolute, existing on disk).
    async fn read_text(&self, call: &EditorCall, path: &Path) -> Result<String>;
    /// Replaces the whole text of `path` (absolute; it may not exist yet).
    async fn write_text(&self, call: &EditorCall, path: &Path, text: &str) -> Result<()>;
    /// Runs `sh -c command` in `cwd` in the client's terminal, killed after `timeout`; only
    /// asked of an editor that [`Editor::runs_commands`].
    async fn run_command(
        &self,
        _call: &EditorCall,
        _command: &str,
        _cwd: &Path,
        _timeout: Duration,
    ) -> Result<CommandOutput> {
        Err(Error::internal("this client runs no commands"))
    }
}
