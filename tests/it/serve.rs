//! `genai serve` driven by a WebSocket client (jsonrpsee's): refused without the token or from
//! a foreign origin, two clients on one conversation (one creates it, the other follows and
//! drives it), the limits (connections, message size, turns in flight per connection),
//! `genai daemon --connect` relaying stdio clients to one shared daemon, and a client that
//! stops reading dropped while the server goes on. What it tells a user at start and the chat
//! page are in `serve_web.rs`; [`Served`] starts a serve for every test of it.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jsonrpsee::core::client::{ClientT, Subscription, SubscriptionClientT};
use jsonrpsee::core::traits::ToRpcParams;
use jsonrpsee::ws_client::{HeaderMap, HeaderValue, WsClient, WsClientBuilder};
use serde_json::{json, Value};

use crate::support::cli::Folders;
use crate::support::fake_openai::{Behavior, FakeOpenAi};

pub(crate) const WAIT: Duration = Duration::from_secs(20);

/// A JSON object as a request's params.
pub struct Obj(pub Value);

impl ToRpcParams for Obj {
    fn to_rpc_params(self) -> Result<Option<Box<serde_json::value::RawValue>>, serde_json::Error> {
        serde_json::value::to_raw_value(&self.0).map(Some)
    }
}

/// A running `genai serve` on a free loopback port, killed when dropped.
pub struct Served {
    child: Child,
    pub url: String,
    pub token: String,
    /// The lines of its stderr so far (also copied to the test's stderr).
    stderr: Arc<Mutex<Vec<String>>>,
    dirs: Folders,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    /// The serve's address as an HTTP base URL (`http://HOST:PORT`), for the gateway's routes.
    pub fn http_base(&self) -> String {
        self.url.replacen("ws://", "http://", 1)
    }

    pub fn start(fake: &FakeOpenAi, extra: &[&str]) -> Served {
        let base_url = fake.base_url();
        Served::start_with(
            "[defaults]\nmodel = \"openai:gpt-ws\"\n",
            &[
                ("OPENAI_BASE_URL", base_url.as_str()),
                ("OPENAI_API_KEY", "sk-test-ws"),
            ],
            extra,
        )
    }

    /// With this config and these environment variables.
    pub fn start_with(config: &str, vars: &[(&str, &str)], extra: &[&str]) -> Served {
        let dirs = Folders::new();
        dirs.write_config(config);
        let env = |c: &mut Command| {
            c.envs(vars.iter().copied());
        };
        let mut c = dirs.genai(&["serve", "--print-token"]);
        env(&mut c);
        let o = c.stdin(Stdio::null()).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let token = String::from_utf8(o.stdout).unwrap().trim().to_string();
        let mut args = vec!["serve", "--listen", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        let mut c = dirs.genai(&args);
        env(&mut c);
        let mut child = c
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let seen = stderr.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                eprintln!("{line}");
                seen.lock().unwrap().push(line);
            }
        });
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
            .to_string();
        Served {
            child,
            url,
            token,
            stderr,
            dirs,
        }
    }

    /// `genai args` on this serve's folders (its config and history), as another process.
    pub fn genai(&self, args: &[&str]) -> Command {
        self.dirs.genai(args)
    }

    /// Rewrites its config file, as a user editing it while the serve runs.
    pub fn write_config(&self, text: &str) {
        self.dirs.write_config(text);
    }

    /// Its data folder (the history).
    pub fn data_dir(&self) -> &std::path::Path {
        self.dirs.data.path()
    }

    /// Sends it SIGTERM (what `genai serve --stop`, `kill` and systemd send).
    pub fn terminate(&self) {
        // SAFETY: kill(2) with a child's pid and a signal number has no memory effects.
        assert_eq!(
            unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) },
            0
        );
    }

    /// Kills it with SIGKILL (`kill -9`: no grace, nothing flushed) and waits for it.
    pub fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// Its exit status, once it has exited within `within`.
    pub fn exit_within(&mut self, within: Duration) -> std::process::ExitStatus {
        let mut status = None;
        crate::support::poll::wait_until("genai serve exits", within, || {
            status = self.child.try_wait().unwrap();
            status.is_some()
        });
        status.unwrap()
    }

    /// Every line of its stderr so far.
    /// Its stderr but the start's line that hands the user the page's address with the token
    /// (the one place the token is meant to be shown): what must never hold a secret.
    pub fn log(&self) -> String {
        let lines = self.stderr.lock().unwrap();
        let shown = lines
            .iter()
            .filter(|l| !l.starts_with("genai: open the chat page at "));
        shown.cloned().collect::<Vec<_>>().join("\n")
    }

    /// Its stderr once a line containing `needle` has come, within the deadline.
    pub fn stderr_with(&self, needle: &str) -> String {
        crate::support::poll::wait_until(&format!("genai serve says {needle:?}"), WAIT, || {
            self.stderr
                .lock()
                .unwrap()
                .iter()
                .any(|l| l.contains(needle))
        });
        self.stderr.lock().unwrap().join("\n")
    }

    pub async fn client_with(
        &self,
        headers: HeaderMap,
    ) -> Result<WsClient, jsonrpsee::core::ClientError> {
        WsClientBuilder::default()
            .set_headers(headers)
            .request_timeout(WAIT)
            .build(&self.url)
            .await
    }

    pub async fn client(&self) -> WsClient {
        let mut h = HeaderMap::new();
        h.insert(
            "Authorization",
            HeaderValue::from_str(&format!("Bearer {}", self.token)).unwrap(),
        );
        self.client_with(h)
            .await
            .expect("a client with the token connects")
    }
}

pub async fn call(c: &WsClient, method: &str, params: Value) -> Value {
    c.request::<Value, _>(method, Obj(params))
        .await
        .unwrap_or_else(|e| panic!("{method} failed: {e}"))
}

pub async fn subscribe(c: &WsClient, params: Value) -> Subscription<Value> {
    c.subscribe::<Value, _>("Subscribe", Obj(params), "Unsubscribe")
        .await
        .expect("Subscribe")
}

/// The next event matching `pred`, within the deadline.
pub async fn next_event(sub: &mut Subscription<Value>, pred: impl Fn(&Value) -> bool) -> Value {
    tokio::time::timeout(WAIT, async {
        loop {
            let e = sub
                .next()
                .await
                .expect("the subscription ended")
                .expect("an event");
            if pred(&e) {
                return e;
            }
        }
    })
    .await
    .expect("timed out waiting for an event")
}

pub fn is_final(turn: &str) -> impl Fn(&Value) -> bool + '_ {
    move |e| {
        e["method"] == "OnFeatureResponse"
            && e["params"]["turnId"] == turn
            && e["params"]["final"] == true
    }
}

/// The head of the server's answer to a WebSocket upgrade offering `protocols`, as a browser
/// on `origin` sends it.
fn raw_upgrade(served: &Served, origin: &str, protocols: &str) -> String {
    use std::io::{Read, Write};
    let addr = served.url.trim_start_matches("ws://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    write!(
        s,
        "GET / HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
         Origin: {origin}\r\nSec-WebSocket-Protocol: {protocols}\r\n\r\n"
    )
    .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && s.read(&mut byte).unwrap() == 1 {
        head.push(byte[0]);
    }
    String::from_utf8_lossy(&head).into_owned()
}

#[tokio::test]
async fn without_the_token_or_from_a_foreign_origin_a_client_is_refused() {
    let fake = FakeOpenAi::start(0, Behavior::reply("hi", 1)).unwrap();
    let served = Served::start(&fake, &[]);
    let refused = served.client_with(HeaderMap::new()).await;
    assert!(refused.is_err(), "connected without a token");
    assert!(format!("{:?}", refused.err()).contains("401"));
    let mut wrong = HeaderMap::new();
    wrong.insert("Authorization", HeaderValue::from_static("Bearer 0000"));
    assert!(served.client_with(wrong).await.is_err());
    // The token as a browser sends it (a subprotocol), from a foreign origin, then its own.
    let mut browser = HeaderMap::new();
    browser.insert(
        "Sec-WebSocket-Protocol",
        HeaderValue::from_str(&format!("genai, bearer.{}", served.token)).unwrap(),
    );
    browser.insert("Origin", HeaderValue::from_static("https://evil.example"));
    let foreign = served.client_with(browser.clone()).await;
    assert!(format!("{:?}", foreign.err()).contains("403"));
    // The page's own origin with the subprotocol token: switched, the subprotocol chosen.
    let own = served.url.replace("ws://", "http://");
    let answer = raw_upgrade(&served, &own, &format!("genai, bearer.{}", served.token));
    assert!(answer.starts_with("HTTP/1.1 101"), "{answer}");
    assert!(
        answer
            .to_ascii_lowercase()
            .contains("sec-websocket-protocol: genai\r\n"),
        "{answer}"
    );
    let answer = raw_upgrade(&served, &own, "genai, bearer.0000");
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    let mut page = HeaderMap::new();
    page.insert("Origin", HeaderValue::from_str(&own).unwrap());
    page.insert(
        "Authorization",
        HeaderValue::from_str(&format!("Bearer {}", served.token)).unwrap(),
    );
    let c = served
        .client_with(page)
        .await
        .expect("the page's own origin connects");
    let comps = call(&c, "ListComponents", json!({})).await;
    assert!(comps["serviceProviders"].is_array(), "{comps}");
    assert!(fake.requests().is_empty());
}

#[tokio::test]
async fn a_second_client_follows_and_drives_the_first_clients_conversation() {
    let fake = FakeOpenAi::start(0, Behavior::reply("shared answer", 3)).unwrap();
    let served = Served::start(&fake, &[]);
    let a = served.client().await;
    let mut a_events = subscribe(&a, json!({})).await;
    let conv = call(&a, "CreateConversation", json!({})).await;
    let cid = conv["conversationId"].as_str().unwrap().to_string();

    let b = served.client().await;
    let mut b_events = subscribe(&b, json!({"conversationId": cid})).await;
    let turn = call(
        &b,
        "OnNewMessage",
        json!({"conversationId": cid, "message": "from b"}),
    )
    .await;
    let turn_id = turn["turnId"].as_str().unwrap().to_string();

    // Both see the turn stream and end: A as the conversation's client, B as its follower.
    let chunk = next_event(&mut b_events, |e| e["method"] == "OnFeatureResponseChunk").await;
    assert_eq!(chunk["params"]["conversationId"], cid.as_str());
    let b_final = next_event(&mut b_events, is_final(&turn_id)).await;
    let a_final = next_event(&mut a_events, is_final(&turn_id)).await;
    assert_eq!(b_final["params"]["summary"], "shared answer", "{b_final}");
    assert_eq!(a_final["params"]["summary"], "shared answer");

    // A drives next; B sees that turn too, and the history has both.
    let turn = call(
        &a,
        "OnNewMessage",
        json!({"conversationId": cid, "message": "from a"}),
    )
    .await;
    let turn_id = turn["turnId"].as_str().unwrap().to_string();
    next_event(&mut b_events, is_final(&turn_id)).await;
    let history = call(
        &b,
        "GetConversationHistory",
        json!({"conversationId": cid, "pageSize": 10}),
    )
    .await;
    let texts = history["messages"].to_string();
    assert!(
        texts.contains("from a") && texts.contains("from b"),
        "{texts}"
    );
    // Following a conversation that does not exist is refused.
    let err = b
        .subscribe::<Value, _>(
            "Subscribe",
            Obj(json!({"conversationId": "nope"})),
            "Unsubscribe",
        )
        .await;
    assert!(err.is_err());
}

#[tokio::test]
async fn connections_message_size_and_turns_in_flight_are_limited() {
    let fake = FakeOpenAi::start(0, Behavior::reply("ok", 1)).unwrap();
    let served = Served::start(
        &fake,
        &[
            "--max-connections",
            "2",
            "--max-message-bytes",
            "4096",
            "--max-turns-per-connection",
            "1",
        ],
    );
    let a = served.client().await;
    let b = served.client().await;
    // A third connection is refused while two are open.
    let mut h = HeaderMap::new();
    h.insert(
        "Authorization",
        HeaderValue::from_str(&format!("Bearer {}", served.token)).unwrap(),
    );
    assert!(
        served.client_with(h).await.is_err(),
        "a third connection was accepted"
    );

    let conv = call(&a, "CreateConversation", json!({})).await;
    let cid = conv["conversationId"].as_str().unwrap().to_string();
    // Too big a message.
    let big = "x".repeat(8000);
    let err = a
        .request::<Value, _>(
            "OnNewMessage",
            Obj(json!({"conversationId": cid, "message": big})),
        )
        .await;
    assert!(
        err.is_err(),
        "an 8000-byte message passed a 4096-byte limit"
    );

    // One turn in flight per connection: the second is refused until the first ends.
    fake.push(Behavior {
        delay: Duration::from_millis(300),
        ..Behavior::reply("slow", 2)
    });
    let mut events = subscribe(&b, json!({"conversationId": cid})).await;
    let first = call(
        &b,
        "OnNewMessage",
        json!({"conversationId": cid, "message": "one"}),
    )
    .await;
    let second = b
        .request::<Value, _>(
            "OnNewMessage",
            Obj(json!({"conversationId": cid, "message": "two"})),
        )
        .await;
    let text = format!(
        "{:?}",
        second.expect_err("a second turn in flight was accepted")
    );
    assert!(text.contains("too many turns"), "{text}");
    let turn = first["turnId"].as_str().unwrap().to_string();
    next_event(&mut events, is_final(&turn)).await;
    call(
        &b,
        "OnNewMessage",
        json!({"conversationId": cid, "message": "three"}),
    )
    .await;
}

#[test]
fn genai_daemon_connect_relays_stdio_clients_to_one_shared_daemon() {
    use crate::support::rpc_client::{Daemon, DaemonConfig, Framing};
    let fake = FakeOpenAi::start(0, Behavior::reply("relayed", 2)).unwrap();
    let served = Served::start(&fake, &[]);
    let root = tempfile::tempdir().unwrap();
    let bridge = |name: &str| {
        let cfg = DaemonConfig::in_dir(root.path(), Framing::ContentLength, name)
            .env("GENAI_SERVE_TOKEN", &served.token);
        Daemon::spawn_command(&cfg, &["daemon", "--connect", &served.url])
    };
    let mut first = bridge("first");
    first.call(
        "Initialize",
        json!({"clientInfo": {"name": "test"}, "capabilities": {"streaming": true}}),
    );
    let conv = first.call("CreateConversation", json!({}));
    let cid = conv["conversationId"].as_str().unwrap().to_string();
    let turn = first.call(
        "OnNewMessage",
        json!({"conversationId": cid, "message": "over the bridge"}),
    );
    let chunk = first.wait_notification(|m| m["method"] == "OnFeatureResponseChunk", WAIT);
    assert_eq!(chunk["params"]["conversationId"], cid.as_str());
    let done = first.wait_final(turn["turnId"].as_str().unwrap(), WAIT);
    assert_eq!(done["params"]["summary"], "relayed", "{done}");
    // Errors come back as the daemon's.
    let err = first.call_err(
        "GetConversationHistory",
        json!({"conversationId": "nope", "pageSize": 5}),
    );
    assert_eq!(err["data"]["kind"], "unknownConversation", "{err}");
    // Shutdown ends this client only: another one sees the conversation in the shared daemon.
    first.call("Shutdown", json!({}));
    first.wait_exit(WAIT);
    let mut second = bridge("second");
    let history = second.call(
        "GetConversationHistory",
        json!({"conversationId": cid, "pageSize": 10}),
    );
    assert!(
        history["messages"].to_string().contains("over the bridge"),
        "{history}"
    );
}

#[test]
fn a_client_that_stops_reading_is_dropped_and_the_server_goes_on() {
    use std::io::{Read, Write};
    // A long reply in many small chunks: far more than the socket buffers hold.
    let reply = "0123456789".repeat(400_000);
    let fake = FakeOpenAi::start(0, Behavior::reply(&reply, 20_000)).unwrap();
    let served = Served::start(&fake, &["--max-buffered-events", "8"]);
    let addr = served.url.trim_start_matches("ws://").to_string();
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        s,
        "GET / HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
         Authorization: Bearer {}\r\n\r\n",
        served.token
    )
    .unwrap();
    // Client frames are masked (RFC 6455); a zero mask leaves the text as it is.
    let mut w = s.try_clone().unwrap();
    let mut send = |text: String| {
        let mut frame = vec![0x81u8];
        match text.len() {
            n if n < 126 => frame.push(0x80 | n as u8),
            n => {
                frame.push(0x80 | 126);
                frame.extend_from_slice(&(n as u16).to_be_bytes());
            }
        }
        frame.extend_from_slice(&[0, 0, 0, 0]);
        frame.extend_from_slice(text.as_bytes());
        w.write_all(&frame).unwrap();
    };
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "Subscribe", "params": {}}).to_string());
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "CreateConversation", "params": {}})
            .to_string(),
    );
    // The conversation id is in the answer; read only until it shows.
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    s.set_read_timeout(Some(WAIT)).unwrap();
    let cid = loop {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "the server closed before answering");
        seen.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&seen);
        if let Some(at) = text.find("\"conversationId\":\"") {
            let rest = &text[at + 18..];
            if let Some(end) = rest.find('"') {
                break rest[..end].to_string();
            }
        }
    };
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "OnNewMessage", "params": {"conversationId": cid, "message": "talk"}}).to_string());
    // Read nothing until the whole turn is in the history (another client asks), then read
    // what is left: the server must have closed the socket (end of stream), not kept
    // buffering thousands of events for us.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let other = rt.block_on(served.client());
    crate::support::poll::wait_until("the turn is stored", WAIT, || {
        let h = rt.block_on(call(
            &other,
            "GetConversationHistory",
            json!({"conversationId": cid, "pageSize": 10}),
        ));
        h["messages"].as_array().is_some_and(|m| m.len() == 2)
    });
    let started = std::time::Instant::now();
    let closed = loop {
        match s.read(&mut buf) {
            Ok(0) => break true,
            Ok(_) => continue,
            Err(_) => break false, // the read timed out: still open
        }
    };
    assert!(
        closed,
        "the server kept a client that did not read ({:?})",
        started.elapsed()
    );
    // Others are served.
    let comps = rt.block_on(call(&other, "ListComponents", json!({})));
    assert!(comps["serviceProviders"].is_array());
}
