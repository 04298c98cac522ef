//! genai against an MCP server no one here wrote: the reference filesystem server of the Model
//! Context Protocol project (`@modelcontextprotocol/server-filesystem` from npm, run by Node).
//! `scripts/test.sh` installs it into `target/mcp-interop` and sets
//! `GENAI_TEST_MCP_FILESYSTEM` to its program. Without it the test fails when `CI` is set and is
//! skipped, saying why, otherwise.

use std::time::Duration;

use rpc_client::{Daemon, DaemonConfig, Framing};
use serde_json::{json, Value};

use crate::support::{fake_openai, rpc_client};

const WAIT: Duration = Duration::from_secs(60);

/// The server's program, or `None` (the test is skipped) outside CI.
fn filesystem_server() -> Option<String> {
    match std::env::var("GENAI_TEST_MCP_FILESYSTEM") {
        Ok(p) if std::path::Path::new(&p).exists() => Some(p),
        _ if std::env::var_os("CI").is_some() => panic!(
            "GENAI_TEST_MCP_FILESYSTEM is not set to an installed @modelcontextprotocol/server-filesystem (scripts/test.sh installs it)"
        ),
        _ => {
            eprintln!("skipped: set GENAI_TEST_MCP_FILESYSTEM to run against the npm filesystem MCP server");
            None
        }
    }
}

#[test]
fn the_reference_filesystem_server_lists_reads_refuses_and_serves_a_model() {
    let Some(program) = filesystem_server() else {
        return;
    };
    use fake_openai::{Behavior, FakeOpenAi};
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    std::fs::write(notes.join("todo.txt"), "remember the milk\n").unwrap();
    let todo = notes.join("todo.txt").display().to_string();

    let fake = FakeOpenAi::start(0, Behavior::default()).unwrap();
    fake.push(Behavior {
        reply: String::new(),
        tool_calls: vec![(
            "call_1".into(),
            "fs__read_text_file".into(),
            json!({ "path": todo }).to_string(),
        )],
        ..Behavior::default()
    });
    fake.push(Behavior::text("Your list says: remember the milk."));
    let cfg = DaemonConfig::in_dir(dir.path(), Framing::Lines, "daemon")
        .env("OPENAI_BASE_URL", &fake.base_url())
        .env("OPENAI_API_KEY", "sk-test-interop");
    cfg.write_config(&format!(
        "[mcp_servers.fs]\ncommand = {program:?}\nargs = [{:?}]\nenabled = true\n",
        notes.display().to_string()
    ));
    let mut d = Daemon::spawn(&cfg);

    let r = d.call("ListTools", json!({}));
    let tools: Vec<&Value> = r["tools"].as_array().unwrap().iter().collect();
    let read = tools
        .iter()
        .find(|t| t["name"] == "fs.read_text_file")
        .unwrap_or_else(|| panic!("no fs.read_text_file: {r}"));
    assert_eq!(read["source"], "mcp:fs");
    assert!(
        read["inputSchema"]["properties"]["path"].is_object(),
        "{read}"
    );
    assert!(tools.len() >= 5, "{r}");

    let r = d.call(
        "CallTool",
        json!({"name": "fs.read_text_file", "arguments": {"path": todo}}),
    );
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(r["text"], "remember the milk\n");
    // Outside the allowed folder: the server's own tool error.
    let r = d.call(
        "CallTool",
        json!({"name": "fs.read_text_file", "arguments": {"path": "/etc/hostname"}}),
    );
    assert_eq!(r["isError"], true, "{r}");
    assert!(r["text"].as_str().unwrap().contains("outside"), "{r}");

    // A model's call reaches it through the `tools` feature.
    let conv = d.call(
        "CreateConversation",
        json!({"tools": ["fs.read_text_file"], "serviceProvider": "openai", "model": "gpt-test"}),
    );
    let (_, fin) = d.turn(
        conv["conversationId"].as_str().unwrap(),
        "What is on my list?",
        WAIT,
    );
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(fin["summary"], "Your list says: remember the milk.");
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let offered: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["fs__read_text_file"]);
    let result = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .cloned()
        .expect("a tool result");
    assert!(
        result["content"].to_string().contains("remember the milk"),
        "{result}"
    );
    assert!(d.shutdown(WAIT).success());
}
