//! The `tools` feature's calls that involve the client, against fake plugin modules: a
//! confirmation asked of the client and its outcome told to the model, actions sent as
//! `DoAction` notifications and the collect mode posting the next message, and a client that
//! goes away during a confirmation without hanging the daemon.

use serde_json::json;

use crate::daemon_tools::{calls, tools_daemon, WAIT};
use crate::support::fake_openai;
use crate::support::fake_plugin::{Answer, FakePlugin};

#[test]
fn confirmations_are_asked_of_the_client_and_their_outcome_told_to_the_model() {
    let events = FakePlugin::start(None);
    let confirmation = format!("{}/confirmations/873YDBAI", events.base_url());
    for _ in 0..2 {
        events.push(
            "eventParticipation",
            Answer::json(json!({
                "text": "Confirm the registration to E1?",
                "askConfirmation": true,
                "confirmationLink": confirmation,
            })),
        );
    }
    let fake = fake_openai::FakeOpenAi::start(0, fake_openai::Behavior::text("unused")).unwrap();
    let args = r#"{"eventId":"E1","participation":"YES"}"#;
    fake.push(calls("events__eventParticipation", args));
    fake.push(fake_openai::Behavior::text("You are registered."));
    fake.push(calls("events__eventParticipation", args));
    fake.push(fake_openai::Behavior::text("Nothing was changed."));
    let dir = tempfile::tempdir().unwrap();
    let (mut d, cid) = tools_daemon(dir.path(), &fake, &events);

    for (confirmed, summary) in [
        (true, "You are registered."),
        (false, "Nothing was changed."),
    ] {
        let turn_id = d.send_message(&cid, "Register me to E1");
        let ask = d.wait_for(
            |m| m["method"] == "RequestConfirmation" && m["params"]["turnId"] == turn_id,
            WAIT,
            "a RequestConfirmation request",
        );
        assert!(ask["id"].is_string(), "a request has an id: {ask}");
        assert_eq!(ask["params"]["text"], "Confirm the registration to E1?");
        assert_eq!(ask["params"]["link"], confirmation);
        assert_eq!(ask["params"]["tool"], "events.eventParticipation");
        d.send_value(
            &json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"confirmed": confirmed}}),
        );
        let fin = d.wait_final(&turn_id, WAIT)["params"].clone();
        assert_eq!(fin["isSuccess"], true, "{fin}");
        assert_eq!(fin["summary"], summary);
        let outcome = if confirmed { "accepted" } else { "refused" };
        assert!(
            fin["detailedResponse"].to_string().contains(&format!(
                "confirmation for events.eventParticipation: {outcome}"
            )),
            "{fin}"
        );
    }
    // The link was POSTed once: for the accepted one only.
    let posted: Vec<_> = events
        .requests()
        .into_iter()
        .filter(|r| r.path == "/confirmations/873YDBAI")
        .collect();
    assert_eq!(posted.len(), 1);
    assert_eq!(posted[0].method, "POST");
    // The model was told each outcome.
    let requests = fake.requests();
    let told = |i: usize| {
        requests[i].body["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()["content"]
            .to_string()
    };
    assert!(
        told(1).contains("The user confirmed. The tool answered: confirmed 873YDBAI"),
        "{}",
        told(1)
    );
    assert!(told(3).contains("The user did not confirm"), "{}", told(3));
    assert!(d.shutdown(WAIT).success());
}

#[test]
fn actions_become_do_action_notifications_and_collect_mode_posts_the_next_message() {
    let events = FakePlugin::start(None);
    events.push(
        "getEvents",
        Answer::json(json!({
            "text": "Dance: [[ACTION.PLAY_ANIMATION.WAIT]]. What did you think of E1?",
            "actions": [{"code": "[[ACTION.PLAY_ANIMATION.WAIT]]", "type": "PLAY_ANIMATION", "animationId": "WAIT"}],
            "collectResponse": true,
            "collectResponseLink": format!("{}/collection/E1", events.base_url()),
        })),
    );
    let fake = fake_openai::FakeOpenAi::start(0, fake_openai::Behavior::text("unused")).unwrap();
    fake.push(calls("events__getEvents", "{}"));
    fake.push(fake_openai::Behavior::text(
        "Here is a dance [[ACTION.PLAY_ANIMATION.WAIT]] for you. What did you think of E1?",
    ));
    fake.push(fake_openai::Behavior::text("Thank you for your opinion."));
    let dir = tempfile::tempdir().unwrap();
    let (mut d, cid) = tools_daemon(dir.path(), &fake, &events);

    let (turn_id, fin) = d.turn(&cid, "Dance!", WAIT);
    assert_eq!(
        fin["summary"], "Here is a dance  for you. What did you think of E1?",
        "{fin}"
    );
    // The streamed text carries no marker either.
    let streamed = d.streamed(&turn_id).concat();
    assert_eq!(
        streamed,
        "Here is a dance  for you. What did you think of E1?"
    );
    let action = d
        .log()
        .iter()
        .find(|m| m["method"] == "DoAction")
        .cloned()
        .expect("a DoAction notification");
    assert_eq!(action["params"]["sequence"], 0);
    assert_eq!(action["params"]["turnId"], turn_id);
    assert_eq!(action["params"]["action"]["animationId"], "WAIT");
    assert!(action.get("id").is_none(), "DoAction is a notification");

    // The next message goes to the collect link, and the model is told.
    let (_, fin) = d.turn(&cid, "It was great fun.", WAIT);
    assert_eq!(fin["summary"], "Thank you for your opinion.");
    let collected: Vec<_> = events
        .requests()
        .into_iter()
        .filter(|r| r.path == "/collection/E1")
        .collect();
    assert_eq!(collected.len(), 1);
    assert_eq!(collected[0].body, json!({"text": "It was great fun."}));
    let last = fake.requests().last().unwrap().body["messages"].clone();
    assert!(
        last.to_string()
            .contains("was collected by events.getEvents"),
        "{last}"
    );
    // A third message is not collected again.
    fake.push(fake_openai::Behavior::text("Anything else?"));
    d.turn(&cid, "Bye", WAIT);
    assert_eq!(
        events
            .requests()
            .iter()
            .filter(|r| r.path == "/collection/E1")
            .count(),
        1
    );
    assert!(d.shutdown(WAIT).success());
}

#[test]
fn a_client_that_goes_away_during_a_confirmation_does_not_hang_the_daemon() {
    let events = FakePlugin::start(None);
    events.push(
        "eventParticipation",
        Answer::json(json!({
            "text": "Confirm?",
            "askConfirmation": true,
            "confirmationLink": format!("{}/confirmations/X", events.base_url()),
        })),
    );
    let fake = fake_openai::FakeOpenAi::start(
        0,
        fake_openai::Behavior::text("Not confirmed, nothing done."),
    )
    .unwrap();
    fake.push(calls(
        "events__eventParticipation",
        r#"{"eventId":"E1","participation":"YES"}"#,
    ));
    let dir = tempfile::tempdir().unwrap();
    let (mut d, cid) = tools_daemon(dir.path(), &fake, &events);
    let turn_id = d.send_message(&cid, "Register me");
    d.wait_for(
        |m| m["method"] == "RequestConfirmation",
        WAIT,
        "a RequestConfirmation request",
    );
    d.close_stdin();
    assert!(d.wait_exit(WAIT).success());
    let fin = d.wait_final(&turn_id, WAIT)["params"].clone();
    assert!(
        fin["detailedResponse"].to_string().contains("not answered"),
        "{fin}"
    );
    assert!(!events
        .requests()
        .iter()
        .any(|r| r.path == "/confirmations/X"));
}
