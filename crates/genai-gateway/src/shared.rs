//! The state `genai serve`'s replicas share, as the gateway asks for it: a live virtual key by
//! its hash with what it has spent in all, the ledger's rows stored with their costs charged
//! to their keys, and whether the database is ready. `genai-postgres` implements it over Postgres; without it
//! the gateway keeps its keys and ledger in the SQLite history (`keys.rs`, `ledger.rs`).
//!
//! It owns the trait and the pool's figures `/metrics` shows. It must never name a database,
//! a URL or a driver: the gateway does not know which database it talks to, and an
//! implementation's errors reach clients only as "the shared store is unavailable".

use genai_core::error::Result;
use genai_core::store::{GatewayKey, GatewayRequest};

/// The gateway's state shared by replicas on one database.
#[async_trait::async_trait]
pub trait SharedState: Send + Sync + std::fmt::Debug + 'static {
    /// The live (not revoked) key whose SHA-256 is `hash` (64 hex digits), with the US dollars
    /// its requests have spent in all, read now (a revocation counts at once).
    async fn live_key(&self, hash: &str) -> Result<Option<(GatewayKey, f64)>>;

    /// Stores the rows of gateway requests and adds each row's cost to what its key has spent,
    /// in one transaction (a row is never stored uncharged, nor a cost charged without its
    /// row; replicas charging at once add up).
    async fn record(&self, rows: Vec<GatewayRequest>) -> Result<()>;

    /// `Ok` when the database answers and its schema is this binary's, else why not.
    async fn ready(&self) -> Result<()>;

    /// The connection pool now.
    fn pool(&self) -> PoolState;
}

/// The shared database's connection pool, as `/metrics` shows it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolState {
    /// Connections handed out to a query now.
    pub in_use: u64,
    /// Connections open and waiting for a query.
    pub idle: u64,
    /// The most connections the pool opens.
    pub max: u64,
}
