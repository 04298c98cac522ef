//! The virtual keys as the gateway checks them: every live key of the history in memory by the
//! SHA-256 of the key, each with its meter (what it has spent, its requests of the last
//! minute), so a request is checked without a query. The table is loaded again when another
//! process changed the file (`genai serve keys create|revoke`), which the gateway's watcher
//! notices ([`Keys::changed`]), and on an unknown key at most every [`RELOAD_EVERY`].
//!
//! It owns the limits' arithmetic. It must never hold or compare a key in plain (only hashes
//! are kept and compared), never query SQLite on a request's path but for such a reload, and
//! never write rows (the ledger does).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::aliases::glob;
use super::rate::{Counter, Limits, OverRate};
use genai_core::error::{Error, Result};
use genai_core::store::{GatewayKey, Store};

/// How often, at most, the table is loaded again for an unknown key.
pub(crate) const RELOAD_EVERY: Duration = Duration::from_millis(250);

/// The SHA-256 of a key.
pub fn hash(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

/// A hash as the history stores it: 64 lowercase hex digits.
pub fn hex(hash: &[u8; 32]) -> String {
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    if text.len() != 64 {
        return None;
    }
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// What a key has spent; kept by name across reloads.
#[derive(Debug, Default)]
pub(crate) struct Meter {
    spent: f64,
}

/// One live key.
pub(crate) struct Key {
    pub(crate) row: GatewayKey,
    meter: Arc<Mutex<Meter>>,
    /// Where its requests and tokens of the last minute are counted.
    counter: Arc<Counter>,
}

/// Why a key may not make a request now.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Refusal {
    /// Its requests have spent its budget (US dollars).
    OverBudget { spent: f64, budget: f64 },
    /// It is over one of its rate limits, or they cannot be counted now.
    OverRate(OverRate),
}

impl Key {
    /// A key just read from a shared store, which says it has spent `spent`; its requests
    /// and tokens of the last minute are counted by `counter`.
    pub(crate) fn shared(row: GatewayKey, spent: f64, counter: &Arc<Counter>) -> Arc<Key> {
        Arc::new(Key {
            row,
            meter: Arc::new(Mutex::new(Meter { spent })),
            counter: counter.clone(),
        })
    }

    /// Counts a request now, unless the key is over its budget or its rate.
    pub(crate) async fn admit(&self) -> std::result::Result<(), Refusal> {
        if let Some(budget) = self.row.budget {
            let spent = self.meter.lock().unwrap_or_else(|p| p.into_inner()).spent;
            if spent >= budget {
                return Err(Refusal::OverBudget { spent, budget });
            }
        }
        let limits = Limits {
            rpm: self.row.rpm,
            tpm: self.row.tpm,
        };
        self.counter
            .admit(&self.row.name, limits)
            .await
            .map_err(Refusal::OverRate)
    }

    /// Whether it may ask for `asked`, which resolves to `resolved` (an alias's target): any
    /// of its patterns matching either, or it has none.
    pub(crate) fn allows(&self, asked: &str, resolved: Option<&str>) -> bool {
        let patterns = &self.row.models;
        patterns.is_empty()
            || patterns
                .iter()
                .any(|p| glob(p, asked) || resolved.is_some_and(|r| glob(p, r)))
    }

    /// Adds a request's cost to what it has spent.
    pub(crate) fn spend(&self, cost: f64) {
        self.meter.lock().unwrap_or_else(|p| p.into_inner()).spent += cost;
    }

    /// Adds a request's input and output tokens to its last minute (for its `tpm`).
    pub(crate) fn used(&self, tokens: u64) {
        self.counter.used(&self.row.name, self.row.tpm, tokens);
    }
}

/// The live keys by hash.
pub(crate) struct Keys {
    store: Arc<Store>,
    by_hash: RwLock<Arc<HashMap<[u8; 32], Arc<Key>>>>,
    /// Every key's meter by name, kept across reloads.
    meters: Mutex<HashMap<String, Arc<Mutex<Meter>>>>,
    /// The file's `data_version` at the last load.
    version: Mutex<i64>,
    /// When the table was last loaded for an unknown key.
    last_reload: tokio::sync::Mutex<Option<Instant>>,
    counter: Arc<Counter>,
}

impl Keys {
    /// The live keys of `store`, each with what its requests have spent so far, their rates
    /// counted by `counter`.
    pub(crate) fn load(store: Arc<Store>, counter: Arc<Counter>) -> Result<Keys> {
        let meters = store
            .gateway_spent()?
            .into_iter()
            .map(|(name, spent)| (name, Arc::new(Mutex::new(Meter { spent }))))
            .collect();
        let keys = Keys {
            store,
            by_hash: RwLock::new(Arc::new(HashMap::new())),
            meters: Mutex::new(meters),
            version: Mutex::new(0),
            last_reload: tokio::sync::Mutex::new(None),
            counter,
        };
        keys.reload()?;
        Ok(keys)
    }

    /// Loads the keys again (a blocking read of the file).
    pub(crate) fn reload(&self) -> Result<()> {
        let version = self.store.data_version()?;
        let rows = self.store.gateway_keys()?;
        let mut meters = self
            .meters
            .lock()
            .map_err(|_| Error::internal("key meters lock poisoned"))?;
        let mut table = HashMap::new();
        for row in rows.into_iter().filter(|r| r.revoked_at.is_none()) {
            let Some(hash) = unhex(&row.hash) else {
                tracing::warn!("gateway key `{}` has a malformed hash; ignored", row.name);
                continue;
            };
            let meter = meters.entry(row.name.clone()).or_default().clone();
            let counter = self.counter.clone();
            table.insert(
                hash,
                Arc::new(Key {
                    row,
                    meter,
                    counter,
                }),
            );
        }
        drop(meters);
        *self
            .by_hash
            .write()
            .map_err(|_| Error::internal("key table lock poisoned"))? = Arc::new(table);
        *self
            .version
            .lock()
            .map_err(|_| Error::internal("key table lock poisoned"))? = version;
        Ok(())
    }

    /// Whether another process committed to the file since the last load (a blocking read of
    /// SQLite's `data_version`, no table).
    pub(crate) fn changed(&self) -> Result<bool> {
        let now = self.store.data_version()?;
        Ok(self.version.lock().map(|v| *v != now).unwrap_or(true))
    }

    /// The live key whose hash is `hash`, from memory.
    pub(crate) fn find(&self, hash: &[u8; 32]) -> Option<Arc<Key>> {
        let table = self.by_hash.read().ok()?.clone();
        table.get(hash).cloned()
    }

    /// The live key whose hash is `hash`, loading the table again first when it is not there
    /// (a key just created): at most one load every [`RELOAD_EVERY`], an unknown key waiting
    /// for the next one, and none when a load began after it asked.
    pub(crate) async fn find_or_reload(self: &Arc<Self>, hash: &[u8; 32]) -> Option<Arc<Key>> {
        if let Some(key) = self.find(hash) {
            return Some(key);
        }
        let asked = Instant::now();
        let mut last = self.last_reload.lock().await;
        if let Some(t) = *last {
            if t >= asked {
                return self.find(hash);
            }
            let wait = RELOAD_EVERY.saturating_sub(t.elapsed());
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
        }
        *last = Some(Instant::now());
        let keys = self.clone();
        match tokio::task::spawn_blocking(move || keys.reload()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!("cannot load the gateway's keys: {}", e.message),
            Err(e) => tracing::warn!("loading the gateway's keys failed: {e}"),
        }
        self.find(hash)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_known_by_its_sha256_only() {
        let h = hash("gk-abc");
        assert_eq!(
            hex(&hash("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(unhex(&hex(&h)), Some(h));
        assert_ne!(hash("gk-abd"), h);
        assert_eq!(unhex("zz"), None);
    }

    fn store_with(keys: &[GatewayKey]) -> Arc<Store> {
        let store = Arc::new(Store::in_memory().unwrap());
        for k in keys {
            store.create_gateway_key(k).unwrap();
        }
        store
    }

    fn row(name: &str, secret: &str) -> GatewayKey {
        GatewayKey {
            name: name.into(),
            hash: hex(&hash(secret)),
            created_at: 1,
            budget: Some(1.0),
            rpm: None,
            tpm: None,
            models: vec!["claude-*".into(), "ollama:*".into()],
            keep_bodies: false,
            revoked_at: None,
        }
    }

    #[tokio::test]
    async fn keys_are_checked_by_budget_and_models_and_keep_their_spending_across_reloads() {
        let store = store_with(&[row("ci", "gk-1")]);
        store
            .record_gateway_requests(&[genai_core::store::GatewayRequest {
                key_name: "ci".into(),
                status: "200".into(),
                cost: Some(0.5),
                ..Default::default()
            }])
            .unwrap();
        let keys = Keys::load(store.clone(), Arc::new(Counter::local())).unwrap();
        assert!(keys.find(&hash("gk-2")).is_none());
        let key = keys.find(&hash("gk-1")).unwrap();
        assert!(key.allows("claude-sonnet-4-5", None));
        assert!(
            key.allows("gpt-4o", Some("ollama:qwen3")),
            "its alias's target"
        );
        assert!(!key.allows("gpt-4o", Some("openai:gpt-4o")));
        assert!(key.admit().await.is_ok(), "0.5 of 1.0 spent");
        key.spend(0.5);
        keys.reload().unwrap();
        let again = keys.find(&hash("gk-1")).unwrap();
        assert_eq!(
            again.admit().await,
            Err(Refusal::OverBudget {
                spent: 1.0,
                budget: 1.0
            })
        );
        store.revoke_gateway_key("ci", 2).unwrap();
        keys.reload().unwrap();
        assert!(keys.find(&hash("gk-1")).is_none(), "revoked");
    }
}
