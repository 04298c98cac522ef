//! The gateway's request parsers on any body: the first byte picks the route (OpenAI's chat
//! completions, Anthropic's messages, its token count, OpenAI's responses), the rest is the
//! body. Never a panic; a refusal in the API's error shape is fine.
//!
//! A route added to `genai_gateway::parse_request` joins by adding its path to `ROUTES` and a
//! seed body for it in `fuzz/seeds/gateway_requests/`.
#![no_main]

use libfuzzer_sys::fuzz_target;

const ROUTES: &[&str] = &[
    "/v1/chat/completions",
    "/v1/messages",
    "/v1/messages/count_tokens",
    "/v1/responses",
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let route = ROUTES[usize::from(pick) % ROUTES.len()];
    if let Err(e) = genai_gateway::parse_request(route, body) {
        assert!(
            e.status.is_client_error(),
            "{route}: a body is refused as the client's error, not {}: {}",
            e.status,
            e.message
        );
    }
});
