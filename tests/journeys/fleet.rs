//! A team's gateway as a fleet: a user whose config already has a cloud default (and a turn
//! on it that failed) adds a shared Postgres (`[store] url`) and Redis (`[serve] redis_url`),
//! makes two keys from the CLI before any serve runs, starts two `genai serve` replicas and
//! Debian's haproxy in front of them (health-checked on `/readyz`), and points curl at the
//! balancer. A key's budget is spent across both replicas and then refused; one replica is
//! killed with `kill -9` and the balancer keeps answering through the other; `genai usage
//! --by key` counts every request either replica answered; no password shows anywhere.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::home::{Home, Run};
use crate::support::fleet::{replica, Killed, Redis, REPLICA};
use crate::support::poll::wait_until;
use crate::support::postgres::{Cluster, PASSWORD};
use crate::support::prometheus::program;

const WAIT: Duration = Duration::from_secs(60);
const REDIS_PASSWORD: &str = "redis-journey-0123456789";

/// A Chat Completions request through `base` with `key`: curl's status line, headers and body.
fn chat(home: &Home, base: &str, key: &str) -> Run {
    home.sh(&format!(
        "curl -sS -i --max-time 60 -H 'Authorization: Bearer {key}' \
         -H 'Content-Type: application/json' \
         -d '{{\"model\":\"openai:gpt-journey\",\"messages\":[{{\"role\":\"user\",\"content\":\"hello fleet\"}}]}}' \
         {base}/v1/chat/completions"
    ))
}

fn status(run: &Run) -> u16 {
    let out = run.stdout();
    (out.lines().next())
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {out}{}", run.stderr()))
}

/// haproxy on a free port in front of `servers` (`HOST:PORT`), checking `/readyz` every
/// 200 ms; its base URL once it answers.
fn balancer(
    program: &std::path::Path,
    dir: &std::path::Path,
    servers: &[&str],
) -> (Killed, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let backends: String = servers
        .iter()
        .enumerate()
        .map(|(i, s)| format!("    server r{i} {s} check\n"))
        .collect();
    let config = dir.join("haproxy.cfg");
    std::fs::write(
        &config,
        format!(
            "global\n    maxconn 256\n\
             defaults\n    mode http\n    timeout connect 2s\n    timeout client 60s\n    timeout server 60s\n    retries 2\n    option redispatch\n\
             frontend fleet\n    bind 127.0.0.1:{port}\n    default_backend genai\n\
             backend genai\n    balance roundrobin\n    option httpchk GET /readyz\n    http-check expect status 200\n    default-server inter 200ms fall 1 rise 1\n{backends}"
        ),
    )
    .unwrap();
    let child = Command::new(program)
        .args(["-db", "-f"])
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    wait_until("haproxy answers /readyz", WAIT, || {
        Command::new("curl")
            .args(["-sf", "--max-time", "2", &format!("{base}/readyz")])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    (Killed(child), base)
}

/// `genai usage --by key --json`: the requests stored for `key`.
fn requests_of(home: &Home, key: &str) -> u64 {
    let out = home.run(&["usage", "--by", "key", "--json"]).ok().stdout();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["key"] == key)
        .map_or(0, |g| g["requests"].as_u64().unwrap())
}

#[test]
fn two_replicas_behind_haproxy_share_keys_budgets_and_usage_and_survive_a_kill() {
    let (Some(haproxy), Some(redis_server)) = (
        program("GENAI_TEST_HAPROXY", "haproxy"),
        program("GENAI_TEST_REDIS", "redis-server"),
    ) else {
        return;
    };
    let Some(db) = Cluster::start() else {
        return;
    };
    let redis = Redis::start(&redis_server, Some(REDIS_PASSWORD));
    let mut home = Home::new();
    let fake = home.cloud_default_after_a_failed_turn("From the fleet.");
    // Every token costs a dollar, so a request costs several and a $10 budget lasts a few.
    home.write_config(&format!(
        "[defaults]\nmodel = \"openai:gpt-journey\"\n\n\
         [pricing.\"openai:*\"]\ninput = 1000000.0\noutput = 1000000.0\n\n\
         [store]\nurl = \"{}\"\n\n[serve]\nredis_url = \"{}\"\n",
        db.url(),
        redis.url()
    ));

    // Keys made from the CLI against the shared database, before any serve runs.
    let made = home
        .run(&["serve", "keys", "create", "team", "--budget", "10"])
        .ok();
    let team = made.stdout().trim().to_string();
    let ops = home
        .run(&["serve", "keys", "create", "ops", "--rpm", "1000"])
        .ok()
        .stdout()
        .trim()
        .to_string();
    assert!(
        team.starts_with("gk-") && ops.starts_with("gk-"),
        "{}",
        made.stdout()
    );

    let start = || {
        let mut c = home.genai(REPLICA);
        c.stderr(Stdio::null());
        replica(c)
    };
    let (a, a_base) = start();
    let (_b, b_base) = start();
    let dir = tempfile::tempdir().unwrap();
    let servers: Vec<&str> = [&a_base, &b_base]
        .iter()
        .map(|b| b.trim_start_matches("http://"))
        .collect();
    let (lb, base) = balancer(&haproxy, dir.path(), &servers);

    // The budget, spent through the balancer (round robin: both replicas), runs out.
    let mut answered = 0;
    let refused = loop {
        let run = chat(&home, &base, &team);
        match status(&run) {
            200 => {
                assert!(run.stdout().contains("From the fleet."), "{}", run.stdout());
                answered += 1;
            }
            429 => break run,
            other => panic!("{other}: {}", run.stdout()),
        }
        assert!(
            answered < 10,
            "a $10 budget at several dollars a request never ran out"
        );
    };
    assert!(answered >= 2, "the budget lasted {answered} request(s)");
    assert!(
        refused.stdout().contains("insufficient_quota"),
        "{}",
        refused.stdout()
    );
    assert!(
        refused.stdout().contains("key team has spent"),
        "{}",
        refused.stdout()
    );
    // Straight to each replica: both refuse it now.
    for b in [&a_base, &b_base] {
        assert_eq!(status(&chat(&home, b, &team)), 429);
    }
    let expected = answered + 3;
    wait_until("the ledger has every request of key team", WAIT, || {
        requests_of(&home, "team") == expected
    });

    // A replica is killed; the balancer answers through the other.
    drop(a);
    for _ in 0..4 {
        let run = chat(&home, &base, &ops);
        assert_eq!(status(&run), 200, "{}", run.stdout());
    }
    wait_until("the ledger has key ops's requests", WAIT, || {
        requests_of(&home, "ops") == 4
    });
    assert_eq!(requests_of(&home, "team"), expected, "nothing lost");

    let table = home.run(&["usage", "--by", "key"]).ok().stdout();
    assert!(table.contains("team") && table.contains("ops"), "{table}");
    let shown = home.run(&["config", "show"]).ok().stdout();
    for secret in [PASSWORD, REDIS_PASSWORD, "sk-journey-cloud"] {
        assert!(!shown.contains(secret), "config show: {shown}");
        assert!(!table.contains(secret));
    }
    assert!(fake.requests().iter().all(|r| {
        let headers = format!("{:?}", r.headers);
        !headers.contains(&team) && !headers.contains(&ops)
    }));
    drop(lb);
}
