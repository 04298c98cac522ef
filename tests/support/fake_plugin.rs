//! A fake plugin module on loopback, for tests only: the service of the module documentation
//! (seed 002). It serves a manifest at `/.well-known/ai-plugin.json` and answers
//! `POST /ai-functions {"method", "params": "<JSON string>"}` with scripted answers per method;
//! `POST /confirmations/...` and `POST /collection/...` are recorded and answered with a text.
//!
//! With a key set, every route but the manifest demands `X-API-KEY` (401 otherwise), as a
//! `service_api_key` module does. Every request is recorded with its headers and body. The
//! generic HTTP/1.1 pieces are in `http1.rs`.

#![allow(dead_code)]

#[path = "http1.rs"]
mod http1;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::BufReader;
use tokio::net::{TcpListener, TcpStream};

/// One scripted answer.
#[derive(Clone, Debug)]
pub struct Answer {
    pub status: u16,
    pub body: String,
    /// Wait this long before answering (to test timeouts).
    pub delay: Duration,
}

impl Answer {
    pub fn json(body: Value) -> Answer {
        Answer {
            status: 200,
            body: body.to_string(),
            delay: Duration::ZERO,
        }
    }

    pub fn text(text: &str) -> Answer {
        Answer::json(json!({ "text": text }))
    }
}

/// One request as received.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct State {
    manifest: Value,
    key: Option<String>,
    answers: HashMap<String, VecDeque<Answer>>,
    requests: Vec<Recorded>,
}

pub struct FakePlugin {
    pub port: u16,
    state: Arc<Mutex<State>>,
    _thread: std::thread::JoinHandle<()>,
}

/// The manifest of the module documentation, with its endpoint on `port`.
pub fn documented_manifest(port: u16, auth: &str) -> Value {
    json!({
        "schema_version": "v1",
        "name_for_human": "ActInTech Events",
        "name_for_model": "actintech",
        "description_for_human": "Access ActInTech events and manage your participation.",
        "description_for_model": "Help the user with ActInTech events.",
        "auth": {"type": auth},
        "api": {
            "type": "functions",
            "functions": [
                {"method": "getEvents()", "name": "getEvents", "description": "Retrieve the list of upcoming events."},
                {"method": "eventParticipation({ eventId: \"ID of the event\", participation: \"YES or NO\" })", "name": "eventParticipation", "description": "Update the participation status to an event."}
            ],
            "endpoint": format!("http://127.0.0.1:{port}/ai-functions")
        },
        "logo_url": format!("http://127.0.0.1:{port}/logo.png"),
        "contact_email": "events@example.com",
        "legal_info_url": "https://example.com/legal"
    })
}

impl FakePlugin {
    /// Starts the documented module; `key` makes it a `service_api_key` module.
    pub fn start(key: Option<&str>) -> FakePlugin {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let auth = if key.is_some() {
            "service_api_key"
        } else {
            "none"
        };
        let state = Arc::new(Mutex::new(State {
            manifest: documented_manifest(port, auth),
            key: key.map(str::to_string),
            ..State::default()
        }));
        let shared = Arc::clone(&state);
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = TcpListener::from_std(listener).unwrap();
                while let Ok((socket, _)) = listener.accept().await {
                    tokio::spawn(serve(socket, Arc::clone(&shared)));
                }
            });
        });
        FakePlugin {
            port,
            state,
            _thread: thread,
        }
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn set_manifest(&self, manifest: Value) {
        self.state.lock().unwrap().manifest = manifest;
    }

    /// Queues an answer for the next call of `method`; with none queued a call gets
    /// `{"text": "METHOD done"}`.
    pub fn push(&self, method: &str, answer: Answer) {
        self.state
            .lock()
            .unwrap()
            .answers
            .entry(method.to_string())
            .or_default()
            .push_back(answer);
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().unwrap().requests.clone()
    }
}

async fn serve(socket: TcpStream, state: Arc<Mutex<State>>) {
    let (rd, mut wr) = socket.into_split();
    let mut rd = BufReader::new(rd);
    let Ok(req) = http1::read_request(&mut rd, &mut wr).await else {
        return;
    };
    let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let recorded = Recorded {
        method: req.method.clone(),
        path: req.target.clone(),
        headers: req.headers.clone(),
        body: body.clone(),
    };
    let answer = {
        let mut s = state.lock().unwrap();
        s.requests.push(recorded.clone());
        let key_ok = match &s.key {
            None => true,
            Some(k) => recorded.header("x-api-key") == Some(k.as_str()),
        };
        match (req.method.as_str(), req.target.as_str()) {
            ("GET", "/.well-known/ai-plugin.json") => Answer::json(s.manifest.clone()),
            _ if !key_ok => Answer {
                status: 401,
                body: json!({"error": "invalid API key"}).to_string(),
                delay: Duration::ZERO,
            },
            ("POST", "/ai-functions") => {
                let method = body["method"].as_str().unwrap_or("").to_string();
                s.answers
                    .get_mut(&method)
                    .and_then(VecDeque::pop_front)
                    .unwrap_or_else(|| Answer::text(&format!("{method} done")))
            }
            ("POST", p) if p.starts_with("/confirmations/") => {
                Answer::text(&format!("confirmed {}", &p["/confirmations/".len()..]))
            }
            ("POST", p) if p.starts_with("/collection/") => Answer::text("collected"),
            _ => Answer {
                status: 404,
                body: json!({"error": "no such route"}).to_string(),
                delay: Duration::ZERO,
            },
        }
    };
    if !answer.delay.is_zero() {
        tokio::time::sleep(answer.delay).await;
    }
    let _ = http1::send_response(
        &mut wr,
        answer.status,
        "application/json",
        &[],
        answer.body.as_bytes(),
    )
    .await;
}
