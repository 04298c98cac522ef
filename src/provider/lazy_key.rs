//! A provider's API key, looked up once on first use and kept for the instance's life.
//!
//! It owns the caching of one [`KeySource`] lookup, done off the async threads (the keyring and
//! `api_key_cmd` block). It must never log the key or put it in an error.

use tokio::sync::OnceCell;

use crate::error::{Error, ErrorKind, Result};
use crate::secrets::{KeySource, Secret};

pub struct LazyKey {
    source: KeySource,
    cell: OnceCell<Option<Secret>>,
}

impl LazyKey {
    pub fn new(source: KeySource) -> LazyKey {
        LazyKey {
            source,
            cell: OnceCell::new(),
        }
    }

    /// Where the key is looked up (for "set X" hints).
    pub fn source(&self) -> &KeySource {
        &self.source
    }

    /// The key, `None` when no source has one. A failing `api_key_cmd` is an error.
    pub async fn get(&self) -> Result<Option<&Secret>> {
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

    /// The key, or the error that says where to put one: `set ENV (or ALSO), or run
    /// genai keys set NAME`. `also` names a second variable the provider reads.
    pub async fn require(&self, also: Option<&str>) -> Result<&Secret> {
        let key = self.get().await?;
        key.ok_or_else(|| {
            let env = self
                .source
                .env_var
                .as_deref()
                .unwrap_or("its API key variable");
            let env = match also {
                Some(a) => format!("{env} (or {a})"),
                None => env.to_string(),
            };
            let name = &self.source.instance;
            Error::new(
                ErrorKind::MissingCredentials,
                format!(
                    "no API key for provider `{name}`: set {env}, or run `genai keys set {name}`"
                ),
            )
        })
    }
}
