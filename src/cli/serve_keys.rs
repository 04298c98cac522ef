//! `genai serve keys create|list|revoke`: the gateway's virtual keys. `create` makes a key
//! from the OS's random source, prints it once on stdout and stores only its SHA-256 in the
//! history with its limits (budget in US dollars, requests and tokens per minute, model
//! patterns, whether its bodies are kept); `list` shows the keys with what they have spent, never a key;
//! `revoke` ends one. A running `genai serve` notices each change without a restart. With
//! `[store] url` the keys are the shared database's, so every replica sees them at once
//! (`serve_store.rs`).

use super::serve_store::GatewayStore;
use clap::Subcommand;
use genai_core::error::{Error, ErrorKind};
use genai_core::store::{now_ms, GatewayKey, UtcTime};
use genai_gateway::{key_hash, key_hex, SERVE_TOKEN};
use serde_json::json;

/// What a key starts with, so people and secret scanners know it for genai's.
const PREFIX: &str = "gk-";

#[derive(Subcommand)]
pub enum Command {
    /// Make a key: printed once on stdout, only its hash is stored.
    Create {
        /// The key's name, shown in `genai usage --by key` (letters, digits, `.`, `_`, `-`).
        name: String,
        /// The US dollars its requests may spend in all; then it is refused (429).
        #[arg(long, value_name = "USD")]
        budget: Option<f64>,
        /// Requests per minute it may make; more are refused (429 with retry-after).
        #[arg(long, value_name = "N")]
        rpm: Option<u32>,
        /// Tokens (input and output) per minute its requests may use; then it is refused (429
        /// with retry-after) until the minute's tokens fall below it.
        #[arg(long, value_name = "N")]
        tpm: Option<u64>,
        /// A model it may ask for, `*` a wildcard, matched against the request's `model` and
        /// its `[serve.models]` alias's target (repeatable; default: any).
        #[arg(long = "models", value_name = "PATTERN")]
        models: Vec<String>,
        /// Store its requests' bodies and replies with their usage rows (off by default: a
        /// coding agent resends its whole history on every request).
        #[arg(long)]
        keep_bodies: bool,
    },
    /// List the keys: name, created, budget, spent, rpm, tpm, models, revoked; never a key.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Revoke the key NAME: refused from then on, by a running serve too.
    Revoke {
        /// The key's name.
        name: String,
    },
}

pub async fn run(c: Command) -> Result<(), Error> {
    let store = GatewayStore::open().await?;
    match c {
        Command::Create {
            name,
            budget,
            rpm,
            tpm,
            models,
            keep_bodies,
        } => {
            create(
                &store,
                name,
                budget,
                Rates { rpm, tpm },
                models,
                keep_bodies,
            )
            .await
        }
        Command::List { json } => list(&store, json).await,
        Command::Revoke { name } => {
            if !store.revoke_key(&name, now_ms()).await? {
                return Err(Error::new(
                    ErrorKind::InvalidParams,
                    format!("no live gateway key named `{name}` (genai serve keys list)"),
                ));
            }
            eprintln!("genai: key `{name}` is revoked");
            Ok(())
        }
    }
}

/// A new key's rate limits.
struct Rates {
    rpm: Option<u32>,
    tpm: Option<u64>,
}

async fn create(
    store: &GatewayStore,
    name: String,
    budget: Option<f64>,
    Rates { rpm, tpm }: Rates,
    models: Vec<String>,
    keep_bodies: bool,
) -> Result<(), Error> {
    let bad = |why: String| Err(Error::new(ErrorKind::InvalidParams, why));
    let name_ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if name.is_empty() || !name.chars().all(name_ok) {
        return bad(format!(
            "a key's name is letters, digits, `.`, `_` and `-`, not `{name}`"
        ));
    }
    if name == SERVE_TOKEN {
        return bad(format!(
            "`{SERVE_TOKEN}` names the serve token's requests; choose another name"
        ));
    }
    if budget.is_some_and(|b| !b.is_finite() || b < 0.0) {
        return bad("--budget is US dollars, 0 or more".into());
    }
    if rpm == Some(0) {
        return bad("--rpm is at least 1".into());
    }
    if tpm == Some(0) {
        return bad("--tpm is at least 1".into());
    }
    if models.iter().any(|m| m.trim().is_empty()) {
        return bad("--models takes a model name or a pattern with `*`, not an empty one".into());
    }
    let mut random = [0u8; 32];
    getrandom::fill(&mut random)
        .map_err(|e| Error::internal(format!("no random source for the key: {e}")))?;
    let key = format!("{PREFIX}{}", key_hex(&random));
    let row = GatewayKey {
        name,
        hash: key_hex(&key_hash(&key)),
        created_at: now_ms(),
        budget,
        rpm,
        tpm,
        models,
        keep_bodies,
        revoked_at: None,
    };
    store.create_key(&row).await?;
    outln!("{key}");
    eprintln!(
        "genai: key `{}` made; it is shown only now: give it to the client as its API key",
        row.name
    );
    Ok(())
}

async fn list(store: &GatewayStore, json: bool) -> Result<(), Error> {
    let keys = store.keys().await?;
    let date = |ms: i64| UtcTime::of(ms).rfc3339();
    if json {
        let rows: Vec<_> = keys
            .iter()
            .map(|(k, spent)| {
                json!({
                    "name": k.name,
                    "created": date(k.created_at),
                    "budget": k.budget,
                    "spent": spent,
                    "rpm": k.rpm,
                    "tpm": k.tpm,
                    "models": k.models,
                    "keepBodies": k.keep_bodies,
                    "revoked": k.revoked_at.map(date),
                })
            })
            .collect();
        super::print_json(&rows);
        return Ok(());
    }
    if keys.is_empty() {
        eprintln!("no gateway keys yet (genai serve keys create NAME)");
        return Ok(());
    }
    let width = keys
        .iter()
        .map(|(k, _)| k.name.chars().count())
        .chain([4])
        .max()
        .unwrap_or(4);
    outln!(
        "{:<width$}  {:<20}  {:>10}  {:>10}  {:>6}  {:>8}  {:<20}  REVOKED",
        "NAME",
        "CREATED",
        "BUDGET",
        "SPENT",
        "RPM",
        "TPM",
        "MODELS"
    );
    for (k, spent) in &keys {
        let models = match k.models.is_empty() {
            true => "any".to_string(),
            false => k.models.join(","),
        };
        let bodies = if k.keep_bodies { " (bodies kept)" } else { "" };
        outln!(
            "{:<width$}  {:<20}  {:>10}  {:>10}  {:>6}  {:>8}  {:<20}  {}{bodies}",
            k.name,
            date(k.created_at),
            k.budget.map_or("none".into(), |b| format!("${b:.2}")),
            genai_core::pricing::show(Some(*spent)),
            k.rpm.map_or("none".into(), |r| r.to_string()),
            k.tpm.map_or("none".into(), |r| r.to_string()),
            models,
            k.revoked_at.map_or("no".into(), date),
        );
    }
    Ok(())
}
