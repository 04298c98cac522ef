//! The history store: conversations and their messages in SQLite (WAL mode, migrations).
//!
//! This module owns the database file and its schema. It must never call a provider or hold a
//! conversation's live state; it stores what the agent commits, one whole turn at a time. It
//! reads its rows straight into `genai-protocol`'s records ([`ConversationRecord`], and
//! [`StoredMessage`] around the core's message and usage), which the daemon, ACP and `--json`
//! show as they are; what a record does not show (a conversation's middleware, its schema and
//! permissions) has its own columns and calls.

use std::path::Path;
use std::sync::Mutex;

use rusqlite::{params, Connection, OptionalExtension};
use serde_json::{Map, Value};

use crate::error::{Error, ErrorKind, Result};
use crate::message::{Message, Usage};
use genai_protocol::listings::ConversationRecord;

mod decisions;
pub use decisions::DecisionRecord;
mod gateway;
mod history;
pub use gateway::{GatewayKey, GatewayRequest, KeyUsage};
pub use history::{History, Page};
mod listing;
mod schema;
mod search;
mod time;
mod turns;
mod usage;

pub use listing::{listing_cursor, listing_next, ListFilter, HAS_TURNS};
pub use search::{something_to_search, Found};
pub use time::UtcTime;
pub use turns::{masked_json, turn_title, NewMessage};
pub use usage::{Grouping, UsageRow};

/// A conversation row as read: the record, its parameters and tools as JSON text.
type RawRecord = (ConversationRecord, String, Option<String>);

/// A JSON list of names as stored, read back.
fn names_of(json: Option<String>) -> Result<Option<Vec<String>>> {
    json.map(|t| serde_json::from_str(&t))
        .transpose()
        .map_err(json_err)
}

/// A conversation's record with its parameters and tools read from their stored JSON.
pub fn with_json(
    mut rec: ConversationRecord,
    parameters: &str,
    tools: Option<String>,
) -> Result<ConversationRecord> {
    rec.parameters = serde_json::from_str(parameters).map_err(json_err)?;
    rec.tools = names_of(tools)?;
    Ok(rec)
}

/// One message as stored, from its stored columns (`content` and `usage` JSON).
pub fn stored_message(
    seq: i64,
    content: &str,
    usage: Option<&str>,
    created_at: i64,
    (model, cost, provider): (Option<String>, Option<f64>, Option<String>),
) -> Result<StoredMessage> {
    Ok(StoredMessage {
        seq,
        message: serde_json::from_str(content).map_err(json_err)?,
        usage: usage
            .map(serde_json::from_str)
            .transpose()
            .map_err(json_err)?,
        cost,
        created_at,
        model,
        provider,
    })
}

/// Parses JSON the history stored (`None`: NULL).
pub fn stored_json<T: serde::de::DeserializeOwned>(json: Option<&str>) -> Result<Option<T>> {
    json.map(serde_json::from_str).transpose().map_err(json_err)
}

/// One message as stored: the protocol's record around the core's message and usage.
pub type StoredMessage = genai_protocol::listings::StoredMessage<Message, Usage>;

/// The SQLite history.
pub struct Store {
    conn: Mutex<Connection>,
}

pub use genai_base::sqlite::now_ms;
pub(crate) use genai_base::sqlite::shared_file;

/// A title from the first user message: one line, at most 80 characters.
pub fn title_of(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= 80 {
        return line;
    }
    let mut t: String = line.chars().take(79).collect();
    t.push('…');
    t
}

/// The error for a conversation the history does not hold.
pub fn not_in_history(id: &str) -> Error {
    Error::new(
        ErrorKind::UnknownConversation,
        format!("no conversation {id} in the history"),
    )
}

/// `Ok` when an update of conversation `id` changed a row.
fn updated(rows: usize, id: &str) -> Result<()> {
    if rows == 0 {
        return Err(not_in_history(id));
    }
    Ok(())
}

fn json_err(e: serde_json::Error) -> Error {
    Error::new(
        ErrorKind::Store,
        format!("history store holds invalid JSON: {e}"),
    )
}

/// A conversation id's prefix as ids are stored (upper case), or the error for one no id
/// can start with.
pub fn id_prefix(prefix: &str) -> Result<String> {
    let p = prefix.trim().to_ascii_uppercase();
    if p.is_empty() || !p.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(Error::new(
            ErrorKind::UnknownConversation,
            format!("`{prefix}` is not a conversation id"),
        ));
    }
    Ok(p)
}

/// The one id of `ids` (at most two, in order, that start with `prefix`), or why not.
pub fn the_one_id(prefix: &str, ids: &[String]) -> Result<String> {
    match ids {
        [one] => Ok(one.clone()),
        [] => Err(Error::new(
            ErrorKind::UnknownConversation,
            format!("no conversation id starts with `{prefix}` (see `genai sessions list`)"),
        )),
        _ => Err(Error::new(
            ErrorKind::UnknownConversation,
            format!("`{prefix}` matches several conversations; give more of the id"),
        )),
    }
}

/// The position a page of messages starts after (0: the first page), from its cursor.
pub fn message_cursor(cursor: Option<&str>) -> Result<i64> {
    match cursor {
        None => Ok(0),
        Some(c) => c
            .parse()
            .map_err(|_| Error::invalid_params("invalid cursor")),
    }
}

/// `rows` cut to `page_size` (one more was read to know), and the cursor of the next page.
pub fn page_of<T>(mut rows: Vec<T>, page_size: usize, cursor: impl Fn(&T) -> String) -> Page<T> {
    if rows.len() > page_size {
        rows.truncate(page_size);
        let next = rows.last().map(cursor);
        (rows, next)
    } else {
        (rows, None)
    }
}

/// A title as `rename_conversation` gives it: one line, never empty.
pub fn new_title(title: &str) -> Result<String> {
    let title = title_of(title);
    if title.is_empty() {
        return Err(Error::invalid_params("a title cannot be empty"));
    }
    Ok(title)
}

impl Store {
    /// Opens (creating when needed) the database file and brings its schema up to date.
    pub fn open(path: &Path) -> Result<Store> {
        // The history is the user's alone: its folder 0700, the file 0600 before SQLite opens
        // it (SQLite gives its `-wal` and `-shm` the database's mode; old ones are tightened).
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            crate::private::dir(dir).map_err(|e| {
                Error::new(
                    ErrorKind::Store,
                    format!("cannot create {}: {e}", dir.display()),
                )
            })?;
        }
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        let mut shm = path.as_os_str().to_owned();
        shm.push("-shm");
        crate::private::file(path)
            .and_then(|()| crate::private::existing_file(Path::new(&wal)))
            .and_then(|()| crate::private::existing_file(Path::new(&shm)))
            .map_err(|e| {
                Error::new(
                    ErrorKind::Store,
                    format!("cannot open the history at {}: {e}", path.display()),
                )
            })?;
        let conn = Connection::open(path).map_err(|e| {
            Error::new(
                ErrorKind::Store,
                format!("cannot open the history at {}: {e}", path.display()),
            )
        })?;
        Store::setup(conn).map_err(|e| {
            // One line: a SQLite message may carry the statement it failed on.
            let first = e.message.lines().next().unwrap_or_default();
            Error::new(
                e.kind,
                format!("the history at {}: {first}", path.display()),
            )
        })
    }

    /// A store that lives in memory only (`--no-log`).
    pub fn in_memory() -> Result<Store> {
        Store::setup(Connection::open_in_memory()?)
    }

    fn conn(&self) -> Result<std::sync::MutexGuard<'_, Connection>> {
        self.conn
            .lock()
            .map_err(|_| Error::internal("history store lock poisoned"))
    }

    /// Stores a new conversation. Its `messageCount` and `answeredBy` are read from its
    /// messages, never written.
    pub fn create_conversation(&self, c: &ConversationRecord) -> Result<()> {
        let params_json = serde_json::to_string(&c.parameters).map_err(json_err)?;
        let tools_json = c
            .tools
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(json_err)?;
        self.conn()?.execute(
            "INSERT INTO conversations (id, title, feature, provider, model_configuration, format, model, parameters, created_at, updated_at, tools, cwd)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            params![c.id, c.title, c.feature, c.provider, c.model_configuration, c.format, c.model, params_json, c.created_at, c.updated_at, tools_json, c.cwd],
        )?;
        Ok(())
    }

    /// Stores the middleware a conversation's agent listed (`[agents.X] middleware`), so that
    /// a resumed conversation runs them too (`None`: its model configuration's or the
    /// defaults). Kept beside the record, which is the protocol's listing and does not show it.
    pub(crate) fn set_middleware(&self, id: &str, middleware: Option<&[String]>) -> Result<()> {
        self.set_json_column(id, "middleware", middleware)
    }

    /// What [`Store::set_middleware`] stored.
    pub(crate) fn middleware(&self, id: &str) -> Result<Option<Vec<String>>> {
        self.json_column(id, "middleware")
    }

    /// Gives a conversation a new title (one line, as `title_of` makes it).
    pub fn rename_conversation(&self, id: &str, title: &str) -> Result<()> {
        let title = new_title(title)?;
        let n = self.conn()?.execute(
            "UPDATE conversations SET title = ?2 WHERE id = ?1",
            params![id, title],
        )?;
        updated(n, id)
    }

    /// Hands a conversation over to another provider and model: later turns run there.
    pub(crate) fn switch_model(
        &self,
        id: &str,
        provider: &str,
        model_configuration: Option<&str>,
        format: &str,
        model: &str,
    ) -> Result<()> {
        let n = self.conn()?.execute(
            "UPDATE conversations SET provider = ?2, model_configuration = ?3, format = ?4, model = ?5 WHERE id = ?1",
            params![id, provider, model_configuration, format, model],
        )?;
        updated(n, id)
    }

    pub(crate) fn update_parameters(
        &self,
        id: &str,
        parameters: &Map<String, Value>,
    ) -> Result<()> {
        let json = serde_json::to_string(parameters).map_err(json_err)?;
        self.conn()?.execute(
            "UPDATE conversations SET parameters = ?2 WHERE id = ?1",
            params![id, json],
        )?;
        Ok(())
    }

    /// Stores the schema a client gave a conversation (`None` removes it), as JSON
    /// `{"name", "schema"}`; the session turns it back into a checked schema.
    pub(crate) fn set_response_schema(&self, id: &str, schema: Option<&Value>) -> Result<()> {
        self.set_json_column(id, "response_schema", schema)
    }

    /// The schema a client gave a conversation, as [`Store::set_response_schema`] stored it.
    pub(crate) fn response_schema(&self, id: &str) -> Result<Option<Value>> {
        self.json_column(id, "response_schema")
    }

    /// Stores the permission mode and rules a client gave a conversation (JSON `{mode, allow,
    /// deny}`), so that reopening it keeps them.
    pub(crate) fn set_permissions(&self, id: &str, permissions: &Value) -> Result<()> {
        self.set_json_column(id, "permissions", Some(permissions))
    }

    /// What [`Store::set_permissions`] stored (`None`: nothing).
    pub(crate) fn permissions(&self, id: &str) -> Result<Option<Value>> {
        self.json_column(id, "permissions")
    }

    /// Writes a conversation's column that holds JSON (`None`: NULL), what
    /// [`Store::json_column`] reads back; `column` is one of this module's names, never a
    /// caller's text.
    fn set_json_column<T: serde::Serialize + ?Sized>(
        &self,
        id: &str,
        column: &'static str,
        value: Option<&T>,
    ) -> Result<()> {
        let json = value
            .map(serde_json::to_string)
            .transpose()
            .map_err(json_err)?;
        let n = self.conn()?.execute(
            &format!("UPDATE conversations SET {column} = ?2 WHERE id = ?1"),
            params![id, json],
        )?;
        updated(n, id)
    }

    /// A conversation's column that holds JSON, parsed (`None`: NULL); `column` is one of this
    /// module's names, never a caller's text.
    fn json_column<T: serde::de::DeserializeOwned>(
        &self,
        id: &str,
        column: &'static str,
    ) -> Result<Option<T>> {
        let json: Option<Option<String>> = self
            .conn()?
            .query_row(
                &format!("SELECT {column} FROM conversations WHERE id = ?1"),
                [id],
                |r| r.get(0),
            )
            .optional()?;
        let Some(json) = json else {
            return Err(not_in_history(id));
        };
        stored_json(json.as_deref())
    }

    fn row_to_record(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawRecord> {
        Ok((
            ConversationRecord {
                id: r.get(0)?,
                title: r.get(1)?,
                feature: r.get(2)?,
                provider: r.get(3)?,
                model_configuration: r.get(4)?,
                format: r.get(5)?,
                model: r.get(6)?,
                parameters: Map::new(),
                created_at: r.get(8)?,
                updated_at: r.get(9)?,
                message_count: r.get::<_, i64>(10)? as u64,
                tools: None,
                answered_by: r.get(13)?,
                cwd: r.get(12)?,
            },
            r.get::<_, String>(7)?,
            r.get::<_, Option<String>>(11)?,
        ))
    }

    /// The columns of a conversation's record (`row_to_record`'s order), as SQLite and Postgres
    /// both read them.
    pub const SELECT: &'static str = "SELECT c.id, c.title, c.feature, c.provider, c.model_configuration, c.format, c.model, c.parameters, c.created_at, c.updated_at,
        (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id), c.tools, c.cwd,
        (SELECT m.provider || ':' || m.model FROM messages m WHERE m.conversation_id = c.id
         AND m.provider IS NOT NULL ORDER BY m.seq DESC LIMIT 1) FROM conversations c";

    fn finish_record((rec, params, tools): RawRecord) -> Result<ConversationRecord> {
        with_json(rec, &params, tools)
    }

    pub fn conversation(&self, id: &str) -> Result<Option<ConversationRecord>> {
        let conn = self.conn()?;
        let row = conn
            .query_row(
                &format!("{} WHERE c.id = ?1", Self::SELECT),
                [id],
                Self::row_to_record,
            )
            .optional()?;
        row.map(Self::finish_record).transpose()
    }

    /// The messages of a conversation in order, from the cursor on.
    pub fn history(
        &self,
        id: &str,
        page_size: usize,
        cursor: Option<&str>,
    ) -> Result<(Vec<StoredMessage>, Option<String>)> {
        let after = message_cursor(cursor)?;
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT seq, content, usage, created_at, model, cost, provider FROM messages
             WHERE conversation_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
        )?;
        let rows = stmt
            .query_map(params![id, after, (page_size + 1) as i64], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Option<String>>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, Option<String>>(4)?,
                    r.get::<_, Option<f64>>(5)?,
                    r.get::<_, Option<String>>(6)?,
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut out = Vec::with_capacity(rows.len());
        for (seq, content, usage, created_at, model, cost, provider) in rows {
            out.push(stored_message(
                seq,
                &content,
                usage.as_deref(),
                created_at,
                (model, cost, provider),
            )?);
        }
        Ok(page_of(out, page_size, |m| m.seq.to_string()))
    }

    /// Records another feature or model for a conversation (the client changed its choice).
    pub(crate) fn update_choice(&self, c: &ConversationRecord) -> Result<()> {
        let params_json = serde_json::to_string(&c.parameters).map_err(json_err)?;
        self.conn()?.execute(
            "UPDATE conversations SET feature = ?2, provider = ?3, model_configuration = ?4, format = ?5, model = ?6, parameters = ?7 WHERE id = ?1",
            params![c.id, c.feature, c.provider, c.model_configuration, c.format, c.model, params_json],
        )?;
        Ok(())
    }

    /// The stored system message and every message, for rebuilding an agent.
    pub fn full_history(&self, id: &str) -> Result<(Option<Message>, Vec<Message>)> {
        let system = self.json_column(id, "system")?;
        let (messages, _) = self.history(id, usize::MAX / 2, None)?;
        Ok((system, messages.into_iter().map(|m| m.message).collect()))
    }

    /// The full id of the one conversation whose id starts with `prefix` (case-insensitive).
    pub fn resolve_id(&self, prefix: &str) -> Result<String> {
        let p = id_prefix(prefix)?;
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT id FROM conversations WHERE id LIKE ?1 || '%' ORDER BY id LIMIT 2",
        )?;
        let ids = stmt
            .query_map([&p], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        the_one_id(prefix, &ids)
    }

    pub fn delete_conversation(&self, id: &str) -> Result<bool> {
        Ok(self
            .conn()?
            .execute("DELETE FROM conversations WHERE id = ?1", [id])?
            > 0)
    }

    /// Deletes conversation `id` if no turn was committed to it; true when it did.
    pub(crate) fn delete_if_empty(&self, id: &str) -> Result<bool> {
        Ok(self.conn()?.execute(
            "DELETE FROM conversations WHERE id = ?1
             AND NOT EXISTS (SELECT 1 FROM messages WHERE conversation_id = ?1)
             AND NOT EXISTS (SELECT 1 FROM tool_decisions WHERE conversation_id = ?1
                             AND decision = 'allow')",
            [id],
        )? > 0)
    }
}

#[cfg(test)]
pub(crate) mod tests;
