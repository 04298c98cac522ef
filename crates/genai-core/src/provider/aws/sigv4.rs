//! AWS Signature Version 4 for one HTTP request, with the `aws-sigv4` crate: the headers to add
//! (`authorization`, `x-amz-date`, and `x-amz-security-token` for session credentials).
//!
//! It owns turning (credentials, region, service, request) into those headers. It must never
//! send anything, and never let a secret reach an error message: the signer's errors are about
//! the request's shape only.

use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{sign as sigv4_sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;

use super::credentials::AwsCredentials;
use crate::error::{Error, Result};

/// What to sign: the method, the full URL (path already percent-encoded), the headers that
/// will be sent (besides `host`, taken from the URL), and the exact body bytes.
pub(crate) struct SignRequest<'a> {
    pub(crate) method: &'a str,
    pub(crate) url: &'a str,
    pub(crate) headers: &'a [(&'a str, &'a str)],
    pub(crate) body: &'a [u8],
}

/// The headers that sign `req` at `time` for `service` in `region`, names in lower case.
pub(crate) fn sign(
    creds: &AwsCredentials,
    region: &str,
    service: &str,
    req: &SignRequest<'_>,
    time: SystemTime,
) -> Result<Vec<(&'static str, String)>> {
    let identity: Identity = Credentials::new(
        creds.access_key_id.clone(),
        creds.secret_access_key.expose().to_string(),
        creds.session_token.as_ref().map(|t| t.expose().to_string()),
        None,
        "genai",
    )
    .into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(service)
        .time(time)
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| Error::internal(format!("SigV4 parameters: {e}")))?
        .into();
    let signable = SignableRequest::new(
        req.method,
        req.url,
        req.headers.iter().copied(),
        SignableBody::Bytes(req.body),
    )
    .map_err(|e| Error::internal(format!("cannot sign the request to {}: {e}", req.url)))?;
    let (instructions, _signature) = sigv4_sign(signable, &params)
        .map_err(|e| Error::internal(format!("cannot sign the request to {}: {e}", req.url)))?
        .into_parts();
    let (headers, _params) = instructions.into_parts();
    Ok(headers
        .into_iter()
        .map(|h| (h.name(), h.value().to_string()))
        .collect())
}

/// `YYYYMMDDTHHMMSSZ` as a time (the `x-amz-date` form); `None` when malformed.
pub fn parse_amz_date(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    if b.len() != 16 || b[8] != b'T' || b[15] != b'Z' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(4..6)?, num(6..8)?);
    let (hh, mm, ss) = (num(9..11)?, num(11..13)?, num(13..15)?);
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + hh * 3600 + mm * 60 + ss;
    Some(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(u64::try_from(secs).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets::Secret;

    fn example(token: Option<&str>) -> AwsCredentials {
        AwsCredentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: Secret::new("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
            session_token: token.map(Secret::new),
            source: "test".into(),
        }
    }

    /// The `get-vanilla` case of AWS's SigV4 test suite (docs.aws.amazon.com/general/latest/gr/
    /// signature-v4-test-suite.html; the suite ships in aws-sigv4's `aws-signing-test-suite/v4/
    /// get-vanilla`): `GET /` to example.amazonaws.com at 20150830T123600Z, us-east-1, service
    /// `service`.
    #[test]
    fn aws_test_suite_get_vanilla() {
        let time = parse_amz_date("20150830T123600Z").unwrap();
        let req = SignRequest {
            method: "GET",
            url: "https://example.amazonaws.com/",
            headers: &[],
            body: b"",
        };
        let headers = sign(&example(None), "us-east-1", "service", &req, time).unwrap();
        let get = |n: &str| {
            headers
                .iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("x-amz-date"), Some("20150830T123600Z"));
        assert_eq!(
            get("authorization"),
            Some("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31")
        );
        assert_eq!(get("x-amz-security-token"), None);
    }

    #[test]
    fn session_tokens_are_sent_and_signed() {
        let time = parse_amz_date("20150830T123600Z").unwrap();
        let req = SignRequest {
            method: "POST",
            url: "https://bedrock-runtime.us-east-1.amazonaws.com/model/a%3Ab/converse",
            headers: &[("content-type", "application/json")],
            body: b"{}",
        };
        let headers = sign(&example(Some("TOKEN")), "us-east-1", "bedrock", &req, time).unwrap();
        let get = |n: &str| {
            headers
                .iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("x-amz-security-token"), Some("TOKEN"));
        let auth = get("authorization").unwrap();
        assert!(
            auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, Signature="),
            "{auth}"
        );
    }

    #[test]
    fn amz_dates_parse() {
        let t = parse_amz_date("19700102T000001Z").unwrap();
        assert_eq!(
            t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs(),
            86_401
        );
        assert!(parse_amz_date("2015-08-30").is_none());
    }
}
