//! `genai serve`'s operator routes on a real process: `/healthz` and `/readyz` answer without
//! a token and open nothing else, `/readyz` fails while the history's schema is not this
//! genai's and recovers; `/metrics` counts the gateway's requests (by API, model, key name and
//! status; errors, tokens, the first token's time) and passes `promtool check metrics`; it
//! takes the serve token or its own, and is served alone without a token at
//! `[serve] metrics_address`. Shutdown is in `serve_shutdown.rs`, Prometheus scraping two
//! replicas in `serve_prometheus.rs`.

use serde_json::json;

use crate::gateway::{client, serve, CONFIG, UPSTREAM_KEY};
use crate::serve::Served;
use crate::support::fake_openai::{Behavior, FakeOpenAi, Mode};
use crate::support::prometheus::{check_with_promtool, program, sample};

/// GET `path` on `base` with an optional bearer token: status and body.
pub(crate) async fn get(base: &str, path: &str, token: Option<&str>) -> (u16, String) {
    let mut r = client().get(format!("{base}{path}"));
    if let Some(t) = token {
        r = r.bearer_auth(t);
    }
    let r = r.send().await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

/// A whole chat request of `model` with `token`: its status.
pub(crate) async fn chat(base: &str, token: &str, model: &str, stream: bool) -> u16 {
    let r = client()
        .post(format!("{base}/v1/chat/completions"))
        .bearer_auth(token)
        .json(&json!({
            "model": model,
            "stream": stream,
            "messages": [{"role": "user", "content": "Say hi."}]
        }))
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    assert!(!text.contains(UPSTREAM_KEY), "{text}");
    status
}

#[tokio::test]
async fn healthz_and_readyz_need_no_token_open_nothing_else_and_readyz_follows_the_schema() {
    let fake = FakeOpenAi::start(0, Behavior::text("hi")).unwrap();
    let served = serve(&fake, &[]);
    let base = served.http_base();
    assert_eq!(get(&base, "/healthz", None).await, (200, "ok\n".into()));
    assert_eq!(get(&base, "/readyz", None).await, (200, "ready\n".into()));
    // No token opens the gateway, the metrics or the WebSocket for being on these routes.
    assert_eq!(get(&base, "/v1/models", None).await.0, 401);
    assert_eq!(get(&base, "/metrics", None).await.0, 401);
    assert_eq!(get(&base, "/metrics", Some("not-the-token")).await.0, 401);
    let r = client()
        .post(format!("{base}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 405);

    // Another genai moved the history's schema on (a newer replica migrated it): not ready,
    // saying why, while alive; ready again once the schema is this genai's.
    let db = served.data_dir().join("history.db");
    let other = rusqlite::Connection::open(&db).unwrap();
    let version: i64 = other
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    other
        .pragma_update(None, "user_version", version + 1)
        .unwrap();
    let (status, why) = get(&base, "/readyz", None).await;
    assert_eq!(status, 503, "{why}");
    assert!(
        why.contains(&format!("schema is version {}", version + 1)),
        "{why}"
    );
    assert_eq!(get(&base, "/healthz", None).await.0, 200);
    other.pragma_update(None, "user_version", version).unwrap();
    assert_eq!(get(&base, "/readyz", None).await.0, 200);
}

#[tokio::test]
async fn metrics_count_the_gateways_requests_by_api_model_key_and_status_and_pass_promtool() {
    let fake = FakeOpenAi::start(0, Behavior::text("Hello from upstream.")).unwrap();
    let served = serve(&fake, &[]);
    let base = served.http_base();
    for _ in 0..2 {
        assert_eq!(chat(&base, &served.token, "terse", false).await, 200);
    }
    assert_eq!(chat(&base, &served.token, "terse", true).await, 200);
    fake.push(Behavior::mode(Mode::Error {
        status: 404,
        message: "no such model upstream".into(),
        code: String::new(),
    }));
    let failed = chat(&base, &served.token, "terse", false).await;
    assert!(failed >= 500, "{failed}");
    assert_eq!(
        chat(&base, &served.token, "no-such-agent", false).await,
        404
    );

    let (status, text) = get(&base, "/metrics", Some(&served.token)).await;
    assert_eq!(status, 200, "{text}");
    assert!(!text.contains(&served.token) && !text.contains(UPSTREAM_KEY));
    let of = "api=\"openai-chat\",model=\"terse\",key=\"serve-token\"";
    let at =
        |series: String| sample(&text, &series).unwrap_or_else(|| panic!("no {series}:\n{text}"));
    assert_eq!(
        at(format!(
            "genai_gateway_requests_total{{{of},status=\"2xx\"}}"
        )),
        3.0
    );
    assert_eq!(
        at(format!(
            "genai_gateway_requests_total{{{of},status=\"5xx\"}}"
        )),
        1.0
    );
    assert_eq!(
        at(format!(
            "genai_gateway_errors_total{{{of},code=\"{failed}\"}}"
        )),
        1.0
    );
    // A model that does not resolve is no label of its own.
    let unresolved = "api=\"openai-chat\",model=\"\",key=\"serve-token\"";
    assert_eq!(
        at(format!(
            "genai_gateway_requests_total{{{unresolved},status=\"4xx\"}}"
        )),
        1.0
    );
    assert!(!text.contains("no-such-agent"), "{text}");
    assert!(at(format!("genai_gateway_input_tokens_total{{{of}}}")) > 0.0);
    assert!(at(format!("genai_gateway_output_tokens_total{{{of}}}")) > 0.0);
    let timed = "api=\"openai-chat\",model=\"terse\"";
    assert_eq!(
        at(format!(
            "genai_gateway_request_duration_seconds_count{{{timed}}}"
        )),
        4.0
    );
    assert_eq!(
        at(format!(
            "genai_gateway_time_to_first_token_seconds_count{{{timed}}}"
        )),
        1.0
    );
    assert_eq!(
        at("genai_gateway_requests_in_flight{api=\"openai-chat\"}".into()),
        0.0
    );

    if let Some(promtool) = program("GENAI_TEST_PROMTOOL", "promtool") {
        check_with_promtool(&promtool, &text);
    }
}

#[tokio::test]
async fn metrics_take_their_own_token_or_are_served_alone_at_the_metrics_address() {
    let fake = FakeOpenAi::start(0, Behavior::text("hi")).unwrap();
    let metrics_token = "metrics-only-0123456789abcdef";
    let config = format!(
        "{CONFIG}\n[serve]\nmetrics_token = \"{metrics_token}\"\nmetrics_address = \"127.0.0.1:0\"\n"
    );
    let base_url = fake.base_url();
    let served = Served::start_with(
        &config,
        &[
            ("OPENAI_BASE_URL", base_url.as_str()),
            ("OPENAI_API_KEY", UPSTREAM_KEY),
        ],
        &[],
    );
    let base = served.http_base();
    assert_eq!(get(&base, "/metrics", Some(metrics_token)).await.0, 200);
    assert_eq!(get(&base, "/metrics", Some(&served.token)).await.0, 200);
    assert_eq!(get(&base, "/metrics", None).await.0, 401);
    // The metrics token is for the metrics only.
    assert_eq!(get(&base, "/v1/models", Some(metrics_token)).await.0, 401);
    assert_eq!(chat(&base, metrics_token, "terse", false).await, 401);

    let said = served.stderr_with("genai: metrics at ");
    let alone = said
        .lines()
        .find_map(|l| l.strip_prefix("genai: metrics at "))
        .and_then(|l| l.strip_suffix("/metrics (no token)"))
        .unwrap_or_else(|| panic!("{said}"))
        .to_string();
    let (status, text) = get(&alone, "/metrics", None).await;
    assert_eq!(status, 200);
    assert!(text.contains("genai_build_info{version="), "{text}");
    assert_eq!(get(&alone, "/readyz", None).await.0, 200);
    assert_eq!(get(&alone, "/v1/models", Some(&served.token)).await.0, 404);
    assert!(!served.log().contains(metrics_token));
}

#[test]
fn a_short_metrics_token_or_a_bad_metrics_address_is_refused_at_start_saying_what_to_write() {
    for (setting, says) in [
        ("metrics_token = \"short\"", "at least 16 characters"),
        ("metrics_address = \"nowhere\"", "serve.metrics_address"),
        ("shutdown_grace = -1", "serve.shutdown_grace"),
    ] {
        let dirs = crate::support::cli::Folders::new();
        dirs.write_config(&format!("[serve]\n{setting}\n"));
        let o = dirs
            .genai(&["serve", "--listen", "127.0.0.1:0", "--no-preload"])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && err.contains(says),
            "{setting}: {err}"
        );
    }
}
