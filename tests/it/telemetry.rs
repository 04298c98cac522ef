//! OpenTelemetry traces, read back by a receiver that decodes what genai sends over OTLP/HTTP
//! with OpenTelemetry's own protobuf types (`support/otlp.rs`): a gateway request continuing
//! the client's `traceparent` through `genai serve` to the fake provider (request, turn and
//! model request spans, GenAI attributes, the trace context sent upstream, no prompt text
//! unless `[telemetry] content = true`, never a key), an embeddings request's upstream call
//! with its input tokens and no input text, `genai ask --tools=workspace`'s turn with
//! its tool call and permission decision flushed before it exits, and a collector that is down
//! or never answers, which costs the requests nothing; a daemon stopped by SIGTERM (as an
//! editor closing it does) flushes its turn's spans before it exits.

use std::net::TcpListener;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};

use crate::gateway::{client, UPSTREAM_KEY};
use crate::serve::Served;
use crate::support::cli::OpenAiCli;
use crate::support::fake_openai::{Behavior, FakeOpenAi};
use crate::support::otlp::{has, named, Receiver};
use crate::support::poll::wait_until;

const WAIT: Duration = Duration::from_secs(30);
const PROMPT: &str = "What does the marker prompt-7d1f say?";
const REPLY: &str = "The marker reply-93ab says hello.";
/// The client's trace and its span, as an instrumented SDK sends them.
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

/// `genai serve` on the fake, exporting to `endpoint` every 100 ms, `content` as given.
fn serve(fake: &FakeOpenAi, endpoint: &str, content: bool) -> Served {
    let config = format!(
        "{}\n[telemetry]\notlp_endpoint = \"{endpoint}\"\ncontent = {content}\nheaders = {{ authorization = \"Bearer otlp-secret-5f2a9c7e1d\" }}\n",
        crate::gateway::CONFIG
    );
    let base_url = fake.base_url();
    Served::start_with(
        &config,
        &[
            ("OPENAI_BASE_URL", base_url.as_str()),
            ("OPENAI_API_KEY", UPSTREAM_KEY),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
        &[],
    )
}

/// A chat request carrying the client's `traceparent`; its status.
async fn chat(served: &Served, stream: bool, trace: &str) -> u16 {
    let r = client()
        .post(format!("{}/v1/chat/completions", served.http_base()))
        .bearer_auth(&served.token)
        .header("traceparent", format!("00-{trace}-{CLIENT_SPAN}-01"))
        .json(&json!({"model": "openai:gpt-gw", "stream": stream,
            "messages": [{"role": "user", "content": PROMPT}]}))
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    assert!(text.contains("reply-93ab") || stream, "{text}");
    status
}

fn attr<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

/// The request, turn and model request spans of one gateway request, chained under the
/// client's span; the model request's trace context reached the provider.
fn check_gateway_trace(spans: &[Value], fake: &FakeOpenAi, trace: &str) {
    let request = named(spans, "POST /v1/chat/completions");
    assert_eq!(request["parent_id"], CLIENT_SPAN, "{request}");
    assert_eq!(request["kind"], 2, "a server span: {request}");
    assert_eq!(attr(request, "http.response.status_code"), 200);
    assert_eq!(attr(request, "genai.key.name"), "serve-token");
    let turn = named(spans, "invoke_agent openai:gpt-gw");
    assert_eq!(turn["parent_id"], request["span_id"]);
    assert_eq!(attr(turn, "gen_ai.operation.name"), "invoke_agent");
    let chat = named(spans, "chat gpt-gw");
    assert_eq!(chat["parent_id"], turn["span_id"]);
    assert_eq!(chat["kind"], 3, "a client span: {chat}");
    assert_eq!(attr(chat, "gen_ai.operation.name"), "chat");
    assert_eq!(attr(chat, "gen_ai.provider.name"), "openai");
    assert_eq!(attr(chat, "gen_ai.request.model"), "gpt-gw");
    assert!(
        attr(chat, "gen_ai.usage.input_tokens").as_i64() > Some(0),
        "{chat}"
    );
    assert!(
        attr(chat, "gen_ai.usage.output_tokens").as_i64() > Some(0),
        "{chat}"
    );
    let sent = format!("00-{trace}-{}-01", chat["span_id"].as_str().unwrap());
    let upstream = fake.requests();
    assert!(
        upstream
            .iter()
            .any(|r| r.header("traceparent") == Some(&sent)),
        "no request upstream carried {sent}: {:?}",
        upstream
            .iter()
            .map(|r| r.header("traceparent"))
            .collect::<Vec<_>>()
    );
}

/// No span holds a key: the upstream one, the serve token, the collector's header.
fn assert_no_secret(spans: &[Value], served: &Served) {
    let all = serde_json::to_string(spans).unwrap();
    for secret in [
        UPSTREAM_KEY,
        served.token.as_str(),
        "otlp-secret-5f2a9c7e1d",
    ] {
        assert!(!all.contains(secret), "a secret is in a span: {all}");
    }
}

#[tokio::test]
async fn a_gateway_request_continues_the_clients_trace_upstream_without_its_text() {
    let Some(receiver) = Receiver::start() else {
        return;
    };
    let fake = FakeOpenAi::start(0, Behavior::text(REPLY)).unwrap();
    let served = serve(&fake, &receiver.endpoint(), false);
    assert_eq!(chat(&served, false, TRACE).await, 200);
    let streamed = "5bf92f3577b34da6a3ce929d0e0e4737";
    assert_eq!(chat(&served, true, streamed).await, 200);
    for trace in [TRACE, streamed] {
        let spans = receiver.trace_when(Some(trace), WAIT, |s| {
            has(s, "chat gpt-gw") && has(s, "POST /v1/chat/completions")
        });
        check_gateway_trace(&spans, &fake, trace);
        let all = serde_json::to_string(&spans).unwrap();
        assert!(
            !all.contains("prompt-7d1f") && !all.contains("reply-93ab"),
            "{all}"
        );
        assert_no_secret(&spans, &served);
        assert!(spans.iter().all(|s| s["service"] == "genai"), "{spans:#?}");
    }
    // The collector's credential is masked by `config show`.
    let shown = served.genai(&["config", "show"]).output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains("[telemetry]") && !shown.contains("otlp-secret-5f2a9c7e1d"),
        "{shown}"
    );
}

#[tokio::test]
async fn an_embeddings_request_is_a_trace_with_its_upstream_call_and_input_tokens() {
    let Some(receiver) = Receiver::start() else {
        return;
    };
    let fake = FakeOpenAi::start(0, Behavior::text(REPLY)).unwrap();
    let served = serve(&fake, &receiver.endpoint(), true);
    let trace = "6bf92f3577b34da6a3ce929d0e0e4738";
    let r = client()
        .post(format!("{}/v1/embeddings", served.http_base()))
        .bearer_auth(&served.token)
        .header("traceparent", format!("00-{trace}-{CLIENT_SPAN}-01"))
        .json(&json!({"model": "openai:text-embedding-3-small", "input": ["marker prompt-7d1f here"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200, "{}", r.text().await.unwrap());
    let spans = receiver.trace_when(Some(trace), WAIT, |s| {
        has(s, "embeddings text-embedding-3-small") && has(s, "POST /v1/embeddings")
    });
    let request = named(&spans, "POST /v1/embeddings");
    assert_eq!(request["parent_id"], CLIENT_SPAN, "{request}");
    let call = named(&spans, "embeddings text-embedding-3-small");
    assert_eq!(call["parent_id"], request["span_id"], "{spans:#?}");
    assert_eq!(attr(call, "gen_ai.operation.name"), "embeddings");
    assert_eq!(attr(call, "gen_ai.provider.name"), "openai");
    assert!(
        attr(call, "gen_ai.usage.input_tokens").as_i64().unwrap() > 0,
        "{call}"
    );
    // No input text even with content on, and the upstream request continued the trace.
    let all = serde_json::to_string(&spans).unwrap();
    assert!(!all.contains("prompt-7d1f"), "{all}");
    assert_no_secret(&spans, &served);
    let sent = format!("00-{trace}-{}-01", call["span_id"].as_str().unwrap());
    let upstream = fake.requests();
    assert!(
        upstream
            .iter()
            .any(|r| r.header("traceparent") == Some(&sent)),
        "no request upstream carried {sent}"
    );
}

#[tokio::test]
async fn with_content_on_the_model_request_span_carries_the_messages_and_still_no_key() {
    let Some(receiver) = Receiver::start() else {
        return;
    };
    let fake = FakeOpenAi::start(0, Behavior::text(REPLY)).unwrap();
    let served = serve(&fake, &receiver.endpoint(), true);
    assert_eq!(chat(&served, false, TRACE).await, 200);
    let spans = receiver.trace_when(Some(TRACE), WAIT, |s| has(s, "chat gpt-gw"));
    let chat = named(&spans, "chat gpt-gw");
    let input: Value =
        serde_json::from_str(attr(chat, "gen_ai.input.messages").as_str().unwrap()).unwrap();
    assert_eq!(input[0]["role"], "user", "{input}");
    assert_eq!(input[0]["parts"][0]["content"], PROMPT, "{input}");
    let output: Value =
        serde_json::from_str(attr(chat, "gen_ai.output.messages").as_str().unwrap()).unwrap();
    assert_eq!(output[0]["role"], "assistant", "{output}");
    assert_eq!(output[0]["parts"][0]["content"], REPLY, "{output}");
    assert_no_secret(&spans, &served);
}

/// A fixture repository with a `.git`, for `genai ask --tools=workspace`.
fn repo() -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(repo.path().join(".git")).unwrap();
    std::fs::write(repo.path().join("README.md"), "# Fixture\n").unwrap();
    repo
}

#[test]
fn an_ask_with_a_tool_call_is_one_trace_flushed_before_ask_exits() {
    let Some(receiver) = Receiver::start() else {
        return;
    };
    let env = OpenAiCli::new();
    let args = json!({"path": "README.md"}).to_string();
    env.fake.push(Behavior::calls(
        "",
        &[("workspace__read_file", args.as_str())],
    ));
    env.fake.push(Behavior::text("It is a fixture."));
    env.dirs.write_config(&format!(
        "[telemetry]\notlp_endpoint = \"{}\"\nservice_name = \"genai-ask-test\"\n",
        receiver.endpoint()
    ));
    let repo = repo();
    let mut ask = env.cmd(&[
        "ask",
        "--tools=workspace",
        "-m",
        "openai:gpt-test",
        "What is it?",
    ]);
    // Batches every minute: only the flush at exit can send the spans in time.
    ask.current_dir(repo.path())
        .env("OTEL_BSP_SCHEDULE_DELAY", "60000");
    let out = ask.stdin(Stdio::null()).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let spans = receiver.trace_when(None, WAIT, |s| has(s, "invoke_agent tools"));
    let turn = named(&spans, "invoke_agent tools");
    assert_eq!(
        turn["parent_id"], "",
        "the turn is its trace's root: {turn}"
    );
    assert!(
        spans.iter().all(|s| s["trace_id"] == turn["trace_id"]),
        "one trace: {spans:#?}"
    );
    assert!(
        spans.iter().all(|s| s["service"] == "genai-ask-test"),
        "{spans:#?}"
    );
    let chats: Vec<&Value> = spans
        .iter()
        .filter(|s| s["name"] == "chat gpt-test")
        .collect();
    assert_eq!(chats.len(), 2, "two model requests: {spans:#?}");
    assert!(chats.iter().all(|c| c["parent_id"] == turn["span_id"]));
    let tool = named(&spans, "execute_tool workspace.read_file");
    assert_eq!(tool["parent_id"], turn["span_id"]);
    assert_eq!(attr(tool, "gen_ai.tool.call.id"), "call_1");
    assert!(
        attr(tool, "gen_ai.tool.call.arguments").is_null(),
        "no content: {tool}"
    );
    let decision = named(&spans, "permission workspace.read_file");
    assert_eq!(decision["parent_id"], tool["span_id"]);
    assert_eq!(attr(decision, "genai.permission.decision"), "allow");
    assert!(
        attr(decision, "genai.permission.by").is_string(),
        "{decision}"
    );
}

#[test]
fn a_daemon_stopped_by_sigterm_flushes_its_turns_spans_and_exits_0() {
    use crate::support::daemon;
    use crate::support::rpc_client::{Daemon, Framing};
    let Some(receiver) = Receiver::start() else {
        return;
    };
    let fake = daemon::fake(Behavior::text("Hello from the daemon."));
    let dir = tempfile::tempdir().unwrap();
    // Batches every minute: only the flush on the way out can send the spans in time.
    let cfg = daemon::config(dir.path(), Framing::Lines, "daemon", &fake)
        .env("OTEL_BSP_SCHEDULE_DELAY", "60000");
    cfg.write_config(&format!(
        "[telemetry]\notlp_endpoint = \"{}\"\nservice_name = \"genai-daemon-test\"\n",
        receiver.endpoint()
    ));
    let mut d = Daemon::spawn(&cfg);
    daemon::initialize(&mut d, false);
    let cid = daemon::conversation_id(&mut d);
    let id = d.send_request(
        "OnNewMessage",
        json!({"conversationId": cid, "message": "hello"}),
    );
    let turn = daemon::turn_ids_of(&mut d, &[id]).remove(0);
    let fin = d.wait_final(&turn, daemon::TURN)["params"].clone();
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert!(receiver.spans().is_empty(), "nothing sent before the stop");

    // SIGTERM with stdin still open, as an editor closing its server sends it.
    unsafe { libc::kill(d.pid() as i32, libc::SIGTERM) };
    let status = d.wait_exit(daemon::EXIT);
    assert_eq!(status.code(), Some(0), "{}", d.stderr_text());
    let spans = receiver.trace_when(None, WAIT, |s| {
        s.iter()
            .any(|s| s["name"].as_str().unwrap().starts_with("invoke_agent"))
    });
    assert!(
        spans
            .iter()
            .any(|s| s["name"] == format!("chat {}", daemon::MODEL)),
        "{spans:#?}"
    );
    assert!(
        spans.iter().all(|s| s["service"] == "genai-daemon-test"),
        "{spans:#?}"
    );
}

#[tokio::test]
async fn a_collector_that_is_down_or_silent_costs_the_requests_nothing() {
    // Down: a port nothing listens on. Silent: a listener that never answers.
    let down = TcpListener::bind("127.0.0.1:0").unwrap();
    let down_url = format!("http://{}", down.local_addr().unwrap());
    drop(down);
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("http://{}", silent.local_addr().unwrap());
    for endpoint in [down_url, silent_url] {
        let fake = FakeOpenAi::start(0, Behavior::text(REPLY)).unwrap();
        let mut served = serve(&fake, &endpoint, false);
        for stream in [false, true, false] {
            assert_eq!(chat(&served, stream, TRACE).await, 200, "{endpoint}");
        }
        // The stop flushes within its bounds and exits as it does without traces.
        served.terminate();
        assert!(served.exit_within(WAIT).success(), "{endpoint}");
        let env = OpenAiCli::new();
        env.fake.push(Behavior::text(REPLY));
        env.dirs
            .write_config(&format!("[telemetry]\notlp_endpoint = \"{endpoint}\"\n"));
        let mut ask = env
            .cmd(&["ask", "-m", "openai:gpt-test", "Hi"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut status = None;
        wait_until("ask exits", WAIT, || {
            status = ask.try_wait().unwrap();
            status.is_some()
        });
        assert!(status.unwrap().success(), "{endpoint}");
        let mut said = String::new();
        std::io::Read::read_to_string(&mut ask.stdout.take().unwrap(), &mut said).unwrap();
        assert!(said.contains("reply-93ab"), "{said}");
    }
    drop(silent);
}
