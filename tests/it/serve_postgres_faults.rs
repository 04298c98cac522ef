//! `genai serve` on Postgres when things change under it: `genai serve migrate` copies a SQLite
//! serve's keys and ledger (a second run copies nothing twice), and those keys then work
//! against Postgres; Postgres stopped under load gives fast 503s and `/readyz` says so, and
//! the same replica serves again once Postgres is back, without a restart; a replica started
//! while Postgres is away comes up not ready and migrates the database once it answers; a
//! replica killed
//! with `kill -9` while it streams loses no answered request's row or charge, and the other
//! replica goes on serving.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::serve::Served;
use crate::serve_postgres::{chat, create, genai, replica, UPSTREAM_KEY, WAIT};
use crate::support::fake_openai::{Behavior, FakeOpenAi};
use crate::support::poll::wait_until;
use crate::support::postgres::{Cluster, PASSWORD};

/// `genai serve migrate` from `from`'s history into `db`: its stderr.
fn migrate(from: &Served, db: &Cluster) -> String {
    let file = from.data_dir().join("history.db");
    let o = from
        .genai(&[
            "serve",
            "migrate",
            "--from",
            file.to_str().unwrap(),
            "--to",
            &db.url(),
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{stderr}");
    assert!(!stderr.contains(PASSWORD), "{stderr}");
    stderr
}

#[tokio::test]
async fn serve_migrate_copies_keys_and_ledger_once_and_the_keys_work_on_postgres() {
    let Some(db) = Cluster::start() else { return };
    let fake = FakeOpenAi::start(0, Behavior::text("Moved.")).unwrap();
    let base_url = fake.base_url();
    let mut sqlite = Served::start_with(
        "[defaults]\nmodel = \"openai:gpt-pg\"\n",
        &[
            ("OPENAI_BASE_URL", base_url.as_str()),
            ("OPENAI_API_KEY", UPSTREAM_KEY),
        ],
        &["--no-preload"],
    );
    let o = sqlite
        .genai(&["serve", "keys", "create", "old"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success());
    let key = String::from_utf8(o.stdout).unwrap().trim().to_string();
    let gone = sqlite
        .genai(&["serve", "keys", "create", "gone"])
        .output()
        .unwrap();
    assert!(gone.status.success());
    assert!(sqlite
        .genai(&["serve", "keys", "revoke", "gone"])
        .status()
        .unwrap()
        .success());
    for _ in 0..2 {
        assert_eq!(chat(&sqlite, &key).await.0, 200);
    }
    // Stopped, its rows are stored.
    sqlite.terminate();
    assert!(sqlite.exit_within(WAIT).success());

    let first = migrate(&sqlite, &db);
    assert!(
        first.contains("2 keys added, 0 there already, 2 gateway requests copied"),
        "{first}"
    );
    let again = migrate(&sqlite, &db);
    assert!(
        again.contains("0 keys added, 2 there already, 0 gateway requests copied"),
        "{again}"
    );
    assert_eq!(db.psql("SELECT COUNT(*) FROM gateway_requests"), "2");
    assert_eq!(
        db.psql("SELECT COUNT(*) FROM gateway_keys WHERE hash LIKE 'gk-%' OR hash = ''"),
        "0",
        "hashes only"
    );

    let pg = replica(&db, &fake, false);
    assert_eq!(
        chat(&pg, &key).await.0,
        200,
        "the copied key works on Postgres"
    );
    wait_until(
        "the third request is summed with the copied two",
        WAIT,
        || {
            let all: Value =
                serde_json::from_str(&genai(&pg, &db, &["usage", "--by", "key", "--json"]))
                    .unwrap();
            all["groups"][0]["key"] == "old" && all["groups"][0]["requests"] == 3
        },
    );
    let list: Vec<Value> =
        serde_json::from_str(&genai(&pg, &db, &["serve", "keys", "list", "--json"])).unwrap();
    let gone = list.iter().find(|k| k["name"] == "gone").unwrap();
    assert!(
        gone["revoked"].is_string(),
        "its revocation came along: {gone}"
    );
}

async fn readyz(served: &Served) -> u16 {
    reqwest::Client::builder()
        .timeout(WAIT)
        .build()
        .unwrap()
        .get(format!("{}/readyz", served.http_base()))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn a_replica_started_while_postgres_is_away_comes_up_and_migrates_once_it_answers() {
    let Some(db) = Cluster::start() else { return };
    db.halt();
    let fake = FakeOpenAi::start(0, Behavior::text("Late but there.")).unwrap();
    // An empty database that is away: the serve starts, says so, and is not ready.
    let served = replica(&db, &fake, false);
    let said = served.stderr_with("cannot be reached yet");
    assert!(said.contains("get 503 and /readyz says so"), "{said}");
    assert!(!said.contains(PASSWORD), "{said}");
    assert_eq!(readyz(&served).await, 503);

    // Back: the first query migrates it, and the same process serves keys.
    db.resume();
    let deadline = Instant::now() + WAIT;
    while readyz(&served).await != 200 {
        assert!(
            Instant::now() < deadline,
            "not ready {WAIT:?} after Postgres came back"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let version = db.psql("SELECT version FROM genai_schema");
    assert_eq!(version, genai_postgres::SCHEMA_VERSION.to_string());
    let key = create(&served, &db, "late", &[]);
    assert_eq!(chat(&served, &key).await.0, 200);
}

#[tokio::test]
async fn postgres_stopped_under_load_gives_fast_503s_and_the_replica_serves_again() {
    let Some(db) = Cluster::start() else { return };
    let fake = FakeOpenAi::start(0, Behavior::text("Steady.")).unwrap();
    let served = replica(&db, &fake, false);
    let key = create(&served, &db, "steady", &[]);
    assert_eq!(readyz(&served).await, 200);

    // Load: eight clients asking in a loop while Postgres goes away.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut load = Vec::new();
    for _ in 0..8 {
        let (base, key, stop) = (served.http_base(), key.clone(), stop.clone());
        load.push(tokio::spawn(async move {
            let client = reqwest::Client::builder().timeout(WAIT).build().unwrap();
            let mut seen = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let r = client
                    .post(format!("{base}/v1/chat/completions"))
                    .bearer_auth(&key)
                    .json(&serde_json::json!({"model": "openai:gpt-pg", "messages": [{"role": "user", "content": "hi"}]}))
                    .send()
                    .await
                    .expect("an answer, never a hang");
                seen.push(r.status().as_u16());
            }
            seen
        }));
    }
    db.halt();
    // Each refused request answers at once: the client's 20 s timeout would fail the loop.
    let (status, body) = chat(&served, &key).await;
    assert_eq!(status, 503, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("shared store ([store] url) does not answer"),
        "{message}"
    );
    assert_eq!(readyz(&served).await, 503);

    db.resume();
    let back = Instant::now();
    loop {
        let (status, _) = chat(&served, &key).await;
        if status == 200 {
            break;
        }
        assert_eq!(status, 503);
        assert!(
            back.elapsed() < WAIT,
            "not serving again after Postgres came back"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(readyz(&served).await, 200);
    // The pool and its failures are in /metrics.
    let metrics = reqwest::Client::new()
        .get(format!("{}/metrics", served.http_base()))
        .bearer_auth(&served.token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let sample = |series: &str| crate::support::prometheus::sample(&metrics, series);
    assert_eq!(
        sample("genai_database_pool_connections{state=\"max\"}"),
        Some(16.0),
        "{metrics}"
    );
    assert!(sample("genai_database_pool_connections{state=\"idle\"}").is_some());
    assert!(
        sample("genai_database_errors_total").unwrap() >= 1.0,
        "{metrics}"
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut seen = Vec::new();
    for l in load {
        seen.extend(l.await.unwrap());
    }
    assert!(seen.iter().all(|s| matches!(s, 200 | 503)), "{seen:?}");
    assert!(seen.contains(&503) && seen.contains(&200), "{seen:?}");
    assert!(!served.log().contains(PASSWORD));
}

#[tokio::test]
async fn a_replica_killed_mid_stream_loses_no_answered_row_and_spend_stays_its_rows_sum() {
    let Some(db) = Cluster::start() else { return };
    let fake = FakeOpenAi::start(0, Behavior::text("Served.")).unwrap();
    let mut a = replica(&db, &fake, false);
    let b = replica(&db, &fake, false);
    let key = create(&a, &db, "fleet", &[]);

    // A stream on A that takes its time: its first piece comes, the rest is still on its way.
    let mut slow = Behavior::reply("one two three four five six seven eight", 8);
    slow.delay = Duration::from_millis(300);
    fake.push(slow);
    let streaming = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", a.http_base()))
        .bearer_auth(&key)
        .json(
            &serde_json::json!({"model": "openai:gpt-pg", "stream": true,
            "messages": [{"role": "user", "content": "count slowly"}]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(streaming.status(), 200);
    let mut stream = streaming.bytes_stream();
    let first = futures::StreamExt::next(&mut stream)
        .await
        .unwrap()
        .unwrap();
    assert!(!first.is_empty());

    // Requests answered on both replicas meanwhile; A is killed right after its last answer.
    let mut answered = 0;
    for _ in 0..6 {
        for served in [&b, &a] {
            let (status, body) = chat(served, &key).await;
            assert_eq!(status, 200, "{body}");
            answered += 1;
        }
    }
    a.kill();
    // The stream is cut, not finished.
    let mut rest = Vec::new();
    while let Some(piece) = futures::StreamExt::next(&mut stream).await {
        match piece {
            Ok(bytes) => rest.extend_from_slice(&bytes),
            Err(_) => break,
        }
    }
    assert!(!String::from_utf8_lossy(&rest).contains("[DONE]"));

    // B goes on serving.
    let (status, body) = chat(&b, &key).await;
    assert_eq!(status, 200, "{body}");
    answered += 1;

    // Every answered request has its row, none is there twice, the killed stream has none;
    // what the key spent is the sum of its rows' costs.
    let rows = db
        .psql("SELECT COUNT(*) FROM gateway_requests WHERE key_name = 'fleet' AND status = '200'");
    assert_eq!(rows.trim(), answered.to_string());
    let all = db.psql("SELECT COUNT(*) FROM gateway_requests WHERE key_name = 'fleet'");
    assert_eq!(all.trim(), answered.to_string());
    let consistent = db.psql(
        "SELECT k.spent = (SELECT SUM(cost) FROM gateway_requests WHERE key_name = 'fleet') \
         AND k.spent > 0 FROM gateway_keys k WHERE k.name = 'fleet'",
    );
    assert_eq!(consistent.trim(), "t");
    let usage = genai(&b, &db, &["usage", "--by", "key"]);
    assert!(usage.contains("fleet"), "{usage}");
}
