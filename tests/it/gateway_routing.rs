//! `[serve.models.NAME]` with deployments, on a real `genai serve` in front of fake OpenAI
//! providers: weights spread a name's requests, least-busy sends to the idle deployment while
//! another holds a request open, a deployment that refuses connections or answers 500 is left
//! out and the same request (whole or streamed, before its first byte) is answered by another,
//! a 429's `Retry-After` is honoured over a shorter cooldown, a 400 is the client's and tried
//! nowhere else, every deployment down is a clear 502 then a 503 with `retry-after`, and a
//! deployment naming no agent stops the serve at start. Each answer names its deployment
//! (`x-genai-deployment`).

use std::time::Duration;

use serde_json::{json, Value};

use crate::serve::Served;
use crate::support::cli::Folders;
use crate::support::fake_openai::{Behavior, FakeOpenAi, Mode};
use crate::support::poll::wait_until;

const WAIT: Duration = Duration::from_secs(20);

/// A provider instance `name` on `url` (no `max_retries`: a routed try must not retry on its
/// own while another deployment can take it).
fn provider(name: &str, url: &str) -> String {
    format!(
        "[service_providers.{name}]\nkind = \"openai\"\nbase_url = \"{url}\"\napi_key = \"sk-{name}\"\n\n"
    )
}

/// A base URL nothing listens on (a port bound, then closed).
fn closed_url() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("http://127.0.0.1:{port}/v1")
}

fn error(status: u16) -> Behavior {
    Behavior::mode(Mode::Error {
        status,
        message: format!("upstream says {status}"),
        code: String::new(),
    })
}

async fn post(served: &Served, route: &str, body: &Value) -> reqwest::Response {
    reqwest::Client::builder()
        .timeout(WAIT)
        .build()
        .unwrap()
        .post(format!("{}{route}", served.http_base()))
        .bearer_auth(&served.token)
        .json(body)
        .send()
        .await
        .unwrap()
}

async fn chat(served: &Served, body: &Value) -> reqwest::Response {
    post(served, "/v1/chat/completions", body).await
}

fn ask(model: &str) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": "hi"}]})
}

fn header(r: &reqwest::Response, name: &str) -> Option<String> {
    r.headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_string())
}

#[tokio::test]
async fn weights_spread_a_names_requests_and_each_answer_names_its_deployment() {
    let heavy = FakeOpenAi::start(0, Behavior::text("Heavy.")).unwrap();
    let light = FakeOpenAi::start(0, Behavior::text("Light.")).unwrap();
    let config = provider("heavy", &heavy.base_url())
        + &provider("light", &light.base_url())
        + "[agents.big]\nprovider = \"heavy\"\nmodel = \"gpt-heavy\"\n\n\
           [serve.models.pool]\ndeployments = [{agent = \"big\", weight = 3}, {model = \"light:gpt-light\"}]\n";
    let served = Served::start_with(&config, &[], &[]);
    let (mut on_heavy, mut on_light) = (0, 0);
    for _ in 0..200 {
        let r = chat(&served, &ask("pool")).await;
        assert_eq!(r.status(), 200);
        let (deployment, by) = (
            header(&r, "x-genai-deployment"),
            header(&r, "x-genai-served-by"),
        );
        let v: Value = r.json().await.unwrap();
        let text = v["choices"][0]["message"]["content"].as_str().unwrap();
        match (deployment.as_deref(), by.as_deref(), text) {
            (Some("big"), Some("heavy:gpt-heavy"), "Heavy.") => on_heavy += 1,
            (Some("light:gpt-light"), Some("light:gpt-light"), "Light.") => on_light += 1,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(heavy.requests().len(), on_heavy);
    assert_eq!(light.requests().len(), on_light);
    // 150 and 50 expected; these bounds are over 6 standard deviations away.
    assert!(
        (110..=190).contains(&on_heavy),
        "{on_heavy} of 200 on weight 3"
    );
    eprintln!("weights 3:1 over 200 requests: {on_heavy} heavy, {on_light} light");
}

// Two workers: the held request goes on while the test waits for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn least_busy_sends_to_the_idle_deployment_while_another_holds_a_request_open() {
    let held = FakeOpenAi::start(0, Behavior::mode(Mode::Stall)).unwrap();
    let idle = FakeOpenAi::start(0, Behavior::text("Idle here.")).unwrap();
    let config = provider("held", &held.base_url())
        + &provider("idle", &idle.base_url())
        + "[serve.models.pool]\nstrategy = \"least-busy\"\n\
           deployments = [{model = \"held:gpt-held\"}, {model = \"idle:gpt-idle\"}]\n";
    let served = Served::start_with(&config, &[], &[]);
    let first = {
        let (url, token) = (served.http_base(), served.token.clone());
        tokio::spawn(async move {
            reqwest::Client::new()
                .post(format!("{url}/v1/chat/completions"))
                .bearer_auth(token)
                .json(&ask("pool"))
                .send()
                .await
        })
    };
    // Of two idle deployments the first listed takes the first request, and holds it.
    wait_until("the first deployment holds a request", WAIT, || {
        held.requests().len() == 1
    });
    for _ in 0..3 {
        let r = chat(&served, &ask("pool")).await;
        assert_eq!(r.status(), 200);
        assert_eq!(
            header(&r, "x-genai-deployment").as_deref(),
            Some("idle:gpt-idle")
        );
    }
    assert_eq!(idle.requests().len(), 3);
    assert_eq!(held.requests().len(), 1);
    first.abort();
}

#[tokio::test]
async fn a_refused_connection_and_a_500_are_left_out_and_the_same_request_is_answered_by_another() {
    let failing = FakeOpenAi::start(0, error(500)).unwrap();
    let good = FakeOpenAi::start(0, Behavior::reply("Good here.", 3)).unwrap();
    let config = provider("gone", &closed_url())
        + &provider("failing", &failing.base_url())
        + &provider("good", &good.base_url())
        + "[serve.models.pool]\nstrategy = \"least-busy\"\ncooldown = \"10m\"\n\
           deployments = [{model = \"gone:gpt-gone\"}, {model = \"failing:gpt-failing\"}, {model = \"good:gpt-good\"}]\n";
    let served = Served::start_with(&config, &[], &[]);

    // Streamed: the first two fail before any byte went out, the third answers the stream.
    let r = chat(
        &served,
        &json!({"model": "pool", "stream": true, "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        header(&r, "x-genai-deployment").as_deref(),
        Some("good:gpt-good")
    );
    let text = r.text().await.unwrap();
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    let said: String = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter_map(|c| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .map(String::from)
        })
        .collect();
    assert_eq!(said, "Good here.");
    // Tried once, not retried by its provider: another deployment was there.
    assert_eq!(failing.requests().len(), 1);
    assert_eq!(good.last().body["messages"][0]["content"], "hi");

    // Whole: the two that failed are cooling down, so the good one is asked at once.
    for _ in 0..2 {
        let r = chat(&served, &ask("pool")).await;
        assert_eq!(r.status(), 200);
        assert_eq!(
            header(&r, "x-genai-served-by").as_deref(),
            Some("good:gpt-good")
        );
    }
    assert_eq!(failing.requests().len(), 1);
    assert_eq!(good.requests().len(), 3);
}

#[tokio::test]
async fn a_429s_retry_after_is_honoured_over_a_shorter_cooldown() {
    let limited = FakeOpenAi::start(
        0,
        Behavior::mode(Mode::RateLimited {
            retry_after: "3600",
        }),
    )
    .unwrap();
    let other = FakeOpenAi::start(0, Behavior::text("Other here.")).unwrap();
    let config = provider("limited", &limited.base_url())
        + &provider("other", &other.base_url())
        + "[serve.models.pool]\nstrategy = \"least-busy\"\ncooldown = 0\n\
           deployments = [{model = \"limited:gpt-limited\"}, {model = \"other:gpt-other\"}]\n";
    let served = Served::start_with(&config, &[], &[]);
    for _ in 0..3 {
        let r = chat(&served, &ask("pool")).await;
        assert_eq!(r.status(), 200);
        assert_eq!(
            header(&r, "x-genai-deployment").as_deref(),
            Some("other:gpt-other")
        );
    }
    // Asked once: an hour's Retry-After keeps it out, though the cooldown is 0.
    assert_eq!(limited.requests().len(), 1);
    assert_eq!(other.requests().len(), 3);

    // With a cooldown of 0 a 500 leaves its deployment in: each request asks it again, and
    // with the other one out, the 500's error is the answer, naming what was tried.
    other.set_default(error(500));
    for n in 4..6 {
        let r = chat(&served, &ask("pool")).await;
        assert_eq!(r.status(), 502);
        let v: Value = r.json().await.unwrap();
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains("upstream says 500"), "{message}");
        assert!(
            message.contains("model `pool`: deployments tried: other:gpt-other"),
            "{message}"
        );
        assert_eq!(other.requests().len(), n);
    }
    assert_eq!(limited.requests().len(), 1);
}

#[tokio::test]
async fn a_400_is_tried_nowhere_else_and_every_deployment_down_is_a_502_then_a_503() {
    let refusing = FakeOpenAi::start(0, error(400)).unwrap();
    let fine = FakeOpenAi::start(0, Behavior::text("Fine.")).unwrap();
    let failing = FakeOpenAi::start(0, error(503)).unwrap();
    let config = provider("refusing", &refusing.base_url())
        + &provider("fine", &fine.base_url())
        + &provider("failing", &failing.base_url())
        + &provider("gone", &closed_url())
        + "[serve.models.picky]\nstrategy = \"least-busy\"\n\
           deployments = [{model = \"refusing:gpt-r\"}, {model = \"fine:gpt-f\"}]\n\n\
           [serve.models.down]\nstrategy = \"least-busy\"\n\
           deployments = [{model = \"failing:gpt-failing\"}, {model = \"gone:gpt-gone\"}]\n";
    let served = Served::start_with(&config, &[], &[]);

    // The client's fault: answered as the provider said, no other deployment asked...
    let r = chat(&served, &ask("picky")).await;
    assert_eq!(r.status(), 400);
    assert_eq!(fine.requests().len(), 0);
    // ... and not left out: after the other's turn, it is asked again.
    assert_eq!(chat(&served, &ask("picky")).await.status(), 200);
    assert_eq!(chat(&served, &ask("picky")).await.status(), 400);
    assert_eq!(refusing.requests().len(), 2);

    // Both down: the last failure, naming both deployments tried.
    let r = chat(&served, &ask("down")).await;
    assert_eq!(r.status(), 502);
    let v: Value = r.json().await.unwrap();
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("model `down`: deployments tried: "),
        "{message}"
    );
    assert!(
        message.contains("gone:gpt-gone") && message.contains("failing:gpt-failing"),
        "{message}"
    );
    // Tried first (least busy, ties in the order listed) while another could take the
    // request: its provider did not retry on its own.
    assert_eq!(failing.requests().len(), 1);
    // Then both cool down: refused at once, with when to come back, in each API's shape.
    let r = chat(&served, &ask("down")).await;
    assert_eq!(r.status(), 503);
    let wait: u64 = header(&r, "retry-after").unwrap().parse().unwrap();
    assert!((1..=30).contains(&wait), "{wait}");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "deployments_cooling_down");
    let r = post(
        &served,
        "/v1/messages",
        &json!({"model": "down", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(r.status(), 503);
    assert!(header(&r, "retry-after").is_some());
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["type"], "error");
    assert!(v["error"]["message"]
        .as_str()
        .unwrap()
        .contains("every deployment failed lately"));
    assert_eq!(failing.requests().len(), 1);
}

#[test]
fn a_deployment_naming_no_agent_stops_the_serve_at_start_naming_the_entry() {
    let dirs = Folders::new();
    dirs.write_config(
        "[serve.models.pool]\ndeployments = [{agent = \"nobody\"}, {model = \"openai:gpt-4o\"}]\n",
    );
    let o = dirs
        .genai(&["serve", "--listen", "127.0.0.1:0"])
        .env("OPENAI_API_KEY", "sk-start")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("serve.models.\"pool\": deployment `nobody`: no agent `nobody` in [agents]"),
        "{err}"
    );

    // A bad table is refused when the config is read, by every command.
    dirs.write_config("[serve.models.pool]\ndeployments = [{agent = \"a\", weight = 0}]\n");
    let o = dirs
        .genai(&["serve", "--listen", "127.0.0.1:0"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("serve.models.\"pool\": deployments[0]: weight 0"),
        "{err}"
    );
}
