//! Chat requests answered by what they hold rather than in the order they come (a test's
//! router), and held at a gate until several arrived: how a test scripts agents whose requests
//! run at once. Test support only; it never decides how a behaviour is sent on the wire.

use std::time::Duration;

use super::{Behavior, OpenAi, RecordedRequest};

/// What a router makes of a chat request: its behaviour, and the gate it waits at first.
pub type Routed = (Behavior, Option<Gate>);

/// Chooses a chat request's behaviour from the request itself (`None`: the queue or default).
pub type Router = Box<dyn Fn(&RecordedRequest) -> Option<Routed> + Send + Sync>;

/// Requests held until `n` of them arrived, or 30 s passed (then each is answered with a
/// 500 saying so): how a test proves requests run at once without sleeping.
#[derive(Clone)]
pub struct Gate(std::sync::Arc<tokio::sync::Barrier>);

impl Gate {
    pub fn new(n: usize) -> Gate {
        Gate(std::sync::Arc::new(tokio::sync::Barrier::new(n)))
    }
}

impl OpenAi {
    /// Answers the chat requests `router` knows by what they hold (what the queue would have
    /// given them is dropped); the others as before.
    pub fn route(
        &self,
        router: impl Fn(&RecordedRequest) -> Option<Routed> + Send + Sync + 'static,
    ) {
        *self.router.lock().unwrap() = Some(Box::new(router));
    }

    pub(super) fn routed(&self, r: &RecordedRequest) -> Option<Routed> {
        self.router.lock().unwrap().as_ref().and_then(|f| f(r))
    }
}

impl Gate {
    /// Waits for the gate's other requests; false when they did not come within 30 s.
    pub(super) async fn pass(&self) -> bool {
        tokio::time::timeout(Duration::from_secs(30), self.0.wait())
            .await
            .is_ok()
    }
}
