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
pub(crate) struct Pending {
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
    pub(crate) async fn request(
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
    pub(crate) fn answered(&self, id: &Value, answer: Answer) -> bool {
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
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        if let Ok(mut w) = self.waiting.lock() {
            // Dropping the senders fails their requests as `Gone`.
            w.clear();
        }
    }

    /// How many requests wait for their answer.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.waiting.lock().map(|w| w.len()).unwrap_or(0)
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
#[path = "pending_tests.rs"]
mod tests;
