//! Benchmarks `genai usage` on a large history: fills a fresh store (a temporary file, WAL
//! mode as in use) with 100,000 turns (1,000 conversations of 100 turns, a user message and a
//! reply with usage and a cost each, on five models, spread over a year), then times
//! `Store::usage`, the call the command makes, grouped each way, over everything and over the
//! last month. Target: well under a second each (the covering index makes it a few tens of
//! milliseconds). It also checks that the sums match the rows it stored.
//!
//! ```text
//! cargo run --release --example bench-usage [-- --turns N]
//! ```

use std::time::Instant;

use genai_core::message::{Message, Usage};
use genai_core::store::{Grouping, NewMessage, Store, UsageRow};
use genai_protocol::listings::ConversationRecord;

const MODELS: &[&str] = &[
    "claude-sonnet-4-5",
    "claude-haiku-4-5",
    "gpt-4o-mini",
    "gemini-2.5-flash",
    "local-smollm2",
];
const DAY_MS: i64 = 86_400_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut turns: usize = 100_000;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--turns" => turns = args.next().ok_or("--turns takes a number")?.parse()?,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let per_conversation = 100.min(turns.max(1));
    let conversations = turns.div_ceil(per_conversation);
    let dir = tempfile::tempdir()?;
    let store = Store::open(&dir.path().join("history.db"))?;

    let started = Instant::now();
    let now = genai_core::store::now_ms();
    let (mut input, mut priced, mut unpriced) = (0u64, 0f64, 0u64);
    for c in 0..conversations {
        let id = format!("01USAGE{c:019}");
        let model = MODELS[c % MODELS.len()];
        store.create_conversation(&ConversationRecord {
            id: id.clone(),
            title: format!("conversation {c}"),
            feature: "assistant".into(),
            provider: "bench".into(),
            model_configuration: None,
            format: "openai-chat".into(),
            model: model.into(),
            parameters: Default::default(),
            created_at: 0,
            updated_at: 0,
            message_count: 0,
            tools: None,
            cwd: None,
            answered_by: None,
        })?;
        // One conversation a day over the last year, its turns a minute apart.
        let day = now - (c as i64 % 365) * DAY_MS;
        for t in 0..per_conversation {
            let n = (c * per_conversation + t) as u64;
            let usage = Usage {
                input_tokens: 500 + n % 1000,
                output_tokens: 50 + n % 200,
                cache_read_tokens: Some(n % 400),
                cache_write_tokens: n.is_multiple_of(3).then_some(100),
                reasoning_tokens: None,
            };
            // The local model's turns have no known price.
            let cost = (model != "local-smollm2").then(|| usage.total() as f64 * 1e-6);
            input += usage.input_tokens;
            match cost {
                Some(c) => priced += c,
                None => unpriced += 1,
            }
            let rows = [
                NewMessage::from(Message::user("how much did this cost?")),
                NewMessage {
                    message: Message::assistant("about this much"),
                    usage: Some(usage),
                    cost,
                },
            ];
            store.commit_turn_at(&id, None, None, Some(model), &rows, day + t as i64 * 60_000)?;
        }
    }
    println!(
        "stored {} turns in {} conversations in {:.1} s",
        conversations * per_conversation,
        conversations,
        started.elapsed().as_secs_f64()
    );

    let month = now - 30 * DAY_MS;
    for (by, name) in [
        (Grouping::Model, "model"),
        (Grouping::Day, "day"),
        (Grouping::Conversation, "conversation"),
    ] {
        for (since, span) in [(None, "all"), (Some(month), "last 30 days")] {
            let mut times = Vec::new();
            let mut rows = Vec::new();
            for _ in 0..5 {
                let t = Instant::now();
                rows = store.usage(since, by)?;
                times.push(t.elapsed().as_secs_f64() * 1000.0);
            }
            times.sort_by(|a, b| a.total_cmp(b));
            let total = UsageRow::total("total", &rows);
            println!(
                "usage --by {name} ({span}): {} groups, {} turns, median {:.1} ms, worst {:.1} ms (target < 1000 ms)",
                rows.len(),
                total.turns,
                times[times.len() / 2],
                times[times.len() - 1]
            );
            if since.is_none() {
                let cost = total.cost.unwrap_or(0.0);
                if total.usage.input_tokens != input
                    || total.unpriced != unpriced
                    || (cost - priced).abs() > 1e-6 * priced.max(1.0)
                {
                    return Err(format!(
                        "the sums do not match what was stored: {total:?} vs {input} input, ${priced}, {unpriced} unpriced"
                    )
                    .into());
                }
            }
        }
    }
    Ok(())
}
