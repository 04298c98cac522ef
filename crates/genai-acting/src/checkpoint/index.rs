//! The index of the checkpoints (`checkpoints/index.db`, SQLite shared by every genai
//! process): its schema, finding the turn to undo, reading a turn's changes, and choosing the
//! turns a prune forgets. It must never touch a file: the parent module decides and does that.

use std::collections::HashSet;

use rusqlite::{params, Connection, OptionalExtension, Transaction};

use super::UndoTarget;
use genai_base::error::{Error, ErrorKind, Result};

/// The schema of `index.db`; `user_version` says which one a file has.
const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS turns (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    root TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    undone_at INTEGER,
    UNIQUE (conversation_id, turn_id)
);
-- One row per file a turn changed: its state before the turn's first write (before_hash
-- NULL: it did not exist) and after its last (after_state 0: not recorded, 1: after_hash,
-- 2: absent). created_dirs: the folders the first write had to create (a JSON list).
CREATE TABLE IF NOT EXISTS changes (
    turn INTEGER NOT NULL REFERENCES turns(id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    before_hash TEXT,
    before_mode INTEGER,
    after_state INTEGER NOT NULL DEFAULT 0,
    after_hash TEXT,
    created_dirs TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (turn, path)
);
CREATE INDEX IF NOT EXISTS changes_before ON changes(before_hash);
CREATE TABLE IF NOT EXISTS blobs (
    hash TEXT PRIMARY KEY,
    size INTEGER NOT NULL
);
";

/// Busy timeout and WAL, as the history store has them, and the schema.
pub(super) fn setup(conn: &Connection) -> Result<()> {
    genai_base::sqlite::shared_file(conn)?;
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version > SCHEMA_VERSION {
        return Err(Error::new(
            ErrorKind::Store,
            format!(
                "the checkpoints were written by a newer genai (schema {version}); upgrade genai"
            ),
        ));
    }
    if version < SCHEMA_VERSION {
        conn.execute_batch(&format!(
            "BEGIN IMMEDIATE; {SCHEMA} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
        ))?;
    }
    Ok(())
}

/// One `changes` row, as undo needs it.
pub(super) struct Change {
    pub(crate) path: String,
    pub(crate) before: Option<(String, Option<u32>)>,
    /// What the turn left: `None` when never recorded.
    pub(crate) after: Option<Option<String>>,
    pub(crate) created_dirs: Vec<String>,
}

/// The turn `target` names: (row id, conversation, turn id, root, undone at).
pub(super) type TurnRow = (i64, String, String, String, Option<i64>);

pub(super) fn find_turn(conn: &Connection, target: &UndoTarget) -> Result<TurnRow> {
    let row = |r: &rusqlite::Row<'_>| -> rusqlite::Result<TurnRow> {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
    };
    const COLUMNS: &str = "SELECT id, conversation_id, turn_id, root, undone_at FROM turns";
    let conversation = target.conversation.as_deref();
    if let Some(prefix) = target.turn.as_deref() {
        let mut stmt = conn.prepare(&format!(
            "{COLUMNS} WHERE substr(turn_id, 1, length(?1)) = ?1
             AND (?2 IS NULL OR conversation_id = ?2) ORDER BY id DESC"
        ))?;
        let found = stmt
            .query_map(params![prefix, conversation], row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let exact: Vec<&TurnRow> = found.iter().filter(|t| t.2 == prefix).collect();
        return match (found.len(), exact.len()) {
            (0, _) => Err(Error::invalid_params(format!(
                "no turn `{prefix}` changed files{}; `genai undo --list` shows the ones that did",
                conversation
                    .map(|c| format!(" in conversation {c}"))
                    .unwrap_or_default()
            ))),
            (1, _) | (_, 1) => Ok(exact
                .first()
                .map_or_else(|| found[0].clone(), |t| (*t).clone())),
            _ => Err(Error::invalid_params(format!(
                "turn `{prefix}` is ambiguous: it starts {}; give more of it or the conversation",
                genai_base::error::known(found.iter().map(|t| format!("{} ({})", t.2, t.1)))
            ))),
        };
    }
    if let (None, Some(project)) = (conversation, &target.project) {
        return newest_in(conn, project);
    }
    let conversation = match conversation {
        Some(c) => c.to_string(),
        None => conn
            .query_row(
                "SELECT conversation_id FROM turns ORDER BY id DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .optional()?
            .ok_or_else(|| Error::invalid_params("nothing to undo: no turn has changed files"))?,
    };
    conn.query_row(
        &format!(
            "{COLUMNS} WHERE conversation_id = ?1 AND undone_at IS NULL ORDER BY id DESC LIMIT 1"
        ),
        [&conversation],
        row,
    )
    .optional()?
    .ok_or_else(|| {
        Error::invalid_params(format!(
            "nothing to undo in conversation {conversation}: no turn of it changed files, or \
             every one was undone"
        ))
    })
}

/// The newest turn not yet undone whose root is `project` or one of its parents; none is an
/// error that names the project and, when there is one, where the newest turn was made.
fn newest_in(conn: &Connection, project: &std::path::Path) -> Result<TurnRow> {
    let mut stmt = conn.prepare(
        "SELECT id, conversation_id, turn_id, root, undone_at FROM turns
         WHERE undone_at IS NULL ORDER BY id DESC",
    )?;
    let mut rows = stmt.query([])?;
    let mut elsewhere: Option<TurnRow> = None;
    while let Some(r) = rows.next()? {
        let row: TurnRow = (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?);
        if project.starts_with(&row.3) {
            return Ok(row);
        }
        elsewhere.get_or_insert(row);
    }
    let here = project.display();
    Err(Error::invalid_params(match elsewhere {
        Some((_, conversation, _, root, _)) => format!(
            "nothing to undo in {here}: no turn made here changed files (or each was undone); \
             the newest turn that did was made in {root}: `genai undo --cid {conversation}` \
             undoes it"
        ),
        None => format!("nothing to undo in {here}: no turn has changed files"),
    }))
}

/// The changes of a turn, its last first.
pub(super) fn load_changes(conn: &Connection, turn: i64) -> Result<Vec<Change>> {
    let mut stmt = conn.prepare(
        "SELECT path, before_hash, before_mode, after_state, after_hash, created_dirs
         FROM changes WHERE turn = ?1 ORDER BY rowid DESC",
    )?;
    let rows = stmt
        .query_map([turn], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, Option<u32>>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, Option<String>>(4)?,
                r.get::<_, String>(5)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    rows.into_iter()
        .map(|(path, before, mode, after_state, after_hash, dirs)| {
            let created_dirs = serde_json::from_str(&dirs).map_err(|e| {
                Error::new(
                    ErrorKind::Store,
                    format!("checkpoint folders of {path}: {e}"),
                )
            })?;
            Ok(Change {
                before: before.map(|h| (h, mode)),
                after: match after_state {
                    1 => Some(after_hash),
                    2 => Some(None),
                    _ => None,
                },
                created_dirs,
                path,
            })
        })
        .collect()
}

/// Forgets the turns created before `cutoff` (ms) and, counting the stored versions of the
/// newest turns first, those from the first one past `max_bytes` on; then the versions no
/// turn references. Answers how many turns went and the versions still referenced.
pub fn forget(tx: &Transaction<'_>, cutoff: i64, max_bytes: u64) -> Result<(u64, HashSet<String>)> {
    let mut doomed: Vec<i64> = Vec::new();
    {
        let mut turns = tx.prepare("SELECT id, created_at FROM turns ORDER BY id DESC")?;
        let turns = turns
            .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut sizes = tx.prepare(
            "SELECT DISTINCT blobs.hash, blobs.size FROM changes
             JOIN blobs ON blobs.hash = changes.before_hash WHERE changes.turn = ?1",
        )?;
        let mut seen: HashSet<String> = HashSet::new();
        let mut total: u64 = 0;
        let mut over = false;
        for (id, created_at) in turns {
            if !over {
                let blobs =
                    sizes.query_map([id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
                for blob in blobs {
                    let (hash, size) = blob?;
                    if seen.insert(hash) {
                        total = total.saturating_add(u64::try_from(size).unwrap_or(0));
                    }
                }
                over = total > max_bytes;
            }
            if over || created_at < cutoff {
                doomed.push(id);
            }
        }
    }
    for id in &doomed {
        tx.execute("DELETE FROM changes WHERE turn = ?1", [id])?;
        tx.execute("DELETE FROM turns WHERE id = ?1", [id])?;
    }
    tx.execute(
        "DELETE FROM blobs WHERE NOT EXISTS
         (SELECT 1 FROM changes WHERE changes.before_hash = blobs.hash)",
        [],
    )?;
    let mut stmt = tx.prepare("SELECT hash FROM blobs")?;
    let kept = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok((doomed.len() as u64, kept))
}
