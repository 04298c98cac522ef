//! Committing a turn: its messages in one statement, each with the provider and model that
//! answered and the usage and cost of the request that produced it, the conversation's title
//! and system message, every text with the secrets genai knows masked (a prompt or a tool's
//! output may hold a key; the history never keeps one).
//!
//! It writes whole turns only, in one transaction; it must never write part of one.

use rusqlite::{params, OptionalExtension};

use super::{json_err, not_in_history, now_ms, title_of, Store};
use crate::error::Result;
use crate::message::{Message, Role, Usage};

/// One message to commit, with the usage and cost (US dollars; `None`: unknown) of the
/// request that produced it, if any.
#[derive(Debug, Clone)]
pub struct NewMessage {
    pub message: Message,
    pub usage: Option<Usage>,
    pub cost: Option<f64>,
}

impl From<Message> for NewMessage {
    fn from(message: Message) -> NewMessage {
        NewMessage {
            message,
            usage: None,
            cost: None,
        }
    }
}

impl Store {
    /// Commits one turn atomically: a replacing system message (if any) and the new messages,
    /// each marked with the turn's `model`. Sets the title from the first user message when
    /// the conversation has none.
    pub fn commit_turn(
        &self,
        id: &str,
        system: Option<&Message>,
        model: Option<&str>,
        messages: &[NewMessage],
    ) -> Result<()> {
        self.commit_turn_at(id, system, None, model, messages, now_ms())
    }

    /// [`Store::commit_turn`] at time `now` (milliseconds since the Unix epoch), for imports.
    pub fn commit_turn_at(
        &self,
        id: &str,
        system: Option<&Message>,
        provider: Option<&str>,
        model: Option<&str>,
        messages: &[NewMessage],
        now: i64,
    ) -> Result<()> {
        let mut conn = self.conn()?;
        // Immediate: take the write lock first, so a daemon sharing the file waits (busy_timeout)
        // instead of failing when its read snapshot turns stale.
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let found: Option<(String, i64)> = tx
            .prepare_cached(
                "SELECT title, (SELECT COALESCE(MAX(seq), 0) FROM messages WHERE conversation_id = ?1)
                 FROM conversations WHERE id = ?1",
            )?
            .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        let Some((title, seq)) = found else {
            return Err(not_in_history(id));
        };
        // The conversation's row before the messages: once the full-text index has joined the
        // transaction, each further statement makes FTS5 flush its pending terms into a
        // segment of their own (a savepoint), so the messages go last, in one statement, and
        // the index is written once, at commit.
        let title = turn_title(&title, messages);
        let system = system.map(masked_json).transpose()?;
        tx.prepare_cached(
            "UPDATE conversations SET updated_at = ?2, title = COALESCE(?3, title),
                system = COALESCE(?4, system) WHERE id = ?1",
        )?
        .execute(params![id, now, title, system])?;
        insert_messages(&tx, id, seq, (provider, model), messages, now)?;
        tx.commit()?;
        Ok(())
    }
}

/// The title a turn gives a conversation titled `title`: none when it has one, else its
/// first user message's (secrets masked).
pub fn turn_title(title: &str, messages: &[NewMessage]) -> Option<String> {
    title
        .is_empty()
        .then(|| messages.iter().find(|m| m.message.role == Role::User))
        .flatten()
        .map(|first| title_of(&crate::redact::redact_known(&first.message.text())))
}

/// A message as stored: JSON, with the secrets genai knows masked (a prompt or a tool's
/// output may hold a key; the history never keeps one).
pub fn masked_json(m: &Message) -> Result<String> {
    let json = serde_json::to_string(m).map_err(json_err)?;
    if matches!(
        crate::redact::redact_known(&json),
        std::borrow::Cow::Borrowed(_)
    ) {
        return Ok(json);
    }
    let mut masked = m.clone();
    masked.mask_secrets();
    serde_json::to_string(&masked).map_err(json_err)
}

/// Appends `messages` to conversation `id` after `seq`, in one statement (see
/// [`Store::commit_turn_at`] for why one); SQLite takes at most 32,766 bound values in a
/// statement, so a very long turn takes one per 1,000 messages.
fn insert_messages(
    tx: &rusqlite::Transaction,
    id: &str,
    seq: i64,
    (provider, model): (Option<&str>, Option<&str>),
    messages: &[NewMessage],
    now: i64,
) -> Result<()> {
    const ROW: &str = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    for (i, messages) in messages.chunks(1000).enumerate() {
        let seq = seq + 1000 * i as i64;
        let sql = format!(
            "INSERT INTO messages (conversation_id, seq, role, content, usage, created_at, model,
                input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost, provider)
                VALUES {}",
            vec![ROW; messages.len()].join(", ")
        );
        let mut values: Vec<rusqlite::types::Value> = Vec::with_capacity(13 * messages.len());
        for (
            n,
            NewMessage {
                message: m,
                usage,
                cost,
            },
        ) in messages.iter().enumerate()
        {
            use rusqlite::types::Value as V;
            let text = |t: Option<String>| t.map_or(V::Null, V::Text);
            let count = |n: Option<u64>| n.map_or(V::Null, |n| V::Integer(n as i64));
            let content = masked_json(m)?;
            let usage_json = usage
                .map(|u| serde_json::to_string(&u))
                .transpose()
                .map_err(json_err)?;
            values.extend([
                V::Text(id.to_string()),
                V::Integer(seq + 1 + n as i64),
                V::Text(m.role.as_str().to_string()),
                V::Text(content),
                text(usage_json),
                V::Integer(now),
                text(model.map(str::to_string)),
                count(usage.map(|u| u.input_tokens)),
                count(usage.map(|u| u.output_tokens)),
                count(usage.and_then(|u| u.cache_read_tokens)),
                count(usage.and_then(|u| u.cache_write_tokens)),
                cost.filter(|_| usage.is_some()).map_or(V::Null, V::Real),
                text(provider.map(str::to_string)),
            ]);
        }
        tx.prepare_cached(&sql)?
            .execute(rusqlite::params_from_iter(values))?;
    }
    Ok(())
}
