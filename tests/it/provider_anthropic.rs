//! The `anthropic` provider kind with the `claude-messages` format, end to end: `genai ask`
//! against the fake Anthropic server in `support/fake_anthropic.rs`, which checks the key, the
//! version header and the body as the real API does and answers in its wire format (SSE with
//! `event:` lines); `genai daemon` on it is in `provider_anthropic_daemon.rs`. Every test
//! waits with deadlines, never sleeps.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use fake_anthropic::{Behavior, FakeAnthropic, Mode, KEY};

use crate::support::cli::{self, stderr, stdout, Folders};
use crate::support::fake_anthropic;

pub(crate) const TURN: Duration = Duration::from_secs(20);
pub(crate) const EXIT: Duration = Duration::from_secs(10);
pub(crate) const MODEL: &str = "claude-sonnet-4-5";

pub(crate) fn fake(b: Behavior) -> FakeAnthropic {
    FakeAnthropic::start(b).expect("start the fake Anthropic server")
}

pub(crate) fn error(status: u16, error_type: &str, message: &str) -> Behavior {
    Behavior {
        mode: Mode::Error {
            status,
            error_type: error_type.into(),
            message: message.into(),
        },
        ..Behavior::default()
    }
}

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
