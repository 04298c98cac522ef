//! The middleware chain through the daemon: a text-only model (an `http-template` endpoint)
//! gets images described by another agent, once per image; a key pasted in a prompt never
//! reaches the provider; a conversation longer than the model's context keeps working; a
//! client-hosted middleware rewrites a prompt, and its failure fails the turn by name. The
//! stored history is never what the middleware sent.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::fake_openai::{Behavior, FakeOpenAi};
use crate::support::rpc_client::{Daemon, DaemonConfig, Framing};

const WAIT: Duration = Duration::from_secs(30);
const KEY: &str = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx1234";
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

/// A config with a `vision` agent on `vision` (it takes images) and a `plain` model, text
/// only, on `text`; `extra` adds agents and middleware.
fn config(vision: &FakeOpenAi, text: &FakeOpenAi, extra: &str) -> String {
    format!(
        r#"
[service_providers.vision]
kind = "openai"
base_url = "{vision}"
default_model = "vision-model"

[service_providers.plain]
kind = "http"
base_url = "{text}/chat/completions"

[model_configurations.plain]
format = "http-template"
model = "plain-model"
[model_configurations.plain.parameters]
request_body = '''{{"model": "${{parameters.model}}", "messages": ${{parameters.messages}}}}'''
response_filter = "$.choices[0].message.content"

[agents.vision]
provider = "vision"
model = "vision-model"

[agents.bare]
provider = "plain"
model_configuration = "plain"
{extra}
"#,
        vision = vision.base_url(),
        text = text.base_url(),
    )
}

fn daemon(config: &str) -> (tempfile::TempDir, Daemon) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = DaemonConfig::in_dir(dir.path(), Framing::Lines, "daemon");
    cfg.write_config(config);
    let mut d = Daemon::spawn(&cfg);
    d.initialize("middleware", true);
    (dir, d)
}

fn image_message(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}, {"type": "image", "mediaType": "image/png", "data": PNG}]})
}

fn details(fin: &Value) -> String {
    fin["detailedResponse"].to_string()
}

#[test]
fn a_text_only_model_gets_images_described_once_and_keys_never_leave() {
    let vision = FakeOpenAi::start(0, Behavior::text("A red dot on white.")).unwrap();
    let text = FakeOpenAi::start(0, Behavior::text("It is a red dot.")).unwrap();
    let extra = r#"
[agents.reader]
provider = "plain"
model_configuration = "plain"
middleware = ["see", "hide"]

[middleware.see]
kind = "describe-images"
agent = "vision"

[middleware.hide]
kind = "redact"
"#;
    let (_dir, mut d) = daemon(&config(&vision, &text, extra));

    // Without middleware, the refusal names the one that would help.
    let (bare, _) = d.create_conversation(json!({"agent": "bare"}));
    let (_, fin) = d.turn(&bare, image_message("What is it?"), WAIT);
    assert_eq!(fin["isSuccess"], false, "{fin}");
    assert!(
        fin["summary"].as_str().unwrap().contains("describe-images"),
        "{fin}"
    );
    assert!(text.requests().is_empty(), "nothing was sent");

    let (cid, _) = d.create_conversation(json!({"agent": "reader"}));
    let (_, fin) = d.turn(
        &cid,
        image_message(&format!("What is it? My key is {KEY}")),
        WAIT,
    );
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(fin["summary"], "It is a red dot.");
    assert!(
        details(&fin)
            .contains("middleware see (describe-images): 1 image(s) described by agent vision (0 from the cache)"),
        "{fin}"
    );
    assert!(
        details(&fin).contains("middleware hide (redact): 1 replaced (1 API key)"),
        "{fin}"
    );
    let sent = text.requests()[0].body.to_string();
    assert!(sent.contains("[image: A red dot on white.]"), "{sent}");
    assert!(!sent.contains(KEY) && !sent.contains(PNG), "{sent}");
    let asked = vision.requests();
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0].body.to_string().contains(PNG),
        "the describer gets the image"
    );

    // The next turn replays the image: described from the cache, the describer not asked again.
    let (_, fin) = d.turn(&cid, "And its colour?", WAIT);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert!(details(&fin).contains("(1 from the cache)"), "{fin}");
    assert_eq!(vision.requests().len(), 1);
    assert!(!text.requests()[1].body.to_string().contains(KEY));

    // The history is what the user sent, image and all.
    let history = d.history(&cid);
    assert_eq!(history[0]["content"][1]["type"], "image", "{history:?}");
    assert!(history[0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains(KEY));
    assert!(d.shutdown(WAIT).success());
}

#[test]
fn a_conversation_longer_than_the_context_keeps_working() {
    let vision = FakeOpenAi::start(0, Behavior::text("unused")).unwrap();
    let text = FakeOpenAi::start(0, Behavior::text(&"word ".repeat(60))).unwrap();
    let extra = r#"
[agents.short]
provider = "plain"
model_configuration = "plain"
middleware = ["fit"]

[middleware.fit]
kind = "fit-context"
context_tokens = 400
reserve_tokens = 100
"#;
    let (_dir, mut d) = daemon(&config(&vision, &text, extra));
    let (cid, _) = d.create_conversation(json!({"agent": "short", "systemPrompt": "Be brief."}));
    for i in 0..6 {
        let (_, fin) = d.turn(&cid, format!("question {i} {}", "word ".repeat(60)), WAIT);
        assert_eq!(fin["isSuccess"], true, "turn {i}: {fin}");
        if i >= 3 {
            assert!(
                details(&fin).contains("middleware fit (fit-context): dropped the "),
                "turn {i}: {fin}"
            );
        }
    }
    let last = text.requests().last().unwrap().body["messages"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(last[0], json!({"role": "system", "content": "Be brief."}));
    assert!(last.last().unwrap()["content"]
        .as_str()
        .unwrap()
        .starts_with("question 5"));
    let chars: usize = last
        .iter()
        .map(|m| m["content"].as_str().unwrap().len())
        .sum();
    assert!(chars / 4 <= 300, "about {} tokens sent", chars / 4);
    // The history keeps every turn.
    assert_eq!(d.history(&cid).len(), 12);
    assert!(d.shutdown(WAIT).success());
}

#[test]
fn a_client_hosted_middleware_rewrites_the_prompt_and_its_failure_fails_the_turn() {
    let fake = FakeOpenAi::start(0, Behavior::text("OK.")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cfg = DaemonConfig::in_dir(dir.path(), Framing::ContentLength, "daemon")
        .env("OPENAI_BASE_URL", &fake.base_url())
        .env("OPENAI_API_KEY", "sk-test-middleware");
    cfg.write_config("[defaults]\nmiddleware = [\"shout\"]\n");
    let mut d = Daemon::spawn(&cfg);
    d.initialize("middleware", true);
    // Not registered yet: the agent cannot be built.
    let e = d.call_err(
        "CreateConversation",
        json!({"serviceProvider": "openai", "model": "gpt-test"}),
    );
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("no middleware named `shout`"),
        "{e}"
    );
    d.call(
        "RegisterMiddleware",
        json!({"name": "shout", "timeoutMs": 5000}),
    );
    let (cid, _) = d.create_conversation(json!({"serviceProvider": "openai", "model": "gpt-test"}));

    for answer in ["rewrite", "fail"] {
        let turn = d.send_message(&cid, "hello there");
        let ask = d.wait_for(
            |m| m["method"] == "OnMiddleware",
            WAIT,
            "an OnMiddleware request",
        );
        assert_eq!(ask["params"]["name"], "shout");
        assert_eq!(ask["params"]["model"], "gpt-test");
        let messages = ask["params"]["messages"].as_array().unwrap().clone();
        assert_eq!(
            messages.last().unwrap()["content"][0]["text"],
            "hello there"
        );
        let reply = if answer == "rewrite" {
            let loud: Vec<Value> = messages
                .iter()
                .map(|m| json!({"role": m["role"], "content": m["content"][0]["text"].as_str().unwrap().to_uppercase()}))
                .collect();
            json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"messages": loud}})
        } else {
            json!({"jsonrpc": "2.0", "id": ask["id"], "error": {"code": -32000, "message": "shouting is over"}})
        };
        d.send_value(&reply);
        let fin = d.wait_final(&turn, WAIT)["params"].clone();
        if answer == "rewrite" {
            assert_eq!(fin["isSuccess"], true, "{fin}");
            assert_eq!(
                fake.requests()[0].body["messages"][0]["content"],
                "HELLO THERE"
            );
            assert!(
                details(&fin).contains("middleware shout (client): 1 messages in, 1 out"),
                "{fin}"
            );
        } else {
            assert_eq!(fin["isSuccess"], false, "{fin}");
            let summary = fin["summary"].as_str().unwrap();
            assert!(
                summary.contains("middleware shout (client)")
                    && summary.contains("shouting is over"),
                "{summary}"
            );
            assert_eq!(fake.requests().len(), 1, "nothing more was sent");
        }
    }
    // The history has what the user wrote, once (the failed turn stored nothing).
    let history = d.history(&cid);
    assert_eq!(history.len(), 2, "{history:?}");
    assert_eq!(history[0]["content"][0]["text"], "hello there");
    d.close_stdin();
    assert!(d.wait_exit(WAIT).success());
}

#[test]
fn a_continued_conversation_keeps_its_agents_middleware_on_another_model_too() {
    let fake = FakeOpenAi::start(0, Behavior::text("Noted.")).unwrap();
    let dirs = crate::support::cli::Folders::new();
    dirs.write_config(&format!(
        r#"
[service_providers.corp]
kind = "openai"
base_url = "{}"

[agents.careful]
provider = "corp"
model = "corp-model"
middleware = ["hide"]

[middleware.hide]
kind = "redact"
"#,
        fake.base_url()
    ));
    let ask = |args: &[&str]| {
        let mut c = dirs.genai(args);
        c.env("OPENAI_API_KEY", "sk-test-unused");
        let o = crate::support::cli::output(c);
        assert!(o.status.success(), "{}", crate::support::cli::stderr(&o));
    };
    ask(&["ask", "-m", "careful", &format!("my key is {KEY}")]);
    ask(&["ask", "-c", &format!("and again {KEY}")]);
    // Handed over to another model (a model id, no agent): the conversation's middleware
    // still runs on the turn of the switch and after it.
    ask(&["ask", "-c", "-m", "corp:other-model", "what did I say?"]);
    ask(&["ask", "-c", "and now?"]);
    let requests = fake.requests();
    assert_eq!(requests.len(), 4);
    for r in &requests {
        assert!(!r.body.to_string().contains(KEY), "{}", r.body);
    }
    for r in &requests[1..] {
        assert!(
            r.body.to_string().contains("[REDACTED API key]"),
            "{}",
            r.body
        );
    }
    assert_eq!(requests[2].body["model"], "other-model");
}
