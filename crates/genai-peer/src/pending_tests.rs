//! Tests of pending requests: answers by id, unknown answers, time-outs, and the client leaving.

use std::sync::Arc;

use super::*;
use crate::outbox::{Queue, DEFAULT_LIMIT};

const DEADLINE: Duration = Duration::from_secs(10);

fn pending() -> (Arc<Pending>, Outbox, Queue) {
    let (out, queue) = Outbox::new(DEFAULT_LIMIT);
    (Arc::new(Pending::default()), out, queue)
}

/// The next request the client is sent.
async fn sent(queue: &mut Queue) -> Value {
    let frame = tokio::time::timeout(DEADLINE, queue.recv())
        .await
        .unwrap()
        .unwrap();
    serde_json::from_slice(&frame).unwrap()
}

#[tokio::test]
async fn an_answer_goes_to_the_request_with_its_id() {
    let (p, out, mut queue) = pending();
    let first = tokio::spawn({
        let (p, out) = (p.clone(), out.clone());
        async move { p.request(&out, "Ask", json!({"n": 1}), None).await }
    });
    let asked = sent(&mut queue).await;
    assert_eq!(
        asked,
        json!({"jsonrpc": "2.0", "id": "genai-1", "method": "Ask", "params": {"n": 1}})
    );
    let second = tokio::spawn({
        let (p, out) = (p.clone(), out.clone());
        async move { p.request(&out, "Ask", json!({"n": 2}), None).await }
    });
    assert_eq!(sent(&mut queue).await["id"], "genai-2");
    // Answered out of order, each to its own.
    assert!(p.answered(&json!("genai-2"), Err(json!({"code": 1, "message": "no"}))));
    assert!(p.answered(&json!("genai-1"), Ok(json!({"yes": true}))));
    assert_eq!(first.await.unwrap(), Ok(json!({"yes": true})));
    let refused = second.await.unwrap().unwrap_err();
    assert_eq!(
        refused.describe("Ask"),
        "the client answered Ask with an error: no"
    );
    assert!(p.is_empty());
    assert!(
        !p.answered(&json!("genai-1"), Ok(Value::Null)),
        "a request is answered once"
    );
}

#[tokio::test]
async fn an_answer_to_no_request_is_ignored() {
    let (p, out, mut queue) = pending();
    let waiting = tokio::spawn({
        let (p, out) = (p.clone(), out.clone());
        async move { p.request(&out, "Ask", Value::Null, None).await }
    });
    sent(&mut queue).await;
    for id in [json!("genai-7"), json!(1), json!("genai"), Value::Null] {
        assert!(!p.answered(&id, Ok(Value::Null)), "{id}");
    }
    assert_eq!(p.len(), 1, "the request still waits");
    assert!(p.answered(&json!("genai-1"), Ok(json!(5))));
    assert_eq!(waiting.await.unwrap(), Ok(json!(5)));
}

#[tokio::test]
async fn a_request_not_answered_in_time_fails_and_is_forgotten() {
    let (p, out, mut queue) = pending();
    let within = Duration::from_millis(20);
    let e = p
        .request(&out, "Ask", Value::Null, Some(within))
        .await
        .unwrap_err();
    assert_eq!(e, Unanswered::TimedOut(within));
    assert_eq!(e.describe("Ask"), "Ask not answered within 20ms");
    assert_eq!(sent(&mut queue).await["id"], "genai-1");
    assert!(p.is_empty());
    assert!(
        !p.answered(&json!("genai-1"), Ok(Value::Null)),
        "a late answer finds no request"
    );
    // Whoever waits may give up by itself (the core's own time-out): the same.
    let gave_up = tokio::time::timeout(within, p.request(&out, "Ask", Value::Null, None)).await;
    assert!(gave_up.is_err());
    assert!(p.is_empty());
}

#[tokio::test]
async fn the_client_leaving_fails_every_request_waiting_and_every_later_one() {
    let (p, out, mut queue) = pending();
    let waiting: Vec<_> = (0..3)
        .map(|_| {
            let (p, out) = (p.clone(), out.clone());
            tokio::spawn(async move { p.request(&out, "Ask", Value::Null, None).await })
        })
        .collect();
    for _ in 0..3 {
        sent(&mut queue).await;
    }
    assert_eq!(p.len(), 3);
    p.close();
    for w in waiting {
        let e = tokio::time::timeout(DEADLINE, w)
            .await
            .unwrap()
            .unwrap()
            .unwrap_err();
        assert_eq!(e, Unanswered::Gone);
        assert_eq!(e.describe("Ask"), "Ask not answered: the client is gone");
    }
    assert_eq!(
        p.request(&out, "Ask", Value::Null, None).await,
        Err(Unanswered::Gone)
    );
    assert!(
        queue.try_recv().is_none(),
        "nothing is sent to a client gone"
    );
}

#[tokio::test]
async fn a_request_to_a_client_whose_writer_is_closed_fails_when_its_input_ends() {
    let (p, out, queue) = pending();
    drop(queue);
    let waiting = tokio::spawn({
        let (p, out) = (p.clone(), out.clone());
        async move { p.request(&out, "Ask", Value::Null, None).await }
    });
    while p.is_empty() {
        tokio::task::yield_now().await;
    }
    p.close();
    assert_eq!(waiting.await.unwrap(), Err(Unanswered::Gone));
}
