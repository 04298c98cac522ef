//! The rate limits of the virtual keys: requests per minute (`rpm`) and tokens per minute
//! (`tpm`, a request's input and output tokens), each over the sliding minute before now.
//! Without `[serve] redis_url` they are counted in this process, so each replica of a fleet
//! counts its own requests; with it, in Redis ([`super::rate_redis`]), so every replica counts
//! the same ones.
//!
//! It owns the windows' arithmetic and the choice when Redis cannot be reached (refuse, or with
//! `rate_limit_fail_open` let the request pass uncounted). It must never see a key in plain
//! (limits are kept by the key's name), and never wait on Redis longer than its timeouts.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::rate_redis::Redis;
use genai_core::error::Result;

/// The span of both limits.
pub(crate) const MINUTE: Duration = Duration::from_secs(60);

/// Why a key may not make a request now, as far as its rates go.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum OverRate {
    /// It made `rpm` requests in the last minute; one more may come after `retry_after`.
    Requests { rpm: u32, retry_after: Duration },
    /// Its requests of the last minute used `tpm` tokens or more.
    Tokens { tpm: u64, retry_after: Duration },
    /// The shared counter cannot be reached and the limits fail closed: why, without secrets.
    Unavailable(String),
}

/// A key's limits, as its row states them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Limits {
    pub(crate) rpm: Option<u32>,
    pub(crate) tpm: Option<u64>,
}

impl Limits {
    fn any(&self) -> bool {
        self.rpm.is_some() || self.tpm.is_some()
    }
}

/// Where the keys' requests and tokens are counted.
pub(crate) enum Counter {
    /// In this process, by key name.
    Local(Mutex<HashMap<String, Windows>>),
    /// In Redis, shared by every replica.
    Redis(Redis),
}

impl Counter {
    /// Counting in this process.
    pub(crate) fn local() -> Counter {
        Counter::Local(Mutex::new(HashMap::new()))
    }

    /// Counting in Redis at `url` (connected on first use); `fail_open` lets requests pass
    /// uncounted while it cannot be reached.
    pub(crate) fn redis(url: &str, fail_open: bool) -> Result<Counter> {
        Ok(Counter::Redis(Redis::new(url, fail_open)?))
    }

    /// Counts a request of the key `name` now, unless it is over one of its `limits`.
    pub(crate) async fn admit(
        &self,
        name: &str,
        limits: Limits,
    ) -> std::result::Result<(), OverRate> {
        if !limits.any() {
            return Ok(());
        }
        match self {
            Counter::Local(windows) => {
                with_windows(windows, name, |w| w.admit(Instant::now(), limits))
            }
            Counter::Redis(redis) => redis.admit(name, limits).await,
        }
    }

    /// Adds a finished request's `tokens` to the key's last minute, when it has a `tpm` limit.
    pub(crate) fn used(&self, name: &str, tpm: Option<u64>, tokens: u64) {
        if tpm.is_none() || tokens == 0 {
            return;
        }
        match self {
            Counter::Local(windows) => {
                with_windows(windows, name, |w| w.tokens.add(Instant::now(), tokens))
            }
            Counter::Redis(redis) => redis.used(name, tokens),
        }
    }
}

/// Runs `f` on the windows of key `name`, made empty on its first request (its name copied
/// only then, not on every request).
fn with_windows<T>(
    windows: &Mutex<HashMap<String, Windows>>,
    name: &str,
    f: impl FnOnce(&mut Windows) -> T,
) -> T {
    let mut by_name = windows.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(w) = by_name.get_mut(name) {
        return f(w);
    }
    f(by_name.entry(name.to_string()).or_default())
}

/// One key's requests and tokens of the last minute.
#[derive(Debug, Default)]
pub(crate) struct Windows {
    requests: Requests,
    tokens: Tokens,
}

impl Windows {
    fn admit(&mut self, now: Instant, limits: Limits) -> std::result::Result<(), OverRate> {
        if let Some(tpm) = limits.tpm {
            self.tokens.check(now, tpm)?;
        }
        if let Some(rpm) = limits.rpm {
            self.requests
                .admit(now, rpm)
                .map_err(|retry_after| OverRate::Requests { rpm, retry_after })?;
        }
        Ok(())
    }
}

/// The requests of the last minute, oldest first: at most the limit's number of instants.
#[derive(Debug, Default)]
pub(crate) struct Requests {
    times: VecDeque<Instant>,
}

impl Requests {
    /// Counts a request at `now` when fewer than `rpm` came in the minute before it; else how
    /// long until one more may come.
    pub(crate) fn admit(&mut self, now: Instant, rpm: u32) -> std::result::Result<(), Duration> {
        while self
            .times
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) >= MINUTE)
        {
            self.times.pop_front();
        }
        if self.times.len() < rpm as usize {
            self.times.push_back(now);
            return Ok(());
        }
        let oldest = self.times.front().copied().unwrap_or(now);
        Err((oldest + MINUTE).saturating_duration_since(now))
    }
}

/// The tokens of the last minute, in buckets of a second (at most 60 of them), oldest first.
#[derive(Debug, Default)]
pub(crate) struct Tokens {
    buckets: VecDeque<(Instant, u64)>,
}

impl Tokens {
    const BUCKET: Duration = Duration::from_secs(1);

    fn forget(&mut self, now: Instant) {
        while self
            .buckets
            .front()
            .is_some_and(|(t, _)| now.saturating_duration_since(*t) >= MINUTE)
        {
            self.buckets.pop_front();
        }
    }

    pub(crate) fn add(&mut self, now: Instant, tokens: u64) {
        self.forget(now);
        match self.buckets.back_mut() {
            Some((start, n)) if now.saturating_duration_since(*start) < Self::BUCKET => {
                *n += tokens
            }
            _ => self.buckets.push_back((now, tokens)),
        }
    }

    /// Refused while the last minute's tokens reach `tpm`: until its oldest bucket leaves.
    pub(crate) fn check(&mut self, now: Instant, tpm: u64) -> std::result::Result<(), OverRate> {
        self.forget(now);
        let used: u64 = self.buckets.iter().map(|(_, n)| n).sum();
        if used < tpm {
            return Ok(());
        }
        let oldest = self.buckets.front().map_or(now, |(t, _)| *t);
        Err(OverRate::Tokens {
            tpm,
            retry_after: (oldest + MINUTE).saturating_duration_since(now),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_requests_window_admits_rpm_a_minute_and_says_when_the_next_may_come() {
        let mut w = Requests::default();
        let t0 = Instant::now();
        assert!(w.admit(t0, 2).is_ok());
        assert!(w.admit(t0 + Duration::from_secs(10), 2).is_ok());
        assert_eq!(
            w.admit(t0 + Duration::from_secs(20), 2),
            Err(Duration::from_secs(40)),
            "the first leaves the window at 60 s"
        );
        // A refused request is not counted: at 60 s the first has left.
        assert!(w.admit(t0 + Duration::from_secs(60), 2).is_ok());
        assert_eq!(
            w.admit(t0 + Duration::from_secs(61), 2),
            Err(Duration::from_secs(9))
        );
        assert!(w.admit(t0 + Duration::from_secs(200), 2).is_ok());
        assert_eq!(w.times.len(), 1, "old requests are forgotten");
    }

    #[test]
    fn the_tokens_window_refuses_once_the_minute_used_tpm_until_its_oldest_second_leaves() {
        let mut w = Tokens::default();
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        assert!(w.check(t0, 100).is_ok());
        w.add(t0, 60);
        w.add(t0 + Duration::from_millis(500), 10);
        assert_eq!(w.buckets.len(), 1, "one bucket a second");
        w.add(at(20), 40);
        assert_eq!(
            w.check(at(30), 100),
            Err(OverRate::Tokens {
                tpm: 100,
                retry_after: Duration::from_secs(30)
            })
        );
        assert!(w.check(at(30), 111).is_ok(), "110 used of 111");
        assert!(w.check(at(60), 100).is_ok(), "the first 70 left at 60 s");
        assert_eq!(w.buckets.len(), 1);
    }

    #[tokio::test]
    async fn a_local_counter_keeps_each_key_apart_and_counts_only_keys_with_limits() {
        let c = Counter::local();
        let one = Limits {
            rpm: Some(1),
            tpm: Some(50),
        };
        assert!(c.admit("a", one).await.is_ok());
        assert!(matches!(
            c.admit("a", one).await,
            Err(OverRate::Requests { rpm: 1, .. })
        ));
        assert!(c.admit("b", one).await.is_ok(), "b counts apart");
        c.used("b", Some(50), 50);
        let tokens_only = Limits {
            rpm: None,
            tpm: Some(50),
        };
        assert!(matches!(
            c.admit("b", tokens_only).await,
            Err(OverRate::Tokens { tpm: 50, .. })
        ));
        for _ in 0..3 {
            assert!(c.admit("c", Limits::default()).await.is_ok());
        }
        let Counter::Local(w) = &c else {
            unreachable!()
        };
        assert!(!w.lock().unwrap().contains_key("c"), "no limits, no window");
    }
}
