//! The history's schema: the migrations, applied in order once per file (the version is
//! SQLite's `user_version`), the schema they lead to (created in one step on a new database),
//! and how a connection is set up (WAL, foreign keys).
//!
//! It owns the tables, columns, indexes and triggers; it must never read or write rows beyond
//! what a migration fills. A new migration is appended at the end, never edited in place.

use std::sync::Mutex;

use rusqlite::Connection;

use super::{shared_file, Store};
use crate::error::{Error, ErrorKind, Result};

/// The columns of `conversations` as migration 1 created them (later ones were added).
macro_rules! conversation_columns_v1 {
    () => {
        "
        id TEXT PRIMARY KEY,
        title TEXT NOT NULL DEFAULT '',
        feature TEXT NOT NULL,
        provider TEXT NOT NULL,
        model_configuration TEXT,
        format TEXT NOT NULL,
        model TEXT NOT NULL,
        parameters TEXT NOT NULL DEFAULT '{}',
        system TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL"
    };
}

/// The columns of `messages` as migration 1 created them, but its key (later ones were added).
macro_rules! message_columns_v1 {
    () => {
        "
        conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        role TEXT NOT NULL,
        content TEXT NOT NULL,
        usage TEXT,
        created_at INTEGER NOT NULL"
    };
}

/// The triggers that keep `message_text`, the full-text index, in step with `messages`.
macro_rules! message_text_triggers {
    () => {
        "
    CREATE TRIGGER message_text_insert AFTER INSERT ON messages BEGIN
        INSERT INTO message_text(rowid, text) VALUES (new.rowid,
            (SELECT COALESCE(group_concat(json_extract(p.value, '$.text'), ' '), '')
             FROM json_each(new.content, '$.content') p
             WHERE json_extract(p.value, '$.type') = 'text'));
    END;
    CREATE TRIGGER message_text_delete AFTER DELETE ON messages BEGIN
        DELETE FROM message_text WHERE rowid = old.rowid;
    END;"
    };
}

macro_rules! decisions_table {
    () => {
        "CREATE TABLE tool_decisions (
        conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        turn_id TEXT NOT NULL,
        call_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        argument TEXT NOT NULL,
        decision TEXT NOT NULL,
        decided_by TEXT NOT NULL,
        created_at INTEGER NOT NULL
    );
    CREATE INDEX tool_decisions_conversation ON tool_decisions(conversation_id, created_at);"
    };
}

/// The gateway's virtual keys (only each key's SHA-256, hex; `models` a JSON array of patterns,
/// NULL: any) and one row per gateway request (`status` the HTTP status, or `cancelled` when
/// the client left a stream; the bodies only for a key kept with them). `$later` are the key
/// columns added after migration 11.
macro_rules! gateway_tables {
    ($later:literal) => {
        concat!(
            "CREATE TABLE gateway_keys (
        name TEXT PRIMARY KEY,
        hash TEXT NOT NULL UNIQUE,
        created_at INTEGER NOT NULL,
        budget REAL,
        rpm INTEGER,
        models TEXT,
        keep_bodies INTEGER NOT NULL DEFAULT 0,
        revoked_at INTEGER",
            $later,
            "
    );
    CREATE TABLE gateway_requests (
        created_at INTEGER NOT NULL,
        key_name TEXT NOT NULL,
        api TEXT NOT NULL,
        model TEXT,
        served_by TEXT,
        client TEXT,
        status TEXT NOT NULL,
        input_tokens INTEGER,
        output_tokens INTEGER,
        cost REAL,
        latency_ms INTEGER NOT NULL,
        first_byte_ms INTEGER,
        request_body TEXT,
        reply_body TEXT
    );"
        )
    };
}

/// Migration 12's covering index of the gateway's requests.
macro_rules! gateway_usage_index {
    () => {
        "CREATE INDEX gateway_requests_usage ON gateway_requests(created_at, key_name, served_by,
        client, status, input_tokens, output_tokens, cost, latency_ms);"
    };
}

pub(super) const MIGRATIONS: &[&str] = &[
    // 1: conversations and messages.
    concat!(
        "CREATE TABLE conversations (",
        conversation_columns_v1!(),
        "
     );
     CREATE INDEX conversations_updated ON conversations(updated_at DESC, id DESC);
     CREATE TABLE messages (",
        message_columns_v1!(),
        ",
        PRIMARY KEY (conversation_id, seq)
     );"
    ),
    // 2: the tools a conversation of the `tools` feature may use (a JSON array; NULL: the
    // enabled sources).
    "ALTER TABLE conversations ADD COLUMN tools TEXT;",
    // 3: the middleware the conversation's agent listed (a JSON array; NULL: none listed).
    "ALTER TABLE conversations ADD COLUMN middleware TEXT;",
    // 4: the working directory a client opened the conversation in (ACP's `cwd`), for listing
    // a project's conversations.
    "ALTER TABLE conversations ADD COLUMN cwd TEXT;
     CREATE INDEX conversations_cwd ON conversations(cwd, updated_at DESC, id DESC);",
    // 5: the model that ran the turn of each message (a conversation may change models; NULL
    // for messages stored before this column).
    "ALTER TABLE messages ADD COLUMN model TEXT;",
    // 6: full-text search over every message's text parts (FTS5, kept by triggers; rowid is
    // the message's rowid), filled from the messages already stored.
    concat!(
        "CREATE VIRTUAL TABLE message_text USING fts5(text, tokenize = 'unicode61 remove_diacritics 2');
",
        message_text_triggers!(),
        "
     INSERT INTO message_text(rowid, text)
        SELECT m.rowid, (SELECT COALESCE(group_concat(json_extract(p.value, '$.text'), ' '), '')
                         FROM json_each(m.content, '$.content') p
                         WHERE json_extract(p.value, '$.type') = 'text')
        FROM messages m;"
    ),
    // 7: each reply's token counts and cost (US dollars, NULL: unknown) in columns, filled
    // from the usage already stored (older rows named cache writes `cacheCreationTokens`),
    // and a covering index over the rows with usage so that `genai usage` reads only it.
    "ALTER TABLE messages ADD COLUMN input_tokens INTEGER;
     ALTER TABLE messages ADD COLUMN output_tokens INTEGER;
     ALTER TABLE messages ADD COLUMN cache_read_tokens INTEGER;
     ALTER TABLE messages ADD COLUMN cache_write_tokens INTEGER;
     ALTER TABLE messages ADD COLUMN cost REAL;
     UPDATE messages SET
        input_tokens = COALESCE(json_extract(usage, '$.inputTokens'), 0),
        output_tokens = COALESCE(json_extract(usage, '$.outputTokens'), 0),
        cache_read_tokens = json_extract(usage, '$.cacheReadTokens'),
        cache_write_tokens = COALESCE(json_extract(usage, '$.cacheWriteTokens'),
                                      json_extract(usage, '$.cacheCreationTokens'))
        WHERE usage IS NOT NULL;
     CREATE INDEX messages_usage ON messages(created_at, model, conversation_id, input_tokens,
        output_tokens, cache_read_tokens, cache_write_tokens, cost)
        WHERE input_tokens IS NOT NULL;",
    // 8: the schema every reply of a conversation must match when its client gave one at
    // creation (JSON `{"name", "schema"}`; NULL: none, or its model configuration's).
    "ALTER TABLE conversations ADD COLUMN response_schema TEXT;",
    decisions_table!(),
    "ALTER TABLE conversations ADD COLUMN permissions TEXT;",
    // 11: the gateway's virtual keys and the requests made through it.
    concat!(
        gateway_tables!(""),
        "
    CREATE INDEX gateway_requests_key ON gateway_requests(key_name, created_at);"
    ),
    // 12: the columns `genai usage` adds up of the gateway's requests, so its sums read an
    // index and not the rows (which may hold whole request bodies).
    gateway_usage_index!(),
    // 13: the provider that answered each reply (a fallback's when one served), beside its model.
    "ALTER TABLE messages ADD COLUMN provider TEXT;",
    // 14: no index of the gateway's requests by key: every query reads migration 12's
    // covering index, and each request's row paid for writing this one too.
    "DROP INDEX gateway_requests_key;",
    // 15: a key's tokens per minute.
    "ALTER TABLE gateway_keys ADD COLUMN tpm INTEGER;",
];

/// The tables and indexes of [`SCHEMA`], without its full-text index.
macro_rules! tables {
    () => {
        concat!(
            "
    CREATE TABLE conversations (",
            conversation_columns_v1!(),
            ",
        tools TEXT,
        middleware TEXT,
        cwd TEXT,
        response_schema TEXT,
        permissions TEXT
    );
    CREATE INDEX conversations_updated ON conversations(updated_at DESC, id DESC);
    CREATE INDEX conversations_cwd ON conversations(cwd, updated_at DESC, id DESC);
    CREATE TABLE messages (",
            message_columns_v1!(),
            ",
        model TEXT,
        input_tokens INTEGER,
        output_tokens INTEGER,
        cache_read_tokens INTEGER,
        cache_write_tokens INTEGER,
        cost REAL,
        provider TEXT,
        PRIMARY KEY (conversation_id, seq)
    );
    CREATE INDEX messages_usage ON messages(created_at, model, conversation_id, input_tokens,
        output_tokens, cache_read_tokens, cache_write_tokens, cost)
        WHERE input_tokens IS NOT NULL;
",
            decisions_table!(),
            "
",
            gateway_tables!(
                ",
        tpm INTEGER"
            ),
            "
",
            gateway_usage_index!(),
            "
"
        )
    };
}

/// What [`MIGRATIONS`] build, in one step, for a new database (a new file, or the in-memory
/// store of `genai ask --no-log`). Run one by one, every `ALTER TABLE` makes SQLite read the
/// whole schema again and reconnect the full-text index: about four times the work, which was
/// most of a `--no-log` start. It must always build what the migrations build (the test
/// `a_new_store_has_the_schema_the_migrations_build` compares them); a new migration is
/// appended to [`MIGRATIONS`] and its result written here.
pub(super) const SCHEMA: &str = concat!(
    tables!(),
    "
    CREATE VIRTUAL TABLE message_text USING fts5(text, tokenize = 'unicode61 remove_diacritics 2');
",
    message_text_triggers!()
);

/// A history kept in memory for one process that nobody searches (`genai ask --no-log`): the
/// tables of [`SCHEMA`] without the full-text index and its triggers, which were most of the
/// cost of setting it up (1.2 million instructions of a 6.9 million `--no-log` run).
pub(super) const SCRATCH_SCHEMA: &str = tables!();

impl Store {
    /// A history in memory without full-text search (see [`SCRATCH_SCHEMA`]): what one run
    /// that keeps nothing needs. `Store::search` on it is an error.
    pub fn scratch() -> Result<Store> {
        let conn = Connection::open_in_memory()?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.execute_batch(SCRATCH_SCHEMA)?;
        conn.pragma_update(None, "user_version", MIGRATIONS.len() as i64)?;
        Ok(Store {
            conn: Mutex::new(conn),
        })
    }

    pub(super) fn setup(mut conn: Connection) -> Result<Store> {
        shared_file(&conn)?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // An immediate transaction takes the write lock before reading the version, so daemons
        // started together on a new file migrate it once.
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let mut version: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version as usize > MIGRATIONS.len() {
            return Err(Error::new(
                ErrorKind::Store,
                format!(
                    "the history was written by a newer genai (schema {version}); upgrade genai"
                ),
            ));
        }
        if version == 0 {
            let tables: Vec<String> = tx
                .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")?
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            if !tables.is_empty() {
                return Err(Error::new(
                    ErrorKind::Store,
                    format!(
                        "it is not genai's history: it holds other tables ({}); move the file \
                         away or set GENAI_DATA_DIR",
                        crate::error::known(tables.iter().take(5))
                    ),
                ));
            }
            tx.execute_batch(SCHEMA)?;
            version = MIGRATIONS.len() as i64;
            tx.pragma_update(None, "user_version", version)?;
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            tx.execute_batch(sql)?;
            tx.pragma_update(None, "user_version", (i + 1) as i64)?;
        }
        tx.commit()?;
        Ok(Store {
            conn: Mutex::new(conn),
        })
    }

    /// Whether the history answers and its schema is the one this genai migrates to: a read
    /// of the file's schema and version (what `genai serve`'s `/readyz` asks), else why not.
    pub fn ready(&self) -> Result<()> {
        let conn = self.conn()?;
        let (version, objects): (i64, i64) = conn.query_row(
            "SELECT (SELECT user_version FROM pragma_user_version), \
                    (SELECT count(*) FROM sqlite_master)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let current = MIGRATIONS.len() as i64;
        if version != current || objects == 0 {
            return Err(Error::new(
                ErrorKind::Store,
                format!("the history's schema is version {version}, this genai's is {current}"),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every schema object as (type, name, table, SQL without whitespace), in name order.
    fn objects(conn: &Connection) -> Vec<(String, String, String, String)> {
        let mut all: Vec<(String, String, String, String)> = conn
            .prepare("SELECT type, name, tbl_name, sql FROM sqlite_master")
            .unwrap()
            .query_map([], |r| {
                let sql: Option<String> = r.get(3)?;
                let sql: String = sql.unwrap_or_default().split_whitespace().collect();
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, sql))
            })
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        all.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        all
    }

    #[test]
    fn a_new_store_has_the_schema_the_migrations_build() {
        let migrated = Connection::open_in_memory().unwrap();
        for sql in MIGRATIONS {
            migrated.execute_batch(sql).unwrap();
        }
        let store = Store::in_memory().unwrap();
        let new = store.conn().unwrap();
        let version: i64 = new
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(version as usize, MIGRATIONS.len());
        assert_eq!(
            objects(&new),
            objects(&migrated),
            "SCHEMA must build what MIGRATIONS build"
        );
    }

    #[test]
    fn a_scratch_store_has_the_full_schema_but_the_search_index_and_keeps_turns() {
        let full = Store::in_memory().unwrap();
        let scratch = Store::scratch().unwrap();
        let without_search: Vec<_> = objects(&full.conn().unwrap())
            .into_iter()
            .filter(|o| !o.1.starts_with("message_text") && o.2 != "message_text")
            .filter(|o| !o.2.starts_with("message_text"))
            .collect();
        assert_eq!(objects(&scratch.conn().unwrap()), without_search);
        assert!(scratch.search("anything", 5, "", "").is_err());

        let record = crate::store::tests::record("c1", 1);
        scratch.create_conversation(&record).unwrap();
        let turn = [crate::message::Message::user("hello").into()];
        scratch.commit_turn("c1", None, None, &turn).unwrap();
        let (messages, _) = scratch.history("c1", 10, None).unwrap();
        assert_eq!(messages.len(), 1);
    }

    #[test]
    fn a_file_at_an_older_version_is_migrated_from_there() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.db");
        {
            let conn = Connection::open(&path).unwrap();
            for sql in &MIGRATIONS[..5] {
                conn.execute_batch(sql).unwrap();
            }
            conn.pragma_update(None, "user_version", 5).unwrap();
        }
        let store = Store::open(&path).unwrap();
        let reference = Store::in_memory().unwrap();
        assert_eq!(
            objects(&store.conn().unwrap()),
            objects(&reference.conn().unwrap())
        );
    }

    #[test]
    fn a_store_is_ready_until_another_genai_moves_its_schema_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.db");
        let store = Store::open(&path).unwrap();
        store.ready().unwrap();
        let other = Connection::open(&path).unwrap();
        other
            .pragma_update(None, "user_version", MIGRATIONS.len() as i64 + 1)
            .unwrap();
        let e = store.ready().unwrap_err();
        assert!(e.message.contains("schema is version"), "{}", e.message);
    }
}
