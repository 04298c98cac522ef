//! What MCP servers give beyond a tool's text, against `examples/fake-mcp-server`: structured
//! results checked against a tool's `outputSchema` and a changed tool list followed, an image a
//! tool answers reaching a model that takes images, and a server's resources and prompts
//! listed, read and fetched.

use serde_json::{json, Value};

use crate::mcp::{daemon_with, message, names, pids, server, MORE_TOOLS, WAIT};
use crate::support::poll::wait_until;

#[test]
fn structured_results_are_checked_and_a_changed_tool_list_is_followed() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("srv.pids");
    let mut d = daemon_with(
        dir.path(),
        &server("srv", &pid_file, MORE_TOOLS),
        &[("FAKE_MCP_MORE_TOOLS", "1")],
    );
    // Structured content that fits the tool's outputSchema reaches the caller.
    let r = d.call(
        "CallTool",
        json!({"name": "srv.shape", "arguments": {"n": 4}}),
    );
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(
        serde_json::from_str::<Value>(r["text"].as_str().unwrap()).unwrap(),
        json!({"double": 8.0})
    );
    // Content that does not fit is a tool error naming the mismatch.
    let r = d.call(
        "CallTool",
        json!({"name": "srv.shape", "arguments": {"n": -1}}),
    );
    let text = r["text"].as_str().unwrap();
    assert_eq!(r["isError"], true, "{r}");
    assert!(
        text.contains("does not match its outputSchema") && text.contains("/double"),
        "{text}"
    );

    // The server adds a tool and says so: the next listing has it, and it can be called.
    let before = names(&d.call("ListTools", json!({})));
    assert!(!before.contains(&"srv.grown".to_string()), "{before:?}");
    let r = d.call("CallTool", json!({"name": "srv.grow"}));
    assert_eq!(r["text"], "grown", "{r}");
    wait_until("the changed tool list is followed", WAIT, || {
        names(&d.call("ListTools", json!({}))).contains(&"srv.grown".to_string())
    });
    let r = d.call("CallTool", json!({"name": "srv.grown"}));
    assert_eq!(r["text"], "I am new", "{r}");
    assert_eq!(pids(&pid_file).len(), 1, "listed again, not restarted");
}

#[test]
fn an_image_an_mcp_tool_answers_reaches_a_model_that_takes_images() {
    use crate::support::fake_anthropic::{Behavior, FakeAnthropic, KEY};
    let fake = FakeAnthropic::start(Behavior::default()).unwrap();
    fake.push(Behavior::calls("", &[("srv__picture", "{}")]));
    fake.push(Behavior::text("A red dot."));
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("srv.pids");
    let mut d = daemon_with(
        dir.path(),
        &server("srv", &pid_file, MORE_TOOLS),
        &[
            ("ANTHROPIC_BASE_URL", &fake.base_url()),
            ("ANTHROPIC_API_KEY", KEY),
            ("FAKE_MCP_MORE_TOOLS", "1"),
        ],
    );
    let (cid, _) = d.create_conversation(
        json!({"feature": "tools", "serviceProvider": "anthropic", "model": "claude-test", "tools": ["srv.picture"]}),
    );
    let (_, fin) = d.turn(&cid, "Show me the picture", WAIT);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let result = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|b| b["type"] == "tool_result")
        .expect("a tool result");
    let kinds: Vec<&str> = result["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["text", "image"], "{result}");
    assert_eq!(result["content"][1]["source"]["media_type"], "image/png");
}

#[test]
fn resources_and_prompts_of_an_mcp_server_are_listed_read_and_fetched() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("srv.pids");
    let config = format!(
        "{}{}",
        server("srv", &pid_file, MORE_TOOLS),
        server("plain", &dir.path().join("plain.pids"), MORE_TOOLS)
    );
    let mut d = daemon_with(dir.path(), &config, &[("FAKE_MCP_MORE_TOOLS", "1")]);
    let r = d.call("ListResources", json!({"sources": ["srv"]}));
    assert_eq!(
        r["resources"],
        json!([{"source": "srv", "uri": "memo://greeting", "name": "greeting",
                "description": "A greeting.", "mimeType": "text/plain"}]),
        "{r}"
    );
    let r = d.call(
        "ReadResource",
        json!({"source": "srv", "uri": "memo://greeting"}),
    );
    assert_eq!(
        r["contents"],
        json!([{"type": "text", "text": "Content of memo://greeting:\nHello from a resource"}]),
        "{r}"
    );
    let e = d.call_err(
        "ReadResource",
        json!({"source": "srv", "uri": "memo://nothing"}),
    );
    assert!(message(&e).contains("memo://nothing"), "{e}");
    let e = d.call_err(
        "ReadResource",
        json!({"source": "nope", "uri": "memo://greeting"}),
    );
    assert!(message(&e).contains("no tool source `nope`"), "{e}");

    let r = d.call("ListPrompts", json!({}));
    let prompts = r["prompts"].as_array().unwrap();
    assert_eq!(prompts.len(), 2, "both enabled servers list `review`: {r}");
    assert_eq!(prompts[0]["name"], "review");
    assert_eq!(prompts[0]["arguments"][0]["required"], true);
    let r = d.call(
        "GetPrompt",
        json!({"source": "srv", "name": "review", "arguments": {"code": "fn f() {}"}}),
    );
    assert_eq!(r["messages"][0]["role"], "user", "{r}");
    assert_eq!(
        r["messages"][0]["content"][0]["text"],
        "Review this code: fn f() {}"
    );
}
