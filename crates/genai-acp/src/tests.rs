//! Fast tests of the ACP agent over in-memory pipes and the scripted provider: the handshake,
//! errors that keep the loop alive, a streamed turn, history replay after a restart, cancel,
//! and the port's mapping of tool runs and reasoning.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use genai_core::config::Config;
use genai_core::provider::scripted::{text_stream, Answer, ScriptedProvider};
use genai_core::registry::Registry;
use genai_core::session::Framework;
use genai_core::store::Store;

const DEADLINE: Duration = Duration::from_secs(10);

/// A framework whose default model is the scripted provider, over `store`.
fn framework(store: Arc<Store>, answers: Vec<Answer>) -> (Arc<Framework>, Arc<ScriptedProvider>) {
    let registry = Registry::new();
    let provider = ScriptedProvider::new(answers);
    registry.insert_provider("scripted", "openai", provider.clone());
    let mut config = Config::default();
    config.defaults.model = Some("scripted:m".into());
    (Arc::new(Framework::new(config, registry, store)), provider)
}

/// An ACP client on the other end of a pipe.
struct Client {
    input: DuplexStream,
    output: Lines<BufReader<DuplexStream>>,
    served: JoinHandle<std::io::Result<()>>,
    next_id: u64,
}

impl Client {
    fn start(fw: Arc<Framework>) -> Client {
        let (input, agent_in) = tokio::io::duplex(1 << 20);
        let (agent_out, output) = tokio::io::duplex(1 << 20);
        let served = tokio::spawn(super::serve(fw, agent_in, agent_out));
        Client {
            input,
            output: BufReader::new(output).lines(),
            served,
            next_id: 0,
        }
    }

    async fn send_line(&mut self, line: &str) {
        self.input.write_all(line.as_bytes()).await.unwrap();
        self.input.write_all(b"\n").await.unwrap();
    }

    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(DEADLINE, self.output.next_line())
            .await
            .expect("a message before the deadline")
            .unwrap()
            .expect("the agent is still there");
        serde_json::from_str(&line).expect("stdout carries JSON only")
    }

    async fn send(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        self.send_line(&msg.to_string()).await;
        self.next_id
    }

    /// Sends a request and collects the notifications before its answer.
    async fn call(&mut self, method: &str, params: Value) -> (Value, Vec<Value>) {
        let id = self.send(method, params).await;
        let mut before = Vec::new();
        loop {
            let m = self.next().await;
            if m["id"] == json!(id) && m.get("method").is_none() {
                return (m, before);
            }
            before.push(m);
        }
    }

    async fn init(&mut self) -> Value {
        let (r, _) = self
            .call(
                "initialize",
                json!({"protocolVersion": 1, "clientCapabilities": {}}),
            )
            .await;
        r["result"].clone()
    }

    async fn new_session(&mut self, cwd: &str) -> String {
        let (r, _) = self
            .call("session/new", json!({"cwd": cwd, "mcpServers": []}))
            .await;
        r["result"]["sessionId"]
            .as_str()
            .expect("a session id")
            .to_string()
    }

    /// Ends the input and waits for the agent to finish.
    async fn close(self) {
        drop(self.input);
        tokio::time::timeout(DEADLINE, self.served)
            .await
            .expect("the agent ends with its input")
            .unwrap()
            .unwrap();
    }
}

fn updates(messages: &[Value], kind: &str) -> Vec<Value> {
    messages
        .iter()
        .filter(|m| {
            m["method"] == "session/update" && m["params"]["update"]["sessionUpdate"] == kind
        })
        .map(|m| m["params"]["update"].clone())
        .collect()
}

fn texts(updates: &[Value]) -> String {
    updates
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

#[tokio::test]
async fn the_handshake_claims_what_genai_does() {
    let (fw, _) = framework(Arc::new(Store::in_memory().unwrap()), vec![]);
    let mut c = Client::start(fw);
    let r = c.init().await;
    assert_eq!(r["protocolVersion"], 1);
    assert_eq!(r["agentInfo"]["name"], "genai");
    assert_eq!(r["authMethods"][0]["id"], "genai-keys", "{r}");
    let (ok, _) = c
        .call("authenticate", json!({"methodId": "genai-keys"}))
        .await;
    assert_eq!(ok["result"], json!({}), "{ok}");
    let (bad, _) = c.call("authenticate", json!({"methodId": "oauth"})).await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    let caps = &r["agentCapabilities"];
    assert_eq!(caps["loadSession"], true);
    assert_eq!(caps["promptCapabilities"]["image"], true);
    assert_eq!(caps["promptCapabilities"]["embeddedContext"], true);
    assert_eq!(caps["promptCapabilities"]["audio"], false);
    assert_eq!(caps["mcpCapabilities"]["http"], true);
    assert_eq!(caps["mcpCapabilities"]["sse"], false);
    for cap in ["list", "resume", "close"] {
        assert!(
            caps["sessionCapabilities"][cap].is_object(),
            "{cap}: {caps}"
        );
    }
    c.close().await;
}

#[tokio::test]
async fn bad_input_gets_its_error_and_the_agent_goes_on() {
    let (fw, _) = framework(Arc::new(Store::in_memory().unwrap()), vec![]);
    let mut c = Client::start(fw);
    c.send_line("{not json").await;
    assert_eq!(c.next().await["error"]["code"], -32700);
    c.send_line("[1, 2]").await;
    assert_eq!(c.next().await["error"]["code"], -32600);
    c.send_line(r#"{"jsonrpc": "1.0", "id": 7, "method": "initialize"}"#)
        .await;
    let m = c.next().await;
    assert_eq!(
        (m["id"].clone(), m["error"]["code"].clone()),
        (json!(7), json!(-32600))
    );
    let (r, _) = c.call("no/such_method", json!({})).await;
    assert_eq!(r["error"]["code"], -32601);
    let (r, _) = c.call("session/new", json!({"cwd": 42})).await;
    assert_eq!(r["error"]["code"], -32602);
    let (r, _) = c
        .call(
            "session/new",
            json!({"cwd": "relative/dir", "mcpServers": []}),
        )
        .await;
    assert_eq!(r["error"]["code"], -32602);
    let (r, _) = c
        .call(
            "session/prompt",
            json!({"sessionId": "01NOPE", "prompt": [{"type": "text", "text": "hi"}]}),
        )
        .await;
    assert_eq!(r["error"]["code"], -32002);
    let (r, _) = c
        .call(
            "session/load",
            json!({"sessionId": "01NOPE", "cwd": "/tmp", "mcpServers": []}),
        )
        .await;
    assert_eq!(r["error"]["code"], -32002);
    // An unknown notification is ignored; the agent still answers.
    c.send_line(r#"{"jsonrpc": "2.0", "method": "no/such_notification"}"#)
        .await;
    assert_eq!(c.init().await["protocolVersion"], 1);
    c.close().await;
}

#[tokio::test]
async fn a_turn_streams_and_its_session_is_listed_and_replayed_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    let (fw, provider) = framework(
        Arc::new(Store::open(&path).unwrap()),
        vec![text_stream(&["Hel", "lo ", "there"], false)],
    );
    let mut c = Client::start(fw);
    c.init().await;
    let id = c.new_session("/work/project").await;
    let (r, before) = c
        .call("session/prompt", json!({"sessionId": id, "prompt": [
            {"type": "text", "text": "Say hello"},
            {"type": "resource", "resource": {"uri": "file:///work/project/notes.md", "text": "the notes"}}
        ]}))
        .await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    let chunks = updates(&before, "agent_message_chunk");
    assert_eq!(texts(&chunks), "Hello there");
    assert!(chunks.len() >= 3, "streamed in pieces: {chunks:?}");
    let sent = provider.messages_of(0).join("\n");
    assert!(
        sent.contains("Say hello")
            && sent.contains("file:///work/project/notes.md")
            && sent.contains("the notes"),
        "{sent}"
    );
    let (r, _) = c
        .call("session/list", json!({"cwd": "/work/project"}))
        .await;
    let sessions = r["result"]["sessions"].as_array().unwrap().clone();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0]["sessionId"], json!(id));
    assert!(sessions[0]["title"]
        .as_str()
        .unwrap()
        .starts_with("Say hello"));
    assert!(sessions[0]["updatedAt"].as_str().unwrap().ends_with('Z'));
    let (r, _) = c.call("session/list", json!({"cwd": "/elsewhere"})).await;
    assert_eq!(r["result"]["sessions"], json!([]));
    c.close().await;

    // A new process over the same history.
    let (fw, _) = framework(Arc::new(Store::open(&path).unwrap()), vec![]);
    let mut c = Client::start(fw);
    c.init().await;
    let (r, before) = c
        .call(
            "session/load",
            json!({"sessionId": id, "cwd": "/work/project", "mcpServers": []}),
        )
        .await;
    assert!(r["result"].is_object(), "{r}");
    let user = texts(&updates(&before, "user_message_chunk"));
    assert!(user.starts_with("Say hello"), "{user}");
    assert_eq!(
        texts(&updates(&before, "agent_message_chunk")),
        "Hello there"
    );
    let options = r["result"]["configOptions"].as_array().unwrap();
    assert!(options
        .iter()
        .any(|o| o["id"] == "model" && o["currentValue"] == "scripted:m"));
    assert!(options
        .iter()
        .any(|o| o["id"] == "mode" && o["currentValue"] == "tools"));
    let (r, _) = c.call("session/close", json!({"sessionId": id})).await;
    assert_eq!(r["result"], json!({}));
    let (r, _) = c.call("session/close", json!({"sessionId": id})).await;
    assert_eq!(r["error"]["code"], -32002);
    c.close().await;
}

#[tokio::test]
async fn cancel_ends_the_prompt_as_cancelled_and_commits_nothing() {
    let store = Arc::new(Store::in_memory().unwrap());
    let (fw, provider) = framework(
        store.clone(),
        vec![Answer::Hang, text_stream(&["after"], false)],
    );
    let mut c = Client::start(fw);
    c.init().await;
    let id = c.new_session("/p").await;
    let prompt = c
        .send(
            "session/prompt",
            json!({"sessionId": id, "prompt": [{"type": "text", "text": "wait"}]}),
        )
        .await;
    tokio::time::timeout(DEADLINE, provider.asked.notified())
        .await
        .ok();
    let cancel = json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": id}});
    c.send_line(&cancel.to_string()).await;
    let m = loop {
        let m = c.next().await;
        if m["id"] == json!(prompt) {
            break m;
        }
    };
    assert_eq!(m["result"]["stopReason"], "cancelled");
    assert_eq!(
        store.full_history(&id).unwrap().1.len(),
        0,
        "nothing committed"
    );
    let (r, _) = c
        .call(
            "session/prompt",
            json!({"sessionId": id, "prompt": [{"type": "text", "text": "again"}]}),
        )
        .await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    assert_eq!(store.full_history(&id).unwrap().1.len(), 2);
    c.close().await;
}

#[tokio::test]
async fn a_provider_failure_ends_the_turn_with_a_readable_chunk() {
    let (fw, _) = framework(
        Arc::new(Store::in_memory().unwrap()),
        vec![Answer::Fail("the model is down")],
    );
    let mut c = Client::start(fw);
    c.init().await;
    let id = c.new_session("/p").await;
    let (r, before) = c
        .call(
            "session/prompt",
            json!({"sessionId": id, "prompt": [{"type": "text", "text": "hi"}]}),
        )
        .await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    assert!(texts(&updates(&before, "agent_message_chunk")).contains("the model is down"));
    c.close().await;
}

#[tokio::test]
async fn the_port_shows_tool_runs_reasoning_and_usage() {
    use genai_core::feature::port::{ClientPort, TurnEvent, TurnRef};
    use genai_core::feature::TurnOutcome;
    use genai_core::message::Usage;

    let (tx, mut rx) = genai_peer::Outbox::new(genai_peer::outbox::UNBOUNDED);
    let conn = Arc::new(super::connection::Connection::new(Arc::new(
        genai_peer::Peer::new(tx),
    )));
    let port = super::port::SessionPort::new(conn);
    let turn = TurnRef {
        conversation_id: "S1".into(),
        turn_id: "T1".into(),
    };
    port.turn_event(&turn, TurnEvent::Reasoning("thinking".into()));
    port.turn_event(
        &turn,
        TurnEvent::ToolStarted {
            id: "call_1".into(),
            name: "files.read_file".into(),
            arguments: json!({"path": "/a"}),
        },
    );
    port.turn_event(
        &turn,
        TurnEvent::ToolFinished {
            id: "call_1".into(),
            name: "files.read_file".into(),
            output: "no such file".into(),
            is_error: true,
            edit: None,
        },
    );
    let outcome = TurnOutcome {
        summary: "done".into(),
        usage: Some(Usage {
            input_tokens: 5,
            output_tokens: 2,
            cache_read_tokens: None,
            cache_write_tokens: None,
            reasoning_tokens: None,
        }),
        ..Default::default()
    };
    port.turn_event(&turn, TurnEvent::Done(outcome));
    let mut sent = Vec::new();
    while let Some(b) = rx.try_recv() {
        let v: Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["params"]["sessionId"], "S1");
        sent.push(v["params"]["update"].clone());
    }
    let kinds: Vec<&str> = sent
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "agent_thought_chunk",
            "tool_call",
            "tool_call_update",
            "tool_call_update",
            "agent_message_chunk",
            "usage_update"
        ]
    );
    assert_eq!(sent[1]["toolCallId"], "call_1");
    assert_eq!(sent[1]["kind"], "read");
    assert_eq!(sent[1]["rawInput"], json!({"path": "/a"}));
    assert_eq!(sent[2]["status"], "in_progress");
    assert_eq!(sent[3]["status"], "failed");
    assert_eq!(sent[3]["content"][0]["content"]["text"], "no such file");
    assert_eq!(
        sent[4]["content"]["text"], "done",
        "an unstreamed reply is sent whole"
    );
    assert_eq!(sent[5]["used"], 7);
    let _ = CancellationToken::new();
}

/// The command files are first looked at when the watch starts, not when its task first runs:
/// a file added in between (this runtime has one thread, and the test does not yield before
/// writing it) is announced. CI once lost that race on a loaded machine.
#[tokio::test]
async fn a_command_file_added_before_the_watching_task_runs_is_announced() {
    let (fw, _) = framework(Arc::new(Store::in_memory().unwrap()), vec![]);
    let dir = tempfile::tempdir().unwrap();
    let commands = dir.path().join(".genai").join("commands");
    std::fs::create_dir_all(&commands).unwrap();
    let cwd = dir.path().to_str().unwrap().to_string();
    let mut c = Client::start(fw.clone());
    c.init().await;
    let id = c.new_session(&cwd).await;

    let (tx, mut rx) = genai_peer::Outbox::new(genai_peer::outbox::UNBOUNDED);
    let conn = Arc::new(super::connection::Connection::new(Arc::new(
        genai_peer::Peer::new(tx),
    )));
    let stop = CancellationToken::new();
    super::commands::watch(fw, conn, id.clone(), dir.path().into(), stop.clone());
    std::fs::write(
        commands.join("later.md"),
        "---\ndescription: Added later\n---\nLater: {{input}}\n",
    )
    .unwrap();

    let frame = tokio::time::timeout(DEADLINE, rx.recv())
        .await
        .expect("an announcement before the deadline")
        .unwrap();
    let v: Value = serde_json::from_slice(&frame).unwrap();
    assert_eq!(v["params"]["sessionId"], json!(id), "{v}");
    let names: Vec<&str> = v["params"]["update"]["availableCommands"]
        .as_array()
        .expect("an available_commands_update")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert!(names.contains(&"later"), "{names:?}");
    stop.cancel();
    c.close().await;
}

#[tokio::test]
async fn slash_compact_summarises_the_session_now_and_says_what_it_did() {
    let answers = ["one", "two", "three", "SUMMARY-ACP", "four", "SUMMARY-2"]
        .iter()
        .map(|t| text_stream(&[t], false))
        .collect();
    let (fw, provider) = framework(Arc::new(Store::in_memory().unwrap()), answers);
    let mut c = Client::start(fw);
    c.init().await;
    let id = c.new_session("/work/project").await;
    for text in ["first", "second", "third"] {
        let (r, _) = c
            .call(
                "session/prompt",
                json!({"sessionId": id, "prompt": [{"type": "text", "text": text}]}),
            )
            .await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    }
    let (r, before) = c
        .call(
            "session/prompt",
            json!({"sessionId": id, "prompt": [{"type": "text", "text": "/compact"}]}),
        )
        .await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let said = texts(&updates(&before, "agent_message_chunk"));
    assert!(
        said.starts_with(
            "Compacted the 1 earliest turn(s) into a summary by the conversation's model"
        ),
        "{said}"
    );
    assert!(provider.messages_of(3)[1].contains("user: first"));
    c.call(
        "session/prompt",
        json!({"sessionId": id, "prompt": [{"type": "text", "text": "fourth"}]}),
    )
    .await;
    let sent = provider.messages_of(4);
    assert!(sent[0].contains("SUMMARY-ACP"), "{sent:?}");
    assert!(!sent.contains(&"user: first".to_string()), "{sent:?}");
    assert!(sent.contains(&"user: second".to_string()), "{sent:?}");
    // Again after one more turn: the turns since are added to the summary.
    let (_, before) = c
        .call(
            "session/prompt",
            json!({"sessionId": id, "prompt": [{"type": "text", "text": "/compact"}]}),
        )
        .await;
    let said = texts(&updates(&before, "agent_message_chunk"));
    assert!(said.starts_with("Compacted the 2 earliest"), "{said}");
    // Grown from the summary kept, not written from scratch.
    assert!(provider.messages_of(5)[1].starts_with("user: The summary so far: SUMMARY-ACP"));
    c.close().await;
}

#[path = "subagent_tests.rs"]
mod subagents;
