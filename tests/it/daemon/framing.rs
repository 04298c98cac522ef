//! Both framings (NDJSON lines and Content-Length frames): the chat flow over each, malformed
//! input and garbage frames the daemon reports and skips, input that ends inside a frame, and
//! large messages.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::daemon::{
    assert_error_kind, assert_streamed, config, create_conversation, daemon_on, fake, initialize,
    streaming_daemon, streaming_daemon_on, text_of, EXIT, MODEL, TURN,
};
use crate::support::fake_openai::{Behavior, FakeOpenAi};
use crate::support::rpc_client::{strict_content_length_frames, Daemon, Framing};

/// The whole chat flow of tests 1 and 2: components, a conversation, one
/// streamed turn, and the history seen both ways.
/// The reply of the chat flow; non-ASCII text checks that Content-Length counts
/// bytes, not characters.
const REPLY: &str = "Hello from the fake provider, streamed in pieces: café ☕ 🚀.";

/// Returns the daemon last, so that it is dropped (killed) before its folder.
fn chat_flow(framing: Framing) -> (FakeOpenAi, tempfile::TempDir, Daemon, String) {
    let reply_text = REPLY;
    let (fake, dir, mut d) = daemon_on(Behavior::reply(reply_text, 5), framing);

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
    let (_fake, _dir, mut d) =
        streaming_daemon_on(Behavior::reply("Framed fine.", 2), Framing::ContentLength);

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
