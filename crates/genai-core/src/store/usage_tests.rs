//! Tests of usage summaries: replies added up by model, day and conversation, the gateway's
//! requests, and migration 7.

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
