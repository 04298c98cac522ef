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
pub const GATEWAY_GROUP: &str = "gateway";

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
        s.commit_turn_at(id, None, None, Some(model), &rows, day * DAY_MS + 5)
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
    fn the_gateways_answered_requests_count_beside_the_turns() {
        let s = Store::in_memory().unwrap();
        s.create_conversation(&crate::store::tests::record("01A", 1))
            .unwrap();
        turn(&s, "01A", "m1", 20_000, reply(100, Some(40), Some(0.5)));
        let request = |day: i64, served_by: &str, input: Option<u64>, cost: Option<f64>| {
            crate::store::GatewayRequest {
                created_at: day * DAY_MS + 7,
                key_name: "ci".into(),
                api: "openai-chat".into(),
                served_by: Some(served_by.into()),
                status: if input.is_some() { "200" } else { "502" }.into(),
                input_tokens: input,
                output_tokens: input.map(|_| 5),
                cost,
                ..Default::default()
            }
        };
        s.record_gateway_requests(&[
            request(20_000, "corp:m1", Some(50), Some(0.25)),
            request(
                20_001,
                "bedrock:anthropic.claude-3-haiku-20240307-v1:0",
                Some(900),
                None,
            ),
            request(20_001, "corp:m1", None, None),
        ])
        .unwrap();

        let by_model = s.usage(None, Grouping::Model).unwrap();
        let keys: Vec<_> = by_model
            .iter()
            .map(|r| (r.key.as_str(), r.turns, r.gateway_requests))
            .collect();
        assert_eq!(
            keys,
            [
                ("anthropic.claude-3-haiku-20240307-v1:0", 1, 1),
                ("m1", 2, 1)
            ],
            "a model's id after its provider, merged with the turns on it; the failed request left out"
        );
        assert_eq!(by_model[1].usage.input_tokens, 150);
        assert_eq!(by_model[1].cost, Some(0.75));
        assert_eq!(by_model[1].usage.cache_read_tokens, Some(40));
        assert_eq!((by_model[0].cost, by_model[0].unpriced), (None, 1));

        let by_day = s.usage(None, Grouping::Day).unwrap();
        let days: Vec<_> = by_day.iter().map(|r| (r.key.as_str(), r.turns)).collect();
        assert_eq!(days, [("2024-10-04", 2), ("2024-10-05", 1)]);

        let by_conversation = s.usage(None, Grouping::Conversation).unwrap();
        let groups: Vec<_> = by_conversation
            .iter()
            .map(|r| (r.key.as_str(), r.turns))
            .collect();
        assert_eq!(groups, [(GATEWAY_GROUP, 2), ("01A", 1)]);
        assert!(by_conversation[0]
            .title
            .as_ref()
            .unwrap()
            .contains("--by key"));

        let since = s.usage(Some(20_001 * DAY_MS), Grouping::Model).unwrap();
        assert_eq!(since.len(), 1, "{since:?}");
        let total = UsageRow::total("total", &by_model);
        assert_eq!((total.turns, total.gateway_requests), (3, 2));
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
