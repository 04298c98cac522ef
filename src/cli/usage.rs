//! `genai usage`: the tokens and cost of the stored replies and the gateway's requests, added
//! up by model, day or conversation, since a date or an age; or, `--by key`, the gateway's
//! requests by virtual key (requests, tokens, cost, median latency, the models that served
//! them and the clients). It reads the history through `Store::usage` and
//! `Store::gateway_usage` and only shows what they return: a cost it does not know is printed
//! as unknown, never as 0.

use genai_core::error::Error;
use genai_core::pricing::show;
use genai_core::store::{Grouping, UsageRow};
use serde_json::{json, Value};

#[derive(clap::Args)]
pub struct Args {
    /// Only replies since then: a date (2026-01-31, UTC midnight) or an age (30m, 12h, 7d).
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// How replies are grouped.
    #[arg(long, value_enum, default_value_t = By::Model)]
    pub by: By,
    /// Print JSON: `{by, since, groups: [...], total}`.
    #[arg(long)]
    pub json: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum By {
    Model,
    Day,
    Conversation,
    /// The gateway's requests, by virtual key (`serve-token` for the serve token's).
    Key,
}

/// The cost of a group as people read it: `$1.20`, `unknown`, or `$1.20 + unknown (3 turns)`.
fn cost(r: &UsageRow) -> String {
    match (r.cost, r.unpriced) {
        (c, 0) | (c @ None, _) => show(c),
        (c, n) => format!(
            "{} + unknown ({n} turn{})",
            show(c),
            if n == 1 { "" } else { "s" }
        ),
    }
}

/// One line for what a conversation spent (`genai sessions show`).
pub fn spent(total: &UsageRow) -> String {
    let u = &total.usage;
    format!(
        "total: {} tokens ({} input, {} of them cached, {} output) · cost {}",
        u.total(),
        u.input_tokens,
        u.cache_read_tokens.unwrap_or(0),
        u.output_tokens,
        cost(total)
    )
}

fn row_json(r: &UsageRow) -> Value {
    let mut v = json!({
        "key": r.key,
        "turns": r.turns,
        "usage": r.usage,
        "cost": r.cost,
        "unpricedTurns": r.unpriced,
        "gatewayRequests": r.gateway_requests,
    });
    if let Some(t) = &r.title {
        v["title"] = Value::from(t.as_str());
    }
    v
}

pub fn run(a: Args) -> Result<(), Error> {
    let since = a.since.as_deref().map(super::since_ms).transpose()?;
    let (grouping, name, column) = match a.by {
        By::Model => (Grouping::Model, "model", "MODEL"),
        By::Day => (Grouping::Day, "day", "DAY (UTC)"),
        By::Conversation => (Grouping::Conversation, "conversation", "CONVERSATION"),
        By::Key => return by_key(since, a.json),
    };
    let rows = super::open_store()?.usage(since, grouping)?;
    let total = UsageRow::total("total", &rows);
    if a.json {
        let since = since.map(|ms| genai_core::store::UtcTime::of(ms).rfc3339());
        super::print_json(&json!({
            "by": name,
            "since": since,
            "groups": rows.iter().map(row_json).collect::<Vec<_>>(),
            "total": row_json(&total),
        }));
        return Ok(());
    }
    if rows.is_empty() {
        eprintln!(
            "no usage stored yet{}",
            if since.is_some() { " in that time" } else { "" }
        );
        return Ok(());
    }
    let width = rows
        .iter()
        .map(|r| r.key.chars().count())
        .chain([column.len()])
        .max()
        .unwrap_or(0);
    outln!(
        "{column:<width$}  {:>6}  {:>12}  {:>12}  {:>12}  {:>12}  COST",
        "TURNS",
        "INPUT",
        "CACHE READ",
        "CACHE WRITE",
        "OUTPUT"
    );
    for r in rows.iter().chain([&total]) {
        let u = &r.usage;
        let title = r
            .title
            .as_deref()
            .map(|t| format!("  {t}"))
            .unwrap_or_default();
        outln!(
            "{:<width$}  {:>6}  {:>12}  {:>12}  {:>12}  {:>12}  {}{title}",
            r.key,
            r.turns,
            u.input_tokens,
            u.cache_read_tokens.unwrap_or(0),
            u.cache_write_tokens.unwrap_or(0),
            u.output_tokens,
            cost(r)
        );
    }
    if total.gateway_requests > 0 {
        outln!(
            "({} of the {} turns are requests through the gateway: `genai usage --by key`)",
            total.gateway_requests,
            total.turns
        );
    }
    Ok(())
}

/// `--by key`: the gateway's requests added up by virtual key.
fn by_key(since: Option<i64>, json: bool) -> Result<(), Error> {
    // The shared database's when `[store] url` names one: every replica's requests.
    let rows = super::runtime().block_on(async {
        super::serve_store::GatewayStore::open()
            .await?
            .usage(since)
            .await
    })?;
    if json {
        let since = since.map(|ms| genai_core::store::UtcTime::of(ms).rfc3339());
        let groups: Vec<Value> = rows
            .iter()
            .map(|r| {
                json!({
                    "key": r.key_name,
                    "requests": r.requests,
                    "failed": r.failed,
                    "inputTokens": r.input_tokens,
                    "outputTokens": r.output_tokens,
                    "cost": r.cost,
                    "unpricedRequests": r.unpriced,
                    "p50LatencyMs": r.p50_latency_ms,
                    "servedBy": r.served_by,
                    "clients": r.clients,
                })
            })
            .collect();
        super::print_json(&json!({"by": "key", "since": since, "groups": groups}));
        return Ok(());
    }
    if rows.is_empty() {
        eprintln!(
            "no gateway requests stored yet{}",
            if since.is_some() { " in that time" } else { "" }
        );
        return Ok(());
    }
    let width = rows
        .iter()
        .map(|r| r.key_name.chars().count())
        .chain([3])
        .max()
        .unwrap_or(3);
    outln!(
        "{:<width$}  {:>8}  {:>6}  {:>12}  {:>12}  {:>10}  {:>8}  SERVED BY · CLIENTS",
        "KEY",
        "REQUESTS",
        "FAILED",
        "INPUT",
        "OUTPUT",
        "COST",
        "P50 MS"
    );
    for r in &rows {
        let cost = match (r.cost, r.unpriced) {
            (c, 0) | (c @ None, _) => show(c),
            (c, n) => format!("{} + unknown ({n})", show(c)),
        };
        outln!(
            "{:<width$}  {:>8}  {:>6}  {:>12}  {:>12}  {:>10}  {:>8}  {} · {}",
            r.key_name,
            r.requests,
            r.failed,
            r.input_tokens,
            r.output_tokens,
            cost,
            r.p50_latency_ms,
            r.served_by.join(", "),
            r.clients.join(", "),
        );
    }
    Ok(())
}
