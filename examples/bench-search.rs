//! Benchmarks `genai sessions search` on a large history: fills a fresh store (a temporary
//! file, WAL mode as in use) with 1,000 conversations of 100 messages (100,000 messages of
//! varied English-like text), then times searches through `Store::search`, the call the command
//! makes. Target: under 50 ms per search.
//!
//! ```text
//! cargo run --release --example bench-search [-- --messages N]
//! ```

use std::time::Instant;

use genai_core::message::Message;
use genai_core::store::Store;
use genai_protocol::listings::ConversationRecord;

const WORDS: &[&str] = &[
    "borrow", "checker", "lifetime", "async", "runtime", "socket", "buffer", "vector", "string",
    "closure", "trait", "generic", "compile", "error", "warning", "thread", "mutex", "channel",
    "future", "stream", "parser", "token", "model", "prompt", "reply", "history", "search",
    "index", "query", "rank", "snippet", "sqlite", "table", "column", "row", "cursor", "page",
    "memory", "cache", "latency", "server", "client", "request", "response", "header", "body",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut total: usize = 100_000;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--messages" => total = args.next().ok_or("--messages takes a number")?.parse()?,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let per_conversation = 100.min(total.max(1));
    let conversations = total.div_ceil(per_conversation);
    let dir = tempfile::tempdir()?;
    let store = Store::open(&dir.path().join("history.db"))?;

    let started = Instant::now();
    let mut seed: u64 = 42;
    let mut word = || {
        // xorshift: the same text on every run.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        WORDS[(seed % WORDS.len() as u64) as usize]
    };
    for c in 0..conversations {
        let id = format!("01BENCH{c:019}");
        store.create_conversation(&ConversationRecord {
            id: id.clone(),
            title: String::new(),
            feature: "assistant".into(),
            provider: "openai".into(),
            model_configuration: None,
            format: "openai-chat".into(),
            model: "bench".into(),
            parameters: Default::default(),
            created_at: c as i64,
            updated_at: c as i64,
            message_count: 0,
            tools: None,
            cwd: None,
            answered_by: None,
        })?;
        let rows: Vec<_> = (0..per_conversation)
            .map(|i| {
                let text: Vec<&str> = (0..24).map(|_| word()).collect();
                let text = text.join(" ");
                let m = if i % 2 == 0 {
                    Message::user(text)
                } else {
                    Message::assistant(text)
                };
                m.into()
            })
            .collect();
        store.commit_turn(&id, None, Some("bench"), &rows)?;
    }
    println!(
        "stored {} messages in {} conversations in {:.1} s",
        conversations * per_conversation,
        conversations,
        started.elapsed().as_secs_f64()
    );

    for query in [
        "borrow checker",
        "sqlite snippet rank",
        "mutex",
        "latency server cache",
    ] {
        let mut times = Vec::new();
        let mut found = 0;
        for _ in 0..5 {
            let t = Instant::now();
            found = store.search(query, 20, "[", "]")?.len();
            times.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        times.sort_by(|a, b| a.total_cmp(b));
        println!(
            "search {query:?}: {found} shown, median {:.1} ms, worst {:.1} ms (target < 50 ms)",
            times[2], times[4]
        );
    }
    Ok(())
}
