//! Usage and cost summaries over the stored replies (`genai usage`): token counts and costs
//! added up by model, day (UTC) or conversation, since a time. The sums read only the covering
//! index of migration 7 (`messages_usage`), so a large history answers fast.
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
}

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
        };
        for r in rows {
            total.turns += r.turns;
            total.usage = total.usage.plus(r.usage);
            total.unpriced += r.unpriced;
            total.cost = match (total.cost, r.cost) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
            };
        }
        total
    }
}

const DAY_MS: i64 = 86_400_000;

impl Store {
    /// The replies stored at or after `since` (milliseconds since the Unix epoch; all when
    /// `None`), added up by `by`: days in order, models and conversations most tokens first.
    pub fn usage(&self, since: Option<i64>, by: Grouping) -> Result<Vec<UsageRow>> {
        let (key, order) = match by {
            // Messages stored before genai recorded each turn's model take their conversation's.
            Grouping::Model => (
                "COALESCE(m.model, (SELECT c.model FROM conversations c WHERE c.id = m.conversation_id))",
                "SUM(m.input_tokens + m.output_tokens) DESC, k",
            ),
            Grouping::Day => ("m.created_at / 86400000", "k"),
            Grouping::Conversation => (
                "m.conversation_id",
                "SUM(m.input_tokens + m.output_tokens) DESC, k",
            ),
        };
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {key} AS k, COUNT(*), SUM(m.input_tokens), SUM(m.output_tokens),
                    SUM(m.cache_read_tokens), SUM(m.cache_write_tokens), SUM(m.cost),
                    SUM(m.cost IS NULL)
             FROM messages m INDEXED BY messages_usage
             WHERE m.input_tokens IS NOT NULL AND m.created_at >= ?1
             GROUP BY k ORDER BY {order}"
        ))?;
        let count = |n: Option<i64>| n.unwrap_or(0).max(0) as u64;
        let mut rows = stmt
            .query_map(params![since.unwrap_or(i64::MIN)], |r| {
                let key = match r.get::<_, Sql>(0)? {
                    Sql::Integer(day) => {
                        let t = UtcTime::of(day * DAY_MS);
                        format!("{:04}-{:02}-{:02}", t.year, t.month, t.day)
                    }
                    Sql::Text(t) => t,
                    _ => "unknown".to_string(),
                };
                Ok(UsageRow {
                    key,
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;
    use crate::store::NewMessage;

    fn reply(input: u64, read: Option<u64>, cost: Option<f64>) -> NewMessage {
        NewMessage {
            message: Message::assistant("a"),
            usage: Some(Usage {
                input_tokens: input,
                output_tokens: 10,
                cache_read_tokens: read,
                cache_write_tokens: None,
                reasoning_tokens: None,
            }),
            cost,
        }
    }

    /// One turn of conversation `id` on `model` on day `day` (days since the epoch).
    fn turn(s: &Store, id: &str, model: &str, day: i64, r: NewMessage) {
        let rows = [NewMessage::from(Message::user("q")), r];
        s.commit_turn_at(id, None, Some(model), &rows, day * DAY_MS + 5)
            .unwrap();
    }

    #[test]
    fn replies_add_up_by_model_day_and_conversation_since_a_time() {
        let s = Store::in_memory().unwrap();
        for id in ["01A", "01B"] {
            s.create_conversation(&crate::store::tests::record(id, 1))
                .unwrap();
        }
        s.rename_conversation("01B", "second").unwrap();
        turn(&s, "01A", "m1", 20_000, reply(100, Some(40), Some(0.5)));
        turn(&s, "01A", "m2", 20_001, reply(200, None, None));
        turn(&s, "01B", "m1", 20_001, reply(400, Some(60), Some(0.25)));

        let by_model = s.usage(None, Grouping::Model).unwrap();
        let keys: Vec<_> = by_model.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, ["m1", "m2"], "most tokens first");
        assert_eq!(by_model[0].turns, 2);
        assert_eq!(by_model[0].usage.input_tokens, 500);
        assert_eq!(by_model[0].usage.output_tokens, 20);
        assert_eq!(by_model[0].usage.cache_read_tokens, Some(100));
        assert_eq!(by_model[0].cost, Some(0.75));
        assert_eq!(by_model[0].unpriced, 0);
        assert_eq!(
            (by_model[1].cost, by_model[1].unpriced),
            (None, 1),
            "unknown, not 0"
        );
        assert_eq!(by_model[1].usage.cache_read_tokens, None);

        let by_day = s.usage(None, Grouping::Day).unwrap();
        let days: Vec<_> = by_day.iter().map(|r| (r.key.as_str(), r.turns)).collect();
        assert_eq!(days, [("2024-10-04", 1), ("2024-10-05", 2)]);
        assert_eq!((by_day[1].cost, by_day[1].unpriced), (Some(0.25), 1));

        let by_conversation = s.usage(None, Grouping::Conversation).unwrap();
        assert_eq!(by_conversation[0].key, "01B");
        assert_eq!(by_conversation[0].title.as_deref(), Some("second"));
        assert_eq!(
            by_conversation[1].usage.input_tokens, 300,
            "01A: both its turns"
        );

        let since = s.usage(Some(20_001 * DAY_MS), Grouping::Model).unwrap();
        assert_eq!(since.iter().map(|r| r.turns).sum::<u64>(), 2);
        assert_eq!(since[0].usage.input_tokens, 400);
        assert!(s
            .usage(Some(30_000 * DAY_MS), Grouping::Day)
            .unwrap()
            .is_empty());

        let total = UsageRow::total("total", &by_model);
        assert_eq!(total.usage.cache_read_tokens, Some(100));
        assert_eq!((total.turns, total.usage.input_tokens), (3, 700));
        assert_eq!((total.cost, total.unpriced), (Some(0.75), 1));
    }

    #[test]
    fn migration_7_fills_the_columns_from_the_usage_already_stored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.db");
        let conn = rusqlite::Connection::open(&path).unwrap();
        for sql in &crate::store::schema::MIGRATIONS[..6] {
            conn.execute_batch(sql).unwrap();
        }
        conn.pragma_update(None, "user_version", 6).unwrap();
        conn.execute_batch(
            "INSERT INTO conversations (id, feature, provider, format, model, created_at, updated_at)
                VALUES ('01OLD', 'assistant', 'anthropic', 'claude-messages', 'm', 0, 0);
             INSERT INTO messages (conversation_id, seq, role, content, usage, created_at, model)
                VALUES ('01OLD', 1, 'user', '{\"role\":\"user\",\"content\":[]}', NULL, 5, 'm'),
                       ('01OLD', 2, 'assistant', '{\"role\":\"assistant\",\"content\":[]}',
                        '{\"inputTokens\":7,\"outputTokens\":3,\"cacheReadTokens\":2,\"cacheCreationTokens\":4}', 5, NULL);",
        )
        .unwrap();
        drop(conn);
        let s = Store::open(&path).unwrap();
        let rows = s.usage(None, Grouping::Model).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(
            rows[0].key, "m",
            "an old row takes its conversation's model"
        );
        assert_eq!(
            rows[0].usage,
            Usage {
                input_tokens: 7,
                output_tokens: 3,
                cache_read_tokens: Some(2),
                cache_write_tokens: Some(4),
                reasoning_tokens: None,
            }
        );
        assert_eq!(
            (rows[0].turns, rows[0].cost, rows[0].unpriced),
            (1, None, 1)
        );
        let (history, _) = s.history("01OLD", 10, None).unwrap();
        assert_eq!(
            history[1].usage.unwrap().cache_write_tokens,
            Some(4),
            "the old name reads"
        );
    }
}
