//! A provider's API key, looked up once on first use and kept for the instance's life.
//!
//! It owns the caching of one [`KeySource`] lookup, done off the async threads (the keyring and
//! `api_key_cmd` block). It must never log the key or put it in an error.

use tokio::sync::OnceCell;

use crate::error::{Error, Result};
use crate::secrets::{KeySource, Secret};

pub(crate) struct LazyKey {
    source: KeySource,
    cell: OnceCell<Option<Secret>>,
}

impl LazyKey {
    pub(crate) fn new(source: KeySource) -> LazyKey {
        LazyKey {
            source,
            cell: OnceCell::new(),
        }
    }

    /// Where the key is looked up (for "set X" hints).
    pub(crate) fn source(&self) -> &KeySource {
        &self.source
    }

    /// The key, `None` when no source has one. A failing `api_key_cmd` is an error.
    pub(crate) async fn get(&self) -> Result<Option<&Secret>> {
        let source = self.source.clone();
        let key = self
            .cell
            .get_or_try_init(|| async move {
                tokio::task::spawn_blocking(move || source.resolve())
                    .await
                    .map_err(|e| Error::internal(format!("key lookup failed: {e}")))?
            })
            .await?;
        Ok(key.as_ref())
    }
}
