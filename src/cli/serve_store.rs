//! Which store holds the gateway's keys and ledger for the command line: the shared database
//! of `[store] url` (or `GENAI_DATABASE_URL`) when one is named, else the SQLite history; and
//! `genai serve migrate`, which copies a SQLite serve's keys, ledger and conversations into a
//! shared database.
//!
//! It owns that choice for `genai serve keys`, `genai usage --by key` and `genai serve`. It
//! must never print a database URL but with its password masked.

use std::path::PathBuf;

use genai_core::config::Config;
use genai_core::error::{Error, ErrorKind};
use genai_core::store::{GatewayKey, KeyUsage, Store};
use genai_postgres::Postgres;

/// Where the gateway's keys and ledger are.
pub enum GatewayStore {
    Local(Store),
    Shared(Postgres),
}

/// The shared database's URL of `config` (the environment's wins), if one is named.
pub fn database_url(config: &Config) -> Option<String> {
    config.store.database_url()
}

/// The shared database of `config`, migrated, if it names one.
pub async fn shared(config: &Config) -> Result<Option<Postgres>, Error> {
    match database_url(config) {
        Some(url) => Ok(Some(Postgres::open(&url).await?)),
        None => Ok(None),
    }
}

/// The shared database of `config` for `genai serve`, which starts while it cannot be reached
/// yet (and migrates it once it answers).
pub async fn shared_for_serve(config: &Config) -> Result<Option<Postgres>, Error> {
    match database_url(config) {
        Some(url) => Ok(Some(Postgres::open_for_serve(&url).await?)),
        None => Ok(None),
    }
}

impl GatewayStore {
    /// The store the config names.
    pub async fn open() -> Result<GatewayStore, Error> {
        let (_, config, _) = super::load()?;
        match shared(&config).await? {
            Some(db) => Ok(GatewayStore::Shared(db)),
            None => Ok(GatewayStore::Local(super::open_store()?)),
        }
    }

    pub async fn create_key(&self, key: &GatewayKey) -> Result<(), Error> {
        match self {
            GatewayStore::Local(s) => s.create_gateway_key(key),
            GatewayStore::Shared(db) => db.create_gateway_key(key).await,
        }
    }

    /// Every key with what it has spent.
    pub async fn keys(&self) -> Result<Vec<(GatewayKey, f64)>, Error> {
        match self {
            GatewayStore::Local(s) => {
                let spent: std::collections::HashMap<String, f64> =
                    s.gateway_spent()?.into_iter().collect();
                Ok(s.gateway_keys()?
                    .into_iter()
                    .map(|k| {
                        let spent = spent.get(&k.name).copied().unwrap_or(0.0);
                        (k, spent)
                    })
                    .collect())
            }
            GatewayStore::Shared(db) => db.gateway_keys().await,
        }
    }

    pub async fn revoke_key(&self, name: &str, now: i64) -> Result<bool, Error> {
        match self {
            GatewayStore::Local(s) => s.revoke_gateway_key(name, now),
            GatewayStore::Shared(db) => db.revoke_gateway_key(name, now).await,
        }
    }

    /// The requests at or after `since` added up by key (every replica's when shared).
    pub async fn usage(&self, since: Option<i64>) -> Result<Vec<KeyUsage>, Error> {
        match self {
            GatewayStore::Local(s) => s.gateway_usage(since),
            GatewayStore::Shared(db) => db.gateway_usage(since).await,
        }
    }
}

/// `genai serve migrate --from FILE [--to URL]`: copies the keys, the ledger and the
/// conversations, and says what it copied (a second run copies what was added since, nothing twice).
pub async fn migrate(from: PathBuf, to: Option<String>) -> Result<(), Error> {
    if !from.is_file() {
        return Err(Error::new(
            ErrorKind::InvalidParams,
            format!(
                "--from {} is not a file: name the SQLite history of the serve to copy (its data folder's history.db)",
                from.display()
            ),
        ));
    }
    let url = match to {
        Some(url) => url,
        None => database_url(&super::load()?.1).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidParams,
                "name the database: --to postgres://... or [store] url (or GENAI_DATABASE_URL)",
            )
        })?,
    };
    let db = Postgres::open(&url).await?;
    let done = db.import_sqlite(&from).await?;
    eprintln!(
        "genai: into {}: {} keys added, {} there already, {} gateway requests copied",
        db.shown(),
        done.keys_added,
        done.keys_present,
        done.requests_added
    );
    eprintln!(
        "genai: {} conversations copied ({} messages, {} tool-call decisions), {} there already",
        done.conversations_added,
        done.messages_added,
        done.decisions_added,
        done.conversations_present
    );
    if !done.keys_conflicting.is_empty() {
        eprintln!(
            "genai: not copied, the database has another key of that name: {}",
            done.keys_conflicting.join(", ")
        );
    }
    Ok(())
}
