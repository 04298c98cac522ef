//! The `anthropic` provider kind with the `claude-messages` format, end to end: `genai ask` and
//! `genai daemon` against the fake Anthropic server in `support/fake_anthropic.rs`, which
//! checks the key, the version header and the body as the real API does and answers in its
//! wire format (SSE with `event:` lines). Every test waits with deadlines, never sleeps.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use fake_anthropic::{Behavior, FakeAnthropic, Mode, KEY};
use rpc_client::{Daemon, DaemonConfig, Framing};

use crate::support::cli::{self, stderr, stdout, Folders};
use crate::support::{fake_anthropic, rpc_client};

const TURN: Duration = Duration::from_secs(20);
const EXIT: Duration = Duration::from_secs(10);
const MODEL: &str = "claude-sonnet-4-5";

fn fake(b: Behavior) -> FakeAnthropic {
    FakeAnthropic::start(b).expect("start the fake Anthropic server")
}

fn error(status: u16, error_type: &str, message: &str) -> Behavior {
    Behavior {
        mode: Mode::Error {
            status,
            error_type: error_type.into(),
            message: message.into(),
        },
        ..Behavior::default()
    }
}

// ---------------------------------------------------------------------------
// genai ask

struct Env {
    dirs: Folders,
    fake: FakeAnthropic,
}

impl Env {
    fn new() -> Env {
        Env {
            dirs: Folders::new(),
            fake: fake(Behavior::default()),
        }
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = self.dirs.genai(args);
        c.env("ANTHROPIC_BASE_URL", self.fake.base_url())
            .env("ANTHROPIC_API_KEY", KEY);
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        cli::output_with_stdin(self.cmd(args), None)
    }

    fn message_counts(&self) -> Vec<i64> {
        cli::message_counts(&self.run(&["sessions", "list", "--json"]))
    }
}

#[test]
fn an_anthropic_key_alone_selects_anthropic_with_no_config() {
    let env = Env::new();
    env.fake
        .set_default(Behavior::reply("Chosen by the key.", 2));
    let o = env.run(&["ask", "hello"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "Chosen by the key.");
    let requests = env.fake.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].body["model"], "claude-sonnet-4-5");
}

#[test]
fn ask_streams_the_reply_with_anthropic_headers_and_body() {
    let env = Env::new();
    env.fake
        .set_default(Behavior::reply("Rust is a systems language.", 4));
    let o = env.run(&[
        "ask",
        "-m",
        "anthropic:claude-sonnet-4-5",
        "-s",
        "Be brief.",
        "-p",
        "temperature=0.2",
        "-p",
        "stop_sequences=END",
        "What",
        "is",
        "Rust?",
    ]);
    cli::assert_prints(&o, "Rust is a systems language.\n");
    let req = env.fake.last();
    assert_eq!(
        (req.method.as_str(), req.path.as_str()),
        ("POST", "/v1/messages")
    );
    assert_eq!(req.header("x-api-key"), Some(KEY));
    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(req.header("content-type"), Some("application/json"));
    assert_eq!(req.header("accept"), Some("text/event-stream"));
    assert!(req.header("authorization").is_none(), "no bearer header");
    assert_eq!(
        req.body,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 4096,
            "system": "Be brief.",
            "messages": [{"role": "user", "content": "What is Rust?"}],
            "temperature": 0.2,
            "stop_sequences": ["END"],
            "stream": true
        })
    );
    assert_eq!(env.message_counts(), vec![2]);

    // The conversation continues with the history, as one alternating list.
    let o = env.run(&["ask", "-c", "And", "Go?"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        env.fake.last().body["messages"],
        json!([
            {"role": "user", "content": "What is Rust?"},
            {"role": "assistant", "content": "Rust is a systems language."},
            {"role": "user", "content": "And Go?"}
        ])
    );
}

#[test]
fn ask_json_has_usage_with_cache_tokens_and_the_stop_reason() {
    let env = Env::new();
    env.fake.set_default(Behavior {
        reply: "Four words of reply.".into(),
        cache_read: 7,
        cache_creation: 3,
        ..Behavior::default()
    });
    let o = env.run(&[
        "ask",
        "-m",
        "anthropic:claude-haiku-4-5",
        "--json",
        "count my words",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).expect("one JSON object");
    assert_eq!(v["reply"], "Four words of reply.");
    assert_eq!(v["provider"], "anthropic");
    assert_eq!(v["model"], "claude-haiku-4-5");
    assert_eq!(v["finishReason"], "end_turn");
    assert_eq!(
        v["usage"],
        json!({"inputTokens": 13, "outputTokens": 4, "cacheReadTokens": 7, "cacheWriteTokens": 3}),
        "the input counts the cached tokens too"
    );
    // claude-haiku-4-5 is in the built-in table: 3 uncached at $1, 7 read at $0.10, 3
    // written at $1.25 and 4 out at $5 per million.
    let cost = v["cost"].as_f64().expect("a cost");
    assert!(
        (cost - (3.0 + 0.7 + 3.75 + 20.0) / 1e6).abs() < 1e-12,
        "{cost}"
    );
    // --json waits for the whole reply: a non-streamed request.
    let req = env.fake.last();
    assert!(req.body.get("stream").is_none(), "{}", req.body);
    assert!(req.header("accept") != Some("text/event-stream"));

    // A non-streamed answer that is not JSON, and an overloaded API, fail in one line.
    env.fake.push(Behavior {
        mode: Mode::MalformedAfter { after: 0 },
        ..Behavior::default()
    });
    let o = env.run(&["ask", "-m", "anthropic:claude-haiku-4-5", "--json", "again"]);
    cli::assert_fails_with(&o, 1, "invalid JSON");
    let v: Value = serde_json::from_str(stdout(&o).trim()).expect("one JSON object");
    assert_eq!(v["error"]["kind"], "providerError", "{v}");
    // The configured `anthropic` instance replaces the built-in one; it does not retry.
    std::fs::write(
        env.dirs.config.path().join("config.toml"),
        "[service_providers.anthropic]\nkind = \"anthropic\"\nmax_retries = 0\n",
    )
    .unwrap();
    env.fake.push(error(529, "overloaded_error", "Overloaded"));
    let o = env.run(&[
        "ask",
        "-m",
        "anthropic:claude-haiku-4-5",
        "--no-stream",
        "again",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        stderr(&o).trim(),
        "genai: anthropic: HTTP 529 <unknown status code> overloaded_error: Overloaded \
         [request req_fake00000000000000000003] (the provider failed: try again later)"
    );
    // The failed turns left no conversation behind.
    assert_eq!(env.message_counts(), [2]);
}

#[test]
fn version_and_beta_parameters_become_headers_and_leave_the_body() {
    let env = Env::new();
    let o = env.run(&[
        "ask",
        "-m",
        "anthropic:claude-sonnet-4-5",
        "-p",
        "anthropic_version=2024-10-22",
        "-p",
        "anthropic_beta=token-efficient-tools-2025-02-19",
        "-p",
        "max_tokens=100",
        "hi",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let req = env.fake.last();
    assert_eq!(req.header("anthropic-version"), Some("2024-10-22"));
    assert_eq!(
        req.header("anthropic-beta"),
        Some("token-efficient-tools-2025-02-19")
    );
    assert!(req.body.get("anthropic_version").is_none(), "{}", req.body);
    assert!(req.body.get("anthropic_beta").is_none(), "{}", req.body);
    assert_eq!(req.body["max_tokens"], 100);
}

#[test]
fn missing_or_wrong_key_is_a_credentials_error() {
    let env = Env::new();
    let mut c = env.cmd(&["ask", "-m", "anthropic:claude-sonnet-4-5", "hi"]);
    c.env_remove("ANTHROPIC_API_KEY");
    let o = cli::output_with_stdin(c, None);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("ANTHROPIC_API_KEY") && err.contains("genai keys set anthropic"),
        "{err}"
    );
    assert!(
        env.fake.requests().is_empty(),
        "a request went out without a key"
    );

    let mut c = env.cmd(&["ask", "-m", "anthropic:claude-sonnet-4-5", "hi"]);
    c.env("ANTHROPIC_API_KEY", "sk-ant-wrong-key");
    let o = cli::output_with_stdin(c, None);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("401") && err.contains("authentication_error"),
        "{err}"
    );
    assert!(!err.contains("sk-ant-wrong-key"), "the key leaked: {err}");
    assert!(env.message_counts().iter().all(|n| *n == 0));
}

#[test]
fn a_config_instance_with_its_own_key_command_and_timeout() {
    let env = Env::new();
    env.fake.push(Behavior {
        mode: Mode::Stall,
        ..Behavior::default()
    });
    std::fs::write(
        env.dirs.config.path().join("config.toml"),
        format!(
            "[service_providers.claude]\nkind = \"anthropic\"\nbase_url = \"{}/v1\"\n\
             api_key_env = \"NO_SUCH_VAR_FOR_GENAI\"\napi_key_cmd = \"echo {KEY}\"\n\
             read_timeout_secs = 1\ndefault_model = \"claude-opus-4-1\"\n\
             headers = {{ \"anthropic-version\" = \"2023-01-01\", \"x-team\" = \"blue\" }}\n\
             [agents.c]\nprovider = \"claude\"\nmodel = \"claude-opus-4-1\"\n",
            env.fake.base_url()
        ),
    )
    .unwrap();
    // A slow server past the read timeout fails the turn promptly and stores nothing.
    let started = Instant::now();
    let o = env.run(&["ask", "-m", "c", "anyone there?"]);
    cli::assert_fails_with(&o, 1, "no answer in time");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(env.message_counts().iter().all(|n| *n == 0));
    // The next request answers; the key came from api_key_cmd.
    let o = env.run(&["ask", "-m", "c", "hello"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let req = env.fake.last();
    assert_eq!(req.header("x-api-key"), Some(KEY));
    assert_eq!(req.body["model"], "claude-opus-4-1");
    // A configured anthropic-version replaces the default, once; other headers pass through.
    let versions: Vec<&str> = req
        .headers
        .iter()
        .filter(|(n, _)| n == "anthropic-version")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(versions, ["2023-01-01"]);
    assert_eq!(req.header("x-team"), Some("blue"));
    // The parameter wins over the configured header.
    let o = env.run(&[
        "ask",
        "-m",
        "c",
        "-p",
        "anthropic_version=2023-06-01",
        "again",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let req = env.fake.last();
    let versions: Vec<&str> = req
        .headers
        .iter()
        .filter(|(n, _)| n == "anthropic-version")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(versions, ["2023-06-01"]);
}

// ---------------------------------------------------------------------------
// genai daemon

/// A fake with `behavior`, and a daemon on it in a folder of its own, initialized by a
/// streaming client.
fn start_daemon(behavior: Behavior) -> (FakeAnthropic, tempfile::TempDir, Daemon) {
    let fake = fake(behavior);
    let dir = tempfile::tempdir().unwrap();
    let mut d = Daemon::spawn(
        &DaemonConfig::in_dir(dir.path(), Framing::Lines, "daemon")
            .env("ANTHROPIC_BASE_URL", &fake.base_url())
            .env("ANTHROPIC_API_KEY", KEY),
    );
    d.initialize("anthropic-tests", true);
    (fake, dir, d)
}

fn conversation(d: &mut Daemon) -> String {
    let conv = d.call(
        "CreateConversation",
        json!({"serviceProvider": "anthropic", "model": MODEL}),
    );
    assert_eq!(conv["format"], "claude-messages", "{conv}");
    conv["conversationId"].as_str().unwrap().to_string()
}

#[test]
fn daemon_turn_streams_chunks_then_the_final_with_usage() {
    let text = "Streaming from Claude: café ☕, in pieces.";
    let (fake, dir, mut d) = start_daemon(Behavior::reply(text, 5));
    let comps = d.call("ListComponents", json!({}));
    let kinds = comps["kinds"]["serviceProviders"].as_array().unwrap();
    let anthropic = kinds.iter().find(|k| k["name"] == "anthropic").unwrap();
    assert_eq!(anthropic["formats"], json!(["claude-messages"]), "{comps}");
    assert_eq!(anthropic["defaultFormat"], "claude-messages");

    let cid = conversation(&mut d);
    let (turn_id, fin) = d.turn(&cid, json!("Say hello in pieces"), TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(fin["summary"], text);
    assert_eq!(fin["usage"]["inputTokens"], 4, "{fin}");
    assert_eq!(fin["usage"]["outputTokens"], 7, "{fin}");
    assert_eq!(fin["finishReason"], "end_turn");
    assert_eq!(fin["model"], MODEL);
    let details: Vec<&str> = fin["detailedResponse"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        details.contains(&"provider: anthropic (anthropic)")
            && details.contains(&"usage: 4 input + 7 output = 11 tokens"),
        "{details:?}"
    );
    // claude-sonnet-4-5 is in the built-in table: 4 in at $3 and 7 out at $15 per million.
    let cost = fin["cost"].as_f64().expect("a cost");
    assert!(
        (cost - (4.0 * 3.0 + 7.0 * 15.0) / 1e6).abs() < 1e-12,
        "{fin}"
    );
    assert!(
        details.contains(
            &"cost: $0.000117 (built-in estimate for claude-sonnet-4-5 (2025-10 list price))"
        ),
        "{details:?}"
    );
    // Chunks, in order, all before the one final response.
    let mut chunks = String::new();
    let mut final_at = None;
    for (i, m) in d.log().iter().enumerate() {
        if m["params"]["turnId"] != turn_id.as_str() {
            continue;
        }
        match m["method"].as_str() {
            Some("OnFeatureResponseChunk") => {
                assert!(final_at.is_none(), "a chunk came after the final response");
                chunks.push_str(m["params"]["delta"].as_str().unwrap());
            }
            Some("OnFeatureResponse") if m["params"]["final"] == true => {
                assert!(final_at.replace(i).is_none(), "two final responses")
            }
            _ => {}
        }
    }
    assert_eq!(chunks, text);
    let stored = d.history(&cid);
    assert_eq!(stored.len(), 2);
    assert_eq!(stored[1]["usage"]["outputTokens"], 7, "{stored:?}");
    assert!(d.shutdown(EXIT).success());
    // The key reached the provider and nothing else: not the debug log, stdout or the store.
    assert_eq!(fake.last().header("x-api-key"), Some(KEY));
    assert!(!d.stderr_text().contains(KEY), "the key is in the log");
    assert!(!String::from_utf8_lossy(&d.raw_stdout()).contains(KEY));
    assert!(dir.path().join("data/history.db").is_file());
    for file in ["history.db", "history.db-wal"] {
        let bytes = std::fs::read(dir.path().join("data").join(file)).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(KEY),
            "the key is in {file}"
        );
    }
}

#[test]
fn image_parts_reach_the_body_as_base64_and_url_sources() {
    let (fake, _dir, mut d) = start_daemon(Behavior::reply("A red dot.", 2));
    let cid = conversation(&mut d);
    let message = json!({"role": "user", "content": [
        {"type": "image", "mediaType": "image/png", "data": "iVBORw0KGgo="},
        {"type": "image", "url": "https://example.invalid/cat.jpg"},
        "What is in these?"
    ]});
    let (_, fin) = d.turn(&cid, message, TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(
        fake.last().body["messages"],
        json!([{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
            {"type": "image", "source": {"type": "url", "url": "https://example.invalid/cat.jpg"}},
            {"type": "text", "text": "What is in these?"}
        ]}])
    );
    // An image over Anthropic's 5 MB (base64) limit is refused before anything is sent.
    let sent = fake.requests().len();
    let big = "A".repeat(5 * 1024 * 1024 + 4);
    let message = json!({"role": "user", "content": [
        {"type": "image", "mediaType": "image/png", "data": big}, "and this?"
    ]});
    let (_, fin) = d.turn(&cid, message, TURN);
    assert_eq!(fin["isSuccess"], false, "{}", fin["error"]);
    let msg = fin["error"]["message"].as_str().unwrap();
    assert!(msg.contains("limit"), "{msg}");
    assert_eq!(fake.requests().len(), sent);
    assert_eq!(d.history(&cid).len(), 2);
    assert!(d.shutdown(EXIT).success());
}

#[test]
fn every_fault_fails_its_turn_and_leaves_the_history_as_it_was() {
    let (fake, _dir, mut d) = start_daemon(Behavior::reply("All good.", 2));
    let cid = conversation(&mut d);
    let (_, fin) = d.turn(&cid, json!("first"), TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");

    // 429 (retry-after: 1) and 529 overloaded are retried; the third try answers.
    fake.push(error(
        429,
        "rate_limit_error",
        "Number of requests has exceeded your rate limit",
    ));
    fake.push(error(529, "overloaded_error", "Overloaded"));
    let before = fake.requests().len();
    let (_, fin) = d.turn(&cid, json!("second"), TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let requests = fake.requests();
    assert_eq!(requests.len() - before, 3);
    assert!(
        requests[before + 1].at - requests[before].at >= Duration::from_secs(1),
        "retry-after was not honoured"
    );
    assert_eq!(d.history(&cid).len(), 4);

    let long = "one two three four five six seven eight";
    let faults: Vec<(&str, Vec<Behavior>, &[&str])> = vec![
        (
            "500 on every try",
            (0..4)
                .map(|_| error(500, "api_error", "Internal server error"))
                .collect(),
            &["500", "api_error", "Internal server error", "after 4 tries"],
        ),
        (
            "400 refused at once",
            vec![error(
                400,
                "invalid_request_error",
                "messages: roles must alternate",
            )],
            &["400", "invalid_request_error", "roles must alternate"],
        ),
        (
            "stream cut mid-event",
            vec![Behavior {
                mode: Mode::CutAfter { after: 2 },
                ..Behavior::reply(long, 4)
            }],
            &["anthropic"],
        ),
        (
            "error event mid-stream",
            vec![Behavior {
                mode: Mode::ErrorEventAfter {
                    after: 2,
                    error_type: "overloaded_error".into(),
                    message: "Overloaded".into(),
                },
                ..Behavior::reply(long, 4)
            }],
            &["overloaded_error", "Overloaded"],
        ),
        (
            "malformed JSON in the stream",
            vec![Behavior {
                mode: Mode::MalformedAfter { after: 1 },
                ..Behavior::reply(long, 4)
            }],
            &["invalid JSON"],
        ),
    ];
    for (what, behaviors, needles) in faults {
        let before = fake.requests().len();
        let tries = behaviors.len();
        for b in behaviors {
            fake.push(b);
        }
        let (turn_id, fin) = d.turn(&cid, json!(format!("fault: {what}")), TURN);
        assert_eq!(fin["isSuccess"], false, "{what}: {fin}");
        assert_eq!(fin["error"]["kind"], "providerError", "{what}: {fin}");
        let message = fin["error"]["message"].as_str().unwrap();
        for needle in needles {
            assert!(message.contains(needle), "{what}: {message}");
        }
        if what.contains("cut") {
            assert!(
                message.contains("ended before the reply was complete")
                    || message.contains("connection broke"),
                "{what}: {message}"
            );
        }
        assert!(!message.contains('\n'), "{what}: one line: {message}");
        assert_eq!(fake.requests().len() - before, tries, "{what}");
        assert_eq!(d.history(&cid).len(), 4, "{what} changed the history");
        let finals = d
            .log()
            .iter()
            .filter(|m| m["params"]["turnId"] == turn_id.as_str() && m["params"]["final"] == true)
            .count();
        assert_eq!(finals, 1, "{what}");
    }

    // A slow stream past the whole-request timeout, on a provider made at run time.
    d.call(
        "CreateServiceProvider",
        json!({"name": "slow", "kind": "anthropic", "settings": {"base_url": fake.base_url(), "timeout_secs": 1}}),
    );
    let (slow_id, _) = d.create_conversation(json!({"serviceProvider": "slow", "model": MODEL}));
    fake.push(Behavior {
        delay: Duration::from_millis(400),
        ..Behavior::reply(long, 8)
    });
    let started = Instant::now();
    let (_, fin) = d.turn(&slow_id, json!("count slowly"), TURN);
    assert_eq!(fin["isSuccess"], false, "{fin}");
    let kind = fin["error"]["kind"].as_str().unwrap();
    assert!(kind == "timeout" || kind == "providerError", "{fin}");
    assert!(started.elapsed() < Duration::from_secs(6));
    assert!(d.history(&slow_id).is_empty());

    // The conversation still works, and the model sees only the committed turns.
    let (_, fin) = d.turn(&cid, json!("last"), TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let texts: Vec<Value> = fake.last().body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].clone())
        .collect();
    assert_eq!(
        texts,
        vec![
            json!("first"),
            json!("All good."),
            json!("second"),
            json!("All good."),
            json!("last")
        ]
    );
    assert_eq!(d.history(&cid).len(), 6);
    assert!(d.shutdown(EXIT).success());
}

#[test]
fn set_model_parameter_checks_claude_parameters() {
    let (fake, _dir, mut d) = start_daemon(Behavior::reply("ok", 1));
    let conv = d.call(
        "CreateConversation",
        json!({"serviceProvider": "anthropic", "model": MODEL}),
    );
    let agent = conv["agentId"].as_str().unwrap().to_string();
    let cid = conv["conversationId"].as_str().unwrap().to_string();
    d.call(
        "SetModelParameter",
        json!({"agentId": agent, "name": "Top_K", "value": 5}),
    );
    d.call(
        "SetModelParameter",
        json!({"agentId": agent, "name": "thinking", "value": {"type": "enabled", "budget_tokens": 1024}}),
    );
    let e = d.call_err(
        "SetModelParameter",
        json!({"agentId": agent, "name": "temperature", "value": 1.5}),
    );
    assert!(e["message"].as_str().unwrap().contains("outside"), "{e}");
    let e = d.call_err(
        "SetModelParameter",
        json!({"agentId": agent, "name": "frequency_penalty", "value": 1}),
    );
    assert!(
        e["message"].as_str().unwrap().contains("stop_sequences"),
        "{e}"
    );
    let (_, fin) = d.turn(&cid, json!("think"), TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let body = fake.last().body;
    assert_eq!(body["top_k"], 5);
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 1024})
    );
    // An OpenAI format cannot run on this provider kind.
    d.call(
        "CreateModelConfiguration",
        json!({"name": "gpt", "format": "openai-chat", "model": "gpt-4o-mini"}),
    );
    let e = d.call_err(
        "CreateConversation",
        json!({"serviceProvider": "anthropic", "modelConfiguration": "gpt"}),
    );
    assert_eq!(e["data"]["kind"], "incompatibleComponents", "{e}");
    assert!(d.shutdown(EXIT).success());
}
