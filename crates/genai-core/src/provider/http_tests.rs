//! Tests of the HTTP exchange: error bodies as one line, time-outs, `Retry-After` and backoff.

use super::*;
use reqwest::header::HeaderValue;

fn error(status: u16, headers: &[(&'static str, &str)], body: &str) -> String {
    let mut map = HeaderMap::new();
    for (k, v) in headers {
        map.insert(*k, HeaderValue::from_str(v).unwrap());
    }
    status_error(
        "p",
        "http://127.0.0.1:9/chat/completions",
        StatusCode::from_u16(status).unwrap(),
        &map,
        body.as_bytes(),
    )
    .message
}

#[test]
fn error_bodies_of_every_provider_become_one_line() {
    assert_eq!(
        error(429, &[("x-request-id", "req_1")], r#"{"error":{"message":"slow down","type":"rate_limit_exceeded"}}"#),
        "p: HTTP 429 Too Many Requests rate_limit_exceeded: slow down [request req_1] (rate limited: wait and try again)"
    );
    assert_eq!(
        error(529, &[("request-id", "req_2")], r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#),
        "p: HTTP 529 <unknown status code> overloaded_error: Overloaded [request req_2] (the provider failed: try again later)"
    );
    assert_eq!(
        error(
            400,
            &[],
            r#"{"error":{"code":400,"message":"bad key","status":"INVALID_ARGUMENT"}}"#
        ),
        "p: HTTP 400 Bad Request INVALID_ARGUMENT: bad key"
    );
    assert_eq!(
        error(
            400,
            &[
                ("x-amzn-errortype", "ValidationException:http://x/"),
                ("x-amzn-requestid", "r3")
            ],
            r#"{"message":"bad model"}"#
        ),
        "p: HTTP 400 Bad Request ValidationException: bad model [request r3]"
    );
    assert_eq!(
        error(404, &[], r#"{"error":"model 'x' not found"}"#),
        "p: HTTP 404 Not Found: model 'x' not found (tried http://127.0.0.1:9/chat/completions: check the base URL, which for most servers ends in /v1, and the model id)"
    );
    assert_eq!(
        error(502, &[], "<html>bad gateway</html>"),
        "p: HTTP 502 Bad Gateway: <html>bad gateway</html> (the provider failed: try again later)"
    );
}

#[test]
fn a_negative_or_zero_timeout_is_a_config_error_not_the_default() {
    for bad in [-5.0, 0.0, f64::NAN] {
        let c = HttpSettings {
            timeout_secs: Some(bad),
            ..HttpSettings::default()
        };
        let e = Http::from_config("p", &c).err().expect("accepted");
        assert_eq!(e.kind, ErrorKind::Config);
        assert!(
            e.message.starts_with("service_providers.p.timeout_secs = "),
            "{}",
            e.message
        );
    }
    let c = HttpSettings {
        timeout_secs: Some(2.5),
        ..HttpSettings::default()
    };
    assert!(Http::from_config("p", &c).is_ok());
}

#[test]
fn an_error_message_of_megabytes_is_cut() {
    let body = format!(r#"{{"error":{{"message":"{}"}}}}"#, "m".repeat(1 << 20));
    let line = error(400, &[], &body);
    assert!(line.len() < MAX_ERROR_TEXT + 100, "{}", line.len());
    assert!(line.contains("m…"), "{line}");
}

#[test]
fn retry_after_reads_seconds_dates_and_milliseconds() {
    let mut h = HeaderMap::new();
    h.insert("retry-after", HeaderValue::from_static("2"));
    assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
    h.insert("retry-after-ms", HeaderValue::from_static("150"));
    assert_eq!(retry_after(&h), Some(Duration::from_millis(150)));
    let mut h = HeaderMap::new();
    h.insert(
        "retry-after",
        HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
    );
    assert_eq!(retry_after(&h), Some(Duration::ZERO));
}

#[test]
fn backoff_grows_is_capped_and_follows_retry_after() {
    let p = RetryPolicy {
        max_retries: 5,
        base_delay: Duration::from_millis(100),
        max_delay: Duration::from_secs(1),
        budget: Duration::from_secs(10),
    };
    for retry in 0..8 {
        let d = p.delay(retry, None);
        assert!(
            d <= Duration::from_millis(100 << retry).min(Duration::from_secs(1)),
            "{retry}: {d:?}"
        );
    }
    assert_eq!(
        p.delay(0, Some(Duration::from_millis(700))),
        Duration::from_millis(700)
    );
    assert_eq!(
        p.delay(0, Some(Duration::from_secs(90))),
        Duration::from_secs(90)
    );
}
