//! The SQLite files genai keeps (the history, the checkpoints' index): how one is opened to be
//! shared by several genai processes at once, and the times stored in them. It must never
//! know a table: each owner writes its own schema.

use rusqlite::Connection;

use crate::error::Result;

/// Now, as stored: milliseconds since the Unix epoch (0 if the clock is before it).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Makes an SQLite file fit for several genai processes at once (the history, the
/// checkpoints' index): a 5 s busy timeout, WAL, `synchronous = NORMAL`, no checkpoint on close.
pub fn shared_file(conn: &Connection) -> Result<()> {
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    // Switching a new file to WAL needs an exclusive lock and SQLite does not wait for it
    // (no busy handler there), so a process starting beside another one retries for a while.
    let mut tries = 0;
    while let Err(e) = conn.pragma_update(None, "journal_mode", "WAL") {
        let busy = e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy);
        tries += 1;
        if !busy || tries > 250 {
            return Err(e.into());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    // The last process to close the file leaves the WAL as it is instead of copying it into
    // the file and deleting it: with one `genai ask` per process, that checkpoint (two
    // `fsync`s), and the next process creating the WAL again (its header and the folder
    // synced too), were most of a turn's wall time. The next process to open the file reads
    // the whole WAL to index it (about a million instructions per 1.4 MB), so the WAL is
    // checkpointed at 256 pages (1 MiB: once in some 25 asks) instead of SQLite's 1,000.
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    )?;
    conn.pragma_update(None, "wal_autocheckpoint", 256)?;
    Ok(())
}
