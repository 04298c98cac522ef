//! Provider failures: HTTP errors retried or failing the turn (the history kept), cut streams
//! and stalled providers failing promptly.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::daemon::{
    conversation_id, create_conversation, error_behavior, fake, initialize, slow_stream, start,
    streaming_daemon, EXIT, MODEL, TURN,
};
use crate::support::fake_openai::{Behavior, Mode};
use crate::support::poll::wait_until;
use crate::support::rpc_client::Framing;

#[test]
fn provider_http_errors_are_retried_or_fail_the_turn_and_keep_the_history() {
    let (fake, _dir, mut d) = streaming_daemon(Behavior::reply("Recovered.", 3));
    let conv = create_conversation(&mut d);
    let cid = conv["conversationId"].as_str().unwrap();

    // A 400 is the caller's fault: no retry, the turn fails, nothing is stored.
    fake.push(error_behavior(400, "Invalid value for messages"));
    let (_, fin) = d.turn(cid, "please answer", TURN);
    assert_eq!(fin["isSuccess"], false, "{fin}");
    assert_eq!(fin["final"], true, "{fin}");
    assert_eq!(fin["error"]["kind"], "providerError", "{fin}");
    let message = fin["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("400") && message.contains("Invalid value for messages"),
        "{message}"
    );
    assert_eq!(fake.requests().len(), 1);
    assert!(d.history(cid).is_empty(), "a failed turn was committed");

    // 500 then 429 (with `retry-after: 1`) are retried; the third try answers.
    fake.push(error_behavior(500, "The server had an error"));
    fake.push(error_behavior(429, "Rate limit reached"));
    let (_, fin) = d.turn(cid, "please answer", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(fin["summary"], "Recovered.");
    let requests = fake.requests();
    assert_eq!(requests.len(), 4);
    assert!(
        requests[3].at - requests[2].at >= Duration::from_secs(1),
        "Retry-After was not honoured"
    );
    assert_eq!(
        requests[1].body, requests[3].body,
        "a retry changed the request"
    );
    // The failed prompt was not kept: the model saw the last message only.
    assert_eq!(
        requests[3].body["messages"],
        json!([{"role": "user", "content": "please answer"}])
    );
    assert_eq!(d.history(cid).len(), 2);

    // Retries are bounded: a provider allowed one retry gives up after two tries.
    d.call(
        "CreateServiceProvider",
        json!({"name": "flaky", "kind": "openai", "settings": {"base_url": fake.base_url(), "max_retries": 1}}),
    );
    let (flaky_id, _) = d.create_conversation(json!({"serviceProvider": "flaky", "model": MODEL}));
    for _ in 0..2 {
        fake.push(error_behavior(503, "Service Unavailable"));
    }
    let (_, fin) = d.turn(&flaky_id, "hello?", TURN);
    assert_eq!(fin["isSuccess"], false, "{fin}");
    let message = fin["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("503") && message.contains("after 2 tries"),
        "{message}"
    );
    assert_eq!(fake.requests().len(), 6);
    assert!(d.history(&flaky_id).is_empty());

    // A provider nobody listens on.
    let closed_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    d.call(
        "CreateServiceProvider",
        json!({"name": "down", "kind": "openai", "settings": {"base_url": format!("http://127.0.0.1:{closed_port}/v1"), "connect_timeout_secs": 2}}),
    );
    let (down_id, _) = d.create_conversation(json!({"serviceProvider": "down", "model": MODEL}));
    let (_, fin) = d.turn(&down_id, "hello?", TURN);
    assert_eq!(fin["isSuccess"], false, "{fin}");
    assert_eq!(fin["error"]["kind"], "providerError", "{fin}");
    let message = fin["error"]["message"].as_str().unwrap();
    assert!(message.contains("down"), "names the provider: {message}");
    assert!(message.contains("connect"), "{message}");
    assert!(
        message.contains("after 4 tries"),
        "connect errors are retried: {message}"
    );
    assert!(d.history(&down_id).is_empty());
    assert!(d.shutdown(EXIT).success());
}

#[test]
fn cut_stream_and_stalled_provider_fail_promptly() {
    let fake = fake(Behavior::reply("This reply is cut short by the server.", 4));
    fake.push(Behavior {
        mode: Mode::CutAfter { after: 2 },
        ..Behavior::reply("This reply is cut short by the server.", 4)
    });
    let dir = tempfile::tempdir().unwrap();
    let mut d = start(dir.path(), Framing::Lines, &fake);
    initialize(&mut d, true);
    let cid = conversation_id(&mut d);

    let (_, fin) = d.turn(&cid, "tell me a story", TURN);
    assert_eq!(fin["isSuccess"], false, "{fin}");
    assert_eq!(fin["error"]["kind"], "providerError", "{fin}");
    assert!(d.history(&cid).is_empty(), "a cut reply was committed");

    // A provider created at run time, with a short read timeout, that never answers.
    let r = d.call(
        "CreateServiceProvider",
        json!({"name": "slow", "kind": "openai", "settings": {"base_url": fake.base_url(), "read_timeout_secs": 1}}),
    );
    assert_eq!(r, json!({}));
    let comps = d.call("ListComponents", json!({}));
    assert!(
        comps["serviceProviders"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "slow" && p["origin"] == "runtime"),
        "{comps}"
    );
    let slow = d.call(
        "CreateConversation",
        json!({"serviceProvider": "slow", "model": MODEL}),
    );
    assert_eq!(slow["serviceProvider"], "slow");
    let slow_id = slow["conversationId"].as_str().unwrap().to_string();
    fake.push(Behavior {
        mode: Mode::Stall,
        ..Behavior::default()
    });
    let started = Instant::now();
    let (_, fin) = d.turn(&slow_id, "anyone there?", TURN);
    let took = started.elapsed();
    assert_eq!(fin["isSuccess"], false, "{fin}");
    let kind = fin["error"]["kind"].as_str().unwrap();
    assert!(kind == "timeout" || kind == "providerError", "{fin}");
    assert!(
        took < Duration::from_secs(6),
        "a 1 s read timeout took {took:?}"
    );
    assert!(d.history(&slow_id).is_empty());
    // The stalled request was dropped by the daemon.
    wait_until(
        "the fake sees the disconnect",
        Duration::from_secs(5),
        || fake.disconnects() >= 1,
    );

    // A provider whose whole-request timeout ends a slow stream in the middle.
    d.call(
        "CreateServiceProvider",
        json!({"name": "capped", "kind": "openai", "settings": {"base_url": fake.base_url(), "timeout_secs": 1}}),
    );
    let (capped_id, _) =
        d.create_conversation(json!({"serviceProvider": "capped", "model": MODEL}));
    fake.push(slow_stream());
    let started = Instant::now();
    let (capped_turn, fin) = d.turn(&capped_id, "count slowly", TURN);
    let took = started.elapsed();
    assert_eq!(fin["isSuccess"], false, "{fin}");
    let kind = fin["error"]["kind"].as_str().unwrap();
    assert!(kind == "timeout" || kind == "providerError", "{fin}");
    assert!(took < Duration::from_secs(4), "a 1 s timeout took {took:?}");
    assert!(
        !d.turn_events(&capped_turn).0.is_empty(),
        "the stream had started"
    );
    assert!(d.history(&capped_id).is_empty());

    // The first conversation still works.
    let (_, fin) = d.turn(&cid, "tell me a story", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert!(d.shutdown(EXIT).success());
}
