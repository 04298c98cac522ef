//! How the fake Bedrock Runtime (`fake_bedrock.rs`) checks a request's authentication, as
//! Bedrock does: a SigV4 `Authorization` header is parsed (credential scope with the expected
//! region and service `bedrock`, signed headers, `x-amz-date` no older than five minutes,
//! `x-amz-security-token` when the credentials have one) and its signature recomputed with
//! `aws-sigv4` from the known test credentials; or a `Bearer` Bedrock API key is compared.
//! It decides, never answers: the refusal's bytes are the fake's.

use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;

/// The test credentials the fake accepts for SigV4.
pub const ACCESS_KEY: &str = "AKIDGENAITEST0000001";
pub const SECRET_KEY: &str = "genai/Test+Secret/KEY0000000000000000001";
/// The region requests must be signed for.
pub const REGION: &str = "eu-central-1";
/// The Bedrock API key the fake accepts as a bearer token.
pub const API_KEY: &str = "ABSKgenaitestbedrockapikey0000001";

/// What the fake accepts.
#[derive(Clone, Debug)]
pub struct Accept {
    /// The session token SigV4 requests must carry (and sign), if any.
    pub session_token: Option<String>,
}

/// How a request authenticated itself, as the fake saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthSeen {
    /// A SigV4 signature that verified, with its scope and signed headers.
    SigV4 {
        access_key: String,
        region: String,
        service: String,
        signed_headers: String,
    },
    Bearer,
    /// Missing or wrong: answered 403.
    Refused(String),
}

/// `Credential=AK/DATE/REGION/SERVICE/aws4_request, SignedHeaders=a;b, Signature=hex`.
fn parse_authorization(v: &str) -> Option<(Vec<String>, String, String)> {
    let rest = v.strip_prefix("AWS4-HMAC-SHA256 ")?;
    let mut scope = None;
    let mut signed = None;
    let mut signature = None;
    for part in rest.split(',') {
        let (k, val) = part.trim().split_once('=')?;
        match k {
            "Credential" => scope = Some(val.split('/').map(str::to_string).collect::<Vec<_>>()),
            "SignedHeaders" => signed = Some(val.to_string()),
            "Signature" => signature = Some(val.to_string()),
            _ => return None,
        }
    }
    Some((scope?, signed?, signature?))
}

/// Checks a request's authentication; `Err` is why it is refused.
pub fn verify(
    accept: &Accept,
    method: &str,
    target: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> Result<AuthSeen, String> {
    let header = |n: &str| {
        headers
            .iter()
            .find(|(k, _)| k == n)
            .map(|(_, v)| v.as_str())
    };
    let auth = header("authorization").ok_or("no Authorization header")?;
    if let Some(key) = auth.strip_prefix("Bearer ") {
        if header("x-amz-date").is_some() {
            return Err("a bearer request must not be signed too".into());
        }
        return if key == API_KEY {
            Ok(AuthSeen::Bearer)
        } else {
            Err("wrong API key".into())
        };
    }
    let (scope, signed, signature) =
        parse_authorization(auth).ok_or("malformed SigV4 Authorization")?;
    let [access_key, date, region, service, terminator] = scope.as_slice() else {
        return Err(format!("bad credential scope {scope:?}"));
    };
    if access_key != ACCESS_KEY {
        return Err("unknown access key".into());
    }
    if region != REGION || service != "bedrock" || terminator != "aws4_request" {
        return Err(format!("wrong scope {region}/{service}/{terminator}"));
    }
    let amz_date = header("x-amz-date").ok_or("no x-amz-date")?;
    if !amz_date.starts_with(date.as_str()) {
        return Err("x-amz-date and the scope's date differ".into());
    }
    let time =
        genai_core::provider::aws::sigv4::parse_amz_date(amz_date).ok_or("bad x-amz-date")?;
    let age = SystemTime::now()
        .duration_since(time)
        .unwrap_or_else(|e| e.duration());
    if age > Duration::from_secs(300) {
        return Err("the signature is older than five minutes".into());
    }
    let token = header("x-amz-security-token");
    if token != accept.session_token.as_deref() {
        return Err("missing or unexpected x-amz-security-token".into());
    }
    let names: Vec<&str> = signed.split(';').collect();
    for needed in ["host", "x-amz-date"] {
        if !names.contains(&needed) {
            return Err(format!("{needed} is not signed"));
        }
    }
    if token.is_some() && !names.contains(&"x-amz-security-token") {
        return Err("x-amz-security-token is not signed".into());
    }
    // Recompute with the known secret: the headers the client signed, less those the signer
    // adds itself (host from the URL, the date, the token).
    let mut to_sign = Vec::new();
    for n in &names {
        if ["host", "x-amz-date", "x-amz-security-token"].contains(n) {
            continue;
        }
        to_sign.push((
            *n,
            header(n).ok_or(format!("signed header {n} is missing"))?,
        ));
    }
    let host = header("host").ok_or("no host")?;
    let identity: Identity = Credentials::new(
        ACCESS_KEY,
        SECRET_KEY,
        accept.session_token.clone(),
        None,
        "fake",
    )
    .into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(REGION)
        .name("bedrock")
        .time(time)
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| e.to_string())?
        .into();
    let uri = format!("http://{host}{target}");
    let signable = SignableRequest::new(
        method,
        uri.as_str(),
        to_sign.into_iter(),
        SignableBody::Bytes(body),
    )
    .map_err(|e| e.to_string())?;
    let (_, expected) = sign(signable, &params)
        .map_err(|e| e.to_string())?
        .into_parts();
    if expected != signature {
        return Err("signature mismatch".into());
    }
    Ok(AuthSeen::SigV4 {
        access_key: access_key.clone(),
        region: region.clone(),
        service: service.clone(),
        signed_headers: signed,
    })
}
