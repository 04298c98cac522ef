//! The shared database's schema: versioned SQL, applied at start in one transaction under
//! `pg_advisory_xact_lock`, so replicas starting together wait for each other and the second
//! finds the work done. A database whose version is newer than this binary knows is refused,
//! naming both versions.
//!
//! It owns the tables' definitions and their version. It must never change a table another
//! way than by a new entry of [`MIGRATIONS`] (an applied one is never edited), and never run a
//! migration outside the lock.

use genai_core::error::{Error, ErrorKind, Result};
use tokio_postgres::Client;

/// The lock every replica's migration takes: the bytes `genai-sc` as a number.
const LOCK: i64 = 0x67656e_61692d7363;

/// The SQL of each version, in order: version N is `MIGRATIONS[N - 1]`.
const MIGRATIONS: &[&str] = &[
    // 1: virtual keys with what they spent, the ledger, and what `genai serve migrate` copied.
    "CREATE TABLE gateway_keys (
        name TEXT PRIMARY KEY,
        hash TEXT NOT NULL UNIQUE,
        created_at BIGINT NOT NULL,
        budget DOUBLE PRECISION,
        rpm INTEGER,
        models TEXT,
        keep_bodies BOOLEAN NOT NULL DEFAULT FALSE,
        revoked_at BIGINT,
        spent DOUBLE PRECISION NOT NULL DEFAULT 0
     );
     CREATE TABLE gateway_requests (
        id BIGSERIAL PRIMARY KEY,
        created_at BIGINT NOT NULL,
        key_name TEXT NOT NULL,
        api TEXT NOT NULL,
        model TEXT,
        served_by TEXT,
        client TEXT,
        status TEXT NOT NULL,
        input_tokens BIGINT,
        output_tokens BIGINT,
        cost DOUBLE PRECISION,
        latency_ms BIGINT NOT NULL,
        first_byte_ms BIGINT,
        request_body TEXT,
        reply_body TEXT
     );
     CREATE INDEX gateway_requests_usage ON gateway_requests (key_name, created_at);
     CREATE TABLE sqlite_imports (
        source TEXT PRIMARY KEY,
        last_rowid BIGINT NOT NULL
     );",
    // 2: a key's tokens per minute.
    "ALTER TABLE gateway_keys ADD COLUMN tpm BIGINT;",
    // 3: the serve's conversations, their messages (with the text of their text parts, and
    // its full-text vector under a GIN index, for search) and the tool calls' decisions. Ids compare byte by byte (`C`), as SQLite's do.
    "CREATE TABLE conversations (
        id TEXT COLLATE \"C\" PRIMARY KEY,
        title TEXT NOT NULL DEFAULT '',
        feature TEXT NOT NULL,
        provider TEXT NOT NULL,
        model_configuration TEXT,
        format TEXT NOT NULL,
        model TEXT NOT NULL,
        parameters TEXT NOT NULL DEFAULT '{}',
        system TEXT,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        tools TEXT,
        middleware TEXT,
        cwd TEXT,
        response_schema TEXT,
        permissions TEXT
     );
     CREATE INDEX conversations_updated ON conversations (updated_at DESC, id DESC);
     CREATE INDEX conversations_cwd ON conversations (cwd, updated_at DESC, id DESC);
     CREATE TABLE messages (
        conversation_id TEXT COLLATE \"C\" NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
        seq BIGINT NOT NULL,
        role TEXT NOT NULL,
        content TEXT NOT NULL,
        usage TEXT,
        created_at BIGINT NOT NULL,
        model TEXT,
        provider TEXT,
        input_tokens BIGINT,
        output_tokens BIGINT,
        cache_read_tokens BIGINT,
        cache_write_tokens BIGINT,
        cost DOUBLE PRECISION,
        text TEXT NOT NULL DEFAULT '',
        text_search tsvector GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED,
        PRIMARY KEY (conversation_id, seq)
     );
     CREATE INDEX messages_text_search ON messages USING GIN (text_search);
     CREATE TABLE tool_decisions (
        id BIGSERIAL PRIMARY KEY,
        conversation_id TEXT COLLATE \"C\" NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
        turn_id TEXT NOT NULL,
        call_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        argument TEXT NOT NULL,
        decision TEXT NOT NULL,
        decided_by TEXT NOT NULL,
        created_at BIGINT NOT NULL
     );
     CREATE INDEX tool_decisions_conversation ON tool_decisions (conversation_id, created_at);",
];

/// The schema version this binary writes and reads.
pub const VERSION: i64 = MIGRATIONS.len() as i64;

/// Brings the database to [`VERSION`] under the lock; refuses a newer one.
pub(crate) async fn migrate(client: &mut Client) -> Result<()> {
    let tx = client.transaction().await.map_err(crate::db_err)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK])
        .await
        .map_err(crate::db_err)?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS genai_schema (
            one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one),
            version BIGINT NOT NULL
         )",
    )
    .await
    .map_err(crate::db_err)?;
    let at: i64 = tx
        .query_opt("SELECT version FROM genai_schema", &[])
        .await
        .map_err(crate::db_err)?
        .map_or(0, |r| r.get(0));
    if at > VERSION {
        return check(at);
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(at as usize) {
        tx.batch_execute(sql).await.map_err(|e| {
            Error::new(
                ErrorKind::Store,
                format!(
                    "the shared database's migration to version {} failed: {}",
                    i + 1,
                    crate::db_err(e).message
                ),
            )
        })?;
    }
    if at < VERSION {
        tx.execute(
            "INSERT INTO genai_schema (one, version) VALUES (TRUE, $1)
             ON CONFLICT (one) DO UPDATE SET version = EXCLUDED.version",
            &[&VERSION],
        )
        .await
        .map_err(crate::db_err)?;
        tracing::info!("the shared database's schema went from version {at} to {VERSION}");
    }
    tx.commit().await.map_err(crate::db_err)
}

/// Refuses a database at `version` when this binary does not know it.
pub(crate) fn check(version: i64) -> Result<()> {
    if version > VERSION {
        return Err(Error::new(
            ErrorKind::Store,
            format!(
                "the shared database's schema is at version {version}, newer than this genai knows (version {VERSION}): a newer genai migrated it; run that genai (or newer) on it"
            ),
        ));
    }
    if version < VERSION {
        return Err(Error::new(
            ErrorKind::Store,
            format!(
                "the shared database's schema is at version {version}, older than this genai's (version {VERSION}): its migrations have not run"
            ),
        ));
    }
    Ok(())
}

/// The version the database is at (0: none yet).
pub(crate) async fn version(client: &Client) -> Result<i64> {
    let found = client
        .query_opt("SELECT version FROM genai_schema", &[])
        .await;
    match found {
        Ok(row) => Ok(row.map_or(0, |r| r.get(0))),
        Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE) => Ok(0),
        Err(e) => Err(crate::db_err(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newer_or_older_version_is_refused_naming_both() {
        assert!(check(VERSION).is_ok());
        let newer = check(VERSION + 1).unwrap_err().message;
        assert!(
            newer.contains(&format!("version {}", VERSION + 1)),
            "{newer}"
        );
        assert!(newer.contains(&format!("(version {VERSION})")), "{newer}");
        assert!(check(0).unwrap_err().message.contains("have not run"));
    }
}
