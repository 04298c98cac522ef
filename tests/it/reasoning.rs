//! Reasoning end to end through the daemon: Claude's extended thinking across several rounds
//! of tool calls against a fake that refuses what the real API refuses, and an
//! OpenAI-compatible server streaming `reasoning_content`. Reasoning streams as
//! `OnReasoningChunk` (never in the answer's chunks or summary), is stored once with its
//! reply, and goes back only where the API requires it. `genai ask` shows it dimmed on a
//! terminal's stderr (run under `script`, which gives it a pseudo-terminal), never on stdout.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::cli::{self, stderr, stdout, Folders};
use crate::support::fake_plugin::FakePlugin;
use crate::support::rpc_client::{Daemon, DaemonConfig, Framing};
use crate::support::{fake_anthropic, fake_openai};

const WAIT: Duration = Duration::from_secs(30);

/// The `delta`s of a turn's `OnReasoningChunk` notifications, in order.
fn reasoning_of(d: &Daemon, turn_id: &str) -> Vec<String> {
    d.log()
        .iter()
        .filter(|m| m["method"] == "OnReasoningChunk" && m["params"]["turnId"] == turn_id)
        .map(|m| m["params"]["delta"].as_str().unwrap().to_string())
        .collect()
}

/// The reasoning parts of stored messages.
fn reasoning_parts(history: &[Value]) -> Vec<Value> {
    history
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|p| p["type"] == "reasoning")
        .collect()
}

#[test]
fn the_strict_claude_fake_refuses_a_tool_result_without_the_signed_thinking() {
    let thinking = json!({"type": "enabled", "budget_tokens": 2048});
    let body = |assistant: Value| {
        json!({"model": "claude-test", "max_tokens": 4096, "thinking": thinking, "messages": [
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": assistant},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "18°C"}]}
        ]})
    };
    let tool_use = json!({"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}});
    let signed = json!({"type": "thinking", "thinking": "Look it up.",
                        "signature": fake_anthropic::signature_of("Look it up.")});
    let forged = json!({"type": "thinking", "thinking": "Look it up.", "signature": "EqForged"});
    let refused = fake_anthropic::check_body(&body(json!([tool_use]))).unwrap();
    assert!(refused.contains("Expected `thinking` or `redacted_thinking`, but found `tool_use`"));
    let refused = fake_anthropic::check_body(&body(json!([forged, tool_use]))).unwrap();
    assert!(refused.contains("Invalid `signature`"), "{refused}");
    assert_eq!(
        fake_anthropic::check_body(&body(json!([signed, tool_use]))),
        None
    );
    let mut small = body(json!([signed, tool_use]));
    small["thinking"]["budget_tokens"] = json!(100);
    assert!(fake_anthropic::check_body(&small)
        .unwrap()
        .contains("greater than or equal to 1024"));
}

#[test]
fn claude_tools_with_extended_thinking_run_several_rounds() {
    use fake_anthropic::{Behavior, FakeAnthropic};
    let events = FakePlugin::start(None);
    let fake = FakeAnthropic::start(Behavior::default()).unwrap();
    fake.push(
        Behavior::calls("", &[("events__getEvents", "{}")]).thinking("I need the events first."),
    );
    fake.push(
        Behavior::calls(
            "Signing you up.",
            &[(
                "events__eventParticipation",
                r#"{"eventId":"E2","participation":"YES"}"#,
            )],
        )
        .thinking("E2 is on the list; sign up."),
    );
    fake.push(Behavior::text("You are in for E2.").thinking("Both calls went well."));
    fake.push(Behavior::text("You're welcome.").thinking("A thank-you."));
    let dir = tempfile::tempdir().unwrap();
    let cfg = DaemonConfig::in_dir(dir.path(), Framing::ContentLength, "daemon")
        .env("ANTHROPIC_BASE_URL", &fake.base_url())
        .env("ANTHROPIC_API_KEY", fake_anthropic::KEY);
    cfg.write_config(&events.enabled_as("events"));
    let mut d = Daemon::spawn(&cfg);
    d.initialize("reasoning", true);
    let (cid, _) = d.create_conversation(json!({
        "feature": "tools", "serviceProvider": "anthropic", "model": "claude-test",
        "parameters": {"thinking": {"type": "enabled", "budget_tokens": 2048}}
    }));
    let (turn, fin) = d.turn(&cid, "Sign me up for E2", WAIT);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(fin["summary"], "You are in for E2.");
    assert_eq!(
        reasoning_of(&d, &turn).concat(),
        "I need the events first.E2 is on the list; sign up.Both calls went well."
    );
    assert!(!d.streamed(&turn).concat().contains("I need"));

    // Each round sends back the signed thinking before the tool_use it answers.
    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    let third = requests[2].body["messages"].as_array().unwrap().clone();
    assert_eq!(third.len(), 5, "{third:?}");
    for (i, thought) in [
        (1, "I need the events first."),
        (3, "E2 is on the list; sign up."),
    ] {
        assert_eq!(
            third[i]["content"][0],
            json!({"type": "thinking", "thinking": thought, "signature": fake_anthropic::signature_of(thought)})
        );
    }

    // Stored once each, with the message they belong to.
    let history = d.history(&cid);
    let roles: Vec<&str> = history
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "assistant"
        ]
    );
    let stored = reasoning_parts(&history);
    assert_eq!(stored.len(), 3, "{history:?}");
    assert_eq!(
        history[5]["content"],
        json!([{"type": "reasoning", "text": "Both calls went well.", "signature": fake_anthropic::signature_of("Both calls went well.")},
               {"type": "text", "text": "You are in for E2."}])
    );

    // The next turn replays the stored history: the thinking before each tool_use comes back
    // unchanged (the fake checks the signatures), the final answer's does not.
    let (_, fin) = d.turn(&cid, "Thanks", WAIT);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let last = fake.requests()[3].body["messages"].clone();
    assert_eq!(last[5]["content"], "You are in for E2.", "{last}");
    assert_eq!(last[1]["content"][0]["type"], "thinking");
    assert!(d.shutdown(WAIT).success());
}

#[test]
fn an_openai_compatible_server_streams_reasoning_content_apart_from_the_answer() {
    use fake_openai::{Behavior, FakeOpenAi};
    let fake = FakeOpenAi::start(0, Behavior::default()).unwrap();
    fake.push(Behavior::text("9.8 is larger.").thinking("Compare the tenths: 8 > 1."));
    fake.push(Behavior::text("Yes."));
    let dir = tempfile::tempdir().unwrap();
    let cfg = DaemonConfig::in_dir(dir.path(), Framing::Lines, "daemon")
        .env("OPENAI_BASE_URL", &fake.base_url())
        .env("OPENAI_API_KEY", "sk-test-reasoning");
    let mut d = Daemon::spawn(&cfg);
    d.initialize("reasoning", true);
    let (cid, _) =
        d.create_conversation(json!({"serviceProvider": "openai", "model": "deepseek-reasoner"}));
    let (turn, fin) = d.turn(&cid, "9.11 or 9.8?", WAIT);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(fin["summary"], "9.8 is larger.");
    let reasoning = reasoning_of(&d, &turn);
    assert_eq!(reasoning.len(), 2, "{reasoning:?}");
    assert_eq!(reasoning.concat(), "Compare the tenths: 8 > 1.");
    assert_eq!(d.streamed(&turn).concat(), "9.8 is larger.");
    // Every reasoning chunk comes before the answer's first chunk.
    let log = d.log();
    let last_reasoning = log
        .iter()
        .rposition(|m| m["method"] == "OnReasoningChunk")
        .unwrap();
    let first_chunk = log
        .iter()
        .position(|m| m["method"] == "OnFeatureResponseChunk" && m["params"]["delta"] != "")
        .unwrap();
    assert!(last_reasoning < first_chunk);

    let history = d.history(&cid);
    assert_eq!(
        reasoning_parts(&history),
        [json!({"type": "reasoning", "text": "Compare the tenths: 8 > 1."})]
    );
    // The fake refuses reasoning_content sent back, as DeepSeek does: the next turn works.
    let (_, fin) = d.turn(&cid, "Sure?", WAIT);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let second = fake.requests()[1].body.to_string();
    assert!(!second.contains("tenths"), "{second}");
    assert!(d.shutdown(WAIT).success());
}

#[test]
fn ask_shows_reasoning_dimmed_on_a_terminal_hides_it_when_asked_and_puts_it_in_json() {
    use fake_openai::{Behavior, FakeOpenAi};
    let fake = FakeOpenAi::start(0, Behavior::text("9.8").thinking("Tenths first.")).unwrap();
    let dirs = Folders::new();
    let ask = |extra: &[&str]| {
        let mut args = vec!["ask", "-m", "openai:gpt-test"];
        args.extend_from_slice(extra);
        args.push("9.11 or 9.8?");
        args.into_iter().map(str::to_string).collect::<Vec<_>>()
    };
    let genai = |extra: &[&str]| {
        let args = ask(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut c = dirs.genai(&args);
        c.env("OPENAI_BASE_URL", fake.base_url())
            .env("OPENAI_API_KEY", "sk-test-reasoning");
        c
    };
    let piped = |extra: &[&str]| cli::output(genai(extra));

    // Piped: stdout is the answer alone, and stderr (no terminal) has no reasoning.
    let o = piped(&[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "9.8\n");
    assert!(!stderr(&o).contains("Tenths"), "{}", stderr(&o));
    // --json carries it in its own field.
    let o = piped(&["--json"]);
    let v: Value = serde_json::from_str(stdout(&o).trim()).expect("one JSON object");
    assert_eq!(
        (v["reply"].as_str(), v["reasoning"].as_str()),
        (Some("9.8"), Some("Tenths first."))
    );
    // And its usage what the server counted of the reasoning.
    assert_eq!(v["usage"]["reasoningTokens"], 2, "{v}");
    assert_eq!(v["usage"]["outputTokens"], 1 + 2, "{v}");

    // On a terminal: dimmed, before the answer, streamed or not; hidden with --no-reasoning.
    let terminal = |extra: &[&str]| cli::on_a_terminal(&genai(extra));
    cli::assert_dimmed_before(&terminal(&[]), "Tenths", "9.8");
    cli::assert_dimmed_before(&terminal(&["--no-stream"]), "Tenths first.", "9.8");
    let hidden = terminal(&["--no-reasoning"]);
    assert!(
        hidden.contains("9.8") && !hidden.contains("Tenths"),
        "{hidden:?}"
    );
}
