//! The workspace tools through the editor: a file the editor has open is read from its text
//! (unsaved changes included), and when the client applies workspace edits
//! (`workspace.applyEdit`), an edit or a write is sent as one `workspace/applyEdit` replacing
//! the file's whole text, so the editor's undo and dirty state stay its own. A file that does
//! not exist yet is created on the disk (an LSP client cannot be assumed to create files).
//!
//! It owns the mapping to those messages. It must never decide whether a call may run (the
//! guard has), nor write a file the editor can edit.

use std::collections::HashMap;
use std::path::Path;

use async_trait::async_trait;
use tower_lsp_server::ls_types::{Position, Range, TextEdit, Uri, WorkspaceEdit};

use super::documents;
use super::port::LspPort;
use genai_core::error::{Error, ErrorKind, Result};
use genai_core::workspace::{Editor, EditorCall};

fn uri_of(path: &Path) -> Result<Uri> {
    Uri::from_file_path(path)
        .ok_or_else(|| Error::invalid_params(format!("{} has no file URI", path.display())))
}

impl LspPort {
    /// The text the editor has open for `path`, if it has.
    fn open_text(&self, path: &Path) -> Option<String> {
        let uri = uri_of(path).ok()?;
        let docs = self.docs.lock().ok()?;
        docs.get(uri.as_str()).map(|d| d.text.clone())
    }
}

#[async_trait]
impl Editor for LspPort {
    fn reads(&self) -> bool {
        true
    }

    fn writes(&self) -> bool {
        self.applies_edits()
    }

    async fn read_text(&self, _: &EditorCall, path: &Path) -> Result<String> {
        match self.open_text(path) {
            Some(text) => Ok(text),
            None => std::fs::read_to_string(path)
                .map_err(|e| Error::invalid_params(format!("cannot read {}: {e}", path.display()))),
        }
    }

    async fn write_text(&self, _: &EditorCall, path: &Path, text: &str) -> Result<()> {
        let current = match self.open_text(path) {
            Some(open) => open,
            None if path.exists() => std::fs::read_to_string(path).map_err(|e| {
                Error::invalid_params(format!("cannot read {}: {e}", path.display()))
            })?,
            None => {
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| {
                        Error::invalid_params(format!("cannot create {}: {e}", parent.display()))
                    })?;
                }
                return std::fs::write(path, text).map_err(|e| {
                    Error::invalid_params(format!("cannot write {}: {e}", path.display()))
                });
            }
        };
        let whole = Range::new(
            Position::new(0, 0),
            documents::position(&current, current.len()),
        );
        let mut changes = HashMap::new();
        changes.insert(uri_of(path)?, vec![TextEdit::new(whole, text.to_string())]);
        let client = self
            .editor
            .as_ref()
            .ok_or_else(|| Error::internal("no editor to apply the edit"))?;
        let answer = client
            .apply_edit(WorkspaceEdit {
                changes: Some(changes),
                ..Default::default()
            })
            .await
            .map_err(|e| {
                Error::new(
                    ErrorKind::FeatureError,
                    format!(
                        "the editor did not answer workspace/applyEdit: {}",
                        e.message
                    ),
                )
            })?;
        if !answer.applied {
            return Err(Error::new(
                ErrorKind::FeatureError,
                format!(
                    "the editor did not apply the edit{}",
                    answer
                        .failure_reason
                        .map(|r| format!(": {r}"))
                        .unwrap_or_default()
                ),
            ));
        }
        Ok(())
    }
}
