//! Tools a daemon client hosts (`RegisterTool`, `OnToolCall`) and files it holds for the
//! workspace tools (`ReadTextFile`, `WriteTextFile`), against a scripted model: what reached
//! the client, what reached the model, and what is on the disk.

use std::time::Duration;

use rpc_client::{Daemon, DaemonConfig, Framing};
use serde_json::{json, Value};

use crate::support::{fake_openai, rpc_client};
use fake_openai::{Behavior, FakeOpenAi};

const WAIT: Duration = Duration::from_secs(20);

fn calls(tool: &str, args: &str) -> Behavior {
    Behavior {
        reply: String::new(),
        tool_calls: vec![("call_1".into(), tool.into(), args.into())],
        ..Behavior::default()
    }
}

/// A daemon on the fake model, initialized with `capabilities`.
fn daemon(root: &std::path::Path, fake: &FakeOpenAi, capabilities: Value) -> Daemon {
    let cfg = DaemonConfig::in_dir(root, Framing::Lines, "daemon")
        .env("OPENAI_BASE_URL", &fake.base_url())
        .env("OPENAI_API_KEY", "sk-test-editor");
    cfg.write_config("");
    let mut d = Daemon::spawn(&cfg);
    d.call("Initialize", json!({"capabilities": capabilities}));
    d
}

fn register(d: &mut Daemon, name: &str, read_only: bool, timeout_ms: Option<u64>) {
    let mut params = json!({
        "name": name,
        "description": format!("The editor's {name}"),
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
        "readOnly": read_only,
    });
    if let Some(t) = timeout_ms {
        params["timeoutMs"] = json!(t);
    }
    let r = d.call("RegisterTool", params);
    assert_eq!(r["tool"], format!("editor.{name}"), "{r}");
}

/// The text of the tool result the model got in the last request.
fn told(fake: &FakeOpenAi) -> String {
    let requests = fake.requests();
    let last = requests.last().unwrap();
    last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_registered_tool_is_offered_called_and_its_answer_reaches_the_model() {
    let fake = FakeOpenAi::start(0, Behavior::text("unused")).unwrap();
    fake.push(calls("editor__open_files", r#"{"path":"src"}"#));
    fake.push(Behavior::text("Two files are open."));
    let dir = tempfile::tempdir().unwrap();
    let mut d = daemon(dir.path(), &fake, json!({}));
    register(&mut d, "open_files", true, None);
    let (cid, _) = d.create_conversation(json!({
        "feature": "tools", "serviceProvider": "openai", "model": "gpt-test", "tools": ["editor"]
    }));
    let turn_id = d.send_message(&cid, "Which files are open?");
    let call = d.wait_for(
        |m| m["method"] == "OnToolCall",
        WAIT,
        "an OnToolCall request",
    );
    assert_eq!(call["params"]["conversationId"], cid, "{call}");
    assert_eq!(call["params"]["turnId"], turn_id, "{call}");
    assert_eq!(call["params"]["callId"], "call_1", "{call}");
    assert_eq!(call["params"]["name"], "open_files", "{call}");
    assert_eq!(
        call["params"]["arguments"],
        json!({"path": "src"}),
        "{call}"
    );
    d.send_value(&json!({"jsonrpc": "2.0", "id": call["id"], "result": {
        "content": [{"type": "text", "text": "src/a.rs (modified)"}, "src/b.rs"]
    }}));
    let fin = d.wait_final(&turn_id, WAIT)["params"].clone();
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(fin["summary"], "Two files are open.");
    // Offered under its wire name with its schema; read-only, so no one was asked.
    let first = &fake.requests()[0].body;
    assert_eq!(
        first["tools"][0]["function"]["name"], "editor__open_files",
        "{first}"
    );
    assert_eq!(
        first["tools"][0]["function"]["parameters"]["properties"]["path"]["type"],
        "string"
    );
    assert!(
        told(&fake).contains("src/a.rs (modified)\\nsrc/b.rs"),
        "{}",
        told(&fake)
    );
    assert!(!d.log().iter().any(|m| m["method"] == "RequestConfirmation"));

    // Unregistered, it is offered no more.
    d.call("UnregisterTool", json!({"name": "open_files"}));
    fake.push(Behavior::text("No tools."));
    let (_, fin) = d.turn(&cid, "And now?", WAIT);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert!(fake.requests().last().unwrap().body.get("tools").is_none());
    assert!(d.shutdown(WAIT).success());
}

#[test]
fn a_denied_call_never_reaches_the_client_and_a_silent_one_times_out() {
    let fake = FakeOpenAi::start(0, Behavior::text("unused")).unwrap();
    fake.push(calls("editor__add_entity", r#"{"path":"Level/Box"}"#));
    fake.push(Behavior::text("It was refused."));
    fake.push(calls("editor__slow", "{}"));
    fake.push(Behavior::text("It timed out."));
    let dir = tempfile::tempdir().unwrap();
    let mut d = daemon(dir.path(), &fake, json!({}));
    register(&mut d, "add_entity", false, None);
    register(&mut d, "slow", true, Some(300));
    let (cid, _) = d.create_conversation(json!({
        "feature": "tools", "serviceProvider": "openai", "model": "gpt-test", "tools": ["*"]
    }));

    // Not read-only, in the default ask mode: the user is asked, and rejects.
    let turn_id = d.send_message(&cid, "Add a box");
    let ask = d.wait_for(
        |m| m["method"] == "RequestConfirmation",
        WAIT,
        "a permission ask",
    );
    assert_eq!(ask["params"]["tool"], "editor.add_entity", "{ask}");
    assert!(ask["params"]["permission"]["options"]
        .to_string()
        .contains("reject_once"));
    d.send_value(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"confirmed": false, "option": "reject_once"}}));
    let fin = d.wait_final(&turn_id, WAIT)["params"].clone();
    assert_eq!(fin["summary"], "It was refused.", "{fin}");
    assert!(told(&fake).contains("was not allowed"), "{}", told(&fake));
    assert!(!d.log().iter().any(|m| m["method"] == "OnToolCall"));

    // Read-only but never answered: the model hears the time-out, and the turn ends.
    let turn_id = d.send_message(&cid, "Be slow");
    d.wait_for(
        |m| m["method"] == "OnToolCall",
        WAIT,
        "an OnToolCall request",
    );
    let fin = d.wait_final(&turn_id, WAIT)["params"].clone();
    assert_eq!(fin["summary"], "It timed out.", "{fin}");
    assert!(
        told(&fake).contains("editor.slow: the client did not answer within 0.3 s"),
        "{}",
        told(&fake)
    );
    assert!(d.shutdown(WAIT).success());
}

#[test]
fn a_client_that_leaves_mid_call_ends_the_turn_and_the_daemon_cleanly() {
    let fake = FakeOpenAi::start(0, Behavior::text("unused")).unwrap();
    fake.push(calls("editor__open_files", "{}"));
    fake.push(Behavior::text("The editor left."));
    let dir = tempfile::tempdir().unwrap();
    let mut d = daemon(dir.path(), &fake, json!({}));
    register(&mut d, "open_files", true, None);
    let (cid, _) = d.create_conversation(json!({
        "feature": "tools", "serviceProvider": "openai", "model": "gpt-test", "tools": ["editor"]
    }));
    d.send_message(&cid, "Which files are open?");
    d.wait_for(
        |m| m["method"] == "OnToolCall",
        WAIT,
        "an OnToolCall request",
    );
    d.close_stdin();
    assert!(d.wait_exit(WAIT).success(), "{}", d.stderr_text());
    // The model heard that the call failed, and the turn was kept whole.
    assert!(
        told(&fake).contains("editor.open_files: OnToolCall not answered"),
        "{}",
        told(&fake)
    );
    let cfg = DaemonConfig::in_dir(dir.path(), Framing::Lines, "daemon2")
        .env("OPENAI_BASE_URL", &fake.base_url())
        .env("OPENAI_API_KEY", "sk-test-editor");
    let mut again = Daemon::spawn(&cfg);
    let history = again.history(&cid);
    let roles: Vec<&str> = history
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "tool", "assistant"],
        "{history:?}"
    );
    assert!(again.shutdown(WAIT).success());
}

#[test]
fn an_editor_client_holds_the_files_the_workspace_tools_read_and_write() {
    let project = tempfile::tempdir().unwrap();
    let root = project.path().canonicalize().unwrap();
    std::fs::write(root.join("notes.md"), "saved text\n").unwrap();
    let fake = FakeOpenAi::start(0, Behavior::text("unused")).unwrap();
    fake.push(calls(
        "workspace__edit_file",
        r#"{"path":"notes.md","old_text":"unsaved","new_text":"edited"}"#,
    ));
    fake.push(Behavior::text("Edited."));
    let dir = tempfile::tempdir().unwrap();
    let mut d = daemon(
        dir.path(),
        &fake,
        json!({"editor": {"readTextFile": true, "writeTextFile": true}}),
    );
    let (cid, _) = d.create_conversation(json!({
        "feature": "tools", "serviceProvider": "openai", "model": "gpt-test",
        "tools": ["workspace"], "cwd": root.to_str().unwrap()
    }));
    let turn_id = d.send_message(&cid, "Edit my notes");
    let path = root.join("notes.md").to_string_lossy().into_owned();
    // The edit is planned on the editor's unsaved text, shown as a diff, then written through it.
    let read = d.wait_for(
        |m| m["method"] == "ReadTextFile",
        WAIT,
        "a ReadTextFile request",
    );
    assert_eq!(read["params"]["path"], path, "{read}");
    d.send_value(
        &json!({"jsonrpc": "2.0", "id": read["id"], "result": {"text": "unsaved text\n"}}),
    );
    let ask = d.wait_for(
        |m| m["method"] == "RequestConfirmation",
        WAIT,
        "a permission ask",
    );
    let diff = &ask["params"]["permission"]["diff"];
    assert_eq!(diff["oldText"], "unsaved text\n", "{ask}");
    assert_eq!(diff["newText"], "edited text\n", "{ask}");
    d.send_value(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"confirmed": true, "option": "allow_once"}}));
    let read = d.wait_for(
        |m| m["method"] == "ReadTextFile" && m["id"] != read["id"],
        WAIT,
        "the ReadTextFile of the run",
    );
    d.send_value(
        &json!({"jsonrpc": "2.0", "id": read["id"], "result": {"text": "unsaved text\n"}}),
    );
    let write = d.wait_for(
        |m| m["method"] == "WriteTextFile",
        WAIT,
        "a WriteTextFile request",
    );
    assert_eq!(write["params"]["path"], path);
    assert_eq!(write["params"]["text"], "edited text\n");
    assert_eq!(write["params"]["callId"], "call_1");
    d.send_value(&json!({"jsonrpc": "2.0", "id": write["id"], "result": {}}));
    let fin = d.wait_final(&turn_id, WAIT)["params"].clone();
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(fin["changedFiles"], json!([path]), "{fin}");
    assert!(told(&fake).contains("+edited text"), "{}", told(&fake));
    // genai wrote nothing itself.
    assert_eq!(
        std::fs::read_to_string(root.join("notes.md")).unwrap(),
        "saved text\n"
    );
    assert!(d.shutdown(WAIT).success());
}

#[test]
fn an_edit_the_editor_rejects_is_not_made_and_the_model_is_told() {
    let project = tempfile::tempdir().unwrap();
    let root = project.path().canonicalize().unwrap();
    let fake = FakeOpenAi::start(0, Behavior::text("unused")).unwrap();
    fake.push(calls(
        "workspace__write_file",
        r#"{"path":"new.md","content":"hi\n"}"#,
    ));
    fake.push(Behavior::text("Not written."));
    let dir = tempfile::tempdir().unwrap();
    let mut d = daemon(
        dir.path(),
        &fake,
        json!({"editor": {"writeTextFile": true}}),
    );
    let (cid, _) = d.create_conversation(json!({
        "feature": "tools", "serviceProvider": "openai", "model": "gpt-test",
        "tools": ["workspace"], "cwd": root.to_str().unwrap(), "mode": "edit"
    }));
    let turn_id = d.send_message(&cid, "Write new.md");
    let write = d.wait_for(
        |m| m["method"] == "WriteTextFile",
        WAIT,
        "a WriteTextFile request",
    );
    d.send_value(&json!({"jsonrpc": "2.0", "id": write["id"], "error": {"code": -32000, "message": "the user rejected the edit"}}));
    let fin = d.wait_final(&turn_id, WAIT)["params"].clone();
    assert_eq!(fin["summary"], "Not written.", "{fin}");
    assert!(fin.get("changedFiles").is_none(), "{fin}");
    assert!(
        told(&fake).contains("the user rejected the edit"),
        "{}",
        told(&fake)
    );
    assert!(!root.join("new.md").exists());
    assert!(d.shutdown(WAIT).success());
}

#[test]
fn under_genai_serve_each_client_sees_its_own_tools_which_leave_with_it() {
    use crate::serve::Served;
    let fake = FakeOpenAi::start(0, Behavior::text("unused")).unwrap();
    let served = Served::start(&fake, &[]);
    let root = tempfile::tempdir().unwrap();
    let client = |name: &str| {
        let cfg = DaemonConfig::in_dir(root.path(), Framing::Lines, name)
            .env("GENAI_SERVE_TOKEN", &served.token);
        let mut d = Daemon::spawn_command(&cfg, &["daemon", "--connect", &served.url]);
        d.call("Initialize", json!({}));
        d
    };
    let conversation = |d: &mut Daemon| -> String {
        let (cid, _) = d.create_conversation(json!({"feature": "tools", "tools": ["editor"]}));
        cid
    };
    let mut a = client("a");
    let mut b = client("b");
    register(&mut a, "open_files", true, None);

    // B's conversation is offered none of A's tools.
    let cid_b = conversation(&mut b);
    fake.push(Behavior::text("No tools here."));
    let (_, fin) = b.turn(&cid_b, "Which files are open?", WAIT);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert!(fake.requests().last().unwrap().body.get("tools").is_none());

    // A's own is; A leaves while its call is pending: the call fails, the turn still ends.
    let cid_a = conversation(&mut a);
    fake.push(calls("editor__open_files", "{}"));
    fake.push(Behavior::text("The editor left."));
    a.send_message(&cid_a, "Which files are open?");
    a.wait_for(
        |m| m["method"] == "OnToolCall",
        WAIT,
        "an OnToolCall request",
    );
    assert!(!b.log().iter().any(|m| m["method"] == "OnToolCall"));
    a.close_stdin();
    assert!(a.wait_exit(WAIT).success());
    crate::support::poll::wait_until("the model hears the failed call", WAIT, || {
        fake.requests().len() >= 3
    });
    assert!(
        told(&fake).contains("editor.open_files: OnToolCall not answered: the client is gone"),
        "{}",
        told(&fake)
    );

    // The server goes on serving B.
    fake.push(Behavior::text("Still here."));
    let (_, fin) = b.turn(&cid_b, "Still there?", WAIT);
    assert_eq!(fin["summary"], "Still here.", "{fin}");
}
