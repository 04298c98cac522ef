//! `genai serve migrate --from SQLITE_FILE --to URL`: a SQLite serve's gateway keys (their
//! hashes, limits and revocations; never a plain key, which no store holds) and its ledger,
//! copied into the shared database, then its conversations (`import_history.rs`). The ledger goes in pages, each in one transaction with
//! the place it reached (`sqlite_imports`, by the file's path), so a second run, or a run
//! after one that stopped halfway, copies only the rows it has not: nothing twice.
//!
//! It owns the copy. It must never change the SQLite file, and never overwrite a key of the
//! shared database with another of the same name (such a key is skipped and named).

use std::path::Path;
use std::sync::Arc;

use genai_core::error::{Error, Result};
use genai_core::store::Store;

use super::admin::{insert_requests, KeyRow, INSERT_KEY};
use super::{db_err, within, Postgres};

/// Rows of the ledger copied in one transaction.
const PAGE: u32 = 1_000;

/// What one run of the import did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Imported {
    /// Keys added to the shared database.
    pub keys_added: u64,
    /// Keys it had already with the same hash (a revocation in SQLite is carried over).
    pub keys_present: u64,
    /// Names the shared database gives to another key: not copied.
    pub keys_conflicting: Vec<String>,
    /// Ledger rows copied now (those of an earlier run are not copied again).
    pub requests_added: u64,
    /// Conversations copied now, with their messages and tool-call decisions.
    pub conversations_added: u64,
    pub messages_added: u64,
    pub decisions_added: u64,
    /// Conversations the database held already (an earlier run's): left as they are.
    pub conversations_present: u64,
}

pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::internal(format!("reading the SQLite file failed: {e}")))?
}

impl Postgres {
    /// Copies the gateway keys, the ledger and the conversations of the SQLite history at
    /// `from` (see the module).
    pub async fn import_sqlite(&self, from: &Path) -> Result<Imported> {
        let source = from
            .canonicalize()
            .unwrap_or_else(|_| from.to_path_buf())
            .display()
            .to_string();
        let path = from.to_path_buf();
        let store = Arc::new(blocking(move || Store::open(&path)).await?);
        let mut done = Imported::default();
        let reading = store.clone();
        let keys = blocking(move || reading.gateway_keys()).await?;
        for key in &keys {
            let row = KeyRow::of(key);
            let added = within(async {
                let client = self.client().await?;
                let insert = format!(
                    "{INSERT_KEY} ON CONFLICT (name) DO UPDATE
                        SET revoked_at = COALESCE(gateway_keys.revoked_at, EXCLUDED.revoked_at)
                        WHERE gateway_keys.hash = EXCLUDED.hash
                     RETURNING (xmax = 0)"
                );
                client
                    .query_opt(&insert, &row.params())
                    .await
                    .map_err(db_err)
            })
            .await?;
            match added.map(|r| r.get::<_, bool>(0)) {
                Some(true) => done.keys_added += 1,
                Some(false) => done.keys_present += 1,
                None => done.keys_conflicting.push(key.name.clone()),
            }
        }
        loop {
            let after = within(async {
                let client = self.client().await?;
                let row = client
                    .query_opt(
                        "SELECT last_rowid FROM sqlite_imports WHERE source = $1",
                        &[&source],
                    )
                    .await
                    .map_err(db_err)?;
                Ok(row.map_or(0, |r| r.get::<_, i64>(0)))
            })
            .await?;
            let reading = store.clone();
            let page = blocking(move || reading.gateway_requests_after(after, PAGE)).await?;
            let Some(last) = page.last().map(|(rowid, _)| *rowid) else {
                break;
            };
            let rows: Vec<_> = page.into_iter().map(|(_, r)| r).collect();
            within(async {
                let mut client = self.client().await?;
                let tx = client.transaction().await.map_err(db_err)?;
                // The place is taken first, under the row's lock: two imports of one file
                // at once copy each page once.
                let moved = tx
                    .execute(
                        "INSERT INTO sqlite_imports (source, last_rowid) VALUES ($1, $2)
                         ON CONFLICT (source) DO UPDATE SET last_rowid = EXCLUDED.last_rowid
                            WHERE sqlite_imports.last_rowid = $3",
                        &[&source, &last, &after],
                    )
                    .await
                    .map_err(db_err)?;
                if moved == 0 {
                    return Ok(());
                }
                insert_requests(&*tx, &rows).await?;
                let mut spent: std::collections::BTreeMap<&str, f64> = Default::default();
                let theirs = |name: &str| done.keys_conflicting.iter().any(|n| n == name);
                for r in rows.iter().filter(|r| !theirs(&r.key_name)) {
                    if let Some(cost) = r.cost {
                        *spent.entry(&r.key_name).or_default() += cost;
                    }
                }
                for (name, cost) in spent {
                    tx.execute(
                        "UPDATE gateway_keys SET spent = spent + $2 WHERE name = $1",
                        &[&name, &cost],
                    )
                    .await
                    .map_err(db_err)?;
                }
                tx.commit().await.map_err(db_err)?;
                done.requests_added += rows.len() as u64;
                Ok(())
            })
            .await?;
        }
        self.import_conversations(store, &mut done).await?;
        Ok(done)
    }
}
