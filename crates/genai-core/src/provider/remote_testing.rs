//! Test support for the HTTP kinds: the first request an instance would send, built but not
//! sent, for the tests of the kinds and their hooks.

use super::*;

/// The first attempt of a request as an instance would send it with the key `test-key`,
/// built but not sent.
pub(crate) fn first_request(
    p: &HttpProvider,
    format: &'static str,
    model: &str,
    stream: bool,
    body: Value,
) -> Result<reqwest::Request> {
    let e = p.endpoint();
    let request = ModelRequest {
        format,
        model: model.into(),
        body: crate::format::Body::Tree(body),
        stream,
    };
    let route = e.kind.route(format)?;
    let call = Call {
        endpoint: e,
        route,
        request: &request,
    };
    let prepared = p.hooks().prepare(&call)?;
    let key = Secret::new("test-key");
    let client = reqwest::Client::new();
    let built = e
        .request(&client, route, stream, &prepared, Some(&key))
        .build();
    Ok(built.expect("a request that builds"))
}
