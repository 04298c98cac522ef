//! Client-hosted features: a feature the client registers drives the turn, reports progress
//! and failure, and is cancelled or left when the input ends.

use std::time::Duration;

use serde_json::json;

use crate::support::daemon::{
    daemon_on, streaming_daemon, streaming_daemon_on, text_of, EXIT, TURN,
};
use crate::support::fake_openai::Behavior;
use crate::support::rpc_client::Framing;

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
    let (_fake, _dir, mut d) =
        streaming_daemon_on(Behavior::reply("unused", 2), Framing::ContentLength);
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
fn client_feature_can_report_a_failed_turn() {
    let (_fake, _dir, mut d) = daemon_on(Behavior::reply("unused", 1), Framing::Lines);
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
