//! A teammate's tool on a key of its own: a user whose config has a cloud default (and a turn
//! on it that failed), an agent on a provider that is down with the cloud as its fallback, and
//! Claude's model names mapped onto that agent, makes a virtual key limited to those names and
//! two requests a minute, starts `genai serve --background`, and points an Anthropic client
//! (curl) at it. The fallback answers and the answer says so; another model is refused by the
//! key's patterns; past its rate it gets a 429 with `retry-after`; `genai usage --by key` shows
//! the key with the model that served it, and a plain `genai usage` counts it; `genai ask` on
//! the agent names the fallback's provider; a revoked key is refused while the serve runs; the
//! key is shown once and never again.

use std::time::Duration;

use crate::home::{Home, Run};
use crate::support::poll::wait_until;

/// A Messages request with `key`, its headers and body as curl prints them (`-i`).
fn messages(home: &Home, base: &str, key: &str, model: &str) -> Run {
    let body = format!(
        r#"{{"model":"{model}","max_tokens":64,"messages":[{{"role":"user","content":"hello"}}]}}"#
    );
    home.sh(&format!(
        "curl -sS -i --max-time 60 -H 'x-api-key: {key}' -H 'anthropic-version: 2023-06-01' \
         -H 'Content-Type: application/json' -d '{body}' {base}/v1/messages"
    ))
}

fn status(run: &Run) -> u16 {
    let out = run.stdout();
    let line = out.lines().next().unwrap_or_default();
    line.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {out}"))
}

#[test]
fn a_virtual_key_with_limits_reaches_a_fallback_and_its_usage_is_its_own() {
    let mut home = Home::new();
    let fake = home.cloud_default_after_a_failed_turn("From the cloud.");
    home.agent_on_a_down_provider("\n[serve.models]\n\"claude-*\" = \"main\"\n");

    let made = home
        .run(&[
            "serve", "keys", "create", "teammate", "--rpm", "2", "--models", "claude-*",
        ])
        .ok();
    let key = made.stdout().trim().to_string();
    assert!(key.len() >= 32 && !key.contains(' '), "{}", made.stdout());

    let serving = home.serve_in_background();
    let base = format!("http://{}", serving.addr);

    // Claude's name, the agent on the provider that is down, and its fallback answers.
    let first = messages(&home, &base, &key, "claude-sonnet-4-5").ok();
    let out = first.stdout();
    assert_eq!(status(&first), 200, "{out}");
    assert!(out.contains("From the cloud."), "{out}");
    let lower = out.to_lowercase();
    assert!(lower.contains("x-genai-fallback: cloud"), "{out}");
    assert!(
        lower.contains("x-genai-served-by: openai:gpt-journey"),
        "{out}"
    );
    assert!(!out.contains("sk-journey"), "{out}");
    assert!(fake
        .requests()
        .iter()
        .all(|r| !format!("{:?}", r.headers).contains(&key)));

    // Another model is outside the key's patterns.
    let other = messages(&home, &base, &key, "openai:gpt-journey").ok();
    assert_eq!(status(&other), 403, "{}", other.stdout());
    assert!(other.stdout().contains("teammate"), "{}", other.stdout());

    // Past two requests a minute: a 429 that says when to come back.
    let limited = (0..3)
        .map(|_| messages(&home, &base, &key, "claude-haiku-4-5").ok())
        .find(|r| status(r) == 429)
        .expect("the key's rate limit refused a request");
    let out = limited.stdout().to_lowercase();
    assert!(out.contains("retry-after:") && out.contains("rpm"), "{out}");

    // The key's usage, under its name, with the model that served it.
    let mut usage = String::new();
    wait_until("genai usage shows the key", Duration::from_secs(20), || {
        usage = home.run(&["usage", "--by", "key"]).ok().stdout();
        usage.contains("teammate")
    });
    assert!(!usage.contains(&key), "{usage}");
    let json = home.run(&["usage", "--by", "key", "--json"]).ok().stdout();
    assert!(
        json.contains("teammate") && json.contains("gpt-journey"),
        "{json}"
    );
    // A plain `genai usage`, piped into `head`, counts the key's request beside the turns.
    let plain = home.sh("genai usage | head -3").ok().stdout();
    assert!(
        plain.lines().any(|l| l.starts_with("gpt-journey")),
        "{plain}"
    );
    let all = home.run(&["usage"]).ok().stdout();
    assert!(all.contains("requests through the gateway"), "{all}");

    // The same agent from the shell: the answer names the provider that served it.
    let asked = home
        .run(&["ask", "-m", "main", "--json", "hi"])
        .ok()
        .stdout();
    assert!(
        asked.contains(r#""provider":"openai""#) && asked.contains("served by fallback cloud"),
        "{asked}"
    );

    // Listed without the key; revoked, refused while the serve runs.
    let listed = home.run(&["serve", "keys", "list"]).ok().stdout();
    assert!(
        listed.contains("teammate") && !listed.contains(&key),
        "{listed}"
    );
    home.run(&["serve", "keys", "revoke", "teammate"]).ok();
    wait_until(
        "the revoked key is refused",
        Duration::from_secs(20),
        || status(&messages(&home, &base, &key, "claude-sonnet-4-5").ok()) == 401,
    );
    home.run(&["serve", "--stop"]).ok();
}
