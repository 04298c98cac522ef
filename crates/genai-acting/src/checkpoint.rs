//! Checkpoints of the files a turn's tools change, and their undo.
//!
//! Before a tool writes a file, its bytes and permission bits (or its absence) are kept by
//! content hash in genai's data folder (`checkpoints/objects/<sha256>`, written once), and
//! `checkpoints/index.db` (SQLite, shared by every genai process) links them to the turn.
//! Undo puts the files back byte for byte, all or nothing, refusing files changed since the
//! turn unless forced. This module must never write anything into the user's project but the
//! restored files themselves (a snapshot or a temporary file left in the repository is data
//! the user did not ask for; Codex lost work that way), nor delete what a turn did not
//! create.

mod files;
mod index;
mod undo;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{params, Connection, TransactionBehavior};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use files::{sha256_hex, Blobs, State};
use genai_base::error::{Error, ErrorKind, Result};
use genai_base::sqlite::now_ms;
pub use undo::{read_disk, write_disk, Holder};

/// The `[checkpoints]` table of the config: how long and how much is kept for undo.
#[derive(Deserialize, Serialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CheckpointConfig {
    /// Turns older than this many days are forgotten (default 30).
    #[serde(default = "default_max_age_days")]
    pub max_age_days: u64,
    /// The most the kept files may weigh, in megabytes; the oldest turns go first (default 512).
    #[serde(default = "default_max_megabytes")]
    pub(crate) max_megabytes: u64,
}

fn default_max_age_days() -> u64 {
    30
}

fn default_max_megabytes() -> u64 {
    512
}

impl Default for CheckpointConfig {
    fn default() -> CheckpointConfig {
        CheckpointConfig {
            max_age_days: default_max_age_days(),
            max_megabytes: default_max_megabytes(),
        }
    }
}

impl CheckpointConfig {
    /// `max_age_days` as a duration, for [`Checkpoints::prune`].
    pub fn max_age(&self) -> Duration {
        Duration::from_secs(self.max_age_days.saturating_mul(24 * 3600))
    }

    /// `max_megabytes` in bytes, for [`Checkpoints::prune`].
    pub fn max_bytes(&self) -> u64 {
        self.max_megabytes.saturating_mul(1 << 20)
    }
}

/// One turn of one conversation: what a checkpoint belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnKey {
    pub conversation_id: String,
    pub turn_id: String,
}

/// Which turn to undo: by default the newest not yet undone (of `conversation`; else of
/// `project`; else of the newest conversation with changes).
#[derive(Debug, Clone, Default)]
pub struct UndoTarget {
    pub conversation: Option<String>,
    /// A turn id or a unique prefix of one.
    pub turn: Option<String>,
    /// The folder the user is in (`genai undo`): only a turn whose root is this folder or one
    /// of its parents, so a turn made in another project is never undone by mistake.
    pub project: Option<std::path::PathBuf>,
}

/// A turn that changed files, as listed.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct TurnChanges {
    pub conversation_id: String,
    pub turn_id: String,
    /// When its first change was recorded, in milliseconds since the Unix epoch.
    pub time: i64,
    /// The workspace root.
    pub root: String,
    /// The files it changed, relative to the root (absolute when outside it), in order.
    pub files: Vec<String>,
    /// It was undone.
    pub undone: bool,
}

/// What undo did to one file.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum UndoAction {
    /// Its old bytes and mode were put back.
    Restored,
    /// The turn created it: it was removed.
    Removed,
    /// It already was as before the turn.
    Unchanged,
}

/// One file undo went over.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct UndoneFile {
    /// Relative to the root (absolute when outside it).
    pub path: String,
    pub action: UndoAction,
}

/// What one undo did.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Undone {
    pub conversation_id: String,
    pub turn_id: String,
    pub root: String,
    pub files: Vec<UndoneFile>,
    /// The folders the turn had created, removed because they were empty again.
    pub removed_folders: Vec<String>,
}

/// What a prune freed.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Pruned {
    /// Turns forgotten.
    pub turns: u64,
    /// Stored file versions deleted.
    pub(crate) blobs: u64,
    /// Bytes those weighed.
    pub bytes: u64,
}

/// The checkpoints under `DATA_DIR/checkpoints/`.
pub struct Checkpoints {
    blobs: Blobs,
    conn: Mutex<Connection>,
}

impl Checkpoints {
    /// The checkpoints of `data_dir` (genai's data folder), created when missing.
    pub fn open(data_dir: &Path) -> Result<Checkpoints> {
        let base = data_dir.join("checkpoints");
        let blobs = Blobs::open(base.join("objects"))?;
        let db = base.join("index.db");
        let conn = Connection::open(&db).map_err(|e| {
            Error::new(
                ErrorKind::Store,
                format!("cannot open the checkpoints {}: {e}", db.display()),
            )
        })?;
        index::setup(&conn)?;
        Ok(Checkpoints {
            blobs,
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> Result<std::sync::MutexGuard<'_, Connection>> {
        self.conn
            .lock()
            .map_err(|_| Error::internal("the checkpoints lock was poisoned by a panic"))
    }

    /// Called before a tool writes `path` (absolute) in `turn` of the workspace `root`: keeps
    /// the file's bytes and mode, or that it did not exist. Only the turn's first call per
    /// path counts: later ones keep the state from before the turn.
    pub fn before_change(&self, turn: &TurnKey, root: &Path, path: &Path) -> Result<()> {
        self.record_before(turn, root, path, None)
    }

    /// [`Checkpoints::before_change`] with the content an editor holds (`None`: no such file)
    /// instead of the disk's; the mode is the disk's.
    pub fn before_change_held(
        &self,
        turn: &TurnKey,
        root: &Path,
        path: &Path,
        held: Option<&[u8]>,
    ) -> Result<()> {
        self.record_before(turn, root, path, Some(held))
    }

    /// Keeps the state before the turn's first change of `path`: `held` or else the disk's.
    fn record_before(
        &self,
        turn: &TurnKey,
        root: &Path,
        path: &Path,
        held: Option<Option<&[u8]>>,
    ) -> Result<()> {
        let key = path_text(path)?;
        if self.has_change(turn, key)? {
            return Ok(());
        }
        let before = match held {
            None => files::read_file(path)?,
            Some(held) => held.map(|bytes| (bytes.to_vec(), files::mode_at(path))),
        };
        let created_dirs = match before {
            Some(_) => Vec::new(),
            None => files::missing_dirs(root, path)?,
        };
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let root_text = root.to_string_lossy();
        tx.execute(
            "INSERT OR IGNORE INTO turns (conversation_id, turn_id, root, created_at)
             VALUES (?1, ?2, ?3, ?4)",
            params![turn.conversation_id, turn.turn_id, root_text, now_ms()],
        )?;
        let turn_row: i64 = tx.query_row(
            "SELECT id FROM turns WHERE conversation_id = ?1 AND turn_id = ?2",
            params![turn.conversation_id, turn.turn_id],
            |r| r.get(0),
        )?;
        let known: bool = tx.query_row(
            "SELECT EXISTS(SELECT 1 FROM changes WHERE turn = ?1 AND path = ?2)",
            params![turn_row, key],
            |r| r.get(0),
        )?;
        if known {
            return Ok(());
        }
        // The blob is written inside the write lock: a prune (which takes it too) cannot
        // delete it between its writing and the row that references it.
        let (hash, mode) = match &before {
            Some((bytes, mode)) => {
                let hash = sha256_hex(bytes);
                self.blobs.store(&hash, bytes)?;
                tx.execute(
                    "INSERT OR REPLACE INTO blobs (hash, size) VALUES (?1, ?2)",
                    params![hash, bytes.len() as i64],
                )?;
                (Some(hash), *mode)
            }
            None => (None, None),
        };
        let dirs = serde_json::to_string(&created_dirs)
            .map_err(|e| Error::internal(format!("checkpoint folders: {e}")))?;
        tx.execute(
            "INSERT INTO changes (turn, path, before_hash, before_mode, created_dirs)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![turn_row, key, hash, mode, dirs],
        )?;
        tx.commit()?;
        Ok(())
    }

    fn has_change(&self, turn: &TurnKey, key: &str) -> Result<bool> {
        let conn = self.conn()?;
        Ok(conn.query_row(
            "SELECT EXISTS(SELECT 1 FROM changes JOIN turns ON turns.id = changes.turn
             WHERE conversation_id = ?1 AND turn_id = ?2 AND path = ?3)",
            params![turn.conversation_id, turn.turn_id, key],
            |r| r.get(0),
        )?)
    }

    /// Called after the tool wrote `path`: records what the turn left there (what undo
    /// expects to find). An error when [`Checkpoints::before_change`] was not called first.
    pub fn after_change(&self, turn: &TurnKey, path: &Path) -> Result<()> {
        self.record_after(turn, path, files::current_state(path)?)
    }

    /// [`Checkpoints::after_change`] with the content the editor was given.
    pub fn after_change_held(&self, turn: &TurnKey, path: &Path, held: &[u8]) -> Result<()> {
        let state = State::File {
            hash: sha256_hex(held),
            mode: None,
        };
        self.record_after(turn, path, state)
    }

    fn record_after(&self, turn: &TurnKey, path: &Path, now: State) -> Result<()> {
        let key = path_text(path)?;
        let (state, hash) = match now {
            State::Absent => (2, None),
            State::File { hash, .. } => (1, Some(hash)),
            State::Folder => {
                return Err(Error::internal(format!(
                    "{} is a folder now: a checkpoint keeps files",
                    path.display()
                )))
            }
        };
        let conn = self.conn()?;
        let updated = conn.execute(
            "UPDATE changes SET after_state = ?1, after_hash = ?2
             WHERE path = ?3 AND turn = (SELECT id FROM turns
                                         WHERE conversation_id = ?4 AND turn_id = ?5)",
            params![state, hash, key, turn.conversation_id, turn.turn_id],
        )?;
        if updated == 0 {
            return Err(Error::internal(format!(
                "no checkpoint of {} in turn {}: before_change must come first",
                path.display(),
                turn.turn_id
            )));
        }
        Ok(())
    }

    /// The turns with changes, newest first (of `conversation` when given), at most `limit`.
    pub fn list(&self, conversation: Option<&str>, limit: usize) -> Result<Vec<TurnChanges>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare(
            "SELECT id, conversation_id, turn_id, root, created_at, undone_at FROM turns
             WHERE ?1 IS NULL OR conversation_id = ?1 ORDER BY id DESC LIMIT ?2",
        )?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = stmt
            .query_map(params![conversation, limit], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    TurnChanges {
                        conversation_id: r.get(1)?,
                        turn_id: r.get(2)?,
                        root: r.get(3)?,
                        time: r.get(4)?,
                        files: Vec::new(),
                        undone: r.get::<_, Option<i64>>(5)?.is_some(),
                    },
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut files = conn.prepare("SELECT path FROM changes WHERE turn = ?1 ORDER BY rowid")?;
        let mut listed = Vec::with_capacity(rows.len());
        for (id, mut turn) in rows {
            let root = PathBuf::from(&turn.root);
            turn.files = files
                .query_map([id], |r| r.get::<_, String>(0))?
                .map(|p| p.map(|p| shown(&root, &p)))
                .collect::<rusqlite::Result<_>>()?;
            listed.push(turn);
        }
        Ok(listed)
    }

    /// Forgets the turns older than `max_age` and, keeping the newest first, those beyond
    /// `max_bytes` of stored file versions; deletes the versions no turn needs any more.
    pub fn prune(&self, max_age: Duration, max_bytes: u64) -> Result<Pruned> {
        let mut conn = self.conn()?;
        // Immediate: no checkpoint is written while versions are judged unreferenced and
        // deleted; the files go before the commit, under that lock, so a checkpoint written
        // right after cannot find its version gone.
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let age = i64::try_from(max_age.as_millis()).unwrap_or(i64::MAX);
        let (turns, kept) = index::forget(&tx, now_ms().saturating_sub(age), max_bytes)?;
        let (blobs, bytes) = self.blobs.sweep(&kept)?;
        tx.commit()?;
        Ok(Pruned {
            turns,
            blobs,
            bytes,
        })
    }
}

/// The path as stored: genai's tools name files in UTF-8.
fn path_text(path: &Path) -> Result<&str> {
    path.to_str().ok_or_else(|| {
        Error::invalid_params(format!(
            "{} is not a UTF-8 path: it cannot be checkpointed",
            path.display()
        ))
    })
}

/// A path as shown: relative to the root, absolute outside it.
fn shown(root: &Path, path: &str) -> String {
    match Path::new(path).strip_prefix(root) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.to_string_lossy().into_owned(),
        _ => path.to_string(),
    }
}

#[cfg(test)]
mod tests;
