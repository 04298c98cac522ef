//! The `bedrock` provider kind end to end: `genai ask` against the fake Bedrock Runtime, which
//! verifies every SigV4 signature (or the bearer API key) and answers in Bedrock's wire format,
//! binary event streams included. The daemon on it is in `provider_bedrock_daemon.rs`.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use fake_bedrock::{Accept, AuthSeen, Behavior, FakeBedrock, Mode};
use serde_json::{json, Value};

use crate::support::cli::{self, stderr, stdout, Folders};
use crate::support::fake_bedrock;

pub(crate) const MODEL: &str = "anthropic.claude-3-haiku-20240307-v1:0";
pub(crate) const TURN: Duration = Duration::from_secs(30);

struct Env {
    dirs: Folders,
    /// HOME, so that no real `~/.aws` is read.
    home: tempfile::TempDir,
    fake: FakeBedrock,
}

impl Env {
    fn new(accept: Accept) -> Env {
        Env {
            dirs: Folders::new(),
            home: tempfile::tempdir().unwrap(),
            fake: FakeBedrock::start(accept).unwrap(),
        }
    }

    /// `genai` with no AWS variable of the caller's, the fake as the endpoint and its region.
    fn cmd(&self, args: &[&str], vars: &[(&str, &str)]) -> Command {
        let mut c = self.dirs.genai(args);
        c.env("HOME", self.home.path());
        for (k, _) in std::env::vars() {
            if k.starts_with("AWS_") {
                c.env_remove(k);
            }
        }
        c.env("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", self.fake.url())
            .env("AWS_REGION", fake_bedrock::REGION)
            .envs(vars.iter().copied());
        c
    }

    fn run(&self, args: &[&str], vars: &[(&str, &str)]) -> Output {
        cli::output_with_stdin(self.cmd(args, vars), None)
    }

    fn write_config(&self, text: &str) {
        self.dirs.write_config(text);
    }

    /// How many messages the history holds, over every conversation.
    fn stored_messages(&self) -> i64 {
        cli::message_counts(&self.run(&["sessions", "list", "--json"], &[]))
            .iter()
            .sum()
    }
}

pub(crate) const KEYS: [(&str, &str); 2] = [
    ("AWS_ACCESS_KEY_ID", fake_bedrock::ACCESS_KEY),
    ("AWS_SECRET_ACCESS_KEY", fake_bedrock::SECRET_KEY),
];

fn sigv4(signed_headers: &str) -> AuthSeen {
    AuthSeen::SigV4 {
        access_key: fake_bedrock::ACCESS_KEY.into(),
        region: fake_bedrock::REGION.into(),
        service: "bedrock".into(),
        signed_headers: signed_headers.into(),
    }
}

#[test]
fn env_credentials_stream_a_converse_reply_signed_with_sigv4() {
    let env = Env::new(Accept {
        session_token: None,
    });
    env.fake.set_default(Behavior {
        reply: "Bonjour, café ☕ and more.".into(),
        chunks: 4,
        ..Default::default()
    });
    let model = format!("bedrock:{MODEL}");
    let o = env.run(
        &[
            "ask",
            "-m",
            &model,
            "-s",
            "Be brief.",
            "-p",
            "maxTokens=64",
            "Say",
            "hello",
        ],
        &KEYS,
    );
    cli::assert_prints(&o, "Bonjour, café ☕ and more.\n");
    let req = env.fake.last();
    assert_eq!(req.auth, sigv4("accept;content-type;host;x-amz-date"));
    assert_eq!(
        req.path,
        "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse-stream"
    );
    assert_eq!(req.model, MODEL);
    assert_eq!(
        req.header("accept"),
        Some("application/vnd.amazon.eventstream")
    );
    assert_eq!(
        req.body,
        json!({
            "messages": [{"role": "user", "content": [{"text": "Say hello"}]}],
            "system": [{"text": "Be brief."}],
            "inferenceConfig": {"maxTokens": 64}
        })
    );
    assert_eq!(env.stored_messages(), 2);

    // Whole replies go through Converse; usage and stop reason come back.
    let o = env.run(
        &[
            "ask",
            "-m",
            &model,
            "--no-stream",
            "--json",
            "one two three",
        ],
        &KEYS,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["reply"], "Bonjour, café ☕ and more.");
    assert_eq!(v["finishReason"], "end_turn");
    assert_eq!(v["usage"]["inputTokens"], 3);
    let req = env.fake.last();
    assert_eq!(req.action, "converse");
    assert_eq!(req.header("accept"), Some("application/json"));
    assert!(matches!(req.auth, AuthSeen::SigV4 { .. }), "{:?}", req.auth);
}

#[test]
fn claude_messages_go_through_invoke_model_with_the_bedrock_envelope() {
    let env = Env::new(Accept {
        session_token: None,
    });
    env.write_config(&format!(
        "[model_configurations.claude]\nformat = \"claude-messages\"\nmodel = \"{MODEL}\"\nparameters = {{ max_tokens = 300 }}\n\n[agents.cb]\nprovider = \"bedrock\"\nmodel_configuration = \"claude\"\n"
    ));
    env.fake.set_default(Behavior {
        reply: "Claude on Bedrock, streamed.".into(),
        chunks: 4,
        ..Default::default()
    });
    let o = env.run(
        &["ask", "-m", "cb", "-s", "Be brief.", "hello", "Claude"],
        &KEYS,
    );
    cli::assert_prints(&o, "Claude on Bedrock, streamed.\n");
    let req = env.fake.last();
    assert_eq!(
        req.path,
        "/model/anthropic.claude-3-haiku-20240307-v1%3A0/invoke-with-response-stream"
    );
    assert_eq!(req.auth, sigv4("accept;content-type;host;x-amz-date"));
    assert_eq!(req.body["anthropic_version"], "bedrock-2023-05-31");
    assert_eq!(req.body["max_tokens"], 300);
    assert_eq!(req.body["system"], "Be brief.");
    assert!(
        req.body.get("model").is_none() && req.body.get("stream").is_none(),
        "{}",
        req.body
    );
    assert_eq!(req.body["messages"][0]["role"], "user");

    let o = env.run(
        &["ask", "-m", "cb", "--no-stream", "--json", "again"],
        &KEYS,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["reply"], "Claude on Bedrock, streamed.");
    assert_eq!(v["finishReason"], "end_turn");
    let req = env.fake.last();
    assert_eq!(req.action, "invoke");
    assert!(req.body.get("stream").is_none(), "{}", req.body);

    // A Claude stream cut inside a chunk event fails and stores nothing more.
    env.fake.push(Behavior {
        mode: Mode::CutAfter { after: 2 },
        chunks: 4,
        ..Default::default()
    });
    let before = env.stored_messages();
    let o = env.run(&["ask", "-m", "cb", "hi"], &KEYS);
    cli::assert_fails_with(&o, 1, "ended before the reply was complete");
    assert_eq!(env.stored_messages(), before);
}

#[test]
fn a_configured_profile_with_a_session_token_and_an_arn_model_id() {
    let env = Env::new(Accept {
        session_token: Some("FQoGZXIvYXdzEXAMPLETOKEN/+=".into()),
    });
    let creds = env.home.path().join("creds");
    std::fs::write(
        &creds,
        format!(
            "[default]\naws_access_key_id = AKIDWRONG\naws_secret_access_key = wrong\n\n[work]\naws_access_key_id = {}\naws_secret_access_key = {}\naws_session_token = FQoGZXIvYXdzEXAMPLETOKEN/+=\n",
            fake_bedrock::ACCESS_KEY,
            fake_bedrock::SECRET_KEY
        ),
    )
    .unwrap();
    env.write_config(&format!(
        "[service_providers.aws]\nkind = \"bedrock\"\nprofile = \"work\"\nregion = \"{}\"\nbase_url = \"{}\"\n",
        fake_bedrock::REGION,
        env.fake.url()
    ));
    let arn = "arn:aws:bedrock:eu-central-1:123456789012:inference-profile/eu.anthropic.claude-3-haiku-20240307-v1:0";
    let model = format!("aws:{arn}");
    // The environment's keys are wrong: the configured profile must win over them, and the
    // region and endpoint of the config over the environment's.
    let vars = [
        ("AWS_SHARED_CREDENTIALS_FILE", creds.to_str().unwrap()),
        ("AWS_ACCESS_KEY_ID", "AKIDFROMENV"),
        ("AWS_SECRET_ACCESS_KEY", "from-env"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "http://127.0.0.1:9"),
        ("GENAI_LOG", "trace"),
    ];
    let o = env.run(&["ask", "-m", &model, "hello"], &vars);
    assert!(o.status.success(), "{}", stderr(&o));
    // Even the most verbose log shows no secret part of the credentials.
    let log = stderr(&o);
    assert!(
        log.contains("TRACE") || log.contains("DEBUG"),
        "no log at all: {log}"
    );
    for secret in [fake_bedrock::SECRET_KEY, "FQoGZXIvYXdzEXAMPLETOKEN"] {
        assert!(!log.contains(secret), "the log shows a secret");
    }
    assert_eq!(stdout(&o), "Hello from the fake Bedrock.\n");
    let req = env.fake.last();
    assert_eq!(
        req.auth,
        sigv4("accept;content-type;host;x-amz-date;x-amz-security-token")
    );
    assert_eq!(
        req.header("x-amz-security-token"),
        Some("FQoGZXIvYXdzEXAMPLETOKEN/+=")
    );
    assert_eq!(
        req.path,
        "/model/arn%3Aaws%3Abedrock%3Aeu-central-1%3A123456789012%3Ainference-profile%2Feu.anthropic.claude-3-haiku-20240307-v1%3A0/converse-stream"
    );
    assert_eq!(req.model, arn);
}

#[test]
fn a_bedrock_api_key_replaces_sigv4() {
    let env = Env::new(Accept {
        session_token: None,
    });
    let model = format!("bedrock:{MODEL}");
    let o = env.run(
        &["ask", "-m", &model, "hi"],
        &[("AWS_BEARER_TOKEN_BEDROCK", fake_bedrock::API_KEY)],
    );
    cli::assert_prints(&o, "Hello from the fake Bedrock.\n");
    let req = env.fake.last();
    assert_eq!(req.auth, AuthSeen::Bearer);
    assert_eq!(req.header("x-amz-date"), None);

    let o = env.run(
        &["ask", "-m", &model, "hi"],
        &[("AWS_BEARER_TOKEN_BEDROCK", "ABSKwrong-key-value-xyz")],
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("HTTP 403") && err.contains("UnrecognizedClientException"),
        "{err}"
    );
    assert!(!err.contains("ABSKwrong-key-value-xyz"), "{err}");
    assert!(err.contains("[used a Bedrock API key]"), "{err}");
}

#[test]
fn missing_or_wrong_credentials_are_clear_and_never_shown() {
    let env = Env::new(Accept {
        session_token: None,
    });
    let model = format!("bedrock:{MODEL}");
    let o = env.run(&["ask", "-m", &model, "hi"], &[]);
    cli::assert_fails_with(&o, 3, "AWS_ACCESS_KEY_ID");
    assert!(env.fake.requests().is_empty(), "nothing may be sent");

    let o = env.run(
        &["ask", "-m", &model, "hi"],
        &[
            ("AWS_ACCESS_KEY_ID", fake_bedrock::ACCESS_KEY),
            ("AWS_SECRET_ACCESS_KEY", "not/the+right/secret0000"),
        ],
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("InvalidSignatureException"), "{err}");
    assert!(
        err.contains("[used AWS credentials from the environment]"),
        "{err}"
    );
    assert!(!err.contains("not/the+right/secret0000"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");

    let o = env.run(
        &["ask", "-m", &model, "hi"],
        &[("AWS_REGION", ""), KEYS[0], KEYS[1]],
    );
    cli::assert_fails_with(&o, 3, "no AWS region");
    assert_eq!(env.stored_messages(), 0);
}

#[test]
fn throttling_is_retried_and_every_attempt_is_signed() {
    let env = Env::new(Accept {
        session_token: None,
    });
    env.fake.push(Behavior {
        mode: Mode::Error {
            status: 429,
            error_type: "ThrottlingException".into(),
            message: "Too many requests, please wait before trying again.".into(),
        },
        ..Default::default()
    });
    let started = Instant::now();
    let o = env.run(&["ask", "-m", &format!("bedrock:{MODEL}"), "hi"], &KEYS);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "Retry-After: 1 was not honoured"
    );
    let reqs = env.fake.requests();
    assert_eq!(reqs.len(), 2);
    for r in &reqs {
        assert!(matches!(r.auth, AuthSeen::SigV4 { .. }), "{:?}", r.auth);
    }
}

#[test]
fn faults_fail_the_turn_in_one_line_and_store_nothing() {
    let env = Env::new(Accept {
        session_token: None,
    });
    env.write_config(
        "[service_providers.bedrock]\nkind = \"bedrock\"\nmax_retries = 1\nread_timeout_secs = 1\n",
    );
    let model = format!("bedrock:{MODEL}");
    let cases: Vec<(Mode, &[&str], &str)> = vec![
        (
            Mode::Error {
                status: 500,
                error_type: "InternalServerException".into(),
                message: "upstream exploded".into(),
            },
            &[],
            "HTTP 500 Internal Server Error InternalServerException: upstream exploded",
        ),
        (
            Mode::CutAfter { after: 1 },
            &[],
            "ended before the reply was complete",
        ),
        (Mode::MalformedJson, &[], "invalid JSON"),
        (Mode::MalformedJson, &["--no-stream"], "invalid JSON"),
        (Mode::BadChecksum, &[], "event stream is corrupt"),
        (
            Mode::Exception {
                after: 1,
                exception_type: "modelStreamErrorException".into(),
                message: "The model stream failed.".into(),
            },
            &[],
            "modelStreamErrorException: The model stream failed.",
        ),
        (
            Mode::Exception {
                after: 0,
                exception_type: "validationException".into(),
                message: "Malformed input request".into(),
            },
            &[],
            "validationException: Malformed input request",
        ),
        (Mode::Stall, &[], "no answer in time"),
    ];
    for (mode, flags, expected) in cases {
        let label = format!("{mode:?}");
        for _ in 0..2 {
            env.fake.push(Behavior {
                mode: mode.clone(),
                chunks: 4,
                ..Default::default()
            });
        }
        let mut args = vec!["ask", "-m", model.as_str()];
        args.extend_from_slice(flags);
        args.push("hi");
        let started = Instant::now();
        let o = env.run(&args, &KEYS);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{label}: {err}");
        assert!(err.contains(expected), "{label}: {err}");
        assert_eq!(err.lines().count(), 1, "{label}: {err}");
        assert!(!err.contains(fake_bedrock::SECRET_KEY), "{label}: {err}");
        assert!(started.elapsed() < Duration::from_secs(20), "{label}");
        assert_eq!(
            env.stored_messages(),
            0,
            "{label}: a failed turn was stored"
        );
        // A mode that failed at once leaves its retry's behaviour queued.
        env.fake.clear_queue();
    }

    // A server that goes quiet in the middle of a stream, past `read_timeout_secs`.
    env.fake.push(Behavior {
        delay: Duration::from_secs(5),
        ..Default::default()
    });
    let started = Instant::now();
    let o = env.run(&["ask", "-m", &model, "hi"], &KEYS);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("no answer in time") && err.contains("ended before the reply was complete"),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "the read timeout did not apply"
    );
    assert_eq!(env.stored_messages(), 0);
}

#[test]
fn converse_reasoning_content_streams_apart_and_comes_whole_in_json() {
    let env = Env::new(Accept {
        session_token: None,
    });
    env.fake.set_default(Behavior {
        reply: "Four.".into(),
        chunks: 2,
        reasoning: "Two and two.".into(),
        ..Default::default()
    });
    let model = format!("bedrock:{MODEL}");
    let shown = cli::on_a_terminal(&env.cmd(&["ask", "-m", &model, "2+2?"], &KEYS));
    cli::assert_dimmed_before(&shown, "Two and two.", "Four.");
    let o = env.run(&["ask", "-m", &model, "--json", "2+2?"], &KEYS);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(
        (v["reasoning"].as_str(), v["reply"].as_str()),
        (Some("Two and two."), Some("Four."))
    );
    // Reasoning of an answer without a tool use is not sent back.
    let o = env.run(&["ask", "-c", "and 3+3?"], &KEYS);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!env.fake.last().body.to_string().contains("Two and two"));
}
