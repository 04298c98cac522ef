//! Undo: a turn's files put back as they were before it, all or nothing, from the disk or
//! through whoever else holds them (an editor, [`Holder`]). A file changed since the turn is
//! refused, naming it, unless forced.
//!
//! It owns the checks and the restore plan both paths share. It must never delete what the
//! turn did not create.

use std::fs;
use std::path::{Path, PathBuf};

use rusqlite::{params, TransactionBehavior};

use super::files::{self, io_error, sha256_hex, State};
use super::index::{self, Change};
use super::{shown, Checkpoints, UndoAction, UndoTarget, Undone, UndoneFile};
use genai_base::error::{Error, ErrorKind, Result};
use genai_base::sqlite::now_ms;

/// Whoever holds the files undo restores, when not the disk: an editor.
#[async_trait::async_trait]
pub trait Holder: Send + Sync {
    /// The file's bytes as the holder has them (`None`: no such file).
    async fn read(&self, path: &Path) -> Result<Option<Vec<u8>>>;
    /// Replaces the file's whole content.
    async fn write(&self, path: &Path, bytes: &[u8]) -> Result<()>;
}

/// A file's bytes on the disk (`None`: no such file), for a [`Holder`] that reads the disk.
pub fn read_disk(path: &Path) -> Result<Option<Vec<u8>>> {
    Ok(files::read_file(path)?.map(|(bytes, _)| bytes))
}

/// Replaces a file's bytes on the disk, keeping its mode, for a [`Holder`] that writes it.
pub fn write_disk(path: &Path, bytes: &[u8]) -> Result<()> {
    files::write_atomically(path, bytes, files::mode_at(path))
}

/// How one file goes back to its state before the turn.
enum Restore {
    Unchanged,
    /// The turn created it.
    Remove,
    /// Its old bytes (by hash) and mode.
    Write {
        hash: String,
        mode: Option<u32>,
    },
}

/// What putting `change` back from `current` takes.
fn restoring(change: &Change, current: &State) -> Result<Restore> {
    match &change.before {
        None => match current {
            State::Absent => Ok(Restore::Unchanged),
            State::File { .. } => Ok(Restore::Remove),
            State::Folder => Err(Error::invalid_params(format!(
                "{} is a folder now; remove it to undo",
                change.path
            ))),
        },
        Some((hash, mode)) => {
            if let State::File {
                hash: now,
                mode: now_mode,
            } = current
            {
                if now == hash && (mode.is_none() || now_mode.is_none() || now_mode == mode) {
                    return Ok(Restore::Unchanged);
                }
            }
            Ok(Restore::Write {
                hash: hash.clone(),
                mode: *mode,
            })
        }
    }
}

/// An error unless every file is as the turn left it (or `force`): the ones changed since are
/// named, and nothing is restored.
fn refuse_changed(
    changes: &[Change],
    currents: &[State],
    root: &Path,
    turn_id: &str,
    force: bool,
) -> Result<()> {
    let mut lines = Vec::new();
    for (change, current) in changes.iter().zip(currents) {
        // Never recorded after: the tool did not write, so it left the "before" state.
        let left = match &change.after {
            Some(after) => after.clone(),
            None => change.before.as_ref().map(|(h, _)| h.clone()),
        };
        let matches = match (current, &left) {
            (State::Absent, None) => true,
            (State::File { hash, .. }, Some(left)) => hash == left,
            _ => false,
        };
        if !matches {
            lines.push(format!(
                "{} changed since turn {turn_id}: not restored (--force restores it anyway)",
                shown(root, &change.path)
            ));
        }
    }
    if lines.is_empty() || force {
        return Ok(());
    }
    lines.push(format!("nothing of turn {turn_id} was restored"));
    Err(Error::invalid_params(lines.join("\n")))
}

/// The error of an undo that failed at `change`, naming what was restored before it.
fn failed_at(done: &[UndoneFile], change: &Change, root: &Path, turn_id: &str, e: Error) -> Error {
    let done: Vec<String> = done
        .iter()
        .filter(|f| f.action != UndoAction::Unchanged)
        .map(|f| f.path.clone())
        .collect();
    Error::new(
        ErrorKind::Internal,
        format!(
            "undoing turn {turn_id} failed at {}: {}; restored before that: {} \
             (the turn stays not undone; fix the cause and undo with --force)",
            shown(root, &change.path),
            e.message,
            genai_base::error::known(done)
        ),
    )
}

/// Removes the folders the turn created that are empty again; answers them as shown.
fn remove_created_folders(changes: &[Change], root: &Path) -> Vec<String> {
    files::remove_created_dirs(changes.iter().flat_map(|c| &c.created_dirs))
        .iter()
        .map(|d| shown(root, d))
        .collect()
}

fn already_undone(turn_id: &str, conversation_id: &str, at: i64) -> Error {
    Error::invalid_params(format!(
        "turn {turn_id} of conversation {conversation_id} was undone already (at {at} ms \
         since the epoch)"
    ))
}

impl Checkpoints {
    /// Restores the files of one turn (see [`UndoTarget`]) as they were before it, all or
    /// nothing: a file changed since the turn is refused, naming it, unless `force`.
    pub fn undo(&self, target: UndoTarget, force: bool) -> Result<Undone> {
        let mut conn = self.conn()?;
        // Immediate: two processes undoing at once take turns.
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let (row, conversation_id, turn_id, root, undone_at) = index::find_turn(&tx, &target)?;
        if let Some(at) = undone_at {
            return Err(already_undone(&turn_id, &conversation_id, at));
        }
        let root_path = PathBuf::from(&root);
        let changes = index::load_changes(&tx, row)?;
        let currents = changes
            .iter()
            .map(|c| files::current_state(Path::new(&c.path)))
            .collect::<Result<Vec<State>>>()?;
        refuse_changed(&changes, &currents, &root_path, &turn_id, force)?;
        let mut files = Vec::with_capacity(changes.len());
        for (change, current) in changes.iter().zip(&currents) {
            let action = match restoring(change, current)? {
                Restore::Unchanged => Ok(UndoAction::Unchanged),
                Restore::Remove => fs::remove_file(&change.path)
                    .map(|()| UndoAction::Removed)
                    .map_err(|e| io_error("cannot remove", Path::new(&change.path), e)),
                Restore::Write { hash, mode } => self
                    .blobs
                    .load(&hash)
                    .and_then(|bytes| {
                        files::write_atomically(Path::new(&change.path), &bytes, mode)
                    })
                    .map(|()| UndoAction::Restored),
            };
            let action = action.map_err(|e| failed_at(&files, change, &root_path, &turn_id, e))?;
            files.push(UndoneFile {
                path: shown(&root_path, &change.path),
                action,
            });
        }
        let removed_folders = remove_created_folders(&changes, &root_path);
        tx.execute(
            "UPDATE turns SET undone_at = ?1 WHERE id = ?2",
            params![now_ms(), row],
        )?;
        tx.commit()?;
        Ok(Undone {
            conversation_id,
            turn_id,
            root,
            files,
            removed_folders,
        })
    }

    /// [`Checkpoints::undo`] of files an editor holds: their current text is the editor's, and
    /// they are restored through it (a file the turn created is removed from the disk, which
    /// the editor cannot do). Not one transaction: the turn is marked undone at the end, and a
    /// second undo of it meanwhile fails then.
    pub async fn undo_through(
        &self,
        target: UndoTarget,
        force: bool,
        holder: &dyn Holder,
    ) -> Result<Undone> {
        let (row, conversation_id, turn_id, root, changes) = {
            let conn = self.conn()?;
            let (row, conversation_id, turn_id, root, undone_at) =
                index::find_turn(&conn, &target)?;
            if let Some(at) = undone_at {
                return Err(already_undone(&turn_id, &conversation_id, at));
            }
            let changes = index::load_changes(&conn, row)?;
            (row, conversation_id, turn_id, root, changes)
        };
        let root_path = PathBuf::from(&root);
        let mut currents = Vec::with_capacity(changes.len());
        for change in &changes {
            let path = Path::new(&change.path);
            currents.push(match holder.read(path).await? {
                None => State::Absent,
                Some(bytes) => State::File {
                    hash: sha256_hex(&bytes),
                    mode: None,
                },
            });
        }
        refuse_changed(&changes, &currents, &root_path, &turn_id, force)?;
        let mut files = Vec::with_capacity(changes.len());
        for (change, current) in changes.iter().zip(&currents) {
            let path = Path::new(&change.path);
            let action = match restoring(change, current)? {
                Restore::Unchanged => Ok(UndoAction::Unchanged),
                Restore::Remove => fs::remove_file(path)
                    .or_else(|e| match e.kind() {
                        std::io::ErrorKind::NotFound => Ok(()),
                        _ => Err(e),
                    })
                    .map(|()| UndoAction::Removed)
                    .map_err(|e| io_error("cannot remove", path, e)),
                Restore::Write { hash, .. } => match self.blobs.load(&hash) {
                    Ok(bytes) => holder
                        .write(path, &bytes)
                        .await
                        .map(|()| UndoAction::Restored),
                    Err(e) => Err(e),
                },
            };
            let action = action.map_err(|e| failed_at(&files, change, &root_path, &turn_id, e))?;
            files.push(UndoneFile {
                path: shown(&root_path, &change.path),
                action,
            });
        }
        let removed_folders = remove_created_folders(&changes, &root_path);
        let marked = self.conn()?.execute(
            "UPDATE turns SET undone_at = ?1 WHERE id = ?2 AND undone_at IS NULL",
            params![now_ms(), row],
        )?;
        if marked == 0 {
            return Err(Error::invalid_params(format!(
                "turn {turn_id} was undone meanwhile by another undo"
            )));
        }
        Ok(Undone {
            conversation_id,
            turn_id,
            root,
            files,
            removed_folders,
        })
    }
}
