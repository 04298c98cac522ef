//! A turn that fails leaves nothing behind: a conversation whose first turn failed is not kept,
//! never listed, and never the one `-c` continues, on the command line and in the daemon
//! (which still lets its client retry in it); the empty rows an older genai left are hidden.
//! Against the fake OpenAI server, run as a user would.

use std::path::Path;
use std::time::Duration;

use genai_core::store::Store;
use genai_protocol::listings::ConversationRecord;
use serde_json::{json, Value};

use crate::support::cli::{self, stderr, stdout, OpenAiCli};
use crate::support::fake_openai::{Behavior, FakeOpenAi, Mode};
use crate::support::rpc_client::{Daemon, DaemonConfig, Framing};

/// The longest a turn may take (a failing one retries three times with backoff first).
const TURN: Duration = Duration::from_secs(30);
const EXIT: Duration = Duration::from_secs(10);

/// The next model call fails with HTTP 500, every try of it (the first and three retries).
fn fail_next_call(fake: &FakeOpenAi) {
    for _ in 0..4 {
        fake.push(Behavior {
            mode: Mode::Error {
                status: 500,
                message: "upstream exploded".into(),
                code: "server_error".into(),
            },
            ..Default::default()
        });
    }
}

fn history(data: &Path) -> Store {
    Store::open(&data.join("history.db")).unwrap()
}

/// The text of each message of a recorded OpenAI request body.
fn texts(body: &Value) -> Vec<&str> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect()
}

#[test]
fn a_failed_first_turn_is_not_kept_and_c_goes_on_with_the_last_good_conversation() {
    let env = OpenAiCli::new();
    let o = env.run(&["ask", "-m", "openai:fast", "My name is Zed"], None);
    assert!(o.status.success(), "{}", stderr(&o));

    // A turn the provider fails (HTTP 500), and one refused before it is sent.
    fail_next_call(&env.fake);
    let o = env.run(
        &["ask", "--json", "-m", "openai:fast", "Tell me a joke"],
        None,
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let failed: Value = serde_json::from_slice(&o.stdout).unwrap();
    // The one object says how it ended, as the event stream's result does.
    assert_eq!(failed["status"], "error", "{failed}");
    assert_eq!(failed["exitCode"], 1, "{failed}");
    assert_eq!(failed["error"]["kind"], "providerError", "{failed}");
    let failed = failed["conversationId"].as_str().unwrap().to_string();
    let o = env.run(&["ask", "-m", "openai:fast", "-p", "temp=1", "hi"], None);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // An empty row as an older genai left it, newer than the rest.
    let store = history(env.dirs.data.path());
    let later = genai_core::store::now_ms() + 60_000;
    store
        .create_conversation(&ConversationRecord {
            id: "01OLDEMPTYROW0000000000000".into(),
            title: String::new(),
            feature: "assistant".into(),
            provider: "openai".into(),
            model_configuration: None,
            format: "openai-chat".into(),
            model: "fast".into(),
            parameters: Default::default(),
            created_at: later,
            updated_at: later,
            message_count: 0,
            tools: None,
            cwd: None,
            answered_by: None,
        })
        .unwrap();

    // The failed conversation is gone; the listings show the one with a turn only.
    assert!(store.conversation(&failed).unwrap().is_none());
    let list = env.run(&["sessions", "list", "--json"], None);
    assert_eq!(cli::message_counts(&list), [2]);
    let list = env.run(&["sessions", "list"], None);
    let shown = stdout(&list);
    assert_eq!(shown.lines().count(), 1, "{shown}");
    assert!(shown.contains("My name is Zed"), "{shown}");

    // -c goes on with the conversation that knows the name.
    let o = env.run(&["ask", "-c", "What is my name?"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        texts(&env.last_body()),
        [
            "My name is Zed",
            "Hello from the fake provider.",
            "What is my name?"
        ]
    );
    let list = env.run(&["sessions", "list", "--json"], None);
    assert_eq!(cli::message_counts(&list), [4]);
}

#[test]
fn the_daemon_keeps_a_failed_conversation_for_its_client_but_never_lists_or_keeps_it_empty() {
    let fake = FakeOpenAi::start(0, Behavior::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cfg = DaemonConfig::in_dir(dir.path(), Framing::Lines, "daemon")
        .env("OPENAI_BASE_URL", &fake.base_url())
        .env("OPENAI_API_KEY", "sk-test-dummy-key");
    let mut d = Daemon::spawn(&cfg);
    d.initialize("failed-turns", true);
    let new = |d: &mut Daemon| {
        d.create_conversation(json!({"serviceProvider": "openai", "model": "fast"}))
            .0
    };
    let listed = |d: &mut Daemon| -> Vec<String> {
        let r = d.call("ListConversations", json!({"pageSize": 100}));
        r["conversations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_string())
            .collect()
    };

    // The first turn fails: not listed, but its client may try again in it.
    let retried = new(&mut d);
    fail_next_call(&fake);
    let (_, fin) = d.turn(&retried, "My name is Zed", TURN);
    assert_eq!(fin["isSuccess"], false, "{fin}");
    assert!(listed(&mut d).is_empty());
    let (_, fin) = d.turn(&retried, "My name is Zed", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(listed(&mut d), std::slice::from_ref(&retried));

    // Removed by its client after a failed turn: gone from the history.
    let removed = new(&mut d);
    fail_next_call(&fake);
    let (_, fin) = d.turn(&removed, "hello?", TURN);
    assert_eq!(fin["isSuccess"], false, "{fin}");
    let r = d.call("RemoveConversation", json!({"conversationId": removed}));
    assert_eq!(r, json!({}));
    let e = d.call_err(
        "GetConversationHistory",
        json!({"conversationId": removed, "pageSize": 10}),
    );
    assert_eq!(e["data"]["kind"], "unknownConversation", "{e}");

    // Still open and empty when the daemon exits: not kept either.
    let left_open = new(&mut d);
    assert_eq!(listed(&mut d), std::slice::from_ref(&retried));
    assert!(d.shutdown(EXIT).success());
    let store = history(&cfg.data_dir);
    assert!(store.conversation(&left_open).unwrap().is_none());
    assert_eq!(
        store.conversation(&retried).unwrap().unwrap().message_count,
        2
    );
}
