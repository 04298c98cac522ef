//! Fast tests of the daemon's dispatch and client port over the in-process scripted provider:
//! request validation and error codes, a turn's notifications, `$/cancelRequest`, and a
//! daemon→client request answered by the client.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::dispatch::Session;
use super::port::RpcPort;
use genai_core::feature::port::{ClientPort, Confirmation, TurnRef};
use genai_core::provider::scripted::{text_stream, Answer, ScriptedProvider};

const DEADLINE: Duration = Duration::from_secs(10);

struct Client {
    session: Session,
    out: genai_peer::Queue,
    provider: Arc<ScriptedProvider>,
}

impl Client {
    fn new(steps: Vec<Answer>) -> Client {
        let (fw, provider) = genai_core::session::scripted(steps);
        let (tx, out) = genai_peer::Outbox::new(genai_peer::outbox::DEFAULT_LIMIT);
        let peer = Arc::new(genai_peer::Peer::new(tx));
        let session = Session {
            fw,
            port: Arc::new(RpcPort::new(peer.clone())),
            peer,
            later: tokio_util::task::TaskTracker::new(),
        };
        Client {
            session,
            out,
            provider,
        }
    }

    /// Sends one request and returns its response.
    fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.session
            .handle(msg)
            .0
            .expect("a request gets a response")
    }

    /// The next frame the daemon writes by itself.
    async fn next(&mut self) -> Value {
        let frame = tokio::time::timeout(DEADLINE, self.out.recv())
            .await
            .expect("a frame in time")
            .expect("the port is open");
        serde_json::from_slice(&frame).unwrap()
    }

    /// Frames until the final `OnFeatureResponse`, by method.
    async fn until_final(&mut self) -> Vec<Value> {
        let mut frames = Vec::new();
        loop {
            let f = self.next().await;
            let last = f["method"] == "OnFeatureResponse" && f["params"]["final"] == true;
            frames.push(f);
            if last {
                return frames;
            }
        }
    }
}

fn error_of(response: &Value) -> (i64, Option<&str>) {
    let e = &response["error"];
    (e["code"].as_i64().unwrap(), e["data"]["kind"].as_str())
}

#[test]
fn bad_requests_get_their_codes_and_the_session_goes_on() {
    let mut c = Client::new(vec![]);
    let (r, _) = c.session.handle(json!([1, 2]));
    assert_eq!(error_of(&r.unwrap()).0, -32600);
    let (r, _) = c
        .session
        .handle(json!({"jsonrpc": "2.0", "id": {}, "method": "X"}));
    assert_eq!(error_of(&r.unwrap()).0, -32600);
    let (r, _) = c
        .session
        .handle(json!({"jsonrpc": "1.0", "id": 1, "method": "X"}));
    assert_eq!(r.unwrap()["id"], 1);
    let r = c.call(2, "NoSuchMethod", json!({}));
    assert_eq!(error_of(&r), (-32601, None));
    let r = c.call(3, "CreateConversation", json!({"serviceProvider": 7}));
    assert_eq!(error_of(&r), (-32602, Some("invalidParams")));
    let r = c.call(
        4,
        "OnNewMessage",
        json!({"conversationId": "x", "message": "hi"}),
    );
    assert_eq!(error_of(&r), (-32001, Some("unknownConversation")));
    let r = c.call(5, "GetHistory", json!({"agentId": "x"}));
    assert_eq!(error_of(&r), (-32002, Some("unknownAgent")));
    // A notification gets no response.
    let (r, _) = c
        .session
        .handle(json!({"jsonrpc": "2.0", "method": "Cancel", "params": {"turnId": "t"}}));
    assert!(r.is_none());
    let r = c.call(6, "ListComponents", json!(null));
    assert!(r["result"]["serviceProviders"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["name"] == "scripted" && p["origin"] == "runtime"));
}

#[test]
fn a_near_miss_method_is_told_the_method_it_meant_with_the_same_code() {
    let mut c = Client::new(vec![]);
    let message = |r: &Value| r["error"]["message"].as_str().unwrap().to_string();
    let r = c.call(1, "initialize", json!({}));
    assert_eq!(error_of(&r), (-32601, None));
    assert_eq!(
        message(&r),
        "unknown method `initialize` (did you mean `Initialize`?); see docs/PROTOCOL.md"
    );
    let r = c.call(2, "ListConversation", json!({}));
    assert!(
        message(&r).contains("did you mean `ListConversations`?"),
        "{r}"
    );
    let r = c.call(3, "listtools", json!({}));
    assert!(message(&r).contains("did you mean `ListTools`?"), "{r}");
    let r = c.call(4, "NoSuchMethod", json!({}));
    assert_eq!(error_of(&r), (-32601, None));
    assert!(!message(&r).contains("did you mean"), "{r}");
}

#[tokio::test]
async fn a_turn_streams_chunks_then_one_final_response() {
    let mut c = Client::new(vec![text_stream(&["He", "llo"], false)]);
    let r = c.call(
        1,
        "CreateConversation",
        json!({"serviceProvider": "scripted"}),
    );
    let cid = r["result"]["conversationId"].as_str().unwrap().to_string();
    assert_eq!(r["result"]["feature"], "assistant");
    let r = c.call(
        2,
        "OnNewMessage",
        json!({"conversationId": cid, "message": "hi"}),
    );
    let turn = r["result"]["turnId"].as_str().unwrap().to_string();
    let frames = c.until_final().await;
    let chunks: Vec<&str> = frames
        .iter()
        .filter(|f| f["method"] == "OnFeatureResponseChunk")
        .map(|f| f["params"]["delta"].as_str().unwrap())
        .collect();
    assert_eq!(chunks, ["He", "llo"]);
    let last = frames.last().unwrap();
    assert_eq!(last["jsonrpc"], "2.0");
    assert_eq!(last["params"]["turnId"], turn.as_str());
    assert_eq!(last["params"]["summary"], "Hello");
    assert_eq!(last["params"]["isSuccess"], true);
    let r = c.call(3, "GetConversationHistory", json!({"conversationId": cid}));
    assert_eq!(r["result"]["messages"].as_array().unwrap().len(), 2);
    assert_eq!(r["result"]["messages"][1]["role"], "assistant");
}

#[tokio::test]
async fn cancel_request_stops_the_turn_its_request_started() {
    let mut c = Client::new(vec![Answer::Hang]);
    let r = c.call(
        1,
        "CreateConversation",
        json!({"serviceProvider": "scripted"}),
    );
    let cid = r["result"]["conversationId"].as_str().unwrap().to_string();
    let provider = c.provider.clone();
    let asked = provider.asked.notified();
    c.call(
        7,
        "OnNewMessage",
        json!({"conversationId": cid, "message": "hi"}),
    );
    tokio::time::timeout(DEADLINE, asked).await.expect("asked");
    let r = c.call(8, "$/cancelRequest", json!({"id": 7}));
    assert_eq!(r["result"]["cancelled"], true);
    let last = c.until_final().await.pop().unwrap();
    assert_eq!(last["params"]["isSuccess"], false);
    assert_eq!(last["params"]["error"]["kind"], "cancelled");
    // The turn is over: its request id no longer names it.
    let r = c.call(9, "$/cancelRequest", json!({"id": 7}));
    assert_eq!(r["result"]["cancelled"], false);
}

#[tokio::test]
async fn a_confirmation_is_a_request_to_the_client_and_its_answer_comes_back() {
    let mut c = Client::new(vec![]);
    let port = c.session.port.clone();
    let turn = TurnRef {
        conversation_id: "c".into(),
        turn_id: "t".into(),
    };
    let ask = |tool: &str| Confirmation {
        turn: turn.clone(),
        text: "delete it?".into(),
        link: "http://127.0.0.1:1/confirm".into(),
        tool: tool.into(),
        tool_call_id: None,
    };
    let asking = tokio::spawn({
        let (port, request) = (port.clone(), ask("files.delete"));
        async move { port.confirm(request).await }
    });
    let request = c.next().await;
    assert_eq!(request["method"], "RequestConfirmation");
    assert_eq!(request["params"]["turnId"], "t");
    assert_eq!(request["params"]["tool"], "files.delete");
    let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": {"confirmed": true}});
    assert!(c.session.handle(answer).0.is_none());
    assert!(asking.await.unwrap().unwrap());

    // An error answer and a closed input both end the wait with an error.
    let asking = tokio::spawn({
        let (port, request) = (port.clone(), ask("x"));
        async move { port.confirm(request).await }
    });
    let request = c.next().await;
    let answer =
        json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": 1, "message": "no"}});
    c.session.handle(answer);
    let e = asking.await.unwrap().unwrap_err();
    assert!(
        e.message
            .contains("answered RequestConfirmation with an error: no"),
        "{}",
        e.message
    );
    c.session.peer.close();
    let e = port.confirm(ask("y")).await.unwrap_err();
    assert!(
        e.message.contains("not answered: the client is gone"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn every_method_of_the_table_a_client_sends_is_dispatched_and_no_other() {
    let mut c = Client::new(vec![]);
    let not_found = |v: &Value| v["error"]["code"] == json!(crate::errors::METHOD_NOT_FOUND);
    for (i, method) in crate::methods::served_now()
        .filter(|m| *m != "Shutdown")
        .enumerate()
    {
        let answer = c.call(i as u64, method, json!({}));
        assert!(
            !not_found(&answer),
            "{method} is in the table but not dispatched: {answer}"
        );
    }
    let answer = c.call(999, "NoSuchMethod", json!({}));
    assert!(not_found(&answer), "{answer}");
    let answer = c.call(1000, "Shutdown", json!({}));
    assert_eq!(answer["result"], json!({}), "{answer}");
}

#[test]
fn the_model_choice_fields_are_read_and_an_unknown_field_refused_by_name() {
    use super::protocol::{CreateAIAgentParams, CreateConversationParams};
    let mut p: CreateConversationParams = serde_json::from_value(json!({
        "feature": "assistant", "serviceProvider": "p", "modelConfiguration": "mc", "model": "m"
    }))
    .unwrap();
    let fields = p.take_model_choice();
    assert_eq!(
        (fields.agent, fields.service_provider.as_deref()),
        (None, Some("p"))
    );
    assert_eq!(
        (
            fields.model_configuration.as_deref(),
            fields.model.as_deref()
        ),
        (Some("mc"), Some("m"))
    );
    assert_eq!(p.feature.as_deref(), Some("assistant"));
    let mut a: CreateAIAgentParams = serde_json::from_value(json!({"agent": "a"})).unwrap();
    assert_eq!(a.take_model_choice().agent.as_deref(), Some("a"));
    for (bad, name) in [
        (json!({"modle": "m"}), "unknown field `modle`"),
        (
            json!({"agent": "a", "provider": "p"}),
            "unknown field `provider`",
        ),
    ] {
        let e = serde_json::from_value::<CreateAIAgentParams>(bad.clone()).unwrap_err();
        assert!(e.to_string().contains(name), "{e}");
        let e = serde_json::from_value::<CreateConversationParams>(bad).unwrap_err();
        assert!(e.to_string().contains(name), "{e}");
        // The fields are named in the order the daemon always gave them.
        assert!(
            e.to_string().contains(
                "expected one of `feature`, `agent`, `serviceProvider`, `modelConfiguration`, `model`, `title`"
            ),
            "{e}"
        );
    }
}
