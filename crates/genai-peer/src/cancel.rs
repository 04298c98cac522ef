//! Cancellation of the client's requests: which incoming request started which work still
//! running (a turn), so that a cancellation naming the request (`$/cancelRequest`) finds what
//! to cancel. An entry goes when its work ends.
//!
//! It owns that map only; it must never cancel anything itself (the front-end asks the core).

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;

/// Incoming requests whose work still runs, by the JSON text of their id.
#[derive(Default)]
pub struct Running {
    by_request: Mutex<HashMap<String, String>>,
}

impl Running {
    /// The request `id` started `work` (a turn id).
    pub fn started(&self, id: &Value, work: &str) {
        if let Ok(mut map) = self.by_request.lock() {
            map.insert(id.to_string(), work.to_string());
        }
    }

    /// What the request `id` started, while it runs.
    pub fn work_of(&self, id: &Value) -> Option<String> {
        self.by_request
            .lock()
            .ok()
            .and_then(|m| m.get(&id.to_string()).cloned())
    }

    /// `work` ended: no request names it any more.
    pub fn ended(&self, work: &str) {
        if let Ok(mut map) = self.by_request.lock() {
            map.retain(|_, w| w != work);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_request_names_its_work_until_the_work_ends() {
        let r = Running::default();
        r.started(&json!(1), "T1");
        r.started(&json!("1"), "T2");
        assert_eq!(r.work_of(&json!(1)).as_deref(), Some("T1"));
        assert_eq!(
            r.work_of(&json!("1")).as_deref(),
            Some("T2"),
            "ids keep their type"
        );
        assert_eq!(r.work_of(&json!(2)), None);
        r.ended("T1");
        assert_eq!(r.work_of(&json!(1)), None);
        assert_eq!(r.work_of(&json!("1")).as_deref(), Some("T2"));
    }
}
