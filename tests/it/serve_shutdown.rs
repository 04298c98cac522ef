//! `genai serve` stopped by SIGTERM on a real process: a stream in flight from a slow provider
//! finishes, a new connection is refused meanwhile, the request's row is stored, and it exits
//! 0; past `[serve] shutdown_grace` what remains (a stream, a request still waiting for the
//! provider) is cancelled, recorded `cancelled`, and it still exits 0.

use std::time::Duration;

use serde_json::json;

use crate::gateway::{client, CONFIG, UPSTREAM_KEY};
use crate::serve::Served;
use crate::support::fake_openai::{Behavior, FakeOpenAi, Mode};
use crate::support::poll::wait_until;

const WAIT: Duration = Duration::from_secs(30);

fn serve_with(fake: &FakeOpenAi, serve_section: &str) -> Served {
    let base_url = fake.base_url();
    Served::start_with(
        &format!("{CONFIG}\n[serve]\n{serve_section}\n"),
        &[
            ("OPENAI_BASE_URL", base_url.as_str()),
            ("OPENAI_API_KEY", UPSTREAM_KEY),
        ],
        &["--no-preload"],
    )
}

/// A provider that streams `words` one a piece, `every` apart.
fn slow(words: usize, every: Duration) -> Behavior {
    let reply: Vec<String> = (1..=words).map(|i| format!("w{i} ")).collect();
    Behavior {
        reply: reply.concat(),
        chunks: words,
        delay: every,
        ..Behavior::default()
    }
}

/// Starts a streamed chat request and returns once its first bytes came.
async fn stream_started(served: &Served) -> (reqwest::Response, Vec<u8>) {
    let mut r = client()
        .post(format!("{}/v1/chat/completions", served.http_base()))
        .bearer_auth(&served.token)
        .json(&json!({
            "model": "terse",
            "stream": true,
            "messages": [{"role": "user", "content": "Count."}]
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let first = r.chunk().await.unwrap().expect("the stream's first bytes");
    (r, first.to_vec())
}

/// The rest of a stream, until its end or its cut.
async fn rest(mut r: reqwest::Response, mut got: Vec<u8>) -> String {
    while let Ok(Some(c)) = r.chunk().await {
        got.extend_from_slice(&c);
    }
    String::from_utf8(got).unwrap()
}

/// The statuses of the stored gateway requests, oldest first.
fn stored_statuses(served: &Served) -> Vec<String> {
    let db = rusqlite::Connection::open(served.data_dir().join("history.db")).unwrap();
    let mut q = db
        .prepare("SELECT status FROM gateway_requests ORDER BY created_at, rowid")
        .unwrap();
    let rows = q.query_map([], |r| r.get::<_, String>(0)).unwrap();
    rows.map(Result::unwrap).collect()
}

#[tokio::test]
async fn sigterm_lets_a_stream_in_flight_finish_refuses_new_connections_and_exits_0() {
    let fake = FakeOpenAi::start(0, slow(8, Duration::from_millis(400))).unwrap();
    let mut served = serve_with(&fake, "shutdown_grace = 60");
    let (stream, first) = stream_started(&served).await;

    served.terminate();
    served.stderr_with("genai: stopping");
    let addr = served.http_base().replacen("http://", "", 1);
    wait_until("the listener refuses new connections", WAIT, || {
        std::net::TcpStream::connect(&addr)
            .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionRefused)
    });

    let text = rest(stream, first).await;
    assert!(text.trim_end().ends_with("data: [DONE]"), "{text}");
    for i in 1..=8 {
        assert!(text.contains(&format!("w{i} ")), "w{i} is missing: {text}");
    }
    let status = served.exit_within(WAIT);
    assert!(status.success(), "{status}");
    assert_eq!(stored_statuses(&served), ["200"]);
    assert!(!served.log().contains("cancelled"), "{}", served.log());
}

// Two threads: the waiting request goes on while the test waits for the provider to hold it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_grace_what_remains_is_cancelled_and_recorded_and_serve_exits_0() {
    let fake = FakeOpenAi::start(0, slow(60, Duration::from_millis(500))).unwrap();
    let mut served = serve_with(&fake, "shutdown_grace = 1");
    let (stream, first) = stream_started(&served).await;
    // A whole request the provider never answers.
    fake.set_default(Behavior::mode(Mode::Stall));
    let waiting = tokio::spawn({
        let url = format!("{}/v1/chat/completions", served.http_base());
        let token = served.token.clone();
        async move {
            let body = json!({"model": "terse", "messages": [{"role": "user", "content": "Hi."}]});
            client()
                .post(url)
                .bearer_auth(token)
                .json(&body)
                .send()
                .await
        }
    });
    wait_until("the provider holds the second request", WAIT, || {
        fake.requests().len() == 2
    });

    served.terminate();
    let text = rest(stream, first).await;
    assert!(!text.contains("[DONE]"), "the stream was not cut: {text}");
    let status = served.exit_within(WAIT);
    assert!(status.success(), "{status}");
    assert!(
        served
            .log()
            .contains("the requests still in flight were cancelled"),
        "{}",
        served.log()
    );
    assert_eq!(stored_statuses(&served), ["cancelled", "cancelled"]);
    assert!(
        waiting.await.unwrap().is_err(),
        "the waiting request got an answer"
    );
}
