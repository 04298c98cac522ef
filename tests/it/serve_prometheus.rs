//! A real Prometheus (Debian's `prometheus`) scraping two `genai serve` replicas (two processes
//! on one config and one history, on two ports) with the metrics token: both targets are up
//! and a query of the request counter sums the requests both answered.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::gateway::UPSTREAM_KEY;
use crate::serve::Served;
use crate::serve_ops::chat;
use crate::support::fake_openai::{Behavior, FakeOpenAi};
use crate::support::fleet::{replica, Killed, REPLICA};
use crate::support::prometheus::program;

const WAIT: Duration = Duration::from_secs(90);
const METRICS_TOKEN: &str = "scraper-0123456789abcdef";

/// A free loopback port for Prometheus' own listener.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Polls Prometheus' API at `url` until `done` holds for its `data`; that data.
async fn poll_api(what: &str, url: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + WAIT;
    let mut last = Value::Null;
    while Instant::now() < deadline {
        if let Ok(r) = reqwest::get(url).await {
            if let Ok(v) = r.json::<Value>().await {
                if done(&v["data"]) {
                    return v["data"].clone();
                }
                last = v;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("timed out waiting until {what}; last answer: {last}");
}

#[tokio::test]
async fn a_real_prometheus_scrapes_two_replicas_and_sums_their_requests() {
    let Some(prometheus) = program("GENAI_TEST_PROMETHEUS", "prometheus") else {
        return;
    };
    let fake = FakeOpenAi::start(0, Behavior::text("Hello from upstream.")).unwrap();
    let base_url = fake.base_url();
    let config = format!(
        "{}\n[serve]\nmetrics_token = \"{METRICS_TOKEN}\"\n",
        crate::gateway::CONFIG
    );
    let a = Served::start_with(
        &config,
        &[
            ("OPENAI_BASE_URL", base_url.as_str()),
            ("OPENAI_API_KEY", UPSTREAM_KEY),
        ],
        &["--no-preload"],
    );
    let mut b = a.genai(REPLICA);
    b.envs([
        ("OPENAI_BASE_URL", base_url.as_str()),
        ("OPENAI_API_KEY", UPSTREAM_KEY),
    ]);
    let (_b, b_base) = replica(b);
    let a_base = a.http_base();
    for _ in 0..2 {
        assert_eq!(chat(&a_base, &a.token, "terse", false).await, 200);
    }
    for _ in 0..3 {
        assert_eq!(chat(&b_base, &a.token, "terse", false).await, 200);
    }

    let dir = tempfile::tempdir().unwrap();
    let targets: Vec<String> = [&a_base, &b_base]
        .iter()
        .map(|b| format!("\"{}\"", b.trim_start_matches("http://")))
        .collect();
    let config_file = dir.path().join("prometheus.yml");
    std::fs::write(
        &config_file,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
             scrape_configs:\n  - job_name: genai\n    authorization:\n      credentials: {METRICS_TOKEN}\n\
             \x20   static_configs:\n      - targets: [{}]\n",
            targets.join(", ")
        ),
    )
    .unwrap();
    let port = free_port();
    let _prometheus = Killed(
        Command::new(prometheus)
            .arg(format!("--config.file={}", config_file.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let api = format!("http://127.0.0.1:{port}/api/v1");
    poll_api("both replicas are up", &format!("{api}/targets"), |d| {
        let up = d["activeTargets"]
            .as_array()
            .map(|t| t.iter().filter(|t| t["health"] == "up").count());
        up == Some(2)
    })
    .await;
    let query =
        "sum(genai_gateway_requests_total{api=\"openai-chat\",model=\"terse\",status=\"2xx\"})";
    let url = reqwest::Url::parse_with_params(&format!("{api}/query"), [("query", query)]).unwrap();
    poll_api("the sum over both replicas is 5", url.as_str(), |d| {
        d["result"][0]["value"][1] == "5"
    })
    .await;
}
