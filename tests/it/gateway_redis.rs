//! The virtual keys' rate limits counted in a real Redis (Debian's `redis-server`), shared by
//! two `genai serve` replicas on one config and one history: a key's rpm and tpm are spent
//! across both, a Redis that goes away is answered at once (refused by default, let through
//! with `rate_limit_fail_open`) and counting resumes when it is back, and Redis' password
//! shows nowhere.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::gateway::{CONFIG, UPSTREAM_KEY};
use crate::serve::Served;
use crate::support::fake_openai::{Behavior, FakeOpenAi};
use crate::support::fleet::{replica, Redis, REPLICA};
use crate::support::prometheus::program;

const WAIT: Duration = Duration::from_secs(30);
const PASSWORD: &str = "redis-pass-0123456789abcdef";

/// A request's answer: status, retry-after, the error's code and message (if any).
#[derive(Debug)]
struct Answer {
    status: u16,
    retry_after: Option<u64>,
    code: String,
    message: String,
}

/// One chat completion on `base` with `key`; the client gives up after [`WAIT`], so a serve
/// that hangs fails the test.
async fn chat(base: &str, key: &str) -> Answer {
    let r = reqwest::Client::new()
        .post(format!("{base}/v1/chat/completions"))
        .timeout(WAIT)
        .bearer_auth(key)
        .json(&json!({"model": "terse", "messages": [{"role": "user", "content": "hello there"}]}))
        .send()
        .await
        .expect("the serve answers");
    let status = r.status().as_u16();
    let retry_after = r
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().parse().unwrap());
    let body: Value = r.json().await.unwrap();
    let text = body.to_string();
    assert!(!text.contains(PASSWORD), "Redis' password leaked: {text}");
    assert!(
        !text.contains(UPSTREAM_KEY),
        "the upstream key leaked: {text}"
    );
    Answer {
        status,
        retry_after,
        code: body["error"]["code"].as_str().unwrap_or_default().into(),
        message: body["error"]["message"].as_str().unwrap_or_default().into(),
    }
}

/// A serve on `fake` counting rates in `redis` (with these `[serve]` lines), and a replica of it.
fn fleet(
    fake: &FakeOpenAi,
    redis: &Redis,
    serve: &str,
) -> (Served, crate::support::fleet::Killed, String) {
    let base_url = fake.base_url();
    let vars = [
        ("OPENAI_BASE_URL", base_url.as_str()),
        ("OPENAI_API_KEY", UPSTREAM_KEY),
    ];
    let config = format!(
        "{CONFIG}\n[serve]\nredis_url = \"{}\"\n{serve}",
        redis.url()
    );
    let a = Served::start_with(&config, &vars, &["--no-preload"]);
    let mut b = a.genai(REPLICA);
    b.envs(vars);
    let (b, b_base) = replica(b);
    (a, b, b_base)
}

/// A new key with these options, made by the CLI on `served`'s folders.
fn create(served: &Served, name: &str, options: &[&str]) -> String {
    let mut args = vec!["serve", "keys", "create", name];
    args.extend_from_slice(options);
    let o = served
        .genai(&args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

#[tokio::test]
async fn a_keys_rpm_and_tpm_are_spent_across_two_replicas_through_redis() {
    let Some(program) = program("GENAI_TEST_REDIS", "redis-server") else {
        return;
    };
    let redis = Redis::start(&program, Some(PASSWORD));
    let fake = FakeOpenAi::start(0, Behavior::text("Hello from upstream.")).unwrap();
    let (a, _b, b_base) = fleet(&fake, &redis, "");
    let a_base = a.http_base();

    // Three requests a minute, spent on both replicas: the fourth is refused on either.
    let key = create(&a, "fleet", &["--rpm", "3"]);
    for base in [&a_base, &b_base, &a_base] {
        assert_eq!(chat(base, &key).await.status, 200);
    }
    for base in [&b_base, &a_base] {
        let refused = chat(base, &key).await;
        assert_eq!(refused.status, 429, "{refused:?}");
        assert_eq!(refused.code, "rate_limit_exceeded");
        assert!(
            refused.message.contains("3 requests per minute"),
            "{refused:?}"
        );
        let wait = refused.retry_after.expect("retry-after");
        assert!((1..=60).contains(&wait), "{wait}");
    }

    // Tokens: what a request on one replica used counts on the other. The tokens are added
    // once the answer is written, so the other replica refuses from then on.
    let key = create(&a, "tokens", &["--tpm", "1"]);
    assert_eq!(chat(&a_base, &key).await.status, 200);
    let deadline = Instant::now() + WAIT;
    let refused = loop {
        let answer = chat(&b_base, &key).await;
        if answer.status == 429 {
            break answer;
        }
        assert_eq!(answer.status, 200, "{answer:?}");
        assert!(Instant::now() < deadline, "replica B never saw A's tokens");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        refused
            .message
            .contains("1 tokens per minute (its tpm limit)"),
        "{refused:?}"
    );
    assert!(refused.retry_after.is_some());

    // A key without limits is never counted, and the serve token has none.
    let free = create(&a, "free", &[]);
    for _ in 0..5 {
        assert_eq!(chat(&b_base, &free).await.status, 200);
    }
    assert!(
        !a.log().contains(PASSWORD),
        "the serve's log shows Redis' password"
    );
}

#[tokio::test]
async fn without_redis_a_limited_key_is_refused_at_once_and_served_again_when_it_is_back() {
    let Some(program) = program("GENAI_TEST_REDIS", "redis-server") else {
        return;
    };
    let mut redis = Redis::start(&program, Some(PASSWORD));
    let fake = FakeOpenAi::start(0, Behavior::text("Hello from upstream.")).unwrap();
    let (a, _b, b_base) = fleet(&fake, &redis, "");
    let a_base = a.http_base();
    let limited = create(&a, "limited", &["--rpm", "100"]);
    let free = create(&a, "free", &[]);
    assert_eq!(chat(&a_base, &limited).await.status, 200);

    redis.stop();
    for base in [&a_base, &b_base] {
        let refused = chat(base, &limited).await;
        assert_eq!(refused.status, 503, "{refused:?}");
        assert_eq!(refused.code, "rate_limits_unavailable");
        let shown = format!("redis://127.0.0.1:{}/0", redis.port);
        assert!(refused.message.contains(&shown), "{refused:?}");
        assert!(
            refused.message.contains("rate_limit_fail_open"),
            "{refused:?}"
        );
        assert_eq!(refused.retry_after, Some(1));
    }
    assert_eq!(chat(&a_base, &free).await.status, 200, "no limit, no Redis");
    assert_eq!(chat(&a_base, &a.token).await.status, 200, "the serve token");

    redis.restart();
    let deadline = Instant::now() + WAIT;
    while chat(&b_base, &limited).await.status != 200 {
        assert!(
            Instant::now() < deadline,
            "Redis is back but the key stays refused"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(chat(&a_base, &limited).await.status, 200);
    assert!(
        !a.log().contains(PASSWORD),
        "the serve's log shows Redis' password"
    );
}

#[tokio::test]
async fn with_rate_limit_fail_open_a_limited_key_passes_uncounted_while_redis_is_away() {
    let Some(program) = program("GENAI_TEST_REDIS", "redis-server") else {
        return;
    };
    let mut redis = Redis::start(&program, None);
    let fake = FakeOpenAi::start(0, Behavior::text("Hello from upstream.")).unwrap();
    let (a, _b, b_base) = fleet(&fake, &redis, "rate_limit_fail_open = true\n");
    let key = create(&a, "open", &["--rpm", "1"]);
    assert_eq!(chat(&b_base, &key).await.status, 200);
    assert_eq!(
        chat(&a.http_base(), &key).await.status,
        429,
        "counted while Redis is up"
    );
    redis.stop();
    for _ in 0..3 {
        assert_eq!(
            chat(&a.http_base(), &key).await.status,
            200,
            "passes uncounted"
        );
    }
    let said = a.stderr_with("requests pass uncounted (rate_limit_fail_open)");
    assert!(said.contains(&format!(
        "cannot reach Redis at redis://127.0.0.1:{}/0",
        redis.port
    )));
}
