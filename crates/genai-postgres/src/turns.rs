//! The statements on the shared database's `messages`: a whole turn committed in one
//! transaction (the conversation's row locked, so two replicas committing to one conversation
//! take their turns one after the other), the messages read back in pages, and full-text search
//! (`tsvector` of each message's text parts under a GIN index, `ts_rank` order, `ts_headline`
//! with the caller's markers).
//!
//! It owns these statements. It must never write part of a turn, never keep a message but as
//! `store::masked_json` masks it, and never read a caller's text as search syntax
//! (`plainto_tsquery`: every word required, none an operator).

use deadpool_postgres::GenericClient;
use genai_core::error::Result;
use genai_core::message::Message;
use genai_core::store::{self, Found, NewMessage, StoredMessage};
use serde_json::Value;

use super::db_err;

/// One message of a turn as it is stored.
pub(crate) struct Row {
    role: &'static str,
    content: String,
    usage: Option<String>,
    counts: [Option<i64>; 4],
    cost: Option<f64>,
    /// The text parts, joined by spaces, that search reads.
    text: String,
}

/// A turn ready to commit: every message masked and in its columns before a connection is
/// taken.
pub(crate) struct Turn<'a> {
    system: Option<String>,
    answered_by: (Option<&'a str>, Option<&'a str>),
    messages: &'a [NewMessage],
    rows: Vec<Row>,
    now: i64,
}

/// The text parts of a stored message's JSON, joined by spaces (what SQLite's index reads).
pub(crate) fn text_of(content: &str) -> String {
    let parsed: Value = serde_json::from_str(content).unwrap_or_default();
    let parts = parsed["content"].as_array().cloned().unwrap_or_default();
    parts
        .iter()
        .filter(|p| p["type"] == "text")
        .filter_map(|p| p["text"].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

impl Row {
    /// `m` as stored: masked, its usage in columns, its text for search.
    pub(crate) fn of(m: &NewMessage) -> Result<Row> {
        let content = store::masked_json(&m.message)?;
        let usage = m
            .usage
            .map(|u| super::conversations::to_json(&u))
            .transpose()?;
        let n = |n: Option<u64>| n.map(|n| n.min(i64::MAX as u64) as i64);
        let u = m.usage;
        Ok(Row {
            role: m.message.role.as_str(),
            text: text_of(&content),
            content,
            usage,
            counts: [
                n(u.map(|u| u.input_tokens)),
                n(u.map(|u| u.output_tokens)),
                n(u.and_then(|u| u.cache_read_tokens)),
                n(u.and_then(|u| u.cache_write_tokens)),
            ],
            cost: m.cost.filter(|_| u.is_some()),
        })
    }
}

impl<'a> Turn<'a> {
    pub(crate) fn new(
        system: Option<&Message>,
        answered_by: (Option<&'a str>, Option<&'a str>),
        messages: &'a [NewMessage],
        now: i64,
    ) -> Result<Turn<'a>> {
        Ok(Turn {
            system: system.map(store::masked_json).transpose()?,
            answered_by,
            messages,
            rows: messages.iter().map(Row::of).collect::<Result<_>>()?,
            now,
        })
    }
}

/// Where a message goes: its conversation and place, when it was stored, who answered it.
pub(crate) struct Place<'a> {
    pub(crate) id: &'a str,
    pub(crate) seq: i64,
    pub(crate) created_at: i64,
    pub(crate) provider: Option<&'a str>,
    pub(crate) model: Option<&'a str>,
}

/// Inserts one message row in transaction `tx`.
pub(crate) async fn insert(
    tx: &deadpool_postgres::Transaction<'_>,
    at: Place<'_>,
    r: &Row,
) -> Result<()> {
    let insert = tx
        .prepare_cached(
            "INSERT INTO messages (conversation_id, seq, role, content, usage, created_at, model,
                input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost,
                provider, text)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
        )
        .await
        .map_err(db_err)?;
    let [input, output, cache_read, cache_write] = r.counts;
    tx.execute(
        &insert,
        &[
            &at.id,
            &at.seq,
            &r.role,
            &r.content,
            &r.usage,
            &at.created_at,
            &at.model,
            &input,
            &output,
            &cache_read,
            &cache_write,
            &r.cost,
            &at.provider,
            &r.text,
        ],
    )
    .await
    .map_err(db_err)?;
    Ok(())
}

/// Commits `turn` to conversation `id`, all or nothing (see `Store::commit_turn_at`).
pub(crate) async fn commit(
    client: &mut deadpool_postgres::Client,
    id: &str,
    turn: &Turn<'_>,
) -> Result<()> {
    let tx = client.transaction().await.map_err(db_err)?;
    let lock = tx
        .prepare_cached(
            "SELECT title, (SELECT COALESCE(MAX(seq), 0) FROM messages WHERE conversation_id = $1)
             FROM conversations WHERE id = $1 FOR UPDATE",
        )
        .await
        .map_err(db_err)?;
    let Some(found) = tx.query_opt(&lock, &[&id]).await.map_err(db_err)? else {
        return Err(store::not_in_history(id));
    };
    let (title, seq): (String, i64) = (found.get(0), found.get(1));
    let title = store::turn_title(&title, turn.messages);
    tx.execute(
        "UPDATE conversations SET updated_at = $2, title = COALESCE($3, title),
            system = COALESCE($4, system) WHERE id = $1",
        &[&id, &turn.now, &title, &turn.system],
    )
    .await
    .map_err(db_err)?;
    let (provider, model) = turn.answered_by;
    for (n, r) in turn.rows.iter().enumerate() {
        let at = Place {
            id,
            seq: seq + 1 + n as i64,
            created_at: turn.now,
            provider,
            model,
        };
        insert(&tx, at, r).await?;
    }
    tx.commit().await.map_err(db_err)
}

/// Up to `limit` messages of conversation `id` after `after`, in order.
pub(crate) async fn messages<C: GenericClient>(
    client: &C,
    id: &str,
    after: i64,
    limit: usize,
) -> Result<Vec<StoredMessage>> {
    let stmt = client
        .prepare_cached(
            "SELECT seq, content, usage, created_at, model, cost, provider FROM messages
             WHERE conversation_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
        )
        .await
        .map_err(db_err)?;
    let limit = limit.min(i64::MAX as usize) as i64;
    let rows = client
        .query(&stmt, &[&id, &after, &limit])
        .await
        .map_err(db_err)?;
    rows.iter()
        .map(|r| {
            store::stored_message(
                r.get(0),
                r.get(1),
                r.get(2),
                r.get(3),
                (r.get(4), r.get(5), r.get(6)),
            )
        })
        .collect()
}

/// A `ts_headline` option's value: in double quotes, a quote in it doubled.
pub(crate) fn option_value(marker: &str) -> String {
    format!("\"{}\"", marker.replace('"', "\"\""))
}

/// The best `limit` messages with every word of `query`, best first, the matches between
/// `open` and `close` in their snippets.
pub(crate) async fn search<C: GenericClient>(
    client: &C,
    query: &str,
    limit: usize,
    (open, close): (&str, &str),
) -> Result<Vec<Found>> {
    let stmt = client
        .prepare_cached(
            "SELECT m.conversation_id, c.title, m.seq, m.role,
                    ts_headline('simple', m.text, q, $3), ts_rank(m.text_search, q) AS rank
             FROM plainto_tsquery('simple', $1) q, messages m
             JOIN conversations c ON c.id = m.conversation_id
             WHERE m.text_search @@ q
             ORDER BY rank DESC, m.conversation_id, m.seq LIMIT $2",
        )
        .await
        .map_err(db_err)?;
    let options = format!(
        "StartSel={}, StopSel={}, MaxWords=12, MinWords=4, ShortWord=0",
        option_value(open),
        option_value(close)
    );
    let limit = limit.min(i64::MAX as usize) as i64;
    let rows = client
        .query(&stmt, &[&query, &limit, &options])
        .await
        .map_err(db_err)?;
    Ok(rows
        .iter()
        .map(|r| Found {
            conversation_id: r.get(0),
            title: r.get(1),
            seq: r.get(2),
            role: r.get(3),
            snippet: r.get(4),
            // bm25's sense: lower is better.
            rank: -f64::from(r.get::<_, f32>(5)),
        })
        .collect())
}
