//! The gateway's rows: its virtual keys (name, the SHA-256 of the key, limits, revocation) and
//! one row per request made through it (who, which API and model, tokens, cost, latency, and
//! the bodies only for a key kept with them), with the sums `genai usage --by key` shows.
//!
//! It stores what it is given. It must never see a key in plain (only its hash comes here),
//! nor decide whether a request may pass: that is the gateway's, over rows it loaded.

use rusqlite::{params, OptionalExtension};

use super::{json_err, Store};
use crate::error::{Error, ErrorKind, Result};

/// One virtual key as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayKey {
    pub name: String,
    /// The SHA-256 of the key, 64 hex digits.
    pub hash: String,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
    /// US dollars its requests may spend in all.
    pub budget: Option<f64>,
    /// Requests per minute.
    pub rpm: Option<u32>,
    /// Tokens (input and output) per minute.
    pub tpm: Option<u64>,
    /// The model patterns it may ask for (`*` a wildcard); empty: any.
    pub models: Vec<String>,
    /// Whether its requests' bodies and replies are stored with their rows.
    pub keep_bodies: bool,
    pub revoked_at: Option<i64>,
}

/// One request through the gateway, as stored.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GatewayRequest {
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
    /// The key's name, or `serve-token`.
    pub key_name: String,
    /// `openai-chat`, `anthropic-messages`, `openai-responses`.
    pub api: String,
    /// The model the request named.
    pub model: Option<String>,
    /// `PROVIDER:MODEL` of the model that answered.
    pub served_by: Option<String>,
    /// The client's `User-Agent`.
    pub client: Option<String>,
    /// The HTTP status, or `cancelled`.
    pub status: String,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    /// US dollars; `None`: unknown.
    pub cost: Option<f64>,
    /// To the last byte.
    pub latency_ms: u64,
    pub first_byte_ms: Option<u64>,
    pub request_body: Option<String>,
    pub reply_body: Option<String>,
}

/// The requests of one key, added up.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyUsage {
    pub key_name: String,
    pub requests: u64,
    /// Requests whose status is not 200.
    pub failed: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// The sum of the known costs; `None` when none was priced.
    pub cost: Option<f64>,
    /// Requests with usage but no price.
    pub unpriced: u64,
    /// The median latency to the last byte, in milliseconds.
    pub p50_latency_ms: u64,
    /// The models that served its requests (`PROVIDER:MODEL`), and its clients.
    pub served_by: Vec<String>,
    pub clients: Vec<String>,
}

impl Store {
    /// Stores a new key; a name already taken (revoked or not) is refused.
    pub fn create_gateway_key(&self, key: &GatewayKey) -> Result<()> {
        let models = match key.models.is_empty() {
            true => None,
            false => Some(serde_json::to_string(&key.models).map_err(json_err)?),
        };
        let conn = self.conn()?;
        let taken: Option<i64> = conn
            .query_row(
                "SELECT 1 FROM gateway_keys WHERE name = ?1",
                [&key.name],
                |r| r.get(0),
            )
            .optional()?;
        if taken.is_some() {
            return Err(Error::new(
                ErrorKind::InvalidParams,
                format!(
                    "a gateway key named `{}` exists already (revoked names are not reused, so its usage stays its own)",
                    key.name
                ),
            ));
        }
        conn.execute(
            "INSERT INTO gateway_keys (name, hash, created_at, budget, rpm, models, keep_bodies, revoked_at, tpm)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![key.name, key.hash, key.created_at, key.budget, key.rpm, models, key.keep_bodies, key.revoked_at, key.tpm],
        )?;
        Ok(())
    }

    /// Every key, revoked ones too, oldest first.
    pub fn gateway_keys(&self) -> Result<Vec<GatewayKey>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT name, hash, created_at, budget, rpm, models, keep_bodies, revoked_at, tpm
             FROM gateway_keys ORDER BY created_at, name",
        )?;
        let rows = stmt
            .query_map([], |r| {
                let models: Option<String> = r.get(5)?;
                Ok((
                    GatewayKey {
                        name: r.get(0)?,
                        hash: r.get(1)?,
                        created_at: r.get(2)?,
                        budget: r.get(3)?,
                        rpm: r.get(4)?,
                        tpm: r.get(8)?,
                        models: Vec::new(),
                        keep_bodies: r.get(6)?,
                        revoked_at: r.get(7)?,
                    },
                    models,
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        rows.into_iter()
            .map(|(mut key, models)| {
                if let Some(m) = models {
                    key.models = serde_json::from_str(&m).map_err(json_err)?;
                }
                Ok(key)
            })
            .collect()
    }

    /// Revokes the live key `name` at `now`; false when there is no live key of that name.
    pub fn revoke_gateway_key(&self, name: &str, now: i64) -> Result<bool> {
        let n = self.conn()?.execute(
            "UPDATE gateway_keys SET revoked_at = ?2 WHERE name = ?1 AND revoked_at IS NULL",
            params![name, now],
        )?;
        Ok(n > 0)
    }

    /// What each key's requests have cost so far (known costs only).
    pub fn gateway_spent(&self) -> Result<Vec<(String, f64)>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT key_name, SUM(cost) FROM gateway_requests INDEXED BY gateway_requests_usage
             WHERE cost IS NOT NULL GROUP BY key_name",
        )?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// Stores the requests in one transaction.
    pub fn record_gateway_requests(&self, rows: &[GatewayRequest]) -> Result<()> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        {
            let mut insert = tx.prepare_cached(
                "INSERT INTO gateway_requests (created_at, key_name, api, model, served_by, client,
                    status, input_tokens, output_tokens, cost, latency_ms, first_byte_ms,
                    request_body, reply_body)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            )?;
            for r in rows {
                insert.execute(params![
                    r.created_at,
                    r.key_name,
                    r.api,
                    r.model,
                    r.served_by,
                    r.client,
                    r.status,
                    r.input_tokens.map(|n| n as i64),
                    r.output_tokens.map(|n| n as i64),
                    r.cost,
                    r.latency_ms as i64,
                    r.first_byte_ms.map(|n| n as i64),
                    // A kept body never keeps a key genai holds (a prompt may carry one).
                    r.request_body.as_deref().map(crate::redact::redact_known),
                    r.reply_body.as_deref().map(crate::redact::redact_known),
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// The requests stored at or after `since` (all when `None`), newest first, at most `limit`.
    pub fn gateway_requests(&self, since: Option<i64>, limit: u32) -> Result<Vec<GatewayRequest>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT created_at, key_name, api, model, served_by, client, status, input_tokens,
                    output_tokens, cost, latency_ms, first_byte_ms, request_body, reply_body
             FROM gateway_requests WHERE created_at >= ?1
             ORDER BY created_at DESC, rowid DESC LIMIT ?2",
        )?;
        let count = |n: Option<i64>| n.map(|n| n.max(0) as u64);
        let rows = stmt
            .query_map(params![since.unwrap_or(i64::MIN), limit], |r| {
                Ok(GatewayRequest {
                    created_at: r.get(0)?,
                    key_name: r.get(1)?,
                    api: r.get(2)?,
                    model: r.get(3)?,
                    served_by: r.get(4)?,
                    client: r.get(5)?,
                    status: r.get(6)?,
                    input_tokens: count(r.get(7)?),
                    output_tokens: count(r.get(8)?),
                    cost: r.get(9)?,
                    latency_ms: count(r.get(10)?).unwrap_or(0),
                    first_byte_ms: count(r.get(11)?),
                    request_body: r.get(12)?,
                    reply_body: r.get(13)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// At most `limit` requests stored after the row `after` (its rowid; 0: from the first),
    /// oldest first, each with its rowid: `genai serve migrate` copies the ledger in pages.
    pub fn gateway_requests_after(
        &self,
        after: i64,
        limit: u32,
    ) -> Result<Vec<(i64, GatewayRequest)>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT rowid, created_at, key_name, api, model, served_by, client, status,
                    input_tokens, output_tokens, cost, latency_ms, first_byte_ms, request_body,
                    reply_body
             FROM gateway_requests WHERE rowid > ?1 ORDER BY rowid LIMIT ?2",
        )?;
        let count = |n: Option<i64>| n.map(|n| n.max(0) as u64);
        let rows = stmt
            .query_map(params![after, limit], |r| {
                Ok((
                    r.get(0)?,
                    GatewayRequest {
                        created_at: r.get(1)?,
                        key_name: r.get(2)?,
                        api: r.get(3)?,
                        model: r.get(4)?,
                        served_by: r.get(5)?,
                        client: r.get(6)?,
                        status: r.get(7)?,
                        input_tokens: count(r.get(8)?),
                        output_tokens: count(r.get(9)?),
                        cost: r.get(10)?,
                        latency_ms: count(r.get(11)?).unwrap_or(0),
                        first_byte_ms: count(r.get(12)?),
                        request_body: r.get(13)?,
                        reply_body: r.get(14)?,
                    },
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// The requests at or after `since` (all when `None`) added up by key, most requests first.
    pub fn gateway_usage(&self, since: Option<i64>) -> Result<Vec<KeyUsage>> {
        let conn = self.conn()?;
        let since = since.unwrap_or(i64::MIN);
        let mut stmt = conn.prepare_cached(
            "SELECT key_name, COUNT(*), SUM(status <> '200'), SUM(input_tokens),
                    SUM(output_tokens), SUM(cost), SUM(cost IS NULL AND input_tokens IS NOT NULL)
             FROM gateway_requests INDEXED BY gateway_requests_usage WHERE created_at >= ?1
             GROUP BY key_name ORDER BY COUNT(*) DESC, key_name",
        )?;
        let count = |n: Option<i64>| n.unwrap_or(0).max(0) as u64;
        let mut rows = stmt
            .query_map([since], |r| {
                Ok(KeyUsage {
                    key_name: r.get(0)?,
                    requests: count(r.get(1)?),
                    failed: count(r.get(2)?),
                    input_tokens: count(r.get(3)?),
                    output_tokens: count(r.get(4)?),
                    cost: r.get(5)?,
                    unpriced: count(r.get(6)?),
                    p50_latency_ms: 0,
                    served_by: Vec::new(),
                    clients: Vec::new(),
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut median = conn.prepare_cached(
            "SELECT latency_ms FROM gateway_requests INDEXED BY gateway_requests_usage
             WHERE key_name = ?1 AND created_at >= ?2 ORDER BY latency_ms LIMIT 1 OFFSET ?3",
        )?;
        let distinct = |column: &str, key: &str| -> Result<Vec<String>> {
            let mut s = conn.prepare_cached(&format!(
                "SELECT DISTINCT {column} FROM gateway_requests INDEXED BY gateway_requests_usage
                 WHERE key_name = ?1 AND created_at >= ?2 AND {column} IS NOT NULL ORDER BY 1"
            ))?;
            let found = s
                .query_map(params![key, since], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()?;
            Ok(found)
        };
        for row in &mut rows {
            row.p50_latency_ms = median
                .query_row(
                    params![row.key_name, since, (row.requests / 2) as i64],
                    |r| r.get::<_, i64>(0),
                )
                .optional()?
                .unwrap_or(0)
                .max(0) as u64;
            row.served_by = distinct("served_by", &row.key_name)?;
            row.clients = distinct("client", &row.key_name)?;
        }
        Ok(rows)
    }

    /// SQLite's `data_version` of this connection: it changes when another connection (another
    /// process) commits to the file, and only then.
    pub fn data_version(&self) -> Result<i64> {
        Ok(self
            .conn()?
            .pragma_query_value(None, "data_version", |r| r.get(0))?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str, hash: &str) -> GatewayKey {
        GatewayKey {
            name: name.into(),
            hash: hash.into(),
            created_at: 5,
            budget: Some(1.5),
            rpm: Some(10),
            tpm: Some(20_000),
            models: vec!["claude-*".into()],
            keep_bodies: true,
            revoked_at: None,
        }
    }

    fn request(key: &str, status: &str, latency: u64, cost: Option<f64>) -> GatewayRequest {
        GatewayRequest {
            created_at: 100,
            key_name: key.into(),
            api: "openai-chat".into(),
            model: Some("m".into()),
            served_by: Some("openai:m".into()),
            client: Some("sdk/1".into()),
            status: status.into(),
            input_tokens: Some(10),
            output_tokens: Some(2),
            cost,
            latency_ms: latency,
            first_byte_ms: Some(1),
            ..Default::default()
        }
    }

    #[test]
    fn keys_are_created_listed_and_revoked_once_and_names_are_not_reused() {
        let s = Store::in_memory().unwrap();
        s.create_gateway_key(&key("ci", "aa")).unwrap();
        let mut plain = key("dev", "bb");
        plain.models.clear();
        plain.budget = None;
        s.create_gateway_key(&plain).unwrap();
        assert!(s.create_gateway_key(&key("ci", "cc")).is_err());
        let keys = s.gateway_keys().unwrap();
        assert_eq!(keys, vec![key("ci", "aa"), plain]);
        assert!(s.revoke_gateway_key("ci", 9).unwrap());
        assert!(!s.revoke_gateway_key("ci", 10).unwrap(), "already revoked");
        assert!(!s.revoke_gateway_key("nobody", 10).unwrap());
        assert_eq!(s.gateway_keys().unwrap()[0].revoked_at, Some(9));
    }

    #[test]
    fn requests_add_up_by_key_with_their_median_latency_models_and_clients() {
        let s = Store::in_memory().unwrap();
        let before = s.data_version().unwrap();
        s.record_gateway_requests(&[
            request("ci", "200", 30, Some(0.25)),
            request("ci", "200", 10, Some(0.5)),
            request("ci", "502", 20, None),
            GatewayRequest {
                client: Some("other/2".into()),
                ..request("dev", "cancelled", 5, None)
            },
        ])
        .unwrap();
        assert_eq!(
            s.data_version().unwrap(),
            before,
            "its own writes leave data_version as it is"
        );
        let usage = s.gateway_usage(None).unwrap();
        assert_eq!(usage.len(), 2);
        let ci = &usage[0];
        assert_eq!(ci.key_name, "ci");
        assert_eq!((ci.requests, ci.failed), (3, 1));
        assert_eq!((ci.input_tokens, ci.output_tokens), (30, 6));
        assert_eq!(ci.cost, Some(0.75));
        assert_eq!(ci.unpriced, 1);
        assert_eq!(ci.p50_latency_ms, 20);
        assert_eq!(ci.served_by, ["openai:m"]);
        assert_eq!(ci.clients, ["sdk/1"]);
        assert_eq!(usage[1].clients, ["other/2"]);
        assert!(s.gateway_usage(Some(101)).unwrap().is_empty());
        let spent = s.gateway_spent().unwrap();
        assert_eq!(spent, vec![("ci".to_string(), 0.75)]);
        assert_eq!(s.gateway_requests(None, 10).unwrap().len(), 4);
        let first = s.gateway_requests_after(0, 3).unwrap();
        assert_eq!(first.len(), 3);
        assert_eq!(first[0].1.latency_ms, 30, "oldest first");
        let rest = s.gateway_requests_after(first[2].0, 3).unwrap();
        assert_eq!(rest.len(), 1);
        assert_eq!(rest[0].1.key_name, "dev");
    }
}
