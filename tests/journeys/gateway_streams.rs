//! A coding agent's stream through a fallback: a user whose config has a cloud default (and a
//! turn on it that failed) and an agent on a provider that is down with the cloud as its
//! fallback starts `genai serve --background` and streams from the agent as Codex does
//! (`/v1/responses`) and as Claude Code does (`/v1/messages`). Each stream's headers say the
//! fallback answers before its first event, the text comes through, a stream piped into `head`
//! leaves the serve serving, and a whole answer right after says the same; no key of genai's
//! reaches the client.

use crate::home::{Home, Run};

/// A POST of `body` to `path` with the serve token, headers and body as curl prints them
/// (`-i`), through `pipe` (a shell pipe after curl, or nothing).
fn post(home: &Home, base: &str, token: &str, path: &str, body: &str, pipe: &str) -> Run {
    home.sh(&format!(
        "curl -sS -i -N --max-time 60 -H 'Authorization: Bearer {token}' -H 'x-api-key: {token}' \
         -H 'anthropic-version: 2023-06-01' -H 'Content-Type: application/json' -d '{body}' \
         {base}{path} {pipe}"
    ))
}

#[test]
fn an_agents_streams_come_from_its_fallback_and_say_so_before_the_first_event() {
    let mut home = Home::new();
    let _fake = home.cloud_default_after_a_failed_turn("From the cloud.");
    home.agent_on_a_down_provider("");
    let serving = home.serve_in_background();
    let token = home.run(&["serve", "--print-token"]).ok().stdout();
    let (token, base) = (token.trim().to_string(), format!("http://{}", serving.addr));

    let codex = r#"{"model":"main","input":"hello","stream":true}"#;
    let claude = r#"{"model":"main","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hello"}]}"#;
    for (path, body, first, last) in [
        (
            "/v1/responses",
            codex,
            "event: response.created",
            "event: response.completed",
        ),
        (
            "/v1/messages",
            claude,
            "event: message_start",
            "event: message_stop",
        ),
    ] {
        let out = post(&home, &base, &token, path, body, "").ok().stdout();
        let lower = out.to_lowercase();
        let (head, events) = lower.split_once("\r\n\r\n").unwrap_or((&lower, ""));
        assert!(head.contains("x-genai-fallback: cloud"), "{path}: {out}");
        assert!(
            head.contains("x-genai-served-by: openai:gpt-journey"),
            "{path}: {out}"
        );
        assert!(events.starts_with(first), "{path}: {out}");
        assert!(events.contains(last), "{path}: {out}");
        let text: String = out
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<serde_json::Value>(d).ok())
            .filter_map(|v| {
                let delta = &v["delta"];
                delta
                    .as_str()
                    .or(delta["text"].as_str())
                    .map(str::to_string)
            })
            .collect();
        assert_eq!(text, "From the cloud.", "{path}: {out}");
        assert!(!out.contains("sk-journey"), "{path}: {out}");

        // Piped into `head`: the reader goes after the headers (curl says it could not write
        // the rest), and the serve goes on.
        let cut = post(&home, &base, &token, path, body, "| head -3")
            .no_panic()
            .stdout();
        assert!(cut.starts_with("HTTP/1.1 200"), "{path}: {cut}");
        let whole = body.replace(",\"stream\":true", "");
        let again = post(&home, &base, &token, path, &whole, "").ok().stdout();
        assert!(again.starts_with("HTTP/1.1 200"), "{path}: {again}");
        assert!(
            again.to_lowercase().contains("x-genai-fallback: cloud"),
            "{path}: {again}"
        );
        assert!(again.contains("From the cloud."), "{path}: {again}");
    }
}
