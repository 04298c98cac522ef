//! The `gemini` provider kind with the `gemini` format, end to end: `genai ask` and the daemon
//! against the fake Gemini API in `tests/it/support/fake_gemini.rs` (the key in `x-goog-api-key`,
//! never in the URL; SSE streams), faults included, the history checked after each.

use std::process::Output;
use std::time::{Duration, Instant};

use fake_gemini::{Behavior, FakeServer, Mode, KEY};
use rpc_client::{Daemon, DaemonConfig, Framing};
use serde_json::{json, Value};

use crate::support::cli::{self, stderr, stdout, Folders};
use crate::support::{fake_gemini, rpc_client};

const TURN: Duration = Duration::from_secs(15);
const EXIT: Duration = Duration::from_secs(10);

struct Env {
    dirs: Folders,
    fake: FakeServer,
}

impl Env {
    fn new(default: Behavior) -> Env {
        Env {
            dirs: Folders::new(),
            fake: fake_gemini::start(default),
        }
    }

    /// `genai` with its own folders, the built-in `gemini` instance pointed at the fake, and
    /// the given key variables (no others from the caller's environment).
    fn run_with(&self, args: &[&str], keys: &[(&str, &str)]) -> Output {
        let mut c = self.dirs.genai(args);
        c.env("GEMINI_BASE_URL", self.fake.url())
            .envs(keys.iter().copied());
        cli::output(c)
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_with(args, &[("GEMINI_API_KEY", KEY)])
    }

    fn stored_messages(&self) -> i64 {
        cli::message_counts(&self.run(&["sessions", "list", "--json"]))
            .iter()
            .sum()
    }
}

#[test]
fn ask_streams_sse_with_the_key_in_a_header_and_stores_the_turn() {
    let env = Env::new(Behavior::reply("Four dogs have sixteen paws.", 4));
    let o = env.run(&[
        "ask",
        "-m",
        "gemini:gemini-2.0-flash",
        "-s",
        "You are a cat.",
        "-p",
        "temperature=0.5",
        "-p",
        "max_tokens=100",
        "How many paws?",
    ]);
    cli::assert_prints(&o, "Four dogs have sixteen paws.\n");
    let req = env.fake.requests().pop().unwrap();
    assert_eq!(
        req.path,
        "/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(req.header("x-goog-api-key"), Some(KEY));
    assert!(!req.path.contains(KEY) && req.query("key").is_none());
    assert!(req.header("authorization").is_none());
    assert_eq!(
        req.body,
        json!({
            "systemInstruction": {"parts": [{"text": "You are a cat."}]},
            "contents": [{"role": "user", "parts": [{"text": "How many paws?"}]}],
            "generationConfig": {"temperature": 0.5, "maxOutputTokens": 100}
        })
    );

    // Whole answers: usage, finish reason and model version.
    let o = env.run(&["ask", "-m", "gemini:gemini-2.0-flash", "--json", "again?"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(out["reply"], "Four dogs have sixteen paws.");
    assert_eq!(out["finishReason"], "STOP");
    assert_eq!(out["model"], "gemini-2.0-flash");
    assert_eq!(out["usage"]["inputTokens"], 1, "{out}");
    assert_eq!(out["usage"]["outputTokens"], 5, "{out}");
    let req = env.fake.requests().pop().unwrap();
    assert_eq!(req.path, "/v1beta/models/gemini-2.0-flash:generateContent");
    assert_eq!(env.stored_messages(), 4);
}

#[test]
fn keys_come_from_gemini_or_google_variables_and_a_missing_key_says_what_to_do() {
    let env = Env::new(Behavior::reply("Keyed.", 1));
    let o = env.run_with(
        &["ask", "-m", "gemini:gemini-2.0-flash", "hi"],
        &[("GOOGLE_API_KEY", KEY)],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        env.fake.requests().pop().unwrap().header("x-goog-api-key"),
        Some(KEY)
    );

    let o = env.run_with(&["ask", "-m", "gemini:gemini-2.0-flash", "hi"], &[]);
    cli::assert_fails_with(&o, 3, "GEMINI_API_KEY");
    assert_eq!(env.fake.requests().len(), 1, "nothing sent without a key");

    let o = env.run_with(
        &["ask", "-m", "gemini:gemini-2.0-flash", "hi"],
        &[("GEMINI_API_KEY", "AIza-wrong")],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("API key not valid") && e.contains("INVALID_ARGUMENT"),
        "{e}"
    );
    assert!(!e.contains("AIza-wrong"), "the key leaked: {e}");
    assert_eq!(env.stored_messages(), 2);
}

#[test]
fn faults_and_blocks_fail_the_turn_cleanly_and_store_nothing() {
    let env = Env::new(Behavior::reply("Recovered after the fault.", 3));
    let ask_on = |model: &str| env.run(&["ask", "-m", model, "tell me"]);
    let ask = || ask_on("gemini:gemini-2.0-flash");

    env.fake.push(Behavior::error(
        429,
        "Resource has been exhausted (e.g. check quota).",
    ));
    env.fake
        .push(Behavior::error(500, "An internal error has occurred."));
    let o = ask();
    cli::assert_prints(&o, "Recovered after the fault.\n");
    let r = env.fake.requests();
    assert_eq!(r.len(), 3);
    assert!(
        r[1].at - r[0].at >= Duration::from_secs(1),
        "Retry-After was not honoured"
    );
    assert_eq!(r[0].body, r[2].body);
    assert_eq!(env.stored_messages(), 2);

    env.fake.push(Behavior::mode(Mode::Blocked {
        reason: "SAFETY".into(),
    }));
    let o = ask();
    cli::assert_fails_with(&o, 1, "blocked the prompt (SAFETY)");

    env.fake.push(Behavior {
        mode: Mode::CutAfter { after: 2 },
        ..Behavior::reply("one two three four", 4)
    });
    let o = ask();
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("ended before the reply was complete") || e.contains("broke"),
        "{e}"
    );

    env.fake.push(Behavior {
        mode: Mode::Malformed { after: 1 },
        ..Behavior::reply("one two three", 3)
    });
    let o = ask();
    cli::assert_fails_with(&o, 1, "invalid JSON");

    std::fs::write(
        env.dirs.config.path().join("config.toml"),
        format!(
            "[service_providers.slow]\nkind = \"gemini\"\nbase_url = \"{}\"\nread_timeout_secs = 1\n",
            env.fake.url()
        ),
    )
    .unwrap();
    env.fake.push(Behavior::mode(Mode::Stall));
    let started = Instant::now();
    let o = ask_on("slow:gemini-2.0-flash");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(started.elapsed() < Duration::from_secs(8));
    cli::assert_stderr_says(&o, "no answer in time");

    assert_eq!(env.stored_messages(), 2, "a failed turn was stored");
}

#[test]
fn daemon_streams_a_turn_with_an_image_and_the_key_goes_nowhere_else() {
    let fake = fake_gemini::start(Behavior::reply("A red dot on white.", 4));
    let dir = tempfile::tempdir().unwrap();
    let cfg = DaemonConfig::in_dir(dir.path(), Framing::ContentLength, "daemon")
        .env("GEMINI_BASE_URL", &fake.url())
        .env("GEMINI_API_KEY", KEY)
        .env("GOOGLE_API_KEY", "");
    let mut d = Daemon::spawn(&cfg);
    d.initialize("gemini-tests", true);
    let conv = d.call(
        "CreateConversation",
        json!({"serviceProvider": "gemini", "model": "gemini-2.0-flash"}),
    );
    assert_eq!(conv["format"], "gemini", "{conv}");
    let cid = conv["conversationId"].as_str().unwrap().to_string();
    let send = |d: &mut Daemon, message: Value| d.turn(&cid, message, TURN);
    let history_len = |d: &mut Daemon| {
        d.call(
            "GetConversationHistory",
            json!({"conversationId": cid, "pageSize": 100}),
        )["messages"]
            .as_array()
            .unwrap()
            .len()
    };

    let (turn_id, fin) = send(
        &mut d,
        json!({"role": "user", "content": [
            {"type": "image", "mediaType": "image/png", "data": "iVBORw0KGgo="},
            "Caption this image."
        ]}),
    );
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(fin["summary"], "A red dot on white.");
    assert_eq!(fin["finishReason"], "STOP");
    let chunks = d.streamed(&turn_id);
    assert_eq!(chunks.len(), 4, "{chunks:?}");
    assert_eq!(chunks.concat(), "A red dot on white.");
    let req = fake.requests().pop().unwrap();
    assert_eq!(
        req.body["contents"][0]["parts"],
        json!([{"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}, {"text": "Caption this image."}])
    );

    // Faults keep the history as it was.
    fake.push(Behavior {
        mode: Mode::CutAfter { after: 1 },
        ..Behavior::reply("cut short here", 3)
    });
    fake.push(Behavior::mode(Mode::Blocked {
        reason: "PROHIBITED_CONTENT".into(),
    }));
    for _ in 0..4 {
        fake.push(Behavior::error(
            503,
            "The model is overloaded. Please try again later.",
        ));
    }
    for _ in 0..3 {
        let (_, fin) = send(&mut d, json!("and now?"));
        assert_eq!(fin["isSuccess"], false, "{fin}");
        assert_eq!(history_len(&mut d), 2);
    }
    let (_, fin) = send(&mut d, json!("thanks"));
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let roles: Vec<Value> = fake.requests().pop().unwrap().body["contents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["role"].clone())
        .collect();
    assert_eq!(roles, [json!("user"), json!("model"), json!("user")]);
    assert!(d.shutdown(EXIT).success());

    // With debug logging on, the key reached the fake in its header and nowhere else.
    let log = d.stderr_text();
    assert!(!log.contains(KEY), "the key is in the daemon's log");
    assert!(!String::from_utf8_lossy(&d.raw_stdout()).contains(KEY));
    for entry in std::fs::read_dir(dir.path().join("data")).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(KEY),
            "the key is in the data folder"
        );
    }
    assert!(fake.requests().iter().all(|r| !r.path.contains(KEY)));
}

#[test]
fn thought_summaries_asked_for_are_reasoning_streamed_apart_and_whole_in_json() {
    let env = Env::new(
        Behavior::reply("Because of Rayleigh scattering.", 2).thinking("Short waves scatter."),
    );
    let ask = |extra: &[&str]| {
        let mut args = vec!["ask", "-m", "gemini:gemini-2.5-flash"];
        args.extend_from_slice(extra);
        args.push("Why is the sky blue?");
        let mut c = env.dirs.genai(&args);
        c.env("GEMINI_BASE_URL", env.fake.url())
            .env("GEMINI_API_KEY", KEY);
        c
    };
    let shown = cli::on_a_terminal(&ask(&["-p", "include_thoughts=true"]));
    cli::assert_dimmed_before(&shown, "Short waves scatter.", "Because of Rayleigh");
    let body = env.fake.requests().pop().unwrap().body;
    assert_eq!(
        body["generationConfig"]["thinkingConfig"],
        json!({"includeThoughts": true})
    );
    let o = cli::output(ask(&["-p", "include_thoughts=true", "--json"]));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["reasoning"], "Short waves scatter.");
    assert_eq!(v["reply"], "Because of Rayleigh scattering.");
    // Not asked for: none sent.
    let o = cli::output(ask(&["--json"]));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["reasoning"], "");
}
