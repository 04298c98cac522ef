//! `[store]`: where `genai serve` keeps the state its replicas share. Without `url` the gateway's
//! keys and ledger stay in the SQLite history (the default); with a `postgres://` URL (or the
//! environment's `GENAI_DATABASE_URL`, which wins) they live in that database.
//!
//! It owns reading the setting and masking a URL's password (this one's and `[serve]
//! redis_url`'s). It must never print, log or return a URL with its password in it:
//! [`masked_url`] is what may be shown.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The environment variable that names the shared database, over `[store] url`.
pub const DATABASE_URL_ENV: &str = "GENAI_DATABASE_URL";

/// `[store]`: the shared database of `genai serve`'s replicas.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// `postgres://USER:PASSWORD@HOST:PORT/DB`: `genai serve`'s gateway keeps its virtual keys,
    /// their spend and its request ledger there, shared by every replica on that database
    /// (`GENAI_DATABASE_URL` wins over it). Unset: the SQLite history, one machine's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl StoreConfig {
    /// The shared database's URL: the environment's, else the file's; `None` when neither
    /// names one (or names an empty one).
    pub fn database_url(&self) -> Option<String> {
        std::env::var(DATABASE_URL_ENV)
            .ok()
            .or_else(|| self.url.clone())
            .map(|u| u.trim().to_string())
            .filter(|u| !u.is_empty())
    }
}

/// Where the password of a `scheme://user:password@host/...` URL is, if it has one.
fn password_span(url: &str) -> Option<std::ops::Range<usize>> {
    let start = url.find("://")? + 3;
    let rest = &url[start..];
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let at = rest[..authority_end].rfind('@')?;
    let colon = rest[..at].find(':')?;
    Some(start + colon + 1..start + at)
}

/// The URL's password, to hand to the redactor; `None` when it has none (a password in the
/// `password=` parameter counts too).
pub fn url_password(url: &str) -> Option<&str> {
    if let Some(span) = password_span(url) {
        return Some(&url[span]).filter(|p| !p.is_empty());
    }
    let query = url.split_once('?')?.1;
    query
        .split('&')
        .find_map(|kv| kv.strip_prefix("password="))
        .filter(|p| !p.is_empty())
}

/// The URL as it may be shown: its password replaced by `********`.
pub fn masked_url(url: &str) -> String {
    let mut shown = match password_span(url) {
        Some(span) => format!("{}{}{}", &url[..span.start], super::MASK, &url[span.end..]),
        None => url.to_string(),
    };
    if let Some(p) = url_password(&shown).map(str::to_string) {
        if p != super::MASK {
            shown = shown.replace(
                &format!("password={p}"),
                &format!("password={}", super::MASK),
            );
        }
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_urls_password_is_found_and_masked_and_nothing_else() {
        let url = "postgres://genai:s3cr%40t:x@db.internal:5432/genai?sslmode=require";
        assert_eq!(url_password(url), Some("s3cr%40t:x"));
        assert_eq!(
            masked_url(url),
            "postgres://genai:********@db.internal:5432/genai?sslmode=require"
        );
        let plain = "postgres://genai@127.0.0.1:5432/genai";
        assert_eq!(url_password(plain), None);
        assert_eq!(masked_url(plain), plain);
        let param = "postgres://genai@h/db?password=hunter22&x=1";
        assert_eq!(url_password(param), Some("hunter22"));
        assert_eq!(
            masked_url(param),
            "postgres://genai@h/db?password=********&x=1"
        );
    }
}
