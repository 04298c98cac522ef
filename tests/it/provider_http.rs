//! The `http` provider kind with the `http-template` format, driven through `genai ask` against
//! a loopback fake that speaks a Cohere v2 chat-like shape (docs.cohere.com/reference/chat and
//! /reference/chat-stream: `message.content[0].text`, SSE `content-delta` events ending with
//! `message-end`) and an OpenSearch/Ollama-like NDJSON stream, checking the bearer key, with
//! faults: 429 + Retry-After, 500, a cut stream, malformed JSON, a stall.

use std::process::Output;
use std::time::Duration;

use fake_scripted::{Body, FakeHttp, Recorded, Reply};
use serde_json::{json, Value};

use crate::support::cli::{self, Folders};
use crate::support::{fake_scripted, rpc_client};

const KEY: &str = "test-key-123456";
const PROJECT: &str = "proj-secret-789";

/// Answers like Cohere's v2 chat: 401 without the bearer key, SSE when `stream` is true, else
/// one JSON body. The reply echoes the last message.
fn cohere(req: &Recorded) -> Reply {
    if req.header("authorization") != Some(&format!("Bearer {KEY}")) {
        return Reply::json(401, &json!({"message": "invalid api token"}));
    }
    let body = req.json();
    let last = body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string();
    let reply = format!("echo: {last}");
    if req.target.starts_with("/ndjson") {
        let words: Vec<String> = reply.split_inclusive(' ').map(str::to_string).collect();
        let mut lines: Vec<Value> = words
            .iter()
            .map(|w| json!({"model": "m", "response": w, "done": false}))
            .collect();
        lines.push(json!({"model": "m", "response": "", "done": true, "eval_count": 3}));
        return Reply::ndjson(&lines, false);
    }
    if body["stream"] == true {
        let mut events = vec![(
            Some("message-start"),
            json!({"type":"message-start","id":"29f14a5a","delta":{"message":{"role":"assistant"}}}).to_string(),
        )];
        for piece in reply.split_inclusive(' ') {
            events.push((
                Some("content-delta"),
                json!({"type":"content-delta","index":0,"delta":{"message":{"content":{"text": piece}}}}).to_string(),
            ));
        }
        events.push((
            Some("message-end"),
            json!({"type":"message-end","delta":{"finish_reason":"COMPLETE",
                "usage":{"billed_units":{"input_tokens":3,"output_tokens":2}}}})
            .to_string(),
        ));
        return Reply::sse(&events, false);
    }
    Reply::json(
        200,
        &json!({"id": "c14c80c3", "finish_reason": "COMPLETE",
            "message": {"role": "assistant", "content": [{"type": "text", "text": reply}]},
            "usage": {"tokens": {"input_tokens": 7, "output_tokens": 2}}}),
    )
}

struct Env {
    dirs: Folders,
    fake: FakeHttp,
}

impl Env {
    fn new() -> Env {
        let env = Env {
            dirs: Folders::new(),
            fake: FakeHttp::start(cohere),
        };
        let chat = env.fake.url("/v2/chat?project=${credential.project}");
        let ndjson = env.fake.url("/ndjson/${parameters.model}");
        env.dirs.write_config(&format!(
                r#"
[service_providers.cohere]
kind = "http"
base_url = "{chat}"
api_key_env = "FAKE_COHERE_KEY"
read_timeout_secs = 1
max_retries = 1
retry_budget_secs = 10
[service_providers.cohere.headers]
Authorization = "Bearer ${{credential.api_key}}"
[service_providers.cohere.credentials.project]
env = "FAKE_PROJECT"

[service_providers.lines]
kind = "http"
base_url = "{ndjson}"
api_key_env = "FAKE_COHERE_KEY"
[service_providers.lines.headers]
Authorization = "Bearer ${{credential.api_key}}"

[model_configurations.command]
format = "http-template"
model = "command-r"
[model_configurations.command.parameters]
request_body = '''{{"model": "${{parameters.model}}", "messages": ${{parameters.messages}},
  "temperature": ${{parameters.temperature:-0.3}}, "stream": ${{parameters.stream}},
  "meta": {{"project": "${{credential.project}}", "note": "${{parameters.note:-none}}"}}}}'''
response_filter = "$.message.content[0].text"
stream_filter = "$.delta.message.content.text"
stream_done = "$.delta.finish_reason"

[model_configurations.strict]
format = "http-template"
model = "command-r"
[model_configurations.strict.parameters]
request_body = '''{{"prompt": "${{parameters.prompt}}", "k": ${{parameters.top_k}}}}'''

[model_configurations.generate]
format = "http-template"
model = "llama3"
[model_configurations.generate.parameters]
request_body = '''{{"prompt": "${{parameters.prompt}}", "system": "${{parameters.system}}", "stream": ${{parameters.stream}}, "messages": [{{"role": "user", "content": "${{parameters.prompt}}"}}]}}'''
response_filter = "$.response"
stream_filter = "$.response"
stream_done = "$.done"

[agents.cohere]
provider = "cohere"
model_configuration = "command"

[agents.strict]
provider = "cohere"
model_configuration = "strict"

[agents.lines]
provider = "lines"
model_configuration = "generate"
"#
        ));
        env
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut c = self.dirs.genai(args);
        c.env("FAKE_COHERE_KEY", KEY).env("FAKE_PROJECT", PROJECT);
        cli::output(c)
    }

    fn message_counts(&self) -> Vec<u64> {
        let o = self.run(&["sessions", "list", "--json"]);
        let v: Value = serde_json::from_slice(&o.stdout).unwrap_or(json!([]));
        v.as_array()
            .into_iter()
            .flatten()
            .map(|c| c["messageCount"].as_u64().unwrap_or(99))
            .collect()
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn no_secret(o: &Output) {
    for s in [text(&o.stdout), text(&o.stderr)] {
        assert!(
            !s.contains(KEY) && !s.contains(PROJECT),
            "a secret leaked: {s}"
        );
    }
}

#[test]
fn ask_sends_the_rendered_template_and_prints_the_filtered_reply() {
    let env = Env::new();
    let o = env.run(&[
        "ask",
        "-m",
        "cohere",
        "--no-stream",
        "-p",
        "temperature=0.7",
        "-p",
        "note=a \"quoted\" note",
        "Hello",
        "there",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "echo: Hello there\n");
    no_secret(&o);
    let reqs = env.fake.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.target, format!("/v2/chat?project={PROJECT}"));
    assert_eq!(
        r.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert!(r
        .header("content-type")
        .unwrap()
        .starts_with("application/json"));
    assert_eq!(
        r.json(),
        json!({"model": "command-r",
            "messages": [{"role": "user", "content": "Hello there"}],
            "temperature": 0.7, "stream": false,
            "meta": {"project": PROJECT, "note": "a \"quoted\" note"}})
    );
    assert_eq!(env.message_counts(), [2]);
    // Usage read from Cohere's `meta.tokens`-like shape is reported with --json.
    let o = env.run(&["ask", "-m", "cohere", "--json", "again"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["reply"], "echo: again");
    assert_eq!(v["finishReason"], "COMPLETE");
}

#[test]
fn ask_streams_sse_events_through_the_stream_filter() {
    let env = Env::new();
    let o = env.run(&["ask", "-m", "cohere", "stream", "me", "please"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "echo: stream me please\n");
    let r = &env.fake.requests()[0];
    assert_eq!(r.json()["stream"], true);
    assert!(r.header("accept").unwrap().contains("text/event-stream"));
    // The conversation continues: the history goes back as ${parameters.messages}.
    let o = env.run(&["ask", "-c", "next"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let msgs = env.fake.requests()[1].json()["messages"].clone();
    assert_eq!(
        msgs,
        json!([{"role": "user", "content": "stream me please"},
               {"role": "assistant", "content": "echo: stream me please"},
               {"role": "user", "content": "next"}])
    );
}

#[test]
fn ask_streams_ndjson_lines_and_fills_the_model_into_the_url() {
    let env = Env::new();
    let o = env.run(&["ask", "-m", "lines", "-s", "Be \"brief\".", "one two"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "echo: one two\n");
    let r = &env.fake.requests()[0];
    assert_eq!(r.target, "/ndjson/llama3");
    assert_eq!(
        r.json(),
        json!({"prompt": "one two", "system": "Be \"brief\".", "stream": true,
               "messages": [{"role": "user", "content": "one two"}]})
    );
    let o = env.run(&["ask", "-m", "lines", "--no-stream", "x"]);
    // Without streaming the fake still answers NDJSON: one JSON per line is not one JSON body.
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("invalid JSON"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn a_429_with_retry_after_is_waited_out() {
    let env = Env::new();
    env.fake.push(
        Reply::json(429, &json!({"message": "too many requests"})).with_header("Retry-After", "1"),
    );
    let o = env.run(&["ask", "-m", "cohere", "--no-stream", "hi"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "echo: hi\n");
    let reqs = env.fake.requests();
    assert_eq!(reqs.len(), 2);
    let gap = reqs[1].at - reqs[0].at;
    assert!(gap >= Duration::from_millis(900), "retried after {gap:?}");
}

#[test]
fn faults_fail_the_turn_with_one_line_and_store_nothing() {
    let env = Env::new();
    let fail = |args: &[&str], expect: &str| {
        let o = env.run(args);
        assert!(!o.status.success(), "{args:?} succeeded");
        let err = text(&o.stderr);
        assert!(
            err.contains(expect),
            "{args:?}: expected `{expect}` in {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        no_secret(&o);
    };
    // 500 twice (max_retries = 1).
    for _ in 0..2 {
        env.fake
            .push(Reply::json(500, &json!({"message": "internal failure"})));
    }
    fail(
        &["ask", "-m", "cohere", "--no-stream", "a"],
        "internal failure",
    );
    assert_eq!(env.fake.requests().len(), 2);
    env.fake
        .push(Reply::raw(200, "application/json", "{\"message\": oops"));
    fail(&["ask", "-m", "cohere", "--no-stream", "b"], "invalid JSON");
    let events = vec![(
        Some("content-delta"),
        json!({"type":"content-delta","delta":{"message":{"content":{"text":"par"}}}}).to_string(),
    )];
    // Cut mid-stream (no terminating chunk), and closed cleanly before `message-end`.
    env.fake.push(Reply::sse(&events, true));
    fail(
        &["ask", "-m", "cohere", "c"],
        "the connection broke while reading the answer",
    );
    env.fake.push(Reply::sse(&events, false));
    fail(
        &["ask", "-m", "cohere", "c2"],
        "ended before the reply was complete",
    );
    env.fake
        .push(Reply::sse(&[(None, "{not json".into())], false));
    fail(&["ask", "-m", "cohere", "d"], "not JSON");
    env.fake.push(Reply {
        status: 200,
        headers: vec![],
        body: Body::Stall,
    });
    fail(
        &["ask", "-m", "cohere", "--no-stream", "e"],
        "no answer in time",
    );
    // The endpoint echoes the key back: the error shows it masked.
    env.fake.push(Reply::json(
        400,
        &json!({"message": format!("bad token {KEY} for project {PROJECT}")}),
    ));
    fail(
        &["ask", "-m", "cohere", "--no-stream", "f"],
        "bad token ******** for project ********",
    );
    assert!(
        env.message_counts().iter().all(|n| *n == 0),
        "a failed turn stored messages: {:?}",
        env.message_counts()
    );
}

#[test]
fn a_placeholder_without_value_is_refused_before_any_request() {
    let env = Env::new();
    let o = env.run(&["ask", "-m", "strict", "hi"]);
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(err.contains("${parameters.top_k} with no value"), "{err}");
    let o = env.run(&["ask", "-m", "strict", "-p", "topk=3", "hi"]);
    let err = text(&o.stderr);
    assert!(
        err.contains("accepted: request_body, response_filter, stream_filter, stream_done, top_k"),
        "{err}"
    );
    let o = env.run(&["ask", "-m", "strict", "-p", "top_k=3", "--no-stream", "hi"]);
    // The strict template has no response_filter: the whole answer is the reply.
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        env.fake.requests().len(),
        1,
        "only the valid ask reached the endpoint"
    );
    assert_eq!(
        env.fake.requests()[0].json(),
        json!({"prompt": "hi", "k": 3})
    );
}

#[test]
fn a_missing_credential_is_named_without_sending() {
    let env = Env::new();
    let mut c = env.dirs.genai(&["ask", "-m", "cohere", "hi"]);
    c.env("FAKE_COHERE_KEY", KEY).env_remove("FAKE_PROJECT");
    let o = cli::output(c);
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(
        err.contains("no value for credential `project` of provider `cohere`: set FAKE_PROJECT"),
        "{err}"
    );
    assert!(env.fake.requests().is_empty());
}

#[test]
fn a_daemon_turn_streams_and_a_failed_turn_leaves_the_history_as_it_was() {
    let env = Env::new();
    let mut cfg = rpc_client::DaemonConfig::in_dir(
        env.dirs.data.path(),
        rpc_client::Framing::Lines,
        "daemon",
    )
    .env("FAKE_COHERE_KEY", KEY)
    .env("FAKE_PROJECT", PROJECT);
    cfg.config_dir = env.dirs.config.path().to_path_buf();
    let mut d = rpc_client::Daemon::spawn(&cfg);
    let wait = Duration::from_secs(20);
    d.initialize("provider-http", true);
    let (cid, _) = d
        .create_conversation(json!({"serviceProvider": "cohere", "modelConfiguration": "command"}));
    let turn = |d: &mut rpc_client::Daemon, text: &str| {
        let turn_id = d.send_message(&cid, text);
        (
            turn_id.clone(),
            d.wait_final(&turn_id, wait)["params"].clone(),
        )
    };
    let (turn_id, fin) = turn(&mut d, "hello daemon");
    assert_eq!(fin["summary"], "echo: hello daemon", "{fin}");
    let chunks = d.streamed(&turn_id);
    assert_eq!(chunks, ["echo: ", "hello ", "daemon"]);
    // A 500 (twice: one retry) fails the turn and stores nothing; the next turn sees only the first.
    for _ in 0..2 {
        env.fake
            .push(Reply::json(500, &json!({"message": "overloaded"})));
    }
    let (_, fin) = turn(&mut d, "this one fails");
    assert!(
        fin["error"]["message"]
            .as_str()
            .unwrap()
            .contains("overloaded"),
        "{fin}"
    );
    let history = d.call(
        "GetConversationHistory",
        json!({"conversationId": cid, "pageSize": 10}),
    );
    assert_eq!(
        history["messages"].as_array().unwrap().len(),
        2,
        "{history}"
    );
    let (_, fin) = turn(&mut d, "again");
    assert_eq!(fin["summary"], "echo: again", "{fin}");
    let sent = env.fake.requests().last().unwrap().json();
    assert_eq!(sent["messages"].as_array().unwrap().len(), 3, "{sent}");
    // The key reached the endpoint only.
    assert!(!d.stderr_text().contains(KEY));
    assert!(!String::from_utf8_lossy(&d.raw_stdout()).contains(KEY));
    assert!(d.shutdown(wait).success());
}
