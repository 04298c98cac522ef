//! `genai serve` replicas on one Postgres (`[store] url`, or `GENAI_DATABASE_URL`), each a
//! real process with its own SQLite history, in front of the fake OpenAI provider, on a
//! throwaway cluster (`support::postgres`): a key made with `genai serve keys create` works on
//! both; revoked, both refuse it within a second; a budget spent on one is refused by the
//! other; `genai usage --by key` sums both; two replicas started at once on an empty database
//! both come up; a newer schema is refused naming both versions; the URL's password is shown
//! nowhere.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::serve::Served;
use crate::support::fake_openai::{Behavior, FakeOpenAi};
use crate::support::poll::wait_until;
use crate::support::postgres::{Cluster, PASSWORD};

pub const UPSTREAM_KEY: &str = "sk-pg-upstream-0123456789abcdef";

pub const WAIT: Duration = Duration::from_secs(20);

/// A dollar a token, so one request spends a small budget.
const PRICED: &str = "[defaults]\nmodel = \"openai:gpt-pg\"\n\n\
     [pricing.\"openai:*\"]\ninput = 1000000.0\noutput = 1000000.0\n";

/// The config of a replica on `db`: its URL in `[store]`.
pub fn config(db: &Cluster) -> String {
    format!("{PRICED}\n[store]\nurl = \"{}\"\n", db.url())
}

/// A replica on `db` in front of `fake`: the URL in its config, or (`by_env`) in
/// `GENAI_DATABASE_URL` only.
pub fn replica(db: &Cluster, fake: &FakeOpenAi, by_env: bool) -> Served {
    let base_url = fake.base_url();
    let url = db.url();
    let mut vars = vec![
        ("OPENAI_BASE_URL", base_url.as_str()),
        ("OPENAI_API_KEY", UPSTREAM_KEY),
    ];
    let config = match by_env {
        true => {
            vars.push(("GENAI_DATABASE_URL", url.as_str()));
            PRICED.to_string()
        }
        false => config(db),
    };
    Served::start_with(&config, &vars, &["--no-preload"])
}

/// `genai ARGS` on `served`'s folders with the database in the environment too; stdout,
/// checked to succeed.
pub fn genai(served: &Served, db: &Cluster, args: &[&str]) -> String {
    let o = served
        .genai(args)
        .env("GENAI_DATABASE_URL", db.url())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "genai {args:?}: {stderr}");
    assert!(!stderr.contains(PASSWORD), "the password shown: {stderr}");
    String::from_utf8(o.stdout).unwrap()
}

/// A new key `name` made on `served`'s side.
pub fn create(served: &Served, db: &Cluster, name: &str, options: &[&str]) -> String {
    let mut args = vec!["serve", "keys", "create", name];
    args.extend_from_slice(options);
    let key = genai(served, db, &args).trim().to_string();
    assert!(key.starts_with("gk-"), "{key}");
    key
}

/// A chat completion on `served` with `key`: its status and body.
pub async fn chat(served: &Served, key: &str) -> (u16, Value) {
    let r = reqwest::Client::builder()
        .timeout(WAIT)
        .build()
        .unwrap()
        .post(format!("{}/v1/chat/completions", served.http_base()))
        .bearer_auth(key)
        .json(&json!({"model": "openai:gpt-pg", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    assert!(!text.contains(PASSWORD), "the password came back: {text}");
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// Polls `status` of `served` with `key` until it is `want`, within `within`.
async fn until_status(served: &Served, key: &str, want: u16, within: Duration) -> Duration {
    let start = Instant::now();
    loop {
        let (status, body) = chat(served, key).await;
        if status == want {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < within,
            "still {status} after {within:?}, not {want}: {body}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn keys_list(served: &Served, db: &Cluster) -> Vec<Value> {
    serde_json::from_str(&genai(served, db, &["serve", "keys", "list", "--json"])).unwrap()
}

#[tokio::test]
async fn two_replicas_share_keys_revocations_budgets_and_usage() {
    let Some(db) = Cluster::start() else { return };
    let fake = FakeOpenAi::start(0, Behavior::text("Shared.")).unwrap();
    let a = replica(&db, &fake, false);
    let b = replica(&db, &fake, true);

    // Made on A's side (its own SQLite history is not where the key goes): both take it.
    let key = create(&a, &db, "team", &[]);
    assert_eq!(chat(&a, &key).await.0, 200);
    assert_eq!(chat(&b, &key).await.0, 200);
    assert_eq!(chat(&b, &key).await.0, 200);

    // Every replica's requests, summed wherever `genai usage --by key` runs.
    let mut team = Value::Null;
    wait_until("the three requests are stored", WAIT, || {
        let all: Value =
            serde_json::from_str(&genai(&b, &db, &["usage", "--by", "key", "--json"])).unwrap();
        team = all["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["key"] == "team")
            .cloned()
            .unwrap_or(Value::Null);
        team["requests"] == 3
    });
    assert_eq!(team["failed"], 0);
    assert!(team["cost"].as_f64().unwrap() > 0.0, "{team}");

    // Revoked on B's side: both refuse it within a second.
    genai(&b, &db, &["serve", "keys", "revoke", "team"]);
    let revoked = Instant::now();
    until_status(&a, &key, 401, Duration::from_secs(1)).await;
    until_status(&b, &key, 401, Duration::from_secs(1)).await;
    eprintln!(
        "both replicas refused the revoked key {:?} after the revocation",
        revoked.elapsed()
    );
    assert!(keys_list(&a, &db)[0]["revoked"].is_string());

    // A budget spent on A is refused on B once charged (in the database, not per replica).
    let capped = create(&b, &db, "capped", &["--budget", "0.5"]);
    assert_eq!(chat(&a, &capped).await.0, 200);
    wait_until("the database charged the request", WAIT, || {
        keys_list(&b, &db)
            .iter()
            .any(|k| k["name"] == "capped" && k["spent"].as_f64().unwrap() > 0.5)
    });
    let upstream = fake.requests().len();
    let (status, body) = chat(&b, &capped).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["error"]["type"], "insufficient_quota");
    assert_eq!(chat(&a, &capped).await.0, 429);
    assert_eq!(
        fake.requests().len(),
        upstream,
        "refused before any upstream call"
    );

    // The password is in no log, no config dump.
    let shown = genai(&a, &db, &["config", "show"]);
    assert!(
        shown.contains("postgres://genai:********@127.0.0.1"),
        "{shown}"
    );
    for log in [a.log(), b.log()] {
        assert!(!log.contains(PASSWORD), "{log}");
    }
    assert!(a
        .log()
        .contains("the gateway's keys and ledger are in the shared database"));
}

#[tokio::test]
async fn replicas_started_at_once_on_an_empty_database_both_come_up() {
    let Some(db) = Cluster::start() else { return };
    let fake = FakeOpenAi::start(0, Behavior::text("Both.")).unwrap();
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| replica(&db, &fake, false));
        let b = s.spawn(|| replica(&db, &fake, false));
        (a.join().unwrap(), b.join().unwrap())
    });
    let version = genai_postgres::SCHEMA_VERSION;
    assert_eq!(
        db.psql("SELECT version FROM genai_schema"),
        version.to_string()
    );
    let key = create(&a, &db, "both", &["--tpm", "100000"]);
    assert_eq!(
        db.psql("SELECT tpm FROM gateway_keys WHERE name = 'both'"),
        "100000"
    );
    assert_eq!(chat(&a, &key).await.0, 200);
    assert_eq!(chat(&b, &key).await.0, 200);
}

#[tokio::test]
async fn a_database_with_a_newer_schema_is_refused_naming_both_versions() {
    let Some(db) = Cluster::start() else { return };
    let fake = FakeOpenAi::start(0, Behavior::text("New.")).unwrap();
    let served = replica(&db, &fake, false);
    drop(served);
    db.psql("UPDATE genai_schema SET version = 99");
    let folders = replica_folders(&db);
    let o = folders
        .genai(&["serve", "keys", "list"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        stderr.contains(&format!(
            "version 99, newer than this genai knows (version {})",
            genai_postgres::SCHEMA_VERSION
        )),
        "{stderr}"
    );
    assert!(!stderr.contains(PASSWORD), "{stderr}");
    let o = folders
        .genai(&["serve", "--listen", "127.0.0.1:0", "--no-preload"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!o.status.success(), "a serve started on a newer schema");
    assert!(String::from_utf8_lossy(&o.stderr).contains("version 99"));
}

/// Folders whose config names `db`, with no serve running.
fn replica_folders(db: &Cluster) -> crate::support::cli::Folders {
    let dirs = crate::support::cli::Folders::new();
    dirs.write_config(&config(db));
    dirs
}
