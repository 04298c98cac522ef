//! The `ollama` provider kind with the `ollama-chat` format (and `openai-chat` on Ollama's
//! OpenAI-compatible endpoint), end to end: `genai ask` and the daemon against the fake Ollama
//! server in `tests/it/support/fake_ollama.rs`, faults included, the history checked after each.

use std::process::Output;
use std::time::{Duration, Instant};

use fake_ollama::{Behavior, FakeServer, Mode};
use rpc_client::{Daemon, DaemonConfig, Framing};
use serde_json::{json, Value};

use crate::support::cli::{self, stderr, stdout, Folders};
use crate::support::messages::roles;
use crate::support::{fake_ollama, fake_openai, rpc_client};

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
            fake: fake_ollama::start(default),
        }
    }

    /// `genai` with its own folders and `OLLAMA_HOST` in Ollama's bare `host:port` form.
    fn run(&self, args: &[&str]) -> Output {
        let mut c = self.dirs.genai(args);
        c.env("OLLAMA_HOST", format!("127.0.0.1:{}", self.fake.port()));
        cli::output(c)
    }

    fn write_config(&self, text: &str) {
        self.dirs.write_config(text);
    }

    fn stored_conversations(&self) -> Vec<Value> {
        let o = self.run(&["sessions", "list", "--json"]);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_slice::<Value>(&o.stdout)
            .unwrap()
            .as_array()
            .unwrap()
            .clone()
    }
}

#[test]
fn ask_streams_ndjson_with_options_as_an_object_and_stores_the_turn() {
    let env = Env::new(Behavior::reply(
        "The sky is blue because of Rayleigh scattering.",
        5,
    ));
    let o = env.run(&[
        "ask",
        "-m",
        "ollama:llama3.2",
        "-p",
        "temperature=0.2",
        "-p",
        "num_ctx=4096",
        "-p",
        "keep_alive=10m",
        "--json",
        "why is the sky blue?",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(
        out["reply"],
        "The sky is blue because of Rayleigh scattering."
    );
    assert_eq!(out["finishReason"], "stop");
    assert_eq!(out["usage"]["inputTokens"], 5, "{out}");
    assert_eq!(out["usage"]["outputTokens"], 8, "{out}");
    let req = env.fake.requests().pop().unwrap();
    assert_eq!(req.path, "/api/chat");
    assert!(req.header("authorization").is_none(), "no key, no header");
    assert_eq!(
        req.body,
        json!({
            "model": "llama3.2",
            "messages": [{"role": "user", "content": "why is the sky blue?"}],
            "stream": false,
            "keep_alive": "10m",
            "options": {"temperature": 0.2, "num_ctx": 4096}
        })
    );

    // Streaming, the way a terminal user asks: the pieces arrive as NDJSON lines.
    let o = env.run(&[
        "ask",
        "-m",
        "ollama:llama3.2",
        "-s",
        "be brief",
        "and",
        "the sea?",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "The sky is blue because of Rayleigh scattering.\n"
    );
    let req = env.fake.requests().pop().unwrap();
    assert_eq!(req.body["stream"], true);
    assert_eq!(req.header("accept"), Some("application/x-ndjson"));
    assert_eq!(
        req.body["messages"],
        json!([{"role": "system", "content": "be brief"}, {"role": "user", "content": "and the sea?"}])
    );
    let stored = env.stored_conversations();
    assert_eq!(stored.len(), 2);
    assert!(stored.iter().all(|c| c["messageCount"] == 2), "{stored:?}");
}

#[test]
fn a_bad_parameter_is_refused_before_sending() {
    let env = Env::new(Behavior::default());
    let o = env.run(&["ask", "-m", "ollama:llama3.2", "-p", "format=yaml", "hi"]);
    cli::assert_fails_with(&o, 2, "format");
    assert!(env.fake.requests().is_empty());
}

#[test]
fn faults_fail_the_turn_cleanly_and_store_nothing() {
    let env = Env::new(Behavior::reply("Recovered after the fault.", 3));
    let ask_on = |model: &str| env.run(&["ask", "-m", model, "tell me"]);
    let ask = || ask_on("ollama:llama3.2");

    // 429 with Retry-After, then 500: both retried, the third try answers.
    env.fake.push(Behavior::error(429, "too many requests"));
    env.fake
        .push(Behavior::error(500, "llama runner process has terminated"));
    let o = ask();
    cli::assert_prints(&o, "Recovered after the fault.\n");
    let r = env.fake.requests();
    assert_eq!(r.len(), 3);
    assert!(
        r[1].at - r[0].at >= Duration::from_secs(1),
        "Retry-After was not honoured"
    );
    assert_eq!(r[0].body, r[2].body, "a retry changed the request");
    assert_eq!(env.stored_conversations()[0]["messageCount"], 2);

    // A 404 (model not pulled) is not retried; its message reaches the user.
    env.fake.push(Behavior::error(
        404,
        "model \"nope\" not found, try pulling it first",
    ));
    let o = ask();
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("404") && e.contains("try pulling it first"),
        "{e}"
    );
    assert_eq!(env.fake.requests().len(), 4);

    // A stream cut before the `done` record.
    env.fake.push(Behavior {
        mode: Mode::CutAfter { after: 2 },
        ..Behavior::reply("one two three four", 4)
    });
    let o = ask();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).starts_with("one two"),
        "the start was streamed: {}",
        stdout(&o)
    );
    let e = stderr(&o);
    assert!(
        e.contains("ended before the reply was complete") || e.contains("broke"),
        "{e}"
    );

    // A malformed line in the stream.
    env.fake.push(Behavior {
        mode: Mode::Malformed { after: 1 },
        ..Behavior::reply("one two three", 3)
    });
    let o = ask();
    cli::assert_fails_with(&o, 1, "invalid JSON");

    // A server slower than the read timeout.
    env.write_config(&format!(
        "[service_providers.slow]\nkind = \"ollama\"\nbase_url = \"{}\"\nread_timeout_secs = 1\nmax_retries = 0\n",
        env.fake.url()
    ));
    env.fake.push(Behavior::mode(Mode::Stall));
    let started = Instant::now();
    let o = ask_on("slow:llama3.2");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "took {:?}",
        started.elapsed()
    );
    cli::assert_stderr_says(&o, "no answer in time");

    // Only the first turn was ever stored (`ask` opens a conversation before the turn; the
    // failed ones stay empty).
    let stored = env.stored_conversations();
    let messages: i64 = stored
        .iter()
        .map(|c| c["messageCount"].as_i64().unwrap())
        .sum();
    assert_eq!(messages, 2, "{stored:?}");
}

#[test]
fn an_error_record_inside_the_stream_is_an_error() {
    let data = tempfile::tempdir().unwrap();
    let fake = FakeServer::start(fake_ollama::error_line_wire(), Behavior::default()).unwrap();
    let mut c = cli::genai_in(data.path(), data.path(), &["ask", "-m", "ollama:m", "hi"]);
    c.env("OLLAMA_HOST", fake.url());
    let o = cli::output(c);
    cli::assert_fails_with(&o, 1, "an error was encountered while running the model");
}

#[test]
fn an_optional_key_is_sent_as_a_bearer_token() {
    let env = Env::new(Behavior::reply("Behind the proxy.", 2));
    env.fake.expect_key(Some("proxy-secret"));
    env.write_config(&format!(
        "[service_providers.remote]\nkind = \"ollama\"\nbase_url = \"{}\"\napi_key_env = \"REMOTE_OLLAMA_KEY\"\n",
        env.fake.url()
    ));
    let mut c = env.dirs.genai(&["ask", "-m", "remote:llama3.2", "hi"]);
    c.env("REMOTE_OLLAMA_KEY", "proxy-secret");
    let o = cli::output(c);
    cli::assert_prints(&o, "Behind the proxy.\n");
    // Without the key the proxy refuses: a credentials failure (exit 3) that never shows a key.
    let o = env.run(&["ask", "-m", "remote:llama3.2", "hi"]);
    cli::assert_fails_with(&o, 3, "401");
}

#[test]
fn openai_chat_runs_on_ollamas_compatible_endpoint() {
    let fake = fake_openai::FakeOpenAi::start(
        0,
        fake_openai::Behavior {
            reply: "Compatible.".into(),
            ..Default::default()
        },
    )
    .unwrap();
    let env = Env::new(Behavior::default());
    env.write_config(&format!(
        "[service_providers.local]\nkind = \"ollama\"\nbase_url = \"127.0.0.1:{}\"\n\n\
         [model_configurations.compat]\nformat = \"openai-chat\"\nmodel = \"llama3.2\"\n\n\
         [agents.compat]\nprovider = \"local\"\nmodel_configuration = \"compat\"\n",
        fake.port()
    ));
    let o = env.run(&["ask", "-m", "compat", "hi"]);
    cli::assert_prints(&o, "Compatible.\n");
    let req = fake.requests().pop().unwrap();
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(req.body["messages"][0]["content"], "hi");
    assert!(env.fake.requests().is_empty());
}

// ---------------------------------------------------------------------------
// The daemon

fn daemon(root: &std::path::Path, fake: &FakeServer) -> Daemon {
    let cfg = DaemonConfig::in_dir(root, Framing::Lines, "daemon")
        .env("OLLAMA_HOST", &fake.url())
        .env("OLLAMA_API_KEY", "");
    let mut d = Daemon::spawn(&cfg);
    d.initialize("ollama-tests", true);
    d
}

#[test]
fn daemon_streams_a_turn_with_an_image_and_keeps_history_through_faults() {
    let fake = fake_ollama::start(Behavior::reply("A red dot on white.", 4));
    let dir = tempfile::tempdir().unwrap();
    let mut d = daemon(dir.path(), &fake);

    let comps = d.call("ListComponents", json!({}));
    let kind = comps["kinds"]["serviceProviders"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == "ollama")
        .cloned()
        .unwrap_or_else(|| panic!("no ollama kind: {comps}"));
    assert_eq!(kind["formats"], json!(["ollama-chat", "openai-chat"]));
    assert_eq!(kind["defaultFormat"], "ollama-chat");

    let conv = d.call(
        "CreateConversation",
        json!({"serviceProvider": "ollama", "model": "llava"}),
    );
    assert_eq!(conv["format"], "ollama-chat", "{conv}");
    let cid = conv["conversationId"].as_str().unwrap().to_string();

    let message = json!({"role": "user", "content": [
        "what is in this image?",
        {"type": "image", "mediaType": "image/png", "data": "iVBORw0KGgo="}
    ]});
    let (turn_id, fin) = d.turn(&cid, message, TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(fin["summary"], "A red dot on white.");
    assert_eq!(fin["finishReason"], "stop");
    assert_eq!(fin["usage"]["inputTokens"], 5, "{fin}");
    let chunks = d.streamed(&turn_id).concat();
    assert_eq!(chunks, "A red dot on white.");
    let req = fake.requests().pop().unwrap();
    assert_eq!(
        req.body["messages"],
        json!([{"role": "user", "content": "what is in this image?", "images": ["iVBORw0KGgo="]}])
    );
    // An image by URL cannot go to Ollama: refused before sending.
    let by_url = json!({"role": "user", "content": [{"type": "image", "url": "https://example.invalid/cat.jpg"}]});
    let (_, fin) = d.turn(&cid, by_url, TURN);
    assert_eq!(fin["isSuccess"], false, "{fin}");
    assert_eq!(fake.requests().len(), 1);

    // Faults: a cut stream, a malformed line, a 500 that outlasts the retries.
    fake.push(Behavior {
        mode: Mode::CutAfter { after: 1 },
        ..Behavior::reply("cut short here", 3)
    });
    fake.push(Behavior {
        mode: Mode::Malformed { after: 0 },
        ..Behavior::reply("broken", 2)
    });
    for _ in 0..4 {
        fake.push(Behavior::error(500, "llama runner process has terminated"));
    }
    let expected: [&[&str]; 3] = [
        &["ended before the reply was complete", "broke"],
        &["invalid JSON"],
        &["500", "after 4 tries"],
    ];
    for words in expected {
        let (_, fin) = d.turn(&cid, json!("and now?"), TURN);
        assert_eq!(fin["isSuccess"], false, "{fin}");
        let message = fin["error"]["message"].as_str().unwrap();
        assert!(
            words.iter().any(|w| message.contains(w)),
            "{words:?}: {message}"
        );
        assert_eq!(d.history(&cid).len(), 2, "a failed turn was stored");
    }

    // The conversation goes on, and the model sees the stored history.
    let (_, fin) = d.turn(&cid, json!("thanks"), TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let req = fake.requests().pop().unwrap();
    assert_eq!(roles(&req.body["messages"]), ["user", "assistant", "user"]);
    assert_eq!(d.history(&cid).len(), 4);
    assert!(d.shutdown(EXIT).success());
}

#[test]
fn thinking_with_think_on_is_reasoning_streamed_apart_and_whole_in_json() {
    let env = Env::new(Behavior::reply("Four.", 2).thinking("Two and two."));
    let ask = |extra: &[&str]| {
        let mut args = vec!["ask", "-m", "ollama:qwen3"];
        args.extend_from_slice(extra);
        args.push("2+2?");
        let mut c = env.dirs.genai(&args);
        c.env("OLLAMA_HOST", format!("127.0.0.1:{}", env.fake.port()));
        c
    };
    let shown = cli::on_a_terminal(&ask(&["-p", "think=true"]));
    cli::assert_dimmed_before(&shown, "Two and two.", "Four.");
    assert_eq!(env.fake.requests().pop().unwrap().body["think"], true);
    let o = cli::output(ask(&["-p", "think=medium", "--json"]));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(
        (v["reasoning"].as_str(), v["reply"].as_str()),
        (Some("Two and two."), Some("Four."))
    );
    assert_eq!(env.fake.requests().pop().unwrap().body["think"], "medium");
}
