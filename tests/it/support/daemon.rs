//! A `genai daemon` on the fake OpenAI-compatible server (`fake_openai.rs`), as the daemon's
//! tests start it: its own folders, the built-in `openai` provider pointed at the fake, and the
//! checks several subjects share (streamed chunks, error kinds, message text).

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use super::fake_openai::{Behavior, FakeOpenAi, Mode};
use super::rpc_client::{Daemon, DaemonConfig, Framing};

/// The longest a turn against the local fake may take before the test fails.
pub const TURN: Duration = Duration::from_secs(15);

/// The longest a daemon may take to exit once asked to.
pub const EXIT: Duration = Duration::from_secs(10);

pub const DUMMY_KEY: &str = "sk-test-dummy-key";

pub const MODEL: &str = "gpt-4o-mini";

pub fn fake(behavior: Behavior) -> FakeOpenAi {
    FakeOpenAi::start(0, behavior).expect("start the fake OpenAI server")
}

pub fn error_behavior(status: u16, message: &str) -> Behavior {
    Behavior {
        mode: Mode::Error {
            status,
            message: message.to_string(),
            code: String::new(),
        },
        ..Behavior::default()
    }
}

/// A daemon config pointing the built-in `openai` provider at the fake.
pub fn config(root: &Path, framing: Framing, name: &str, fake: &FakeOpenAi) -> DaemonConfig {
    DaemonConfig::in_dir(root, framing, name)
        .env("OPENAI_BASE_URL", &fake.base_url())
        .env("OPENAI_API_KEY", DUMMY_KEY)
}

pub fn start(root: &Path, framing: Framing, fake: &FakeOpenAi) -> Daemon {
    Daemon::spawn(&config(root, framing, "daemon", fake))
}

pub fn initialize(d: &mut Daemon, streaming: bool) -> Value {
    d.initialize("daemon-tests", streaming)
}

/// A fake with `behavior`, and a daemon on it speaking `framing` in a folder of its own, not
/// initialized yet.
pub fn daemon_on(behavior: Behavior, framing: Framing) -> (FakeOpenAi, tempfile::TempDir, Daemon) {
    let fake = fake(behavior);
    let dir = tempfile::tempdir().unwrap();
    let d = start(dir.path(), framing, &fake);
    (fake, dir, d)
}

/// [`daemon_on`], initialized by a streaming client.
pub fn streaming_daemon_on(
    behavior: Behavior,
    framing: Framing,
) -> (FakeOpenAi, tempfile::TempDir, Daemon) {
    let (fake, dir, mut d) = daemon_on(behavior, framing);
    initialize(&mut d, true);
    (fake, dir, d)
}

/// [`streaming_daemon_on`] with NDJSON lines.
pub fn streaming_daemon(behavior: Behavior) -> (FakeOpenAi, tempfile::TempDir, Daemon) {
    streaming_daemon_on(behavior, Framing::Lines)
}

/// A conversation on the built-in `openai` provider; returns its `CreateConversation` result.
pub fn create_conversation(d: &mut Daemon) -> Value {
    d.call(
        "CreateConversation",
        json!({"serviceProvider": "openai", "model": MODEL}),
    )
}

/// The id of a new conversation on the built-in `openai` provider.
pub fn conversation_id(d: &mut Daemon) -> String {
    let conv = create_conversation(d);
    conv["conversationId"].as_str().unwrap().to_string()
}

/// The turn ids the daemon answered the requests `ids` with (`OnNewMessage` sent as requests).
pub fn turn_ids_of(d: &mut Daemon, ids: &[i64]) -> Vec<String> {
    ids.iter()
        .map(|id| {
            let r = d.wait_response(&json!(id), TURN);
            r["result"]["turnId"]
                .as_str()
                .unwrap_or_else(|| panic!("{r}"))
                .to_string()
        })
        .collect()
}

/// The text of a message's content (a string, or text parts).
pub fn text_of(message: &Value) -> String {
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.as_str().or_else(|| p["text"].as_str()))
            .collect(),
        other => panic!("unexpected content {other}"),
    }
}

/// The turn streamed at least one chunk, every chunk came before its one
/// final response, and the chunks make up `text`.
pub fn assert_streamed(d: &Daemon, turn_id: &str, text: &str) {
    let (chunks, finals) = d.turn_events(turn_id);
    assert_eq!(finals.len(), 1, "exactly one final response");
    assert!(!chunks.is_empty(), "no OnFeatureResponseChunk");
    assert!(
        chunks.iter().all(|(i, _)| *i < finals[0]),
        "a chunk came after the final response: {:?} vs {}",
        chunks,
        finals[0]
    );
    let joined: String = chunks.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(joined, text, "the chunks make up the summary");
}

pub fn assert_error_kind(error: &Value, code: i64, kind: &str) {
    assert_eq!(error["code"], code, "error code: {error}");
    assert_eq!(error["data"]["kind"], kind, "error kind: {error}");
}

pub fn slow_stream() -> Behavior {
    Behavior {
        reply: "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty".into(),
        chunks: 20,
        delay: Duration::from_millis(300),
        ..Behavior::default()
    }
}
