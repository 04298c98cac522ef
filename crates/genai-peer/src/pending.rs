//! The requests genai sends the client (`RequestConfirmation`, `session/request_permission`,
//! ...) and waits on: each gets an id of genai's (`"genai-1"`, `"genai-2"`, ...), the client's
//! answer is matched to it by that id, and it fails cleanly when the client leaves, when it is
//! not answered in time, or when whoever waits gives up (the entry goes with it, so a late
//! answer finds no request).
//!
//! It owns the ids and the requests waiting; it must never read what a request or an answer
//! means (the front-end that asked does).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::outbox::Outbox;

/// Why a request got no result.
#[derive(Debug, Clone, PartialEq)]
pub enum Unanswered {
    /// The client answered with this JSON-RPC error object.
    Refused(Value),
    /// The client is gone (its input ended) or left before answering.
    Gone,
    /// No answer came within this long.
    TimedOut(Duration),
}

impl Unanswered {
    /// What to tell about the request `method` that got no result.
    pub fn describe(&self, method: &str) -> String {
        match self {
            Unanswered::Refused(e) => format!(
                "the client answered {method} with an error: {}",
                e.get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("no message")
            ),
            Unanswered::Gone => format!("{method} not answered: the client is gone"),
            Unanswered::TimedOut(d) => format!("{method} not answered within {d:.0?}"),
        }
    }
}

/// What the client answered: a result, or an error object.
pub type Answer = Result<Value, Value>;

/// The requests sent to one client and not answered yet.
#[derive(Default)]
pub struct Pending {
    /// By the JSON text of genai's id.
    waiting: Mutex<HashMap<String, oneshot::Sender<Answer>>>,
    next: AtomicU64,
    /// Set once the client's input has ended: nobody is left to answer a request.
    closed: AtomicBool,
}

/// Forgets a request whoever waits on it gave up (a time-out, a cancelled turn).
struct Forget<'a> {
    pending: &'a Pending,
    key: String,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.pending.take(&self.key);
    }
}

impl Pending {
    /// Sends `method` to the client through `out` and waits for its answer, for at most
    /// `within` when given.
    pub async fn request(
        &self,
        out: &Outbox,
        method: &str,
        params: Value,
        within: Option<Duration>,
    ) -> Result<Value, Unanswered> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(Unanswered::Gone);
        }
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let id = json!(format!("genai-{n}"));
        let key = id.to_string();
        let (tx, rx) = oneshot::channel();
        if let Ok(mut w) = self.waiting.lock() {
            w.insert(key.clone(), tx);
        }
        let forget = Forget { pending: self, key };
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        // A closed outbox means the client is gone: its input's end fails the request.
        let _ = out.send(Bytes::from(msg.to_string()));
        // The input may have ended since the check above, after the waiting list was drained:
        // nobody would answer.
        if self.closed.load(Ordering::SeqCst) {
            return Err(Unanswered::Gone);
        }
        let answer = match within {
            None => rx.await,
            Some(d) => tokio::time::timeout(d, rx)
                .await
                .map_err(|_| Unanswered::TimedOut(d))?,
        };
        drop(forget);
        match answer {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(error)) => Err(Unanswered::Refused(error)),
            Err(_) => Err(Unanswered::Gone),
        }
    }

    fn take(&self, key: &str) -> Option<oneshot::Sender<Answer>> {
        self.waiting.lock().ok().and_then(|mut w| w.remove(key))
    }

    /// The client answered the request `id`: hands the answer to whoever waits. False when no
    /// request of genai's waits with that id (never sent, answered already, or given up).
    pub fn answered(&self, id: &Value, answer: Answer) -> bool {
        match self.take(&id.to_string()) {
            Some(waiting) => {
                // Whoever waited may have given up just now: the answer is dropped.
                let _ = waiting.send(answer);
                true
            }
            None => false,
        }
    }

    /// The client's input ended: every request waiting fails, and no new one is sent.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        if let Ok(mut w) = self.waiting.lock() {
            // Dropping the senders fails their requests as `Gone`.
            w.clear();
        }
    }

    /// How many requests wait for their answer.
    pub fn len(&self) -> usize {
        self.waiting.lock().map(|w| w.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
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
}
