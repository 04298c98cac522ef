//! End-to-end tests of `genai daemon`: the real binary over stdio (both framings),
//! against the fake OpenAI-compatible server in `support/fake_openai.rs`.
//!
//! Every test has its own temp folders for data and config and its own fake
//! server, and waits on events with deadlines (never sleeps to let time pass).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use fake_openai::{Behavior, FakeOpenAi, Mode};
use rpc_client::{strict_content_length_frames, Daemon, DaemonConfig, Framing};

use crate::support::poll::wait_until;
use crate::support::{fake_openai, rpc_client};

/// The longest a turn against the local fake may take before the test fails.
const TURN: Duration = Duration::from_secs(15);
/// The longest a daemon may take to exit once asked to.
const EXIT: Duration = Duration::from_secs(10);
const DUMMY_KEY: &str = "sk-test-dummy-key";
const MODEL: &str = "gpt-4o-mini";

// ---------------------------------------------------------------------------
// Helpers

fn fake(behavior: Behavior) -> FakeOpenAi {
    FakeOpenAi::start(0, behavior).expect("start the fake OpenAI server")
}

fn error_behavior(status: u16, message: &str) -> Behavior {
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
fn config(root: &Path, framing: Framing, name: &str, fake: &FakeOpenAi) -> DaemonConfig {
    DaemonConfig::in_dir(root, framing, name)
        .env("OPENAI_BASE_URL", &fake.base_url())
        .env("OPENAI_API_KEY", DUMMY_KEY)
}

fn start(root: &Path, framing: Framing, fake: &FakeOpenAi) -> Daemon {
    Daemon::spawn(&config(root, framing, "daemon", fake))
}

fn initialize(d: &mut Daemon, streaming: bool) -> Value {
    d.initialize("daemon-tests", streaming)
}

/// A fake with `behavior`, and a daemon on it in a folder of its own, initialized by a
/// streaming client.
fn streaming_daemon(behavior: Behavior) -> (FakeOpenAi, tempfile::TempDir, Daemon) {
    let fake = fake(behavior);
    let dir = tempfile::tempdir().unwrap();
    let mut d = start(dir.path(), Framing::Lines, &fake);
    initialize(&mut d, true);
    (fake, dir, d)
}

/// A conversation on the built-in `openai` provider; returns its `CreateConversation` result.
fn create_conversation(d: &mut Daemon) -> Value {
    d.call(
        "CreateConversation",
        json!({"serviceProvider": "openai", "model": MODEL}),
    )
}

/// The text of a message's content (a string, or text parts).
fn text_of(message: &Value) -> String {
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
fn assert_streamed(d: &Daemon, turn_id: &str, text: &str) {
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

fn assert_error_kind(error: &Value, code: i64, kind: &str) {
    assert_eq!(error["code"], code, "error code: {error}");
    assert_eq!(error["data"]["kind"], kind, "error kind: {error}");
}

/// The whole chat flow of tests 1 and 2: components, a conversation, one
/// streamed turn, and the history seen both ways.
/// The reply of the chat flow; non-ASCII text checks that Content-Length counts
/// bytes, not characters.
const REPLY: &str = "Hello from the fake provider, streamed in pieces: café ☕ 🚀.";

/// Returns the daemon last, so that it is dropped (killed) before its folder.
fn chat_flow(framing: Framing) -> (FakeOpenAi, tempfile::TempDir, Daemon, String) {
    let reply_text = REPLY;
    let fake = fake(Behavior::reply(reply_text, 5));
    let dir = tempfile::tempdir().unwrap();
    let mut d = start(dir.path(), framing, &fake);

    let init = initialize(&mut d, true);
    assert_eq!(init["serverInfo"]["name"], "genai", "{init}");
    assert!(init["protocolVersion"].is_string(), "{init}");

    let comps = d.call("ListComponents", json!({}));
    let names = |list: &Value| -> Vec<String> {
        list.as_array()
            .unwrap_or_else(|| panic!("not a list: {list}"))
            .iter()
            .filter_map(|c| c["name"].as_str().map(str::to_string))
            .collect()
    };
    assert!(
        comps["serviceProviders"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "openai" && p["kind"] == "openai"),
        "no openai provider: {comps}"
    );
    assert!(
        names(&comps["kinds"]["modelConfigurations"]).contains(&"openai-chat".to_string()),
        "no openai-chat format: {comps}"
    );
    assert!(
        names(&comps["features"]).contains(&"assistant".to_string()),
        "no assistant feature: {comps}"
    );

    let conv = create_conversation(&mut d);
    assert_eq!(conv["feature"], "assistant", "{conv}");
    assert_eq!(conv["serviceProvider"], "openai", "{conv}");
    assert_eq!(conv["format"], "openai-chat", "{conv}");
    assert_eq!(conv["model"], MODEL, "{conv}");
    let cid = conv["conversationId"].as_str().unwrap().to_string();
    let agent_id = conv["agentId"].as_str().unwrap().to_string();

    let (turn_id, fin) = d.turn(&cid, "Hello there, daemon", TURN);
    assert_eq!(fin["conversationId"], cid.as_str(), "{fin}");
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(fin["summary"], reply_text, "{fin}");
    assert!(fin["detailedResponse"].is_array(), "{fin}");
    let usage = &fin["usage"];
    assert!(usage.is_object(), "no usage: {fin}");
    // The fake counts words: 3 in the prompt, 11 in the reply.
    assert_eq!(usage["inputTokens"], 3, "{fin}");
    assert_eq!(usage["outputTokens"], 11, "{fin}");
    assert_eq!(fin["model"], MODEL, "{fin}");
    assert_eq!(fin["finishReason"], "stop", "{fin}");

    assert_streamed(&d, &turn_id, reply_text);

    let req = fake
        .requests()
        .last()
        .cloned()
        .expect("the fake saw a request");
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(req.body["model"], MODEL);
    assert_eq!(req.body["stream"], true);
    assert_eq!(
        req.body["messages"],
        json!([{"role": "user", "content": "Hello there, daemon"}])
    );

    let stored = d.history(&cid);
    assert_eq!(stored.len(), 2, "{stored:?}");
    assert_eq!(stored[0]["role"], "user");
    assert_eq!(text_of(&stored[0]), "Hello there, daemon");
    assert_eq!(stored[1]["role"], "assistant");
    assert_eq!(text_of(&stored[1]), reply_text);
    assert_eq!(stored[0]["seq"].as_i64().unwrap() + 1, stored[1]["seq"]);
    assert!(stored[1]["usage"].is_object(), "{:?}", stored[1]);
    assert!(stored[0]["createdAt"].is_i64());

    let live = d.call("GetHistory", json!({"agentId": agent_id}));
    let live = live.as_array().expect("GetHistory returns a list").clone();
    assert_eq!(live.len(), 2, "{live:?}");
    for (a, b) in live.iter().zip(&stored) {
        assert_eq!(a["role"], b["role"]);
        assert_eq!(a["content"], b["content"]);
    }
    (fake, dir, d, turn_id)
}

// ---------------------------------------------------------------------------
// 1, 2: both framings

#[test]
fn ndjson_chat_flow() {
    let (_fake, _dir, mut d, turn_id) = chat_flow(Framing::Lines);
    let status = d.shutdown(EXIT);
    assert!(status.success(), "{status:?}");
    // With every output read: still no chunk after the final response.
    assert_streamed(&d, &turn_id, REPLY);
    // Every output line is one JSON text.
    let raw = d.raw_stdout();
    let text = String::from_utf8(raw).expect("stdout is UTF-8");
    assert!(text.ends_with('\n'));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), d.log().len());
    for line in lines {
        serde_json::from_str::<Value>(line)
            .unwrap_or_else(|e| panic!("not one JSON text per line ({e}): {line:?}"));
    }
}

#[test]
fn content_length_chat_flow() {
    let (_fake, _dir, mut d, turn_id) = chat_flow(Framing::ContentLength);
    let status = d.shutdown(EXIT);
    assert!(status.success(), "{status:?}");
    // With every output read: still no chunk after the final response.
    assert_streamed(&d, &turn_id, REPLY);
    let frames = strict_content_length_frames(&d.raw_stdout())
        .unwrap_or_else(|e| panic!("stdout is not Content-Length framed: {e}"));
    assert_eq!(frames.len(), d.log().len(), "every message is one frame");
    for (frame, logged) in frames.iter().zip(d.log()) {
        let v: Value = serde_json::from_slice(frame).expect("a frame holds JSON");
        assert_eq!(&v, logged);
    }
}

// ---------------------------------------------------------------------------
// 3: malformed input

#[test]
fn malformed_input_keeps_the_daemon_alive() {
    let (_fake, _dir, mut d) = streaming_daemon(Behavior::reply("Still here.", 2));

    // Invalid JSON.
    d.send_raw(b"{\"jsonrpc\": \"2.0\", \"id\": 7, \"method\": \n");
    let r = d.wait_response(&Value::Null, TURN);
    assert_eq!(r["error"]["code"], -32700, "{r}");
    assert_eq!(r["id"], Value::Null, "{r}");

    // No method.
    d.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":1001}\n");
    let r = d.wait_response(&json!(1001), TURN);
    assert_eq!(r["error"]["code"], -32600, "{r}");

    // Wrong jsonrpc version, and an id that is an object.
    d.send_raw(b"{\"jsonrpc\":\"1.0\",\"id\":1002,\"method\":\"ListComponents\"}\n");
    let r = d.wait_response(&json!(1002), TURN);
    assert_eq!(r["error"]["code"], -32600, "{r}");
    d.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"ListComponents\"}\n");
    let r = d.wait_response(&Value::Null, TURN);
    assert_eq!(r["error"]["code"], -32600, "{r}");

    // Unknown method; a near miss is told the method it meant.
    let e = d.call_err("NoSuchMethod", json!({}));
    assert_eq!(e["code"], -32601, "{e}");
    let e = d.call_err("initialize", json!({}));
    assert_eq!(e["code"], -32601, "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("(did you mean `Initialize`?)"),
        "{e}"
    );

    // Wrong params.
    let e = d.call_err("OnNewMessage", json!({"message": "hi"}));
    assert_error_kind(&e, -32602, "invalidParams");
    let e = d.call_err("CreateConversation", json!({"serviceProvider": 5}));
    assert_error_kind(&e, -32602, "invalidParams");

    // Unknown conversation and agent.
    let e = d.call_err(
        "OnNewMessage",
        json!({"conversationId": "01NOSUCHCONVERSATION000000", "message": "hi"}),
    );
    assert_error_kind(&e, -32001, "unknownConversation");
    let e = d.call_err(
        "GetConversationHistory",
        json!({"conversationId": "01NOSUCHCONVERSATION000000", "pageSize": 10}),
    );
    assert_error_kind(&e, -32001, "unknownConversation");
    let e = d.call_err("GetHistory", json!({"agentId": "no-such-agent"}));
    assert_error_kind(&e, -32002, "unknownAgent");
    let e = d.call_err(
        "SendPrompt",
        json!({"agentId": "no-such-agent", "prompt": "hi"}),
    );
    assert_error_kind(&e, -32002, "unknownAgent");

    // A batch of two requests and a notification: two answers, in one array.
    d.send_raw(
        concat!(
            r#"[{"jsonrpc":"2.0","id":"b1","method":"ListComponents"},"#,
            r#"{"jsonrpc":"2.0","id":"b2","method":"NoSuchMethod"},"#,
            r#"{"jsonrpc":"2.0","method":"Cancel","params":{"requestId":"none"}}]"#,
            "\n"
        )
        .as_bytes(),
    );
    let batch = d.wait_for(|m| m.is_array(), TURN, "the batch answer");
    let answers = batch.as_array().unwrap();
    assert_eq!(answers.len(), 2, "{batch}");
    let by_id = |id: &str| {
        answers
            .iter()
            .find(|a| a["id"] == id)
            .unwrap_or_else(|| panic!("no answer for {id}: {batch}"))
    };
    assert!(
        by_id("b1")["result"]["serviceProviders"].is_array(),
        "{batch}"
    );
    assert_eq!(by_id("b2")["error"]["code"], -32601, "{batch}");

    // An empty batch.
    d.send_raw(b"[]\n");
    let r = d.wait_response(&Value::Null, TURN);
    assert_eq!(r["error"]["code"], -32600, "{r}");

    // A notification with an unknown method gets no answer, and nothing breaks.
    d.notify("NoSuchNotification", json!({}));

    // Still alive: a whole turn works.
    let conv = create_conversation(&mut d);
    let cid = conv["conversationId"].as_str().unwrap();
    let (_, fin) = d.turn(cid, "are you alive", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(fin["summary"], "Still here.");
    // Nothing was answered that was not asked: every response was claimed.
    let extra: Vec<Value> = d
        .drain_now()
        .into_iter()
        .filter(|m| m.get("method").is_none())
        .collect();
    assert!(extra.is_empty(), "unexpected answers: {extra:?}");
    assert!(d.shutdown(EXIT).success());
}

#[test]
fn content_length_garbage_is_reported_and_skipped() {
    let fake = fake(Behavior::reply("Framed fine.", 2));
    let dir = tempfile::tempdir().unwrap();
    let mut d = start(dir.path(), Framing::ContentLength, &fake);
    initialize(&mut d, true);

    // A header block whose length is not a number, then a valid frame.
    d.send_raw(b"Content-Length: banana\r\n\r\n");
    let r = d.wait_response(&Value::Null, TURN);
    assert_eq!(r["error"]["code"], -32700, "{r}");
    let comps = d.call("ListComponents", json!({}));
    assert!(comps["serviceProviders"].is_array());

    // A header block without Content-Length.
    d.send_raw(b"X-Whatever: 1\r\n\r\n");
    let r = d.wait_response(&Value::Null, TURN);
    assert_eq!(r["error"]["code"], -32700, "{r}");

    // A well-framed body that is not JSON.
    d.send_raw(&Framing::ContentLength.frame(b"{oops"));
    let r = d.wait_response(&Value::Null, TURN);
    assert_eq!(r["error"]["code"], -32700, "{r}");

    // Other headers (LSP's Content-Type) are fine, in any case.
    let body = json!({"jsonrpc": "2.0", "id": "typed", "method": "ListComponents"}).to_string();
    d.send_raw(
        format!(
            "content-type: application/vscode-jsonrpc; charset=utf-8\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    );
    let r = d.wait_response(&json!("typed"), TURN);
    assert!(r["result"].is_object(), "{r}");

    // A frame split across writes is put back together.
    let body = json!({"jsonrpc": "2.0", "id": "split", "method": "ListComponents"}).to_string();
    let framed = Framing::ContentLength.frame(body.as_bytes());
    let (a, b) = framed.split_at(10);
    d.send_raw(a);
    d.send_raw(b);
    let r = d.wait_response(&json!("split"), TURN);
    assert!(r["result"].is_object(), "{r}");

    let conv = create_conversation(&mut d);
    let cid = conv["conversationId"].as_str().unwrap();
    let (_, fin) = d.turn(cid, "framing works", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(fin["summary"], "Framed fine.");

    assert!(d.shutdown(EXIT).success());
    strict_content_length_frames(&d.raw_stdout())
        .unwrap_or_else(|e| panic!("stdout is not Content-Length framed: {e}"));
}

// ---------------------------------------------------------------------------
// 4, 5: provider failures

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
    let conv = create_conversation(&mut d);
    let cid = conv["conversationId"].as_str().unwrap().to_string();

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

// ---------------------------------------------------------------------------
// 6: cancellation

fn slow_stream() -> Behavior {
    Behavior {
        reply: "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty".into(),
        chunks: 20,
        delay: Duration::from_millis(300),
        ..Behavior::default()
    }
}

#[test]
fn cancel_stops_a_streaming_turn() {
    let (fake, _dir, mut d) = streaming_daemon(slow_stream());
    let conv = create_conversation(&mut d);
    let cid = conv["conversationId"].as_str().unwrap().to_string();

    let turn_id = d.send_message(&cid, "count to twenty slowly");
    d.wait_first_chunk(&turn_id, TURN);
    let (fin, took) = d.cancel_turn(&cid, &turn_id, TURN);
    assert_eq!(fin["isSuccess"], false, "{fin}");
    assert_eq!(fin["error"]["kind"], "cancelled", "{fin}");
    assert!(took < Duration::from_secs(2), "cancel took {took:?}");
    wait_until(
        "the fake sees the client go away",
        Duration::from_secs(5),
        || fake.disconnects() >= 1,
    );
    assert!(d.history(&cid).is_empty(), "a cancelled turn was committed");
    let (_, finals) = d.turn_events(&turn_id);
    assert_eq!(finals.len(), 1);

    // Nothing runs any more: cancelling again cancels nothing.
    let r = d.call("Cancel", json!({"conversationId": cid}));
    assert_eq!(r["cancelled"], false, "{r}");
    let e = d.call_err(
        "Cancel",
        json!({"conversationId": "01NOSUCHCONVERSATION000000"}),
    );
    assert_eq!(e["data"]["kind"], "unknownConversation", "{e}");

    // The conversation goes on.
    fake.set_default(Behavior::reply("Done.", 2));
    let (_, fin) = d.turn(&cid, "just say done", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(d.history(&cid).len(), 2);
    assert!(d.shutdown(EXIT).success());
}

#[test]
fn cancel_request_notification_stops_the_turn_of_that_request() {
    let fake = fake(slow_stream());
    let dir = tempfile::tempdir().unwrap();
    let mut d = start(dir.path(), Framing::ContentLength, &fake);
    initialize(&mut d, true);
    let conv = create_conversation(&mut d);
    let cid = conv["conversationId"].as_str().unwrap().to_string();

    let id = d.send_request(
        "OnNewMessage",
        json!({"conversationId": cid, "message": "count slowly"}),
    );
    let r = d.wait_response(&json!(id), TURN);
    let turn_id = r["result"]["turnId"].as_str().unwrap().to_string();
    d.wait_first_chunk(&turn_id, TURN);
    d.notify("$/cancelRequest", json!({"id": id}));
    let fin = d.wait_final(&turn_id, Duration::from_secs(3))["params"].clone();
    assert_eq!(fin["error"]["kind"], "cancelled", "{fin}");
    assert!(d.history(&cid).is_empty());
    assert!(d.shutdown(EXIT).success());
}

// ---------------------------------------------------------------------------
// 7: many conversations at once

#[test]
fn fifty_concurrent_conversations() {
    const N: usize = 50;
    let (_fake, _dir, mut d) = streaming_daemon(Behavior::reply("Concurrent hello.", 2));

    let cids: Vec<String> = (0..N)
        .map(|_| {
            create_conversation(&mut d)["conversationId"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let ids: Vec<i64> = cids
        .iter()
        .enumerate()
        .map(|(i, cid)| {
            d.send_request(
                "OnNewMessage",
                json!({"conversationId": cid, "message": format!("message number {i}")}),
            )
        })
        .collect();
    let turn_ids: Vec<String> = ids
        .iter()
        .map(|id| {
            let r = d.wait_response(&json!(id), TURN);
            r["result"]["turnId"]
                .as_str()
                .unwrap_or_else(|| panic!("{r}"))
                .to_string()
        })
        .collect();
    for (cid, turn_id) in cids.iter().zip(&turn_ids) {
        let fin = d.wait_final(turn_id, Duration::from_secs(30))["params"].clone();
        assert_eq!(fin["isSuccess"], true, "{fin}");
        assert_eq!(fin["conversationId"], cid.as_str(), "{fin}");
        assert_eq!(fin["summary"], "Concurrent hello.", "{fin}");
    }
    for (i, cid) in cids.iter().enumerate() {
        let stored = d.history(cid);
        assert_eq!(stored.len(), 2, "{cid}: {stored:?}");
        assert_eq!(text_of(&stored[0]), format!("message number {i}"));
    }
    // Exactly one final per turn.
    for turn_id in &turn_ids {
        assert_eq!(d.turn_events(turn_id).1.len(), 1);
    }
    let listed = d.call("ListConversations", json!({"pageSize": 1000}));
    assert_eq!(listed["conversations"].as_array().unwrap().len(), N);
    assert!(d.shutdown(EXIT).success());
}

// ---------------------------------------------------------------------------
// 8: restart, resume, end of input

#[test]
fn restart_and_resume_a_conversation() {
    let fake = fake(Behavior::reply("Paris is the capital of France.", 3));
    let dir = tempfile::tempdir().unwrap();
    let first_question = "What is the capital of France?";

    let system = "Answer in one sentence.";

    let mut d = Daemon::spawn(&config(dir.path(), Framing::Lines, "first", &fake));
    initialize(&mut d, true);
    let (cid, conv) = d.create_conversation(json!({"serviceProvider": "openai", "model": MODEL, "systemPrompt": system, "parameters": {"temperature": 0.25}}));
    let (_, fin) = d.turn(&cid, first_question, TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let first = fake.requests().last().cloned().unwrap();
    assert_eq!(first.body["temperature"], 0.25, "{}", first.body);
    assert_eq!(
        first.body["messages"][0],
        json!({"role": "system", "content": system})
    );
    // A parameter changed later is remembered too.
    d.call(
        "SetModelParameter",
        json!({"agentId": conv["agentId"], "name": "top_p", "value": 0.75}),
    );
    let status = d.shutdown(EXIT);
    assert_eq!(status.code(), Some(0), "{status:?}");

    fake.set_default(Behavior::reply("Rome is the capital of Italy.", 3));
    let mut d = Daemon::spawn(&config(dir.path(), Framing::ContentLength, "second", &fake));
    initialize(&mut d, true);
    let listed = d.call("ListConversations", json!({"pageSize": 10}));
    let convs = listed["conversations"].as_array().unwrap();
    assert_eq!(convs.len(), 1, "{listed}");
    assert_eq!(convs[0]["id"], cid.as_str(), "{listed}");
    assert_eq!(convs[0]["title"], first_question, "{listed}");
    assert_eq!(convs[0]["messageCount"], 2, "{listed}");
    assert_eq!(convs[0]["model"], MODEL, "{listed}");

    // Not open in this daemon until resumed.
    let e = d.call_err(
        "OnNewMessage",
        json!({"conversationId": cid, "message": "hello?"}),
    );
    assert_eq!(e["data"]["kind"], "unknownConversation", "{e}");

    let resumed = d.call("ResumeConversation", json!({"conversationId": &cid[..8]}));
    assert_eq!(resumed["conversationId"], cid.as_str(), "{resumed}");
    assert_eq!(resumed["serviceProvider"], "openai", "{resumed}");
    assert_eq!(resumed["model"], MODEL, "{resumed}");
    let agent_id = resumed["agentId"].as_str().unwrap().to_string();
    let live = d.call("GetHistory", json!({"agentId": agent_id}));
    let live = live.as_array().unwrap().clone();
    assert_eq!(live.len(), 3, "{live:?}");
    assert_eq!(live[0]["role"], "system", "system first: {live:?}");
    assert_eq!(text_of(&live[0]), system);
    // Resuming an open conversation gives the same agent.
    let again = d.call("ResumeConversation", json!({"conversationId": cid}));
    assert_eq!(again["agentId"], agent_id.as_str(), "{again}");

    let (_, fin) = d.turn(&cid, "And of Italy?", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(fin["summary"], "Rome is the capital of Italy.");
    let last = fake.requests().last().cloned().unwrap();
    assert_eq!(last.body["temperature"], 0.25, "the parameters were lost");
    assert_eq!(last.body["top_p"], 0.75, "SetModelParameter was lost");
    assert_eq!(
        last.body["messages"],
        json!([
            {"role": "system", "content": system},
            {"role": "user", "content": first_question},
            {"role": "assistant", "content": "Paris is the capital of France."},
            {"role": "user", "content": "And of Italy?"},
        ]),
        "the model did not see the history"
    );
    assert_eq!(d.history(&cid).len(), 4);
    let status = d.shutdown(EXIT);
    assert_eq!(status.code(), Some(0), "{status:?}");
}

#[test]
fn end_of_input_finishes_running_turns_before_exit() {
    let fake = fake(Behavior {
        reply: "Finished after stdin closed.".into(),
        chunks: 3,
        delay: Duration::from_millis(150),
        ..Behavior::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let mut d = Daemon::spawn(&config(dir.path(), Framing::Lines, "first", &fake));
    initialize(&mut d, true);
    let conv = create_conversation(&mut d);
    let cid = conv["conversationId"].as_str().unwrap().to_string();
    let turn_id = d.send_message(&cid, "answer after I hang up");
    d.close_stdin();
    let status = d.wait_exit(EXIT);
    assert_eq!(status.code(), Some(0), "{status:?}");
    let fin = d.wait_final(&turn_id, Duration::ZERO)["params"].clone();
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(fin["summary"], "Finished after stdin closed.");

    // And it was committed.
    let mut d = Daemon::spawn(&config(dir.path(), Framing::Lines, "second", &fake));
    assert_eq!(d.history(&cid).len(), 2);
    d.close_stdin();
    assert!(d.wait_exit(EXIT).success());
}

// ---------------------------------------------------------------------------
// 9: client-hosted features

#[test]
fn client_registered_feature_drives_the_turn() {
    let (fake, _dir, mut d) = streaming_daemon(Behavior::reply("Echo from the model.", 3));

    let r = d.call(
        "RegisterFeature",
        json!({"name": "echo-feature", "description": "echoes through the client"}),
    );
    assert_eq!(r, json!({}));
    let comps = d.call("ListComponents", json!({}));
    assert!(
        comps["features"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["name"] == "echo-feature" && f["origin"] == "client"),
        "{comps}"
    );
    let e = d.call_err("RegisterFeature", json!({"name": "assistant"}));
    assert_eq!(e["data"]["kind"], "invalidParams", "{e}");

    let conv = d.call(
        "CreateConversation",
        json!({"feature": "echo-feature", "serviceProvider": "openai", "model": "m"}),
    );
    assert_eq!(conv["feature"], "echo-feature", "{conv}");
    let cid = conv["conversationId"].as_str().unwrap().to_string();
    let agent_id = conv["agentId"].as_str().unwrap().to_string();

    let turn_id = d.send_message(&cid, "please echo this");
    let note = d.wait_notification(
        |m| m["method"] == "OnNewMessage" && m["params"]["conversationId"] == cid.as_str(),
        TURN,
    );
    let p = &note["params"];
    assert_eq!(p["agentId"], agent_id.as_str(), "{note}");
    assert_eq!(p["turnId"], turn_id.as_str(), "{note}");
    assert_eq!(p["feature"], "echo-feature", "{note}");
    assert_eq!(p["message"]["role"], "user", "{note}");
    assert_eq!(text_of(&p["message"]), "please echo this", "{note}");

    // The feature (this client) uses the conversation's agent.
    let h = d.call("GetHistory", json!({"agentId": agent_id}));
    assert_eq!(h, json!([]), "the agent starts empty");
    let sent = d.call(
        "SendPrompt",
        json!({"agentId": agent_id, "prompt": "Say something"}),
    );
    let request_id = sent["requestId"].as_str().unwrap().to_string();
    let resp = d.wait_notification(
        |m| m["method"] == "OnPromptResponse" && m["params"]["requestId"] == request_id.as_str(),
        TURN,
    );
    let rp = &resp["params"];
    assert_eq!(rp["isSuccess"], true, "{resp}");
    assert_eq!(rp["agentId"], agent_id.as_str(), "{resp}");
    let model_reply = text_of(&rp["message"]);
    assert_eq!(model_reply, "Echo from the model.");
    let prompt_chunks: String = d
        .log()
        .iter()
        .filter(|m| {
            m["method"] == "OnPromptResponseChunk"
                && m["params"]["requestId"] == request_id.as_str()
        })
        .filter_map(|m| m["params"]["delta"].as_str())
        .collect();
    assert_eq!(
        prompt_chunks, model_reply,
        "prompt chunks make up the reply"
    );
    assert_eq!(fake.requests().last().unwrap().body["model"], "m");

    // No final response before the feature answers.
    assert!(
        d.turn_events(&turn_id).1.is_empty(),
        "the turn ended before the feature answered"
    );
    let summary = format!("done: {model_reply}");
    let r = d.call(
        "OnFeatureResponse",
        json!({"conversationId": cid, "summary": summary, "detailedResponse": ["x"]}),
    );
    assert_eq!(r, json!({}));
    let fin = d.wait_final(&turn_id, TURN)["params"].clone();
    assert_eq!(fin["summary"], summary.as_str(), "{fin}");
    assert_eq!(fin["detailedResponse"], json!(["x"]), "{fin}");
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(fin["conversationId"], cid.as_str(), "{fin}");

    // A second answer for the same turn is refused.
    let e = d.call_err(
        "OnFeatureResponse",
        json!({"conversationId": cid, "summary": "again"}),
    );
    assert_eq!(e["data"]["kind"], "unknownConversation", "{e}");

    let stored = d.history(&cid);
    assert_eq!(stored.len(), 2, "{stored:?}");
    assert_eq!(text_of(&stored[0]), "Say something");
    assert_eq!(text_of(&stored[1]), "Echo from the model.");
    let h = d.call("GetHistory", json!({"agentId": agent_id}));
    assert_eq!(h.as_array().unwrap().len(), 2, "{h}");
    assert!(d.shutdown(EXIT).success());
}

// ---------------------------------------------------------------------------
// 10: secrets

fn files_under(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn assert_no_secret_in_files(dir: &Path, secret: &str) -> usize {
    let mut files = Vec::new();
    files_under(dir, &mut files);
    for file in &files {
        let bytes = std::fs::read(file).unwrap_or_default();
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "the API key is in {}",
            file.display()
        );
    }
    files.len()
}

#[test]
fn api_key_reaches_the_provider_and_nothing_else() {
    const SECRET: &str = "sk-test-SECRET-123456";
    // Keys from the config file and from CreateServiceProvider, and a secret header.
    const CONFIG_KEY: &str = "sk-cfg-SECRET-777777";
    const HEADER_SECRET: &str = "hdr-SECRET-888888";
    const RUNTIME_KEY: &str = "sk-rt-SECRET-999999";
    let secrets = [SECRET, CONFIG_KEY, HEADER_SECRET, RUNTIME_KEY];

    let fake = fake(Behavior::reply("Authorized reply.", 2));
    fake.push(error_behavior(401, "Incorrect API key provided"));
    let dir = tempfile::tempdir().unwrap();
    let cfg = DaemonConfig::in_dir(dir.path(), Framing::Lines, "daemon")
        .env("OPENAI_BASE_URL", &fake.base_url())
        .env("OPENAI_API_KEY", SECRET);
    cfg.write_config(&format!(
        r#"[service_providers.work]
kind = "openai"
base_url = "{}"
api_key = "{CONFIG_KEY}"
api_key_env = "GENAI_TEST_UNSET_KEY_VAR"
headers = {{ "X-Api-Key" = "{HEADER_SECRET}", "X-Team" = "blue" }}
"#,
        fake.base_url()
    ));
    let mut d = Daemon::spawn(&cfg);
    initialize(&mut d, true);
    let conv = create_conversation(&mut d);
    let cid = conv["conversationId"].as_str().unwrap().to_string();

    let (_, fin) = d.turn(&cid, "who am I", TURN);
    assert_eq!(fin["isSuccess"], false, "{fin}");
    let kind = fin["error"]["kind"].as_str().unwrap();
    assert!(
        kind == "missingCredentials" || kind == "providerError",
        "{fin}"
    );
    assert!(
        fin["error"]["message"].as_str().unwrap().contains("401"),
        "{fin}"
    );
    let (_, fin) = d.turn(&cid, "who am I", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");

    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {SECRET}").as_str()),
            "the key did not reach the provider"
        );
    }

    // The provider from the config file: its own key and headers.
    fake.push(error_behavior(403, "Forbidden for this key"));
    let (work_id, _) = d.create_conversation(json!({"serviceProvider": "work", "model": "m"}));
    let (_, fin) = d.turn(&work_id, "and now?", TURN);
    assert_eq!(fin["isSuccess"], false, "{fin}");
    let (_, fin) = d.turn(&work_id, "and now?", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let last = fake.requests().last().cloned().unwrap();
    assert_eq!(
        last.header("authorization"),
        Some(format!("Bearer {CONFIG_KEY}").as_str())
    );
    assert_eq!(last.header("x-api-key"), Some(HEADER_SECRET));
    assert_eq!(last.header("x-team"), Some("blue"));

    // A provider created at run time with a key in its settings.
    d.call(
        "CreateServiceProvider",
        json!({"name": "rt", "kind": "openai", "settings": {
            "base_url": fake.base_url(), "api_key": RUNTIME_KEY, "api_key_env": "GENAI_TEST_UNSET_KEY_VAR"}}),
    );
    let (rt_id, _) = d.create_conversation(json!({"serviceProvider": "rt", "model": "m"}));
    let (_, fin) = d.turn(&rt_id, "runtime key?", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let last = fake.requests().last().cloned().unwrap();
    assert_eq!(
        last.header("authorization"),
        Some(format!("Bearer {RUNTIME_KEY}").as_str())
    );
    d.call("ListComponents", json!({}));

    // While running (the WAL and shared-memory files exist) and after exit.
    for secret in secrets {
        let n = assert_no_secret_in_files(&cfg.data_dir, secret);
        assert!(n >= 1, "no history files");
    }
    assert!(d.shutdown(EXIT).success());
    for secret in secrets {
        assert_no_secret_in_files(&cfg.data_dir, secret);
    }
    assert_no_secret_in_files(&cfg.config_dir, SECRET);
    assert_no_secret_in_files(&cfg.config_dir, RUNTIME_KEY);

    let stdout = d.raw_stdout();
    assert!(!stdout.is_empty());
    let stderr = d.stderr_text();
    assert!(
        stderr.contains("DEBUG") || stderr.contains("INFO"),
        "no logs on stderr: {stderr}"
    );
    for secret in secrets {
        assert!(
            !stdout.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "{secret} is on stdout"
        );
        assert!(!stderr.contains(secret), "{secret} is on stderr");
        // Not even its distinctive part.
        let tail = &secret[secret.len() - 6..];
        assert!(!stderr.contains(tail), "part of {secret} is on stderr");
    }
}

// ---------------------------------------------------------------------------
// 11: model parameters

#[test]
fn set_model_parameter_checks_names_and_ranges() {
    let (fake, _dir, mut d) = streaming_daemon(Behavior::reply("Tempered.", 2));
    let conv = create_conversation(&mut d);
    let cid = conv["conversationId"].as_str().unwrap().to_string();
    let agent_id = conv["agentId"].as_str().unwrap().to_string();

    let r = d.call(
        "SetModelParameter",
        json!({"agentId": agent_id, "name": "Temperature", "value": "0.5"}),
    );
    assert_eq!(r, json!({}));
    let (_, fin) = d.turn(&cid, "be a bit creative", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let body = fake.requests().last().unwrap().body.clone();
    assert_eq!(body["temperature"], 0.5, "{body}");

    let e = d.call_err(
        "SetModelParameter",
        json!({"agentId": agent_id, "name": "temp", "value": 1}),
    );
    assert_eq!(e["data"]["kind"], "invalidParameter", "{e}");
    let message = e["message"].as_str().unwrap();
    assert!(message.contains("temperature"), "{message}");
    assert!(message.contains("top_p"), "{message}");

    let e = d.call_err(
        "SetModelParameter",
        json!({"agentId": agent_id, "name": "temperature", "value": 5}),
    );
    assert_eq!(e["data"]["kind"], "invalidParameter", "{e}");
    let e = d.call_err(
        "SetModelParameter",
        json!({"agentId": agent_id, "name": "max_tokens", "value": "lots"}),
    );
    assert_eq!(e["data"]["kind"], "invalidParameter", "{e}");
    let e = d.call_err(
        "SetModelParameter",
        json!({"agentId": "no-such-agent", "name": "temperature", "value": 1}),
    );
    assert_eq!(e["data"]["kind"], "unknownAgent", "{e}");

    // The refused values changed nothing.
    let (_, fin) = d.turn(&cid, "again", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let body = fake.requests().last().unwrap().body.clone();
    assert_eq!(body["temperature"], 0.5, "{body}");
    assert!(body.get("max_tokens").is_none(), "{body}");

    // `null` removes it.
    d.call(
        "SetModelParameter",
        json!({"agentId": agent_id, "name": "temperature", "value": null}),
    );
    let (_, fin) = d.turn(&cid, "once more", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let body = fake.requests().last().unwrap().body.clone();
    assert!(body.get("temperature").is_none(), "{body}");
    assert!(d.shutdown(EXIT).success());
}

// ---------------------------------------------------------------------------
// 12: no streaming

#[test]
fn streaming_off_sends_no_chunks() {
    let fake = fake(Behavior::reply("Whole reply at once.", 4));
    let dir = tempfile::tempdir().unwrap();
    let mut d = start(dir.path(), Framing::Lines, &fake);
    let init = initialize(&mut d, false);
    assert_eq!(init["capabilities"]["streaming"], false, "{init}");
    let conv = create_conversation(&mut d);
    let cid = conv["conversationId"].as_str().unwrap().to_string();
    let (turn_id, fin) = d.turn(&cid, "no streaming please", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(fin["summary"], "Whole reply at once.");
    assert!(fin["usage"].is_object(), "{fin}");
    let body = fake.requests().last().unwrap().body.clone();
    assert_ne!(body.get("stream"), Some(&json!(true)), "{body}");
    assert_eq!(d.history(&cid).len(), 2);

    // Prompts of agents do not stream either.
    let agent = d.call(
        "CreateAIAgent",
        json!({"serviceProvider": "openai", "model": MODEL}),
    );
    let sent = d.call(
        "SendPrompt",
        json!({"agentId": agent["agentId"], "prompt": "hi"}),
    );
    let rid = sent["requestId"].as_str().unwrap().to_string();
    let resp = d.wait_notification(
        |m| m["method"] == "OnPromptResponse" && m["params"]["requestId"] == rid.as_str(),
        TURN,
    );
    assert_eq!(resp["params"]["isSuccess"], true, "{resp}");
    assert!(d.shutdown(EXIT).success());
    // With every output read.
    let (chunks, finals) = d.turn_events(&turn_id);
    assert!(chunks.is_empty(), "chunks were sent: {chunks:?}");
    assert_eq!(finals.len(), 1);
    let chunk_methods = ["OnFeatureResponseChunk", "OnPromptResponseChunk"];
    assert!(
        !d.log()
            .iter()
            .any(|m| chunk_methods.iter().any(|c| m["method"] == *c)),
        "a chunk notification was sent"
    );
}

// ---------------------------------------------------------------------------
// Beyond the list: queues, shutdown, agents, components, conversation management

#[test]
fn turns_of_one_conversation_run_in_order_and_see_each_other() {
    let (fake, _dir, mut d) = streaming_daemon(Behavior::reply("Noted.", 2));
    let conv = create_conversation(&mut d);
    let cid = conv["conversationId"].as_str().unwrap().to_string();

    // Three messages at once, in both accepted shapes.
    let messages = [
        json!("first"),
        json!({"role": "user", "content": "second"}),
        json!({"role": "user", "content": [{"type": "text", "text": "third"}]}),
    ];
    let ids: Vec<i64> = messages
        .iter()
        .map(|m| d.send_request("OnNewMessage", json!({"conversationId": cid, "message": m})))
        .collect();
    let turn_ids: Vec<String> = ids
        .iter()
        .map(|id| {
            let r = d.wait_response(&json!(id), TURN);
            r["result"]["turnId"]
                .as_str()
                .unwrap_or_else(|| panic!("{r}"))
                .to_string()
        })
        .collect();
    for t in &turn_ids {
        assert_eq!(d.wait_final(t, TURN)["params"]["isSuccess"], true);
    }
    let finals: Vec<usize> = turn_ids.iter().map(|t| d.turn_events(t).1[0]).collect();
    assert!(
        finals.windows(2).all(|w| w[0] < w[1]),
        "turns ended out of order"
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        requests[2].body["messages"],
        json!([
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": "second"},
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": "third"},
        ])
    );
    let texts: Vec<String> = d.history(&cid).iter().map(text_of).collect();
    assert_eq!(
        texts,
        ["first", "Noted.", "second", "Noted.", "third", "Noted."]
    );

    // Empty messages are refused.
    let e = d.call_err(
        "OnNewMessage",
        json!({"conversationId": cid, "message": {"role": "user", "content": []}}),
    );
    assert_eq!(e["data"]["kind"], "invalidParams", "{e}");
    assert!(d.shutdown(EXIT).success());
}

#[test]
fn empty_text_message_is_refused() {
    let (fake, _dir, mut d) = streaming_daemon(Behavior::reply("Should not be asked.", 2));
    let conv = create_conversation(&mut d);
    let cid = conv["conversationId"].as_str().unwrap().to_string();
    let e = d.call_err(
        "OnNewMessage",
        json!({"conversationId": cid, "message": ""}),
    );
    assert_eq!(e["data"]["kind"], "invalidParams", "{e}");
    assert!(d.shutdown(EXIT).success());
    assert!(fake.requests().is_empty());
}

#[test]
fn shutdown_cancels_running_and_queued_turns_and_exits() {
    let fake = fake(slow_stream());
    let dir = tempfile::tempdir().unwrap();
    let mut d = start(dir.path(), Framing::ContentLength, &fake);
    initialize(&mut d, true);
    let conv = create_conversation(&mut d);
    let cid = conv["conversationId"].as_str().unwrap().to_string();
    let running = d.send_message(&cid, "count slowly");
    let queued = d.send_message(&cid, "and again");
    d.wait_first_chunk(&running, TURN);
    let asked = Instant::now();
    let status = d.shutdown(EXIT);
    let took = asked.elapsed();
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(took < Duration::from_secs(3), "Shutdown took {took:?}");
    for t in [&running, &queued] {
        let fin = d.wait_final(t, Duration::ZERO)["params"].clone();
        assert_eq!(fin["isSuccess"], false, "{fin}");
        assert_eq!(fin["error"]["kind"], "cancelled", "{fin}");
    }
    assert_eq!(
        fake.requests().len(),
        1,
        "the queued turn reached the provider"
    );
    strict_content_length_frames(&d.raw_stdout()).unwrap();
}

#[test]
fn end_of_input_ends_a_turn_waiting_on_a_client_feature() {
    let (_fake, _dir, mut d) = streaming_daemon(Behavior::reply("unused", 2));
    d.call(
        "RegisterFeature",
        json!({"name": "client-side", "description": ""}),
    );
    let (cid, _) = d.create_conversation(
        json!({"feature": "client-side", "serviceProvider": "openai", "model": "m"}),
    );
    let turn_id = d.send_message(&cid, "hello feature");
    d.wait_notification(|m| m["method"] == "OnNewMessage", TURN);
    // The client that hosts the feature goes away without answering.
    d.close_stdin();
    let status = d.wait_exit(EXIT);
    assert_eq!(status.code(), Some(0), "{status:?}");
    let fin = d.wait_final(&turn_id, Duration::ZERO)["params"].clone();
    assert_eq!(fin["isSuccess"], false, "{fin}");
}

#[test]
fn client_feature_progress_and_cancel() {
    let fake = fake(Behavior::reply("unused", 2));
    let dir = tempfile::tempdir().unwrap();
    let mut d = start(dir.path(), Framing::ContentLength, &fake);
    initialize(&mut d, true);
    d.call(
        "RegisterFeature",
        json!({"name": "stepper", "description": "steps"}),
    );
    let (cid, _) = d.create_conversation(
        json!({"feature": "stepper", "serviceProvider": "openai", "model": "m"}),
    );

    let turn_id = d.send_message(&cid, "do it in steps");
    d.wait_notification(|m| m["method"] == "OnNewMessage", TURN);
    // A step (final: false) is forwarded and does not end the turn.
    d.call(
        "OnFeatureResponse",
        json!({"conversationId": cid, "turnId": turn_id, "summary": "step 1", "detailedResponse": [], "final": false}),
    );
    let step = d.wait_notification(
        |m| m["method"] == "OnFeatureResponse" && m["params"]["final"] == false,
        TURN,
    );
    assert_eq!(step["params"]["summary"], "step 1", "{step}");
    assert_eq!(step["params"]["turnId"], turn_id.as_str(), "{step}");
    // An answer naming another turn is refused.
    let e = d.call_err(
        "OnFeatureResponse",
        json!({"conversationId": cid, "turnId": "not-this-turn", "summary": "x"}),
    );
    assert_eq!(e["data"]["kind"], "invalidParams", "{e}");

    let r = d.call("Cancel", json!({"turnId": turn_id}));
    assert_eq!(r["cancelled"], true, "{r}");
    let fin = d.wait_final(&turn_id, Duration::from_secs(3))["params"].clone();
    assert_eq!(fin["error"]["kind"], "cancelled", "{fin}");
    // Too late now.
    let e = d.call_err(
        "OnFeatureResponse",
        json!({"conversationId": cid, "summary": "late"}),
    );
    assert_eq!(e["data"]["kind"], "unknownConversation", "{e}");

    // The next turn is forwarded again.
    let next = d.send_message(&cid, "again");
    let note = d.wait_notification(
        |m| m["method"] == "OnNewMessage" && m["params"]["turnId"] == next.as_str(),
        TURN,
    );
    assert_eq!(text_of(&note["params"]["message"]), "again");
    d.call(
        "OnFeatureResponse",
        json!({"conversationId": cid, "summary": "ok"}),
    );
    let fin = d.wait_final(&next, TURN)["params"].clone();
    assert_eq!(fin["summary"], "ok", "{fin}");
    assert_eq!(fin["detailedResponse"], json!([]), "{fin}");
    assert!(d.shutdown(EXIT).success());
}

#[test]
fn standalone_agents_prompt_cancel_and_remove() {
    let (fake, _dir, mut d) = streaming_daemon(Behavior::reply("Agent reply.", 3));

    let agent = d.call(
        "CreateAIAgent",
        json!({"serviceProvider": "openai", "model": "agent-model"}),
    );
    let agent_id = agent["agentId"].as_str().unwrap().to_string();
    let sent = d.call(
        "SendPrompt",
        json!({"agentId": agent_id, "prompt": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Hi agent"},
        ]}),
    );
    let rid = sent["requestId"].as_str().unwrap().to_string();
    let resp = d.wait_notification(
        |m| m["method"] == "OnPromptResponse" && m["params"]["requestId"] == rid.as_str(),
        TURN,
    )["params"]
        .clone();
    assert_eq!(resp["isSuccess"], true, "{resp}");
    assert_eq!(text_of(&resp["message"]), "Agent reply.");
    assert!(resp["usage"].is_object(), "{resp}");
    let body = fake.requests().last().unwrap().body.clone();
    assert_eq!(body["model"], "agent-model");
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "You are terse."})
    );

    let h = d.call("GetHistory", json!({"agentId": agent_id}));
    let roles: Vec<&str> = h
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant"], "{h}");

    // A slow prompt, cancelled by its request id.
    fake.set_default(slow_stream());
    let sent = d.call(
        "SendPrompt",
        json!({"agentId": agent_id, "prompt": "count"}),
    );
    let rid = sent["requestId"].as_str().unwrap().to_string();
    d.wait_notification(
        |m| m["method"] == "OnPromptResponseChunk" && m["params"]["requestId"] == rid.as_str(),
        TURN,
    );
    let r = d.call("Cancel", json!({"requestId": rid}));
    assert_eq!(r["cancelled"], true, "{r}");
    let resp = d.wait_notification(
        |m| m["method"] == "OnPromptResponse" && m["params"]["requestId"] == rid.as_str(),
        Duration::from_secs(3),
    )["params"]
        .clone();
    assert_eq!(resp["isSuccess"], false, "{resp}");
    assert_eq!(resp["error"]["kind"], "cancelled", "{resp}");
    let h = d.call("GetHistory", json!({"agentId": agent_id}));
    assert_eq!(
        h.as_array().unwrap().len(),
        3,
        "a cancelled prompt was kept: {h}"
    );

    // A conversation's agent cannot be removed directly.
    let conv = create_conversation(&mut d);
    let e = d.call_err("RemoveAIAgent", json!({"agentId": conv["agentId"]}));
    assert_eq!(e["data"]["kind"], "invalidParams", "{e}");

    assert_eq!(
        d.call("RemoveAIAgent", json!({"agentId": agent_id})),
        json!({})
    );
    let e = d.call_err("GetHistory", json!({"agentId": agent_id}));
    assert_eq!(e["data"]["kind"], "unknownAgent", "{e}");
    let e = d.call_err("RemoveAIAgent", json!({"agentId": agent_id}));
    assert_eq!(e["data"]["kind"], "unknownAgent", "{e}");
    assert!(d.shutdown(EXIT).success());
}

#[test]
fn runtime_components() {
    let (fake, _dir, mut d) = streaming_daemon(Behavior::reply("Configured.", 2));

    let r = d.call(
        "CreateModelConfiguration",
        json!({"name": "precise", "format": "openai-chat", "model": "precise-model", "parameters": {"temperature": 0.1, "max_tokens": 50}}),
    );
    assert_eq!(r, json!({}));
    let comps = d.call("ListComponents", json!({}));
    let mc = comps["modelConfigurations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "precise")
        .cloned()
        .unwrap_or_else(|| panic!("{comps}"));
    assert_eq!(mc["model"], "precise-model");
    assert_eq!(mc["parameters"]["max_tokens"], 50);

    let conv = d.call(
        "CreateConversation",
        json!({"serviceProvider": "openai", "modelConfiguration": "precise"}),
    );
    assert_eq!(conv["model"], "precise-model", "{conv}");
    let cid = conv["conversationId"].as_str().unwrap().to_string();
    let (_, fin) = d.turn(&cid, "be precise", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let body = fake.requests().last().unwrap().body.clone();
    assert_eq!(body["model"], "precise-model");
    assert_eq!(body["temperature"], 0.1);
    assert_eq!(body["max_tokens"], 50);

    // Refusals.
    let e = d.call_err(
        "CreateModelConfiguration",
        json!({"name": "bad", "format": "no-such-format", "model": "x"}),
    );
    assert_eq!(e["data"]["kind"], "unknownComponent", "{e}");
    let e = d.call_err(
        "CreateModelConfiguration",
        json!({"name": "bad", "format": "openai-chat", "model": "x", "parameters": {"temperature": 9}}),
    );
    assert_eq!(e["data"]["kind"], "invalidParameter", "{e}");
    let e = d.call_err(
        "CreateServiceProvider",
        json!({"name": "bad", "kind": "no-such-kind", "settings": {}}),
    );
    assert_eq!(e["data"]["kind"], "unknownComponent", "{e}");
    let e = d.call_err(
        "CreateServiceProvider",
        json!({"name": "bad", "kind": "openai", "settings": {"no_such_setting": 1}}),
    );
    assert_eq!(e["data"]["kind"], "invalidParams", "{e}");
    let e = d.call_err(
        "CreateConversation",
        json!({"serviceProvider": "no-such-provider", "model": "x"}),
    );
    assert_eq!(e["data"]["kind"], "unknownComponent", "{e}");
    let e = d.call_err(
        "CreateConversation",
        json!({"serviceProvider": "openai", "modelConfiguration": "precise", "model": "x"}),
    );
    assert_eq!(e["data"]["kind"], "invalidParams", "{e}");
    let e = d.call_err(
        "CreateConversation",
        json!({"feature": "no-such-feature", "serviceProvider": "openai", "model": "x"}),
    );
    assert_eq!(e["data"]["kind"], "unknownComponent", "{e}");
    let e = d.call_err(
        "CreateConversation",
        json!({"serviceProvider": "openai", "model": "x", "parameters": {"temp": 1}}),
    );
    assert_eq!(e["data"]["kind"], "invalidParameter", "{e}");

    assert_eq!(
        d.call("RemoveComponent", json!({"name": "precise"})),
        json!({})
    );
    let e = d.call_err("RemoveComponent", json!({"name": "precise"}));
    assert_eq!(e["data"]["kind"], "unknownComponent", "{e}");
    let e = d.call_err(
        "CreateConversation",
        json!({"serviceProvider": "openai", "modelConfiguration": "precise"}),
    );
    assert_eq!(e["data"]["kind"], "unknownComponent", "{e}");
    // The open conversation keeps its own copy.
    let (_, fin) = d.turn(&cid, "still precise?", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert!(d.shutdown(EXIT).success());
}

#[test]
fn list_page_remove_and_delete_conversations() {
    const N: usize = 7;
    let (_fake, _dir, mut d) = streaming_daemon(Behavior::reply("Listed.", 1));
    let mut cids = Vec::new();
    for i in 0..N {
        let conv = create_conversation(&mut d);
        let cid = conv["conversationId"].as_str().unwrap().to_string();
        let (_, fin) = d.turn(&cid, format!("conversation {i}"), TURN);
        assert_eq!(fin["isSuccess"], true, "{fin}");
        cids.push(cid);
    }
    let long = format!("{} end", "word ".repeat(30));
    let long_conv = create_conversation(&mut d);
    let long_id = long_conv["conversationId"].as_str().unwrap().to_string();
    let (_, fin) = d.turn(&long_id, &long, TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let newest = d.call("ListConversations", json!({"pageSize": 1}));
    let rec = &newest["conversations"][0];
    assert_eq!(rec["id"], long_id.as_str(), "{newest}");
    let title = rec["title"].as_str().unwrap();
    assert_eq!(title.chars().count(), 80, "{title:?}");
    assert!(
        title.starts_with("word word") && title.ends_with('…'),
        "{title:?}"
    );
    assert!(newest["nextCursor"].is_string(), "{newest}");
    assert_eq!(
        d.call("DeleteConversation", json!({"conversationId": long_id})),
        json!({})
    );
    let (titled_id, _) = d.create_conversation(
        json!({"serviceProvider": "openai", "model": MODEL, "title": "  My   titled\nchat  "}),
    );
    // Listed once a turn is committed; the client's title stays.
    let (_, fin) = d.turn(&titled_id, "hello", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let (eph_id, _) = d.create_conversation(
        json!({"serviceProvider": "openai", "model": MODEL, "ephemeral": true}),
    );
    let (_, fin) = d.turn(&eph_id, "forget me", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");

    // Pages of 3 cover every stored conversation once, newest first.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..10 {
        let mut p = json!({"pageSize": 3});
        if let Some(c) = &cursor {
            p["cursor"] = json!(c);
        }
        let page = d.call("ListConversations", p);
        let convs = page["conversations"].as_array().unwrap();
        assert!(convs.len() <= 3);
        seen.extend(convs.iter().cloned());
        match page["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    let ids: Vec<&str> = seen.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), N + 1, "{ids:?}");
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        N + 1,
        "a conversation was listed twice: {ids:?}"
    );
    assert!(
        !ids.contains(&eph_id.as_str()),
        "an ephemeral conversation was stored"
    );
    let updated: Vec<i64> = seen
        .iter()
        .map(|c| c["updatedAt"].as_i64().unwrap())
        .collect();
    assert!(
        updated.windows(2).all(|w| w[0] >= w[1]),
        "not newest first: {updated:?}"
    );
    let titled_rec = seen.iter().find(|c| c["id"] == titled_id.as_str()).unwrap();
    assert_eq!(titled_rec["title"], "My titled chat");
    let first = seen.iter().find(|c| c["id"] == cids[0].as_str()).unwrap();
    assert_eq!(first["title"], "conversation 0");

    // History pages.
    let page = d.call(
        "GetConversationHistory",
        json!({"conversationId": cids[0], "pageSize": 1}),
    );
    assert_eq!(page["messages"].as_array().unwrap().len(), 1);
    let cursor = page["nextCursor"]
        .as_str()
        .expect("a next cursor")
        .to_string();
    let page = d.call(
        "GetConversationHistory",
        json!({"conversationId": cids[0], "pageSize": 1, "cursor": cursor}),
    );
    assert_eq!(page["messages"][0]["role"], "assistant", "{page}");
    assert!(page.get("nextCursor").is_none(), "{page}");

    // RemoveConversation closes it but keeps it stored.
    assert_eq!(
        d.call("RemoveConversation", json!({"conversationId": cids[1]})),
        json!({})
    );
    let e = d.call_err(
        "OnNewMessage",
        json!({"conversationId": cids[1], "message": "hi"}),
    );
    assert_eq!(e["data"]["kind"], "unknownConversation", "{e}");
    let e = d.call_err("RemoveConversation", json!({"conversationId": cids[1]}));
    assert_eq!(e["data"]["kind"], "unknownConversation", "{e}");
    assert_eq!(d.history(&cids[1]).len(), 2);
    let resumed = d.call("ResumeConversation", json!({"conversationId": cids[1]}));
    assert_eq!(resumed["conversationId"], cids[1].as_str());

    // DeleteConversation removes it for good.
    assert_eq!(
        d.call("DeleteConversation", json!({"conversationId": cids[2]})),
        json!({})
    );
    let e = d.call_err(
        "GetConversationHistory",
        json!({"conversationId": cids[2], "pageSize": 10}),
    );
    assert_eq!(e["data"]["kind"], "unknownConversation", "{e}");
    let e = d.call_err("ResumeConversation", json!({"conversationId": cids[2]}));
    assert_eq!(e["data"]["kind"], "unknownConversation", "{e}");
    let listed = d.call("ListConversations", json!({"pageSize": 100}));
    assert_eq!(listed["conversations"].as_array().unwrap().len(), N);

    // Prefixes: none matches, or too short to be unique ("0" starts every ULID of this era).
    let e = d.call_err("ResumeConversation", json!({"conversationId": "ZZZZZZZZ"}));
    assert_eq!(e["data"]["kind"], "unknownConversation", "{e}");
    let e = d.call_err("ResumeConversation", json!({"conversationId": "0"}));
    assert_eq!(e["data"]["kind"], "unknownConversation", "{e}");
    assert!(e["message"].as_str().unwrap().contains("several"), "{e}");
    assert!(d.shutdown(EXIT).success());
}

#[test]
fn end_of_input_inside_a_frame() {
    let fake = fake(Behavior::reply("unused", 1));
    let dir = tempfile::tempdir().unwrap();

    // Lines: a last request without its newline is still answered.
    let mut d = Daemon::spawn(&config(dir.path(), Framing::Lines, "lines", &fake));
    d.send_raw(br#"{"jsonrpc":"2.0","id":"last","method":"ListComponents"}"#);
    d.close_stdin();
    assert_eq!(d.wait_exit(EXIT).code(), Some(0));
    let r = d.wait_response(&json!("last"), Duration::ZERO);
    assert!(r["result"]["serviceProviders"].is_array(), "{r}");

    // Content-Length: a frame cut short is a parse error, then a clean exit.
    let mut d = Daemon::spawn(&config(dir.path(), Framing::ContentLength, "cl", &fake));
    initialize(&mut d, true);
    d.send_raw(b"Content-Length: 100\r\n\r\n{\"jsonrpc\":");
    d.close_stdin();
    assert_eq!(d.wait_exit(EXIT).code(), Some(0));
    let r = d.wait_response(&Value::Null, Duration::ZERO);
    assert_eq!(r["error"]["code"], -32700, "{r}");
    strict_content_length_frames(&d.raw_stdout()).unwrap();
}

#[test]
fn large_messages_pass_through_both_framings() {
    let fake = fake(Behavior::reply("Got it.", 1));
    let dir = tempfile::tempdir().unwrap();
    // About 1 MB of text with multi-byte characters and JSON-escaped ones.
    let big: String = "ünïcødé \"quoted\" \\ line\n ".repeat(40_000);
    for (framing, name) in [(Framing::ContentLength, "cl"), (Framing::Lines, "lines")] {
        let mut d = Daemon::spawn(&config(dir.path(), framing, name, &fake));
        initialize(&mut d, true);
        let conv = create_conversation(&mut d);
        let cid = conv["conversationId"].as_str().unwrap().to_string();
        let (_, fin) = d.turn(&cid, &big, TURN);
        assert_eq!(fin["isSuccess"], true, "{fin}");
        let body = fake.requests().last().unwrap().body.clone();
        assert!(
            body["messages"][0]["content"] == big.as_str(),
            "the message was altered on the way ({name})"
        );
        let stored = d.history(&cid);
        assert_eq!(
            text_of(&stored[0]),
            big,
            "the stored message was altered ({name})"
        );
        assert!(d.shutdown(EXIT).success());
    }
}

/// Starts `n` daemons on one data dir at once and asks each for its conversations;
/// returns the failures (stderr of a daemon that did not answer).
fn start_together(root: &Path, fake: &FakeOpenAi, n: usize) -> (Vec<Daemon>, Vec<String>) {
    let mut ds: Vec<Daemon> = (0..n)
        .map(|i| Daemon::spawn(&config(root, Framing::Lines, &format!("d{i}"), fake)))
        .collect();
    let mut failures = Vec::new();
    for d in ds.iter_mut() {
        let answered = d
            .try_send_raw(
                b"{\"jsonrpc\":\"2.0\",\"id\":\"list\",\"method\":\"ListConversations\"}\n",
            )
            .is_ok()
            && d.try_wait_for(
                |m| m["id"] == "list" && m.get("result").is_some(),
                Duration::from_secs(10),
            )
            .is_some();
        if !answered {
            failures.push(d.stderr_text());
        }
    }
    (ds, failures)
}

#[test]
fn two_daemons_share_a_data_dir() {
    let fake = fake(Behavior::reply("Shared.", 2));
    let dir = tempfile::tempdir().unwrap();
    // Create the history first (see the next test for a fresh folder).
    let mut d = Daemon::spawn(&config(dir.path(), Framing::Lines, "init", &fake));
    d.call("ListConversations", json!({}));
    d.close_stdin();
    assert!(d.wait_exit(EXIT).success());

    let (mut ds, failures) = start_together(dir.path(), &fake, 2);
    assert!(failures.is_empty(), "{failures:?}");
    let mut turns = Vec::new();
    for d in ds.iter_mut() {
        let mut mine = Vec::new();
        for _ in 0..3 {
            let conv = create_conversation(d);
            let cid = conv["conversationId"].as_str().unwrap().to_string();
            let turn_id = d.send_message(&cid, "shared history");
            mine.push((cid, turn_id));
        }
        turns.push(mine);
    }
    for (d, mine) in ds.iter_mut().zip(&turns) {
        for (_, turn_id) in mine {
            let fin = d.wait_final(turn_id, TURN)["params"].clone();
            assert_eq!(fin["isSuccess"], true, "{fin}");
        }
    }
    // Each sees the other's conversations.
    for d in ds.iter_mut() {
        let listed = d.call("ListConversations", json!({"pageSize": 100}));
        assert_eq!(
            listed["conversations"].as_array().unwrap().len(),
            6,
            "{listed}"
        );
        for (cid, _) in turns.iter().flatten() {
            assert_eq!(d.history(cid).len(), 2);
        }
    }
    for mut d in ds {
        assert!(d.shutdown(EXIT).success());
    }
}

#[test]
fn daemons_started_together_on_a_fresh_data_dir_all_start() {
    let fake = fake(Behavior::reply("unused", 1));
    for _ in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let (ds, failures) = start_together(dir.path(), &fake, 3);
        assert!(failures.is_empty(), "a daemon did not start: {failures:?}");
        drop(ds);
    }
}

#[test]
fn client_feature_can_report_a_failed_turn() {
    let fake = fake(Behavior::reply("unused", 1));
    let dir = tempfile::tempdir().unwrap();
    let mut d = start(dir.path(), Framing::Lines, &fake);
    d.call("RegisterFeature", json!({"name": "strict"}));
    let (cid, _) = d.create_conversation(
        json!({"feature": "strict", "serviceProvider": "openai", "model": "m"}),
    );
    let turn_id = d.send_message(&cid, "check this");
    d.wait_notification(|m| m["method"] == "OnNewMessage", TURN);
    d.call(
        "OnFeatureResponse",
        json!({"conversationId": cid, "summary": "could not check", "error": "the level is not loaded"}),
    );
    let fin = d.wait_final(&turn_id, TURN)["params"].clone();
    assert_eq!(fin["isSuccess"], false, "{fin}");
    assert_eq!(fin["error"]["kind"], "featureError", "{fin}");
    assert_eq!(fin["error"]["message"], "the level is not loaded", "{fin}");
    assert_eq!(fin["summary"], "could not check", "{fin}");
    assert!(d.shutdown(EXIT).success());
}

#[test]
fn image_parts_reach_the_provider_as_image_url() {
    let fake = fake(Behavior::reply("A red dot.", 2));
    let dir = tempfile::tempdir().unwrap();
    let mut d = start(dir.path(), Framing::Lines, &fake);
    let conv = create_conversation(&mut d);
    let cid = conv["conversationId"].as_str().unwrap().to_string();
    let message = json!({"role": "user", "content": [
        "What is in these?",
        {"type": "image", "mediaType": "image/png", "data": "iVBORw0KGgo="},
        {"type": "image", "url": "https://example.invalid/cat.jpg"}
    ]});
    let (_, fin) = d.turn(&cid, message, TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let body = fake.requests().last().unwrap().body.clone();
    let parts = body["messages"][0]["content"].as_array().unwrap().clone();
    assert_eq!(
        parts[0],
        json!({"type": "text", "text": "What is in these?"})
    );
    assert_eq!(
        parts[1]["image_url"]["url"],
        "data:image/png;base64,iVBORw0KGgo="
    );
    assert_eq!(
        parts[2]["image_url"]["url"],
        "https://example.invalid/cat.jpg"
    );
    // The stored history keeps the parts as sent.
    let h = d.call(
        "GetConversationHistory",
        json!({"conversationId": cid, "pageSize": 10}),
    );
    assert_eq!(
        h["messages"][0]["content"][1]["mediaType"], "image/png",
        "{h}"
    );
    assert!(d.shutdown(EXIT).success());
}

#[test]
fn search_conversations_finds_every_word_with_highlights() {
    let (_fake, _dir, mut d) = streaming_daemon(Behavior::reply("Paris is the capital.", 2));
    let cid = create_conversation(&mut d)["conversationId"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, fin) = d.turn(&cid, "What is the capital of France?", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let r = d.call("SearchConversations", json!({"query": "CAPITAL france"}));
    let hits = r["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 1, "{r}");
    assert_eq!(hits[0]["conversationId"], cid.as_str());
    assert_eq!(hits[0]["seq"], 1);
    assert_eq!(hits[0]["role"], "user");
    assert_eq!(hits[0]["snippet"], "What is the **capital** of **France**?");
    let r = d.call(
        "SearchConversations",
        json!({"query": "capital", "limit": 5}),
    );
    assert_eq!(r["hits"].as_array().unwrap().len(), 2, "{r}");
    let e = d.call_err("SearchConversations", json!({"query": " "}));
    assert_error_kind(&e, -32602, "invalidParams");
}
