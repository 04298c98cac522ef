//! The `bedrock` provider kind through `genai daemon`, against the fake Bedrock Runtime: a
//! streamed turn, a failed turn that stores nothing, and image parts checked before they are
//! sent.

use std::path::Path;
use std::time::Duration;

use fake_bedrock::{Accept, Behavior, FakeBedrock, Mode};
use rpc_client::{Daemon, DaemonConfig, Framing};
use serde_json::{json, Value};

use crate::provider_bedrock::{KEYS, MODEL, TURN};
use crate::support::messages::roles;
use crate::support::{fake_bedrock, rpc_client};

fn daemon(root: &Path, fake: &FakeBedrock) -> Daemon {
    let mut cfg = DaemonConfig::in_dir(root, Framing::Lines, "daemon")
        .env("HOME", root.to_str().unwrap())
        .env("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", &fake.url())
        .env("AWS_REGION", fake_bedrock::REGION)
        .env(KEYS[0].0, KEYS[0].1)
        .env(KEYS[1].0, KEYS[1].1);
    for (k, _) in std::env::vars() {
        if k.starts_with("AWS_") && !cfg.env.iter().any(|(n, _)| n == k.as_str()) {
            cfg = cfg.env(&k, "");
        }
    }
    Daemon::spawn(&cfg)
}

#[test]
fn daemon_streams_a_turn_a_failed_turn_stores_nothing_and_images_are_checked() {
    let root = tempfile::tempdir().unwrap();
    let fake = FakeBedrock::start(Accept {
        session_token: None,
    })
    .unwrap();
    let reply = "Streamed from Bedrock in pieces: 🚀 done.";
    fake.set_default(Behavior {
        reply: reply.into(),
        chunks: 5,
        ..Default::default()
    });
    let mut d = daemon(root.path(), &fake);
    d.initialize("bedrock-tests", true);
    let comps = d.call("ListComponents", json!({}));
    let kinds = comps["kinds"]["serviceProviders"].as_array().unwrap();
    let bedrock = kinds
        .iter()
        .find(|k| k["name"] == "bedrock")
        .expect("bedrock kind");
    assert_eq!(
        bedrock["formats"],
        json!(["bedrock-converse", "claude-messages"])
    );
    assert_eq!(bedrock["defaultFormat"], "bedrock-converse");

    let conv = d.call(
        "CreateConversation",
        json!({"serviceProvider": "bedrock", "model": MODEL}),
    );
    assert_eq!(conv["format"], "bedrock-converse", "{conv}");
    let cid = conv["conversationId"].as_str().unwrap().to_string();
    let turn = |d: &mut Daemon, text: &str| d.turn(&cid, text, TURN);
    let (turn_id, fin) = turn(&mut d, "Hello over the daemon");
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(fin["summary"], reply, "{fin}");
    assert_eq!(fin["finishReason"], "end_turn", "{fin}");
    let chunks = d.streamed(&turn_id).concat();
    assert_eq!(chunks, reply);
    assert_eq!(fake.last().action, "converse-stream");

    fake.push(Behavior {
        mode: Mode::CutAfter { after: 2 },
        chunks: 5,
        ..Default::default()
    });
    let (_, fin) = turn(&mut d, "This one breaks");
    assert_eq!(fin["isSuccess"], false, "{fin}");
    assert!(
        fin["summary"]
            .as_str()
            .unwrap_or("")
            .contains("ended before the reply was complete"),
        "{fin}"
    );
    let h = d.history(&cid);
    assert_eq!(h.len(), 2, "{h:?}");
    // The next turn sees the stored history only: user, assistant, and the new prompt.
    let (_, fin) = turn(&mut d, "Again");
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let body = fake.last().body;
    assert_eq!(roles(&body["messages"]), ["user", "assistant", "user"]);

    // Images: inline ones become Converse image blocks; by URL, or over Converse's 3.75 MB
    // per image, they are refused before anything is sent.
    let image = |d: &mut Daemon, part: Value| {
        let message = json!({"role": "user", "content": ["What is this?", part]});
        d.turn(&cid, message, TURN).1
    };
    let fin = image(
        &mut d,
        json!({"type": "image", "mediaType": "image/jpeg", "data": "/9j/4AAQSkZJRg=="}),
    );
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let body = fake.last().body;
    let last = body["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        last["content"],
        json!([{"text": "What is this?"}, {"image": {"format": "jpeg", "source": {"bytes": "/9j/4AAQSkZJRg=="}}}])
    );
    let sent = fake.requests().len();
    let fin = image(
        &mut d,
        json!({"type": "image", "url": "https://example.invalid/cat.png"}),
    );
    assert_eq!(fin["isSuccess"], false, "{fin}");
    assert!(fin["summary"].as_str().unwrap().contains("by URL"), "{fin}");
    let big = "A".repeat(5_100_000); // 3.8 MB once decoded
    let fin = image(
        &mut d,
        json!({"type": "image", "mediaType": "image/png", "data": big}),
    );
    assert_eq!(fin["isSuccess"], false, "{fin}");
    assert!(
        fin["summary"]
            .as_str()
            .unwrap()
            .contains("exceeds provider bedrock's limit of 3.6 MiB"),
        "{fin}"
    );
    assert_eq!(
        fake.requests().len(),
        sent,
        "a refused image reached the provider"
    );
    d.shutdown(Duration::from_secs(10));
}
