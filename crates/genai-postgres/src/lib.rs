//! `genai serve`'s shared state in Postgres (`[store] url`, or `GENAI_DATABASE_URL`): the
//! gateway's virtual keys with what each has spent, the ledger of gateway requests, and the
//! serve's conversations, so replicas on one database agree on keys, revocations, budgets,
//! usage and history. [`Postgres`] implements the gateway's [`SharedState`] and the core's
//! `History` (`history.rs`, over `conversations.rs` and `turns.rs`) over a pool of
//! connections (deadpool) with prepared statements; `schema.rs` migrates the database at start under an advisory lock;
//! `admin.rs` is what `genai serve keys` and `genai usage --by key` ask; `import.rs` copies a
//! SQLite serve's keys, ledger and conversations (`genai serve migrate`).
//!
//! It owns the SQL and the pool. It must never log, print or return the URL's password (it is
//! handed to the redactor before the first connection, and errors name the host only), never
//! store a key in plain (hashes only), and never wait on the database without a deadline: a
//! database that does not answer is an error within [`QUERY_TIMEOUT`].
//!
//! TLS (`tls.rs`): `sslmode=require`, `verify-ca` or `verify-full` connect over TLS and verify
//! the server's certificate and name, always; otherwise connections are plain.

mod admin;
mod conversations;
mod history;
mod import;
mod import_history;
mod schema;
mod tls;
mod turns;

pub use import::Imported;
pub use schema::VERSION as SCHEMA_VERSION;

use std::future::Future;
use std::time::Duration;

use deadpool_postgres::{Pool, Runtime};
use genai_core::error::{Error, ErrorKind, Result};
use genai_core::store::{GatewayKey, GatewayRequest};
use genai_gateway::{PoolState, SharedState};

/// The longest a connection may take to open, a query to answer, or a request to wait for a
/// free connection: past it the gateway answers 503 at once rather than hang.
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(2);

/// Connections the pool opens at most.
const POOL_SIZE: usize = 16;

/// The shared database of `genai serve`'s replicas.
pub struct Postgres {
    pool: Pool,
    /// The URL as it may be shown: its password masked.
    shown: String,
    /// Set once the database holds this binary's schema: a serve started while Postgres was
    /// away migrates it with its first query.
    migrated: tokio::sync::OnceCell<()>,
    /// The runtime the pool was made on, for the history's calls from outside it.
    handle: Option<tokio::runtime::Handle>,
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postgres")
            .field("url", &self.shown)
            .finish()
    }
}

/// A database error as genai says it: what failed, never the URL's password.
pub(crate) fn db_err(e: tokio_postgres::Error) -> Error {
    let message = match e.as_db_error() {
        Some(db) => format!("Postgres refused: {}", db.message()),
        None => {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                text.push_str(&format!(": {s}"));
                source = s.source();
            }
            text
        }
    };
    let hint = tls::hint(&message);
    Error::new(ErrorKind::Store, format!("{message}{hint}"))
}

fn pool_err(e: deadpool_postgres::PoolError) -> Error {
    match e {
        deadpool_postgres::PoolError::Backend(e) => db_err(e),
        deadpool_postgres::PoolError::Timeout(_) => Error::new(
            ErrorKind::Timeout,
            format!(
                "the shared database did not give a connection within {} s",
                QUERY_TIMEOUT.as_secs()
            ),
        ),
        other => Error::new(
            ErrorKind::Store,
            format!("the shared database's pool: {other}"),
        ),
    }
}

/// Whether a connection failed for want of the server (it did not answer in time, refused
/// the connection or cut it), which may pass, rather than for what the server said.
fn unreachable(e: &deadpool_postgres::PoolError) -> bool {
    use std::io::ErrorKind::*;
    let deadpool_postgres::PoolError::Backend(e) = e else {
        return matches!(e, deadpool_postgres::PoolError::Timeout(_));
    };
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return matches!(
                io.kind(),
                ConnectionRefused
                    | ConnectionReset
                    | ConnectionAborted
                    | TimedOut
                    | NotConnected
                    | UnexpectedEof
                    | HostUnreachable
                    | NetworkUnreachable
                    | AddrNotAvailable
            );
        }
        source = s.source();
    }
    e.to_string().contains("timed out")
}

/// `work`, or a time-out error past [`QUERY_TIMEOUT`] (twice that: a connection, then a query).
pub(crate) async fn within<T>(work: impl Future<Output = Result<T>>) -> Result<T> {
    match tokio::time::timeout(QUERY_TIMEOUT * 2, work).await {
        Ok(done) => done,
        Err(_) => Err(Error::new(
            ErrorKind::Timeout,
            format!(
                "the shared database did not answer within {} s",
                (QUERY_TIMEOUT * 2).as_secs()
            ),
        )),
    }
}

impl Postgres {
    /// A pool on `url` (nothing connects yet); a URL that does not parse is refused, without
    /// its password.
    pub fn new(url: &str) -> Result<Postgres> {
        if let Some(password) = genai_core::config::store::url_password(url) {
            genai_core::redact::remember(password);
        }
        let shown = genai_core::config::store::masked_url(url);
        let settings = tls::Settings::read(url);
        let mut config: tokio_postgres::Config = settings.url.parse().map_err(|e| {
            Error::new(
                ErrorKind::Config,
                format!("[store] url `{shown}` is not a Postgres URL: {e} (postgres://USER:PASSWORD@HOST:PORT/DB)"),
            )
        })?;
        config.connect_timeout(QUERY_TIMEOUT);
        config.application_name("genai serve");
        let manager = settings.manager(config, &shown)?;
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .wait_timeout(Some(QUERY_TIMEOUT))
            .create_timeout(Some(QUERY_TIMEOUT))
            .recycle_timeout(Some(QUERY_TIMEOUT))
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(|e| Error::internal(format!("cannot make the database's pool: {e}")))?;
        Ok(Postgres {
            pool,
            shown,
            migrated: tokio::sync::OnceCell::new(),
            handle: tokio::runtime::Handle::try_current().ok(),
        })
    }

    /// A pool on `url` with the database migrated to this binary's schema (under the advisory
    /// lock); a newer schema is refused naming both versions.
    pub async fn open(url: &str) -> Result<Postgres> {
        let db = Postgres::new(url)?;
        db.migrated().await.map_err(|e| db.named(e))?;
        Ok(db)
    }

    /// As [`open`](Postgres::open), for `genai serve`: a database that cannot be reached yet
    /// (a time-out, a connection refused or cut) is not an error but said on stderr, and it
    /// is migrated with the first query that reaches it; until then each query fails as it
    /// would with Postgres away, fast. What Postgres itself refuses (a password, a newer
    /// schema) still fails the start.
    pub async fn open_for_serve(url: &str) -> Result<Postgres> {
        let db = Postgres::new(url)?;
        match db.pool.get().await {
            Ok(client) => drop(client),
            Err(e) if unreachable(&e) => {
                let e = pool_err(e);
                tracing::warn!("the shared database {}: {}", db.shown, e.message);
                eprintln!(
                    "genai: the shared database {} cannot be reached yet ({}): requests with a virtual key get 503 and /readyz says so until it answers",
                    db.shown, e.message
                );
                return Ok(db);
            }
            Err(e) => return Err(db.named(pool_err(e))),
        }
        db.migrated().await.map_err(|e| db.named(e))?;
        Ok(db)
    }

    /// Migrates the database once per process (under the advisory lock).
    async fn migrated(&self) -> Result<()> {
        let migrate = || {
            within(async {
                let mut client = self.pool.get().await.map_err(pool_err)?;
                schema::migrate(&mut client).await
            })
        };
        self.migrated.get_or_try_init(migrate).await.copied()
    }

    /// `e` naming the database, without its password.
    fn named(&self, e: Error) -> Error {
        Error::new(
            e.kind,
            format!("the shared database {}: {}", self.shown, e.message),
        )
    }

    /// The URL, its password masked.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// A pooled connection to the migrated database.
    pub(crate) async fn client(&self) -> Result<deadpool_postgres::Client> {
        self.migrated().await?;
        self.pool.get().await.map_err(pool_err)
    }
}

/// The key of a row of `gateway_keys` (name, hash, created_at, budget, rpm, models,
/// keep_bodies, revoked_at, spent, tpm), with what it spent.
pub(crate) fn key_of(r: &tokio_postgres::Row) -> Result<(GatewayKey, f64)> {
    let models: Option<String> = r.get(5);
    let models = match models {
        Some(m) => serde_json::from_str(&m)
            .map_err(|e| Error::new(ErrorKind::Store, format!("a key's models: {e}")))?,
        None => Vec::new(),
    };
    let rpm: Option<i32> = r.get(4);
    let tpm: Option<i64> = r.get(9);
    Ok((
        GatewayKey {
            name: r.get(0),
            hash: r.get(1),
            created_at: r.get(2),
            budget: r.get(3),
            rpm: rpm.map(|n| n.max(0) as u32),
            tpm: tpm.map(|n| n.max(0) as u64),
            models,
            keep_bodies: r.get(6),
            revoked_at: r.get(7),
        },
        r.get(8),
    ))
}

pub(crate) const KEY_COLUMNS: &str =
    "name, hash, created_at, budget, rpm, models, keep_bodies, revoked_at, spent, tpm";

#[async_trait::async_trait]
impl SharedState for Postgres {
    async fn live_key(&self, hash: &str) -> Result<Option<(GatewayKey, f64)>> {
        within(async {
            let client = self.client().await?;
            let stmt = client
                .prepare_cached(&format!(
                    "SELECT {KEY_COLUMNS} FROM gateway_keys WHERE hash = $1 AND revoked_at IS NULL"
                ))
                .await
                .map_err(db_err)?;
            let row = client.query_opt(&stmt, &[&hash]).await.map_err(db_err)?;
            row.as_ref().map(key_of).transpose()
        })
        .await
    }

    async fn record(&self, rows: Vec<GatewayRequest>) -> Result<()> {
        within(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(db_err)?;
            admin::insert_requests(&*tx, &rows).await?;
            // Keys in name order, so replicas charging the same keys take their locks alike.
            let mut costs = std::collections::BTreeMap::<&str, f64>::new();
            for r in &rows {
                if let Some(cost) = r.cost.filter(|c| *c > 0.0) {
                    *costs.entry(r.key_name.as_str()).or_default() += cost;
                }
            }
            if !costs.is_empty() {
                let stmt = tx
                    .prepare_cached("UPDATE gateway_keys SET spent = spent + $2 WHERE name = $1")
                    .await
                    .map_err(db_err)?;
                for (name, cost) in costs {
                    tx.execute(&stmt, &[&name, &cost]).await.map_err(db_err)?;
                }
            }
            tx.commit().await.map_err(db_err)
        })
        .await
    }

    async fn ready(&self) -> Result<()> {
        within(async {
            let client = self.client().await?;
            schema::check(schema::version(&client).await?)
        })
        .await
    }

    fn pool(&self) -> PoolState {
        let status = self.pool.status();
        PoolState {
            in_use: status.size.saturating_sub(status.available) as u64,
            idle: status.available as u64,
            max: status.max_size as u64,
        }
    }
}
