//! Usage and cost summaries over the stored replies (`genai usage`): token counts and costs
//! added up by model, day (UTC) or conversation, since a time, with the gateway's answered
//! requests counted beside the conversations' turns (one turn each; by conversation they are
//! one group of their own, [`GATEWAY_GROUP`]). The sums read only covering indexes (migration
//! 7's `messages_usage`, 12's `gateway_requests_usage`), so a large history answers fast.
//!
//! It only reads; it must never write messages (that is `commit_turn`) nor decide how a
//! front-end shows figures. A cost it does not know stays unknown: it is never added as 0.

use rusqlite::params;
use rusqlite::types::Value as Sql;

use super::{Store, UtcTime};
use crate::error::Result;
use crate::message::Usage;

/// How `genai usage` groups the replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grouping {
    /// By the model of each turn.
    Model,
    /// By UTC calendar day.
    Day,
    /// By conversation.
    Conversation,
}

/// The replies of one group, added up.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageRow {
    /// The model, the day (`2026-01-31`) or the conversation id.
    pub key: String,
    /// The conversation's title, when grouped by conversation.
    pub title: Option<String>,
    /// Replies with usage (one per turn: a turn's requests are added up in its reply).
    pub turns: u64,
    pub usage: Usage,
    /// The sum of the replies' known costs in US dollars; `None` when none was priced.
    pub cost: Option<f64>,
    /// Replies whose cost is unknown (no price for their model).
    pub unpriced: u64,
    /// How many of `turns` were requests through the gateway.
    pub gateway_requests: u64,
}

/// The group of the gateway's requests when replies are grouped by conversation: they belong
/// to none (the client keeps its history).
pub(crate) const GATEWAY_GROUP: &str = "gateway";

impl UsageRow {
    /// Every row added up into one named `key`.
    pub fn total(key: &str, rows: &[UsageRow]) -> UsageRow {
        let mut total = UsageRow {
            key: key.to_string(),
            title: None,
            turns: 0,
            usage: Usage::default(),
            cost: None,
            unpriced: 0,
            gateway_requests: 0,
        };
        for r in rows {
            total.add(r);
        }
        total
    }

    /// Adds `other`'s figures to this row's.
    fn add(&mut self, r: &UsageRow) {
        self.turns += r.turns;
        self.gateway_requests += r.gateway_requests;
        self.usage = self.usage.plus(r.usage);
        self.unpriced += r.unpriced;
        self.cost = match (self.cost, r.cost) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
    }

    /// Every input and output token of the group.
    fn tokens(&self) -> u64 {
        self.usage.input_tokens + self.usage.output_tokens
    }
}

const DAY_MS: i64 = 86_400_000;

impl Store {
    /// The replies and the gateway's answered requests stored at or after `since`
    /// (milliseconds since the Unix epoch; all when `None`), added up by `by`: days in order,
    /// models and conversations most tokens first.
    pub fn usage(&self, since: Option<i64>, by: Grouping) -> Result<Vec<UsageRow>> {
        let mut rows = self.reply_usage(since, by)?;
        for g in self.gateway_usage_by(since, by)? {
            match rows.iter_mut().find(|r| r.key == g.key) {
                Some(r) => r.add(&g),
                None => rows.push(g),
            }
        }
        match by {
            Grouping::Day => rows.sort_by(|a, b| a.key.cmp(&b.key)),
            Grouping::Model | Grouping::Conversation => {
                rows.sort_by(|a, b| b.tokens().cmp(&a.tokens()).then_with(|| a.key.cmp(&b.key)))
            }
        }
        Ok(rows)
    }

    /// The conversations' replies added up by `by`.
    fn reply_usage(&self, since: Option<i64>, by: Grouping) -> Result<Vec<UsageRow>> {
        // Unordered: `usage` orders the groups once the gateway's are merged in.
        let key = match by {
            // Messages stored before genai recorded each turn's model take their conversation's.
            Grouping::Model => {
                "COALESCE(m.model, (SELECT c.model FROM conversations c WHERE c.id = m.conversation_id))"
            }
            Grouping::Day => "m.created_at / 86400000",
            Grouping::Conversation => "m.conversation_id",
        };
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {key} AS k, COUNT(*), SUM(m.input_tokens), SUM(m.output_tokens),
                    SUM(m.cache_read_tokens), SUM(m.cache_write_tokens), SUM(m.cost),
                    SUM(m.cost IS NULL)
             FROM messages m INDEXED BY messages_usage
             WHERE m.input_tokens IS NOT NULL AND m.created_at >= ?1
             GROUP BY k"
        ))?;
        let mut rows = stmt
            .query_map(params![since.unwrap_or(i64::MIN)], |r| {
                Ok(UsageRow {
                    key: day_or(r.get(0)?),
                    title: None,
                    turns: count(r.get(1)?),
                    usage: Usage {
                        input_tokens: count(r.get(2)?),
                        output_tokens: count(r.get(3)?),
                        cache_read_tokens: r.get::<_, Option<i64>>(4)?.map(|n| count(Some(n))),
                        cache_write_tokens: r.get::<_, Option<i64>>(5)?.map(|n| count(Some(n))),
                        reasoning_tokens: None,
                    },
                    cost: r.get(6)?,
                    unpriced: count(r.get(7)?),
                    gateway_requests: 0,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        if by == Grouping::Conversation {
            let mut title = conn.prepare_cached("SELECT title FROM conversations WHERE id = ?1")?;
            for row in &mut rows {
                row.title = title
                    .query_row([&row.key], |r| r.get(0))
                    .map(Some)
                    .or_else(|e| match e {
                        rusqlite::Error::QueryReturnedNoRows => Ok(None),
                        e => Err(e),
                    })?;
            }
        }
        Ok(rows)
    }

    /// The gateway's answered requests (those with usage) added up by `by`: by the model that
    /// served them (its id, as a reply stores it), by day, or all in [`GATEWAY_GROUP`].
    fn gateway_usage_by(&self, since: Option<i64>, by: Grouping) -> Result<Vec<UsageRow>> {
        let key = match by {
            Grouping::Model => "SUBSTR(served_by, INSTR(served_by, ':') + 1)".to_string(),
            Grouping::Day => "created_at / 86400000".to_string(),
            Grouping::Conversation => format!("'{GATEWAY_GROUP}'"),
        };
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {key} AS k, COUNT(*), SUM(input_tokens), SUM(output_tokens), SUM(cost),
                    SUM(cost IS NULL)
             FROM gateway_requests INDEXED BY gateway_requests_usage
             WHERE input_tokens IS NOT NULL AND created_at >= ?1
             GROUP BY k"
        ))?;
        let rows = stmt
            .query_map(params![since.unwrap_or(i64::MIN)], |r| {
                let requests = count(r.get(1)?);
                Ok(UsageRow {
                    key: day_or(r.get(0)?),
                    title: (by == Grouping::Conversation)
                        .then(|| "the gateway's requests (genai usage --by key)".to_string()),
                    turns: requests,
                    usage: Usage {
                        input_tokens: count(r.get(2)?),
                        output_tokens: count(r.get(3)?),
                        ..Usage::default()
                    },
                    cost: r.get(4)?,
                    unpriced: count(r.get(5)?),
                    gateway_requests: requests,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }
}

/// A sum as read: none (no rows) or negative is 0.
fn count(n: Option<i64>) -> u64 {
    n.unwrap_or(0).max(0) as u64
}

/// A group's key as read: a day number as `2026-01-31`, a text as it is, else `unknown`.
fn day_or(key: Sql) -> String {
    match key {
        Sql::Integer(day) => {
            let t = UtcTime::of(day * DAY_MS);
            format!("{:04}-{:02}-{:02}", t.year, t.month, t.day)
        }
        Sql::Text(t) => t,
        _ => "unknown".to_string(),
    }
}

#[cfg(test)]
#[path = "usage_tests.rs"]
mod tests;
