//! `genai serve`'s gateway against clients that misbehave at the connection level: a client
//! trickling its request's head is closed at the read timeout and one trickling its body gets
//! OpenAI's 408, thousands of connections opened and left idle leave the gateway answering a
//! new client, and past `--max-open-connections` the oldest connections are closed while a new
//! client is still served. Every wait is on an event with a deadline; the timeouts themselves
//! are set short on the command line so that the events come soon.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{json, Value};

use crate::serve::Served;
use crate::support::fake_openai::{Behavior, FakeOpenAi};

const WAIT: Duration = Duration::from_secs(20);

fn serve(fake: &FakeOpenAi, extra: &[&str]) -> Served {
    Served::start_with(
        "[defaults]\nmodel = \"openai:gpt-hostile\"\n",
        &[
            ("OPENAI_BASE_URL", fake.base_url().as_str()),
            ("OPENAI_API_KEY", "sk-hostile-upstream"),
        ],
        extra,
    )
}

fn addr(served: &Served) -> String {
    served
        .url
        .trim_start_matches("ws://")
        .trim_end_matches('/')
        .to_string()
}

/// One whole chat request, as a client that behaves sends it; its status and body.
async fn chat(served: &Served) -> (u16, Value) {
    let r = reqwest::Client::builder()
        .timeout(WAIT)
        .build()
        .unwrap()
        .post(format!("http://{}/v1/chat/completions", addr(served)))
        .bearer_auth(&served.token)
        .json(&json!({"model": "openai:gpt-hostile", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap())
}

/// A connection that has written `bytes` and then nothing.
fn stalled(served: &Served, bytes: &[u8]) -> TcpStream {
    let mut s = TcpStream::connect(addr(served)).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    s.write_all(bytes).unwrap();
    s
}

/// What the server sends on `s` until it closes it (a read error, such as a reset, is a close
/// too); fails when it is still open at the deadline.
fn until_closed(s: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                panic!("the server kept the connection open past {WAIT:?}")
            }
            Err(_) => break,
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

#[tokio::test]
async fn a_client_trickling_its_head_is_closed_one_trickling_its_body_gets_408_and_others_are_served(
) {
    let fake = FakeOpenAi::start(0, Behavior::text("still here")).unwrap();
    let served = serve(&fake, &["--read-timeout-secs", "1"]);
    let mut head = stalled(
        &served,
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: genai\r\nContent-Ty",
    );
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: genai\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nContent-Length: 500\r\n\r\n{{\"model\": \"openai:gpt-hostile\",",
        served.token
    );
    let mut body = stalled(&served, request.as_bytes());

    let (status, v) = chat(&served).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["choices"][0]["message"]["content"], "still here");

    let (h, b) =
        tokio::task::spawn_blocking(move || (until_closed(&mut head), until_closed(&mut body)))
            .await
            .unwrap();
    assert!(
        !h.contains("200 OK"),
        "a request whose head never came was answered: {h}"
    );
    assert!(b.starts_with("HTTP/1.1 408"), "{b}");
    let error: Value = serde_json::from_str(b.split("\r\n\r\n").nth(1).unwrap_or_default())
        .unwrap_or_else(|e| panic!("not OpenAI's error shape ({e}): {b}"));
    assert_eq!(error["error"]["type"], "invalid_request_error", "{error}");
    assert_eq!(
        fake.requests().len(),
        1,
        "only the whole request went upstream"
    );

    let (status, _) = chat(&served).await;
    assert_eq!(status, 200, "the gateway still serves after closing both");
}

#[tokio::test]
async fn thousands_of_idle_connections_leave_the_gateway_answering_a_new_client() {
    const IDLE: usize = 3000;
    let fake = FakeOpenAi::start(0, Behavior::text("served")).unwrap();
    let served = serve(&fake, &[]);
    let idle: Vec<TcpStream> = (0..IDLE)
        .map(|_| TcpStream::connect(addr(&served)).unwrap())
        .collect();
    // A request on the last of them: the server has accepted all of them by then.
    let mut last = TcpStream::connect(addr(&served)).unwrap();
    last.set_read_timeout(Some(WAIT)).unwrap();
    write!(
        last,
        "GET /v1/models HTTP/1.1\r\nHost: genai\r\nAuthorization: Bearer {}\r\n\r\n",
        served.token
    )
    .unwrap();
    let mut buf = [0u8; 64];
    let n = last.read(&mut buf).unwrap();
    assert!(
        buf[..n].starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&buf[..n])
    );

    let (status, v) = chat(&served).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["choices"][0]["message"]["content"], "served");
    assert_eq!(idle.len(), IDLE);
}

#[tokio::test]
async fn past_the_open_connection_cap_the_oldest_are_closed_and_a_new_client_is_served() {
    let fake = FakeOpenAi::start(0, Behavior::text("served")).unwrap();
    let served = serve(
        &fake,
        &[
            "--max-open-connections",
            "100",
            "--read-timeout-secs",
            "600",
        ],
    );
    let mut idle: Vec<TcpStream> = (0..150)
        .map(|_| {
            let s = TcpStream::connect(addr(&served)).unwrap();
            s.set_read_timeout(Some(WAIT)).unwrap();
            s
        })
        .collect();

    let (status, v) = chat(&served).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["choices"][0]["message"]["content"], "served");

    // The first ones accepted were the oldest: closed, though their read timeout is far off.
    let first = idle.remove(0);
    let got = tokio::task::spawn_blocking(move || {
        let mut first = first;
        until_closed(&mut first)
    })
    .await
    .unwrap();
    assert_eq!(got, "", "an idle connection is closed without an answer");
}
