//! The `anthropic` provider kind through `genai daemon`, against the fake Anthropic server: a
//! turn streamed in chunks then the final with its usage, image parts sent as base64 and URL
//! sources, every fault failing its turn with the history left as it was, and
//! `SetModelParameter` checking Claude's parameters.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use fake_anthropic::{Behavior, FakeAnthropic, Mode, KEY};
use rpc_client::{Daemon, DaemonConfig, Framing};

use crate::provider_anthropic::{error, fake, EXIT, MODEL, TURN};
use crate::support::{fake_anthropic, rpc_client};

/// A fake with `behavior`, and a daemon on it in a folder of its own, initialized by a
/// streaming client.
fn start_daemon(behavior: Behavior) -> (FakeAnthropic, tempfile::TempDir, Daemon) {
    let fake = fake(behavior);
    let dir = tempfile::tempdir().unwrap();
    let mut d = Daemon::spawn(
        &DaemonConfig::in_dir(dir.path(), Framing::Lines, "daemon")
            .env("ANTHROPIC_BASE_URL", &fake.base_url())
            .env("ANTHROPIC_API_KEY", KEY),
    );
    d.initialize("anthropic-tests", true);
    (fake, dir, d)
}

fn conversation(d: &mut Daemon) -> String {
    let conv = d.call(
        "CreateConversation",
        json!({"serviceProvider": "anthropic", "model": MODEL}),
    );
    assert_eq!(conv["format"], "claude-messages", "{conv}");
    conv["conversationId"].as_str().unwrap().to_string()
}

#[test]
fn daemon_turn_streams_chunks_then_the_final_with_usage() {
    let text = "Streaming from Claude: café ☕, in pieces.";
    let (fake, dir, mut d) = start_daemon(Behavior::reply(text, 5));
    let comps = d.call("ListComponents", json!({}));
    let kinds = comps["kinds"]["serviceProviders"].as_array().unwrap();
    let anthropic = kinds.iter().find(|k| k["name"] == "anthropic").unwrap();
    assert_eq!(anthropic["formats"], json!(["claude-messages"]), "{comps}");
    assert_eq!(anthropic["defaultFormat"], "claude-messages");

    let cid = conversation(&mut d);
    let (turn_id, fin) = d.turn(&cid, json!("Say hello in pieces"), TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(fin["summary"], text);
    assert_eq!(fin["usage"]["inputTokens"], 4, "{fin}");
    assert_eq!(fin["usage"]["outputTokens"], 7, "{fin}");
    assert_eq!(fin["finishReason"], "end_turn");
    assert_eq!(fin["model"], MODEL);
    let details: Vec<&str> = fin["detailedResponse"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        details.contains(&"provider: anthropic (anthropic)")
            && details.contains(&"usage: 4 input + 7 output = 11 tokens"),
        "{details:?}"
    );
    // claude-sonnet-4-5 is in the built-in table: 4 in at $3 and 7 out at $15 per million.
    let cost = fin["cost"].as_f64().expect("a cost");
    assert!(
        (cost - (4.0 * 3.0 + 7.0 * 15.0) / 1e6).abs() < 1e-12,
        "{fin}"
    );
    assert!(
        details.contains(
            &"cost: $0.000117 (built-in estimate for claude-sonnet-4-5 (2025-10 list price))"
        ),
        "{details:?}"
    );
    // Chunks, in order, all before the one final response.
    let mut chunks = String::new();
    let mut final_at = None;
    for (i, m) in d.log().iter().enumerate() {
        if m["params"]["turnId"] != turn_id.as_str() {
            continue;
        }
        match m["method"].as_str() {
            Some("OnFeatureResponseChunk") => {
                assert!(final_at.is_none(), "a chunk came after the final response");
                chunks.push_str(m["params"]["delta"].as_str().unwrap());
            }
            Some("OnFeatureResponse") if m["params"]["final"] == true => {
                assert!(final_at.replace(i).is_none(), "two final responses")
            }
            _ => {}
        }
    }
    assert_eq!(chunks, text);
    let stored = d.history(&cid);
    assert_eq!(stored.len(), 2);
    assert_eq!(stored[1]["usage"]["outputTokens"], 7, "{stored:?}");
    assert!(d.shutdown(EXIT).success());
    // The key reached the provider and nothing else: not the debug log, stdout or the store.
    assert_eq!(fake.last().header("x-api-key"), Some(KEY));
    assert!(!d.stderr_text().contains(KEY), "the key is in the log");
    assert!(!String::from_utf8_lossy(&d.raw_stdout()).contains(KEY));
    assert!(dir.path().join("data/history.db").is_file());
    for file in ["history.db", "history.db-wal"] {
        let bytes = std::fs::read(dir.path().join("data").join(file)).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(KEY),
            "the key is in {file}"
        );
    }
}

#[test]
fn image_parts_reach_the_body_as_base64_and_url_sources() {
    let (fake, _dir, mut d) = start_daemon(Behavior::reply("A red dot.", 2));
    let cid = conversation(&mut d);
    let message = json!({"role": "user", "content": [
        {"type": "image", "mediaType": "image/png", "data": "iVBORw0KGgo="},
        {"type": "image", "url": "https://example.invalid/cat.jpg"},
        "What is in these?"
    ]});
    let (_, fin) = d.turn(&cid, message, TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(
        fake.last().body["messages"],
        json!([{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
            {"type": "image", "source": {"type": "url", "url": "https://example.invalid/cat.jpg"}},
            {"type": "text", "text": "What is in these?"}
        ]}])
    );
    // An image over Anthropic's 5 MB (base64) limit is refused before anything is sent.
    let sent = fake.requests().len();
    let big = "A".repeat(5 * 1024 * 1024 + 4);
    let message = json!({"role": "user", "content": [
        {"type": "image", "mediaType": "image/png", "data": big}, "and this?"
    ]});
    let (_, fin) = d.turn(&cid, message, TURN);
    assert_eq!(fin["isSuccess"], false, "{}", fin["error"]);
    let msg = fin["error"]["message"].as_str().unwrap();
    assert!(msg.contains("limit"), "{msg}");
    assert_eq!(fake.requests().len(), sent);
    assert_eq!(d.history(&cid).len(), 2);
    assert!(d.shutdown(EXIT).success());
}

#[test]
fn every_fault_fails_its_turn_and_leaves_the_history_as_it_was() {
    let (fake, _dir, mut d) = start_daemon(Behavior::reply("All good.", 2));
    let cid = conversation(&mut d);
    let (_, fin) = d.turn(&cid, json!("first"), TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");

    // 429 (retry-after: 1) and 529 overloaded are retried; the third try answers.
    fake.push(error(
        429,
        "rate_limit_error",
        "Number of requests has exceeded your rate limit",
    ));
    fake.push(error(529, "overloaded_error", "Overloaded"));
    let before = fake.requests().len();
    let (_, fin) = d.turn(&cid, json!("second"), TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let requests = fake.requests();
    assert_eq!(requests.len() - before, 3);
    assert!(
        requests[before + 1].at - requests[before].at >= Duration::from_secs(1),
        "retry-after was not honoured"
    );
    assert_eq!(d.history(&cid).len(), 4);

    let long = "one two three four five six seven eight";
    let faults: Vec<(&str, Vec<Behavior>, &[&str])> = vec![
        (
            "500 on every try",
            (0..4)
                .map(|_| error(500, "api_error", "Internal server error"))
                .collect(),
            &["500", "api_error", "Internal server error", "after 4 tries"],
        ),
        (
            "400 refused at once",
            vec![error(
                400,
                "invalid_request_error",
                "messages: roles must alternate",
            )],
            &["400", "invalid_request_error", "roles must alternate"],
        ),
        (
            "stream cut mid-event",
            vec![Behavior {
                mode: Mode::CutAfter { after: 2 },
                ..Behavior::reply(long, 4)
            }],
            &["anthropic"],
        ),
        (
            "error event mid-stream",
            vec![Behavior {
                mode: Mode::ErrorEventAfter {
                    after: 2,
                    error_type: "overloaded_error".into(),
                    message: "Overloaded".into(),
                },
                ..Behavior::reply(long, 4)
            }],
            &["overloaded_error", "Overloaded"],
        ),
        (
            "malformed JSON in the stream",
            vec![Behavior {
                mode: Mode::MalformedAfter { after: 1 },
                ..Behavior::reply(long, 4)
            }],
            &["invalid JSON"],
        ),
    ];
    for (what, behaviors, needles) in faults {
        let before = fake.requests().len();
        let tries = behaviors.len();
        for b in behaviors {
            fake.push(b);
        }
        let (turn_id, fin) = d.turn(&cid, json!(format!("fault: {what}")), TURN);
        assert_eq!(fin["isSuccess"], false, "{what}: {fin}");
        assert_eq!(fin["error"]["kind"], "providerError", "{what}: {fin}");
        let message = fin["error"]["message"].as_str().unwrap();
        for needle in needles {
            assert!(message.contains(needle), "{what}: {message}");
        }
        if what.contains("cut") {
            assert!(
                message.contains("ended before the reply was complete")
                    || message.contains("connection broke"),
                "{what}: {message}"
            );
        }
        assert!(!message.contains('\n'), "{what}: one line: {message}");
        assert_eq!(fake.requests().len() - before, tries, "{what}");
        assert_eq!(d.history(&cid).len(), 4, "{what} changed the history");
        let finals = d
            .log()
            .iter()
            .filter(|m| m["params"]["turnId"] == turn_id.as_str() && m["params"]["final"] == true)
            .count();
        assert_eq!(finals, 1, "{what}");
    }

    // A slow stream past the whole-request timeout, on a provider made at run time.
    d.call(
        "CreateServiceProvider",
        json!({"name": "slow", "kind": "anthropic", "settings": {"base_url": fake.base_url(), "timeout_secs": 1}}),
    );
    let (slow_id, _) = d.create_conversation(json!({"serviceProvider": "slow", "model": MODEL}));
    fake.push(Behavior {
        delay: Duration::from_millis(400),
        ..Behavior::reply(long, 8)
    });
    let started = Instant::now();
    let (_, fin) = d.turn(&slow_id, json!("count slowly"), TURN);
    assert_eq!(fin["isSuccess"], false, "{fin}");
    let kind = fin["error"]["kind"].as_str().unwrap();
    assert!(kind == "timeout" || kind == "providerError", "{fin}");
    assert!(started.elapsed() < Duration::from_secs(6));
    assert!(d.history(&slow_id).is_empty());

    // The conversation still works, and the model sees only the committed turns.
    let (_, fin) = d.turn(&cid, json!("last"), TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let texts: Vec<Value> = fake.last().body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].clone())
        .collect();
    assert_eq!(
        texts,
        vec![
            json!("first"),
            json!("All good."),
            json!("second"),
            json!("All good."),
            json!("last")
        ]
    );
    assert_eq!(d.history(&cid).len(), 6);
    assert!(d.shutdown(EXIT).success());
}

#[test]
fn set_model_parameter_checks_claude_parameters() {
    let (fake, _dir, mut d) = start_daemon(Behavior::reply("ok", 1));
    let conv = d.call(
        "CreateConversation",
        json!({"serviceProvider": "anthropic", "model": MODEL}),
    );
    let agent = conv["agentId"].as_str().unwrap().to_string();
    let cid = conv["conversationId"].as_str().unwrap().to_string();
    d.call(
        "SetModelParameter",
        json!({"agentId": agent, "name": "Top_K", "value": 5}),
    );
    d.call(
        "SetModelParameter",
        json!({"agentId": agent, "name": "thinking", "value": {"type": "enabled", "budget_tokens": 1024}}),
    );
    let e = d.call_err(
        "SetModelParameter",
        json!({"agentId": agent, "name": "temperature", "value": 1.5}),
    );
    assert!(e["message"].as_str().unwrap().contains("outside"), "{e}");
    let e = d.call_err(
        "SetModelParameter",
        json!({"agentId": agent, "name": "frequency_penalty", "value": 1}),
    );
    assert!(
        e["message"].as_str().unwrap().contains("stop_sequences"),
        "{e}"
    );
    let (_, fin) = d.turn(&cid, json!("think"), TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let body = fake.last().body;
    assert_eq!(body["top_k"], 5);
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 1024})
    );
    // An OpenAI format cannot run on this provider kind.
    d.call(
        "CreateModelConfiguration",
        json!({"name": "gpt", "format": "openai-chat", "model": "gpt-4o-mini"}),
    );
    let e = d.call_err(
        "CreateConversation",
        json!({"serviceProvider": "anthropic", "modelConfiguration": "gpt"}),
    );
    assert_eq!(e["data"]["kind"], "incompatibleComponents", "{e}");
    assert!(d.shutdown(EXIT).success());
}
