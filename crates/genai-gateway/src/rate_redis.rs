//! The keys' rate limits counted in Redis, so every replica of a fleet counts the same
//! requests: one Lua script per request checks the key's tokens of the last minute and counts
//! the request in its sliding minute atomically, on Redis' own clock (`TIME`), so replicas'
//! clocks need not agree. A finished request's tokens are added by a second script, sent
//! without waiting for it.
//!
//! Its keys are `genai:rate:{NAME}:requests` (a sorted set of the minute's requests by time)
//! and `genai:rate:{NAME}:tokens` (a hash of tokens by second); the braces keep both in one
//! slot of a Redis Cluster, and both expire a minute after their last use.
//!
//! It owns the scripts and the connection. It must never wait longer than its timeouts (a
//! Redis that does not answer is answered at once by the fail-open or fail-closed choice), and
//! never put the URL's password in an error or a log.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::Script;

use super::rate::{Limits, OverRate};
use genai_core::error::{Error, ErrorKind, Result};

/// The most a connection attempt or a script's answer may take.
const TIMEOUT: Duration = Duration::from_millis(500);

/// How often, at most, an unreachable Redis is logged.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// Checks the tokens, then counts the request; answers `{0, 0}` (admitted), `{1, ms}` (over
/// its rpm, the next may come in `ms`) or `{2, ms}` (over its tpm).
/// KEYS: requests, tokens. ARGV: rpm (0: none), tpm (0: none), the request's unique member.
const ADMIT: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local tpm = tonumber(ARGV[2])
if tpm > 0 then
  local second = math.floor(now / 1000)
  local used, oldest = 0, nil
  local buckets = redis.call('HGETALL', KEYS[2])
  for i = 1, #buckets, 2 do
    local s = tonumber(buckets[i])
    if s <= second - 60 then
      redis.call('HDEL', KEYS[2], buckets[i])
    else
      used = used + tonumber(buckets[i + 1])
      if oldest == nil or s < oldest then oldest = s end
    end
  end
  if used >= tpm then
    return {2, (oldest + 60) * 1000 - now}
  end
end
local rpm = tonumber(ARGV[1])
if rpm > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - 60000)
  if redis.call('ZCARD', KEYS[1]) >= rpm then
    local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
    return {1, tonumber(first[2]) + 60000 - now}
  end
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], 60000)
end
return {0, 0}
";

/// Adds ARGV[1] tokens to this second's bucket of KEYS[1].
const USED: &str = r"
local t = redis.call('TIME')
redis.call('HINCRBY', KEYS[1], t[1], ARGV[1])
redis.call('EXPIRE', KEYS[1], 61)
return 1
";

/// The connection to Redis and what to do without it.
pub(crate) struct Redis {
    conn: ConnectionManager,
    /// `redis://host:port/db`, without credentials: what errors name.
    shown: String,
    fail_open: bool,
    admit: Script,
    used: Script,
    /// Makes each request's member of the sorted set unique across replicas.
    process: u64,
    next: AtomicU64,
    warned: Mutex<Option<Instant>>,
}

impl Redis {
    /// A connection to `url`, made on first use and again after a failure.
    pub(crate) fn new(url: &str, fail_open: bool) -> Result<Redis> {
        if !url.starts_with("redis://") && !url.starts_with("rediss://") {
            return Err(Error::new(
                ErrorKind::InvalidParams,
                "the Redis URL (GENAI_REDIS_URL, else [serve] redis_url) takes redis://[:PASSWORD@]HOST:PORT/DB, or rediss:// for TLS",
            ));
        }
        let client = redis::Client::open(url).map_err(|e| {
            Error::new(
                ErrorKind::InvalidParams,
                format!("the Redis URL (GENAI_REDIS_URL, else [serve] redis_url) is not a Redis URL (redis[s]://HOST:PORT/DB): {e}"),
            )
        })?;
        let info = client.get_connection_info();
        if let Some(password) = info.redis_settings().password() {
            genai_core::redact::remember(password);
        }
        let scheme = url.split_once("://").map_or("redis", |(s, _)| s);
        let shown = format!("{scheme}://{}/{}", info.addr(), info.redis_settings().db());
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(TIMEOUT))
            .set_response_timeout(Some(TIMEOUT))
            .set_number_of_retries(0);
        let conn = ConnectionManager::new_lazy_with_config(client, config)
            .map_err(|e| Error::internal(format!("cannot set up Redis at {shown}: {e}")))?;
        Ok(Redis {
            conn,
            shown,
            fail_open,
            admit: Script::new(ADMIT),
            used: Script::new(USED),
            process: fastrand::u64(..),
            next: AtomicU64::new(0),
            warned: Mutex::new(None),
        })
    }

    pub(crate) async fn admit(
        &self,
        name: &str,
        limits: Limits,
    ) -> std::result::Result<(), OverRate> {
        let member = format!(
            "{:016x}-{}",
            self.process,
            self.next.fetch_add(1, Ordering::Relaxed)
        );
        let mut invocation = self.admit.key(requests_key(name));
        invocation
            .key(tokens_key(name))
            .arg(limits.rpm.unwrap_or(0))
            .arg(limits.tpm.unwrap_or(0))
            .arg(member);
        // A connection that failed is made again by the next command: that is tried once more
        // at once, so the first request after Redis came back is not refused.
        let tries = async {
            let mut conn = self.conn.clone();
            match invocation.invoke_async::<(i64, i64)>(&mut conn).await {
                Err(e) if e.is_io_error() || e.is_connection_dropped() => {
                    invocation.invoke_async::<(i64, i64)>(&mut conn).await
                }
                answered => answered,
            }
        };
        // The connection's own timeouts bound each step; this bounds them together.
        let answer = match tokio::time::timeout(3 * TIMEOUT, tries).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => return self.unreachable(&e.to_string()),
            Err(_) => return self.unreachable("no answer within 1.5 s"),
        };
        let wait = Duration::from_millis(answer.1.max(0) as u64);
        match answer.0 {
            1 => Err(OverRate::Requests {
                rpm: limits.rpm.unwrap_or(0),
                retry_after: wait,
            }),
            2 => Err(OverRate::Tokens {
                tpm: limits.tpm.unwrap_or(0),
                retry_after: wait,
            }),
            _ => Ok(()),
        }
    }

    /// Adds `tokens` to the key's current second, in the background.
    pub(crate) fn used(&self, name: &str, tokens: u64) {
        let mut conn = self.conn.clone();
        let key = tokens_key(name);
        let script = self.used.clone();
        let shown = self.shown.clone();
        tokio::spawn(async move {
            let mut invocation = script.key(key);
            invocation.arg(tokens);
            let why =
                match tokio::time::timeout(2 * TIMEOUT, invocation.invoke_async::<i64>(&mut conn))
                    .await
                {
                    Ok(Ok(_)) => return,
                    Ok(Err(e)) => e.to_string(),
                    Err(_) => "no answer within 1 s".to_string(),
                };
            let why = genai_core::redact::redact(&why);
            tracing::warn!("a request's tokens were not counted in Redis at {shown}: {why}");
        });
    }

    /// What an unreachable Redis means for a request: it passes uncounted (fail open), or it
    /// is refused (fail closed, the default).
    fn unreachable(&self, why: &str) -> std::result::Result<(), OverRate> {
        let why = genai_core::redact::redact(why);
        let mut warned = self.warned.lock().unwrap_or_else(|p| p.into_inner());
        if warned.is_none_or(|t| t.elapsed() >= WARN_EVERY) {
            *warned = Some(Instant::now());
            let then = match self.fail_open {
                true => "requests pass uncounted (rate_limit_fail_open)",
                false => "keys with rate limits are refused",
            };
            tracing::warn!("cannot reach Redis at {}: {why}; {then}", self.shown);
        }
        match self.fail_open {
            true => Ok(()),
            false => Err(OverRate::Unavailable(format!(
                "the rate limits are counted in Redis at {}, which cannot be reached ({why}); retry, or ask the operator (`[serve] rate_limit_fail_open = true` lets requests pass uncounted)",
                self.shown
            ))),
        }
    }
}

fn requests_key(name: &str) -> String {
    format!("genai:rate:{{{name}}}:requests")
}

fn tokens_key(name: &str) -> String {
    format!("genai:rate:{{{name}}}:tokens")
}
