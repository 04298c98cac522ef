//! What the command line asks of the shared database: `genai serve keys create|list|revoke`
//! and `genai usage --by key` (every replica's requests summed), and the ledger's insert the
//! gateway and the import share.
//!
//! It owns these statements. It must never see a key in plain (only hashes come here), and
//! never store a kept body without passing it through the redactor.

use genai_core::error::{Error, ErrorKind, Result};
use genai_core::store::{GatewayKey, GatewayRequest, KeyUsage};
use tokio_postgres::types::ToSql;
use tokio_postgres::GenericClient;

use super::{db_err, key_of, within, Postgres, KEY_COLUMNS};

/// Inserts the rows of gateway requests with `client` (a transaction's).
pub(crate) async fn insert_requests<C: GenericClient>(
    client: &C,
    rows: &[GatewayRequest],
) -> Result<()> {
    let stmt = client
        .prepare(
            "INSERT INTO gateway_requests (created_at, key_name, api, model, served_by, client,
                status, input_tokens, output_tokens, cost, latency_ms, first_byte_ms,
                request_body, reply_body)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
        )
        .await
        .map_err(db_err)?;
    let n = |v: Option<u64>| v.map(|n| n.min(i64::MAX as u64) as i64);
    for r in rows {
        // A kept body never keeps a key genai holds (a prompt may carry one).
        let request_body = r
            .request_body
            .as_deref()
            .map(genai_core::redact::redact_known);
        let reply_body = r
            .reply_body
            .as_deref()
            .map(genai_core::redact::redact_known);
        client
            .execute(
                &stmt,
                &[
                    &r.created_at,
                    &r.key_name,
                    &r.api,
                    &r.model,
                    &r.served_by,
                    &r.client,
                    &r.status,
                    &n(r.input_tokens),
                    &n(r.output_tokens),
                    &r.cost,
                    &(r.latency_ms.min(i64::MAX as u64) as i64),
                    &n(r.first_byte_ms),
                    &request_body.as_deref(),
                    &reply_body.as_deref(),
                ],
            )
            .await
            .map_err(db_err)?;
    }
    Ok(())
}

/// A key's models as stored: a JSON array, or NULL for any.
fn models_column(key: &GatewayKey) -> Option<String> {
    (!key.models.is_empty()).then(|| serde_json::Value::from(key.models.clone()).to_string())
}

/// Inserts a key's row; what to do when its name is taken follows (`ON CONFLICT ...`).
pub(crate) const INSERT_KEY: &str = "INSERT INTO gateway_keys (name, hash, created_at, budget,
    rpm, models, keep_bodies, revoked_at, tpm) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";

/// A key as [`INSERT_KEY`] binds it: its limits in the columns' types.
pub(crate) struct KeyRow<'a> {
    key: &'a GatewayKey,
    rpm: Option<i32>,
    tpm: Option<i64>,
    models: Option<String>,
}

impl KeyRow<'_> {
    pub(crate) fn of(key: &GatewayKey) -> KeyRow<'_> {
        KeyRow {
            key,
            rpm: key.rpm.map(|n| n.min(i32::MAX as u32) as i32),
            tpm: key.tpm.map(|n| n.min(i64::MAX as u64) as i64),
            models: models_column(key),
        }
    }

    /// [`INSERT_KEY`]'s parameters.
    pub(crate) fn params(&self) -> [&(dyn ToSql + Sync); 9] {
        let k = self.key;
        [
            &k.name,
            &k.hash,
            &k.created_at,
            &k.budget,
            &self.rpm,
            &self.models,
            &k.keep_bodies,
            &k.revoked_at,
            &self.tpm,
        ]
    }
}

impl Postgres {
    /// Stores a new key with nothing spent; a name already taken (revoked or not) is refused.
    pub async fn create_gateway_key(&self, key: &GatewayKey) -> Result<()> {
        within(async {
            let client = self.client().await?;
            let row = KeyRow::of(key);
            let insert = format!("{INSERT_KEY} ON CONFLICT (name) DO NOTHING");
            let added = client
                .execute(&insert, &row.params())
                .await
                .map_err(db_err)?;
            if added == 0 {
                return Err(Error::new(
                    ErrorKind::InvalidParams,
                    format!(
                        "a gateway key named `{}` exists already (revoked names are not reused, so its usage stays its own)",
                        key.name
                    ),
                ));
            }
            Ok(())
        })
        .await
    }

    /// Every key, revoked ones too, oldest first, each with what it has spent.
    pub async fn gateway_keys(&self) -> Result<Vec<(GatewayKey, f64)>> {
        within(async {
            let client = self.client().await?;
            let rows = client
                .query(
                    &format!("SELECT {KEY_COLUMNS} FROM gateway_keys ORDER BY created_at, name"),
                    &[],
                )
                .await
                .map_err(db_err)?;
            rows.iter().map(key_of).collect()
        })
        .await
    }

    /// Revokes the live key `name` at `now`; false when there is no live key of that name.
    pub async fn revoke_gateway_key(&self, name: &str, now: i64) -> Result<bool> {
        within(async {
            let n = self
                .client()
                .await?
                .execute(
                    "UPDATE gateway_keys SET revoked_at = $2 WHERE name = $1 AND revoked_at IS NULL",
                    &[&name, &now],
                )
                .await
                .map_err(db_err)?;
            Ok(n > 0)
        })
        .await
    }

    /// Every replica's requests at or after `since` (all when `None`) added up by key, most
    /// requests first, as the SQLite history's `gateway_usage` adds them.
    pub async fn gateway_usage(&self, since: Option<i64>) -> Result<Vec<KeyUsage>> {
        within(async {
            let client = self.client().await?;
            let rows = client
                .query(
                    "SELECT key_name, COUNT(*), COUNT(*) FILTER (WHERE status <> '200'),
                        COALESCE(SUM(input_tokens), 0)::BIGINT,
                        COALESCE(SUM(output_tokens), 0)::BIGINT, SUM(cost),
                        COUNT(*) FILTER (WHERE cost IS NULL AND input_tokens IS NOT NULL),
                        (array_agg(latency_ms ORDER BY latency_ms))[(COUNT(*) / 2 + 1)::INT],
                        COALESCE(array_agg(DISTINCT served_by) FILTER (WHERE served_by IS NOT NULL), '{}'),
                        COALESCE(array_agg(DISTINCT client) FILTER (WHERE client IS NOT NULL), '{}')
                     FROM gateway_requests WHERE created_at >= $1
                     GROUP BY key_name ORDER BY COUNT(*) DESC, key_name",
                    &[&since.unwrap_or(i64::MIN)],
                )
                .await
                .map_err(db_err)?;
            let count = |n: i64| n.max(0) as u64;
            Ok(rows
                .iter()
                .map(|r| KeyUsage {
                    key_name: r.get(0),
                    requests: count(r.get(1)),
                    failed: count(r.get(2)),
                    input_tokens: count(r.get(3)),
                    output_tokens: count(r.get(4)),
                    cost: r.get(5),
                    unpriced: count(r.get(6)),
                    p50_latency_ms: count(r.get::<_, Option<i64>>(7).unwrap_or(0)),
                    served_by: r.get(8),
                    clients: r.get(9),
                })
                .collect())
        })
        .await
    }
}
