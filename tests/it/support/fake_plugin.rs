//! A fake plugin module on loopback, for tests only: the service of the module documentation
//! (seed 002). It serves a manifest at `/.well-known/ai-plugin.json` and answers
//! `POST /ai-functions {"method", "params": "<JSON string>"}` with scripted answers per method;
//! `POST /confirmations/...` and `POST /collection/...` are recorded and answered with a text.
//!
//! With a key set, every route but the manifest demands `X-API-KEY` (401 otherwise), as a
//! `service_api_key` module does. Every request is recorded with its headers and body. The
//! HTTP/1.1 server is `server.rs`.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{json, Value};

use super::server::{Exchange, FakeServer, RecordedRequest, Wire};

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

/// A running fake plugin module; dropping it stops it. The server's own methods (requests,
/// port) are reached through it.
pub struct FakePlugin {
    pub port: u16,
    server: FakeServer<Plugin>,
}

impl std::ops::Deref for FakePlugin {
    type Target = FakeServer<Plugin>;

    fn deref(&self) -> &FakeServer<Plugin> {
        &self.server
    }
}

/// The plugin module protocol, with the module's manifest and scripted answers.
pub struct Plugin {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    manifest: Value,
    answers: HashMap<String, VecDeque<Answer>>,
}

impl Plugin {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
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
        let plugin = Plugin {
            state: Mutex::new(State::default()),
        };
        let server = FakeServer::listen(0, plugin, ()).expect("start the fake plugin module");
        let auth = if key.is_some() {
            "service_api_key"
        } else {
            "none"
        };
        let fake = FakePlugin {
            port: server.port(),
            server,
        };
        fake.set_manifest(documented_manifest(fake.port, auth));
        fake.expect_key(key);
        fake
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The `[plugins.NAME]` section of a genai config that enables this module as `name`.
    pub fn enabled_as(&self, name: &str) -> String {
        format!(
            "[plugins.{name}]\nurl = \"{}\"\nenabled = true\n",
            self.base_url()
        )
    }

    pub fn set_manifest(&self, manifest: Value) {
        self.wire().lock().manifest = manifest;
    }

    /// Queues an answer for the next call of `method`; with none queued a call gets
    /// `{"text": "METHOD done"}`.
    pub fn push(&self, method: &str, answer: Answer) {
        self.wire()
            .lock()
            .answers
            .entry(method.to_string())
            .or_default()
            .push_back(answer);
    }
}

impl Wire for Plugin {
    type Behavior = ();
    type Record = RecordedRequest;
    const NAME: &'static str = "plugin";

    fn inspect(&self, r: &RecordedRequest, _: Option<&str>) -> (RecordedRequest, bool) {
        (r.clone(), false)
    }

    async fn answer(ex: Exchange<Self>) {
        let answer = route(&ex);
        if !answer.delay.is_zero() {
            tokio::time::sleep(answer.delay).await;
        }
        ex.respond(
            answer.status,
            "application/json",
            &[],
            answer.body.as_bytes(),
        )
        .await
    }
}

/// The answer to one request: the manifest, a refusal, or a function's scripted answer.
fn route(ex: &Exchange<Plugin>) -> Answer {
    let (req, body) = (&ex.request, &ex.request.body);
    let key_ok = match &ex.expected_key {
        None => true,
        Some(k) => req.header("x-api-key") == Some(k.as_str()),
    };
    let mut s = ex.wire().lock();
    match (req.method.as_str(), req.path.as_str()) {
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
}
