//! Waiting for a state the tests are not told about (a file that grows, a process that goes
//! away, a count that rises): polling with a deadline, never an open-ended sleep.

use std::time::{Duration, Instant};

/// Polls `cond` until it holds, failing the test once `timeout` has passed.
#[track_caller]
pub fn wait_until(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}
