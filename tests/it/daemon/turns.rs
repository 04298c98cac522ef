//! Turns: cancellation, many conversations at once, the order of one conversation's turns,
//! refused messages, a client that does not stream, image parts, and model parameters.

use std::time::Duration;

use serde_json::json;

use crate::support::daemon::{
    conversation_id, create_conversation, daemon_on, initialize, slow_stream, streaming_daemon,
    streaming_daemon_on, text_of, turn_ids_of, EXIT, MODEL, TURN,
};
use crate::support::fake_openai::Behavior;
use crate::support::poll::wait_until;
use crate::support::rpc_client::Framing;

#[test]
fn cancel_stops_a_streaming_turn() {
    let (fake, _dir, mut d) = streaming_daemon(slow_stream());
    let cid = conversation_id(&mut d);

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
    let (_fake, _dir, mut d) = streaming_daemon_on(slow_stream(), Framing::ContentLength);
    let cid = conversation_id(&mut d);

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
    let turn_ids = turn_ids_of(&mut d, &ids);
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

#[test]
fn turns_of_one_conversation_run_in_order_and_see_each_other() {
    let (fake, _dir, mut d) = streaming_daemon(Behavior::reply("Noted.", 2));
    let cid = conversation_id(&mut d);

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
    let turn_ids = turn_ids_of(&mut d, &ids);
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
    let cid = conversation_id(&mut d);
    let e = d.call_err(
        "OnNewMessage",
        json!({"conversationId": cid, "message": ""}),
    );
    assert_eq!(e["data"]["kind"], "invalidParams", "{e}");
    assert!(d.shutdown(EXIT).success());
    assert!(fake.requests().is_empty());
}

#[test]
fn streaming_off_sends_no_chunks() {
    let (fake, _dir, mut d) = daemon_on(Behavior::reply("Whole reply at once.", 4), Framing::Lines);
    let init = initialize(&mut d, false);
    assert_eq!(init["capabilities"]["streaming"], false, "{init}");
    let cid = conversation_id(&mut d);
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

#[test]
fn image_parts_reach_the_provider_as_image_url() {
    let (fake, _dir, mut d) = daemon_on(Behavior::reply("A red dot.", 2), Framing::Lines);
    let cid = conversation_id(&mut d);
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
