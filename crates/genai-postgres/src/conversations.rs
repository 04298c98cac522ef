//! The statements on the shared database's `conversations` and `tool_decisions`: a
//! conversation's row and its columns, the listing (the SQLite history's order, filters and
//! cursors), deleting, and the tool calls' decisions.
//!
//! It owns these statements. It must never take a column's name from a caller (only this
//! crate's names), never list a conversation no turn was committed to, and never keep a
//! decision's argument without passing it through the redactor.

use deadpool_postgres::GenericClient;
use genai_core::error::{Error, ErrorKind, Result};
use genai_core::store::{self, DecisionRecord, ListFilter, Store, HAS_TURNS};
use genai_protocol::listings::ConversationRecord;
use serde_json::Map;
use tokio_postgres::Row;

use super::db_err;

/// `value` as the JSON text the history keeps.
pub(crate) fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| {
        Error::new(
            ErrorKind::Store,
            format!("a value of the history as JSON: {e}"),
        )
    })
}

/// A record from a row of [`Store::SELECT`].
fn record_of(r: &Row) -> Result<ConversationRecord> {
    let parameters: String = r.get(7);
    let record = ConversationRecord {
        id: r.get(0),
        title: r.get(1),
        feature: r.get(2),
        provider: r.get(3),
        model_configuration: r.get(4),
        format: r.get(5),
        model: r.get(6),
        parameters: Map::new(),
        created_at: r.get(8),
        updated_at: r.get(9),
        message_count: r.get::<_, i64>(10) as u64,
        tools: None,
        answered_by: r.get(13),
        cwd: r.get(12),
    };
    store::with_json(record, &parameters, r.get(11))
}

pub(crate) async fn create<C: GenericClient>(client: &C, c: &ConversationRecord) -> Result<()> {
    let tools = c.tools.as_ref().map(to_json).transpose()?;
    let stmt = client
        .prepare_cached(
            "INSERT INTO conversations (id, title, feature, provider, model_configuration, format,
                model, parameters, created_at, updated_at, tools, cwd)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        )
        .await
        .map_err(db_err)?;
    client
        .execute(
            &stmt,
            &[
                &c.id,
                &c.title,
                &c.feature,
                &c.provider,
                &c.model_configuration,
                &c.format,
                &c.model,
                &to_json(&c.parameters)?,
                &c.created_at,
                &c.updated_at,
                &tools,
                &c.cwd,
            ],
        )
        .await
        .map_err(db_err)?;
    Ok(())
}

/// `Ok` when an update of conversation `id` changed a row.
fn updated(rows: u64, id: &str) -> Result<()> {
    match rows {
        0 => Err(store::not_in_history(id)),
        _ => Ok(()),
    }
}

/// Sets a text column of conversation `id`; `column` is one of this crate's names.
pub(crate) async fn set_text<C: GenericClient>(
    client: &C,
    id: &str,
    column: &'static str,
    value: Option<&str>,
) -> Result<()> {
    let stmt = client
        .prepare_cached(&format!(
            "UPDATE conversations SET {column} = $2 WHERE id = $1"
        ))
        .await
        .map_err(db_err)?;
    updated(
        client
            .execute(&stmt, &[&id, &value])
            .await
            .map_err(db_err)?,
        id,
    )
}

/// A JSON column of conversation `id`, parsed (`None`: NULL); `column` is one of this crate's.
pub(crate) async fn json_column<C: GenericClient, T: serde::de::DeserializeOwned>(
    client: &C,
    id: &str,
    column: &'static str,
) -> Result<Option<T>> {
    let stmt = client
        .prepare_cached(&format!("SELECT {column} FROM conversations WHERE id = $1"))
        .await
        .map_err(db_err)?;
    let Some(row) = client.query_opt(&stmt, &[&id]).await.map_err(db_err)? else {
        return Err(store::not_in_history(id));
    };
    store::stored_json(row.get::<_, Option<&str>>(0))
}

/// Hands conversation `id` to `[provider, model_configuration, format, model]`.
pub(crate) async fn switch_model<C: GenericClient>(
    client: &C,
    id: &str,
    [provider, configuration, format, model]: [Option<&str>; 4],
) -> Result<()> {
    let stmt = client
        .prepare_cached(
            "UPDATE conversations SET provider = $2, model_configuration = $3, format = $4,
                model = $5 WHERE id = $1",
        )
        .await
        .map_err(db_err)?;
    let n = client
        .execute(&stmt, &[&id, &provider, &configuration, &format, &model])
        .await
        .map_err(db_err)?;
    updated(n, id)
}

pub(crate) async fn update_choice<C: GenericClient>(
    client: &C,
    c: &ConversationRecord,
) -> Result<()> {
    let stmt = client
        .prepare_cached(
            "UPDATE conversations SET feature = $2, provider = $3, model_configuration = $4,
                format = $5, model = $6, parameters = $7 WHERE id = $1",
        )
        .await
        .map_err(db_err)?;
    client
        .execute(
            &stmt,
            &[
                &c.id,
                &c.feature,
                &c.provider,
                &c.model_configuration,
                &c.format,
                &c.model,
                &to_json(&c.parameters)?,
            ],
        )
        .await
        .map_err(db_err)?;
    Ok(())
}

pub(crate) async fn record<C: GenericClient>(
    client: &C,
    id: &str,
) -> Result<Option<ConversationRecord>> {
    let stmt = client
        .prepare_cached(&format!("{} WHERE c.id = $1", Store::SELECT))
        .await
        .map_err(db_err)?;
    let row = client.query_opt(&stmt, &[&id]).await.map_err(db_err)?;
    row.as_ref().map(record_of).transpose()
}

/// At most two ids that start with `prefix` (upper case, letters and digits), in order.
pub(crate) async fn ids_starting<C: GenericClient>(
    client: &C,
    prefix: &str,
) -> Result<Vec<String>> {
    let stmt = client
        .prepare_cached("SELECT id FROM conversations WHERE id LIKE $1 || '%' ORDER BY id LIMIT 2")
        .await
        .map_err(db_err)?;
    let rows = client.query(&stmt, &[&prefix]).await.map_err(db_err)?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// Deletes conversation `id` (with `if_empty`, only when no turn was committed to it nor a
/// tool call of one allowed); true when it did.
pub(crate) async fn delete<C: GenericClient>(client: &C, id: &str, if_empty: bool) -> Result<bool> {
    let sql = match if_empty {
        false => "DELETE FROM conversations WHERE id = $1",
        true => {
            "DELETE FROM conversations c WHERE c.id = $1
             AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id)
             AND NOT EXISTS (SELECT 1 FROM tool_decisions d WHERE d.conversation_id = c.id
                             AND d.decision = 'allow')"
        }
    };
    let stmt = client.prepare_cached(sql).await.map_err(db_err)?;
    Ok(client.execute(&stmt, &[&id]).await.map_err(db_err)? > 0)
}

pub(crate) async fn last<C: GenericClient>(client: &C) -> Result<Option<String>> {
    let stmt = client
        .prepare_cached(&format!(
            "SELECT c.id FROM conversations c WHERE {HAS_TURNS}
             ORDER BY c.updated_at DESC, c.id DESC LIMIT 1"
        ))
        .await
        .map_err(db_err)?;
    let row = client.query_opt(&stmt, &[]).await.map_err(db_err)?;
    Ok(row.map(|r| r.get(0)))
}

/// Up to `limit` conversations `filter` lets through, updated before `before` (time, id).
pub(crate) async fn list<C: GenericClient>(
    client: &C,
    (before_time, before_id): &(i64, String),
    limit: usize,
    filter: &ListFilter,
) -> Result<Vec<ConversationRecord>> {
    let stmt = client
        .prepare_cached(&format!(
            "{} WHERE ($2 = '' OR c.updated_at < $1 OR (c.updated_at = $1 AND c.id < $2))
             AND {HAS_TURNS}
             AND c.updated_at >= $4
             AND ($5::text IS NULL OR strpos(lower(c.provider || ':' || c.model), lower($5)) > 0
                  OR EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id
                             AND strpos(lower(m.model), lower($5)) > 0))
             AND ($6::text IS NULL OR c.cwd = $6)
             ORDER BY c.updated_at DESC, c.id DESC LIMIT $3",
            Store::SELECT
        ))
        .await
        .map_err(db_err)?;
    let limit = limit.min(i64::MAX as usize) as i64;
    let rows = client
        .query(
            &stmt,
            &[
                before_time,
                before_id,
                &limit,
                &filter.since.unwrap_or(i64::MIN),
                &filter.model,
                &filter.cwd,
            ],
        )
        .await
        .map_err(db_err)?;
    rows.iter().map(record_of).collect()
}

/// Keeps a turn's decisions (see `Store::record_decisions`), in one transaction.
pub(crate) async fn record_decisions(
    client: &mut deadpool_postgres::Client,
    id: &str,
    turn_id: &str,
    prompt: &str,
    decisions: &[DecisionRecord],
) -> Result<()> {
    let tx = client.transaction().await.map_err(db_err)?;
    tx.execute(
        "UPDATE conversations SET title = $2 WHERE id = $1 AND title = ''",
        &[&id, &store::title_of(prompt)],
    )
    .await
    .map_err(db_err)?;
    let now = store::now_ms();
    insert_decisions(&tx, id, decisions.iter().map(|d| (turn_id, d)), now).await?;
    tx.commit().await.map_err(db_err)
}

/// Inserts decisions of conversation `id`, each with its turn, in transaction `tx` (their
/// arguments and deciders through the redactor).
pub(crate) async fn insert_decisions<'d>(
    tx: &deadpool_postgres::Transaction<'_>,
    id: &str,
    decisions: impl Iterator<Item = (&'d str, &'d DecisionRecord)>,
    now: i64,
) -> Result<u64> {
    let insert = tx
        .prepare_cached(
            "INSERT INTO tool_decisions (conversation_id, turn_id, call_id, tool, argument,
                decision, decided_by, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .await
        .map_err(db_err)?;
    let mut n = 0;
    for (turn_id, d) in decisions {
        let argument = genai_core::redact::redact(&d.argument);
        let by = genai_core::redact::redact(&d.by);
        tx.execute(
            &insert,
            &[
                &id,
                &turn_id,
                &d.call_id,
                &d.tool,
                &argument.as_ref(),
                &d.decision,
                &by.as_ref(),
                &now,
            ],
        )
        .await
        .map_err(db_err)?;
        n += 1;
    }
    Ok(n)
}

/// The decisions of conversation `id`, oldest first, each with its turn id.
pub(crate) async fn decisions<C: GenericClient>(
    client: &C,
    id: &str,
) -> Result<Vec<(String, DecisionRecord)>> {
    let stmt = client
        .prepare_cached(
            "SELECT turn_id, call_id, tool, argument, decision, decided_by FROM tool_decisions
             WHERE conversation_id = $1 ORDER BY created_at, id",
        )
        .await
        .map_err(db_err)?;
    let rows = client.query(&stmt, &[&id]).await.map_err(db_err)?;
    Ok(rows
        .iter()
        .map(|r| {
            (
                r.get(0),
                DecisionRecord {
                    call_id: r.get(1),
                    tool: r.get(2),
                    argument: r.get(3),
                    decision: r.get(4),
                    by: r.get(5),
                },
            )
        })
        .collect())
}
