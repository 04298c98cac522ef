//! Where `genai serve`'s conversations work: `[serve] roots` over WebSocket. `Initialize` says
//! the allowed folders and the default; a `cwd` outside them (plainly, by `..`, or through a
//! symbolic link) is refused with an invalid-params error naming them, for `CreateConversation`
//! and `ListCommands` alike; one inside is used (a `tools` chat writes its file there, and the
//! listing shows the root); no `cwd` means the default root; a stored conversation with tools
//! whose root lies outside cannot be resumed. The stdio daemon is not limited.

use jsonrpsee::core::client::ClientT;
use jsonrpsee::core::ClientError;
use serde_json::{json, Value};

use crate::serve::{call, is_final, next_event, subscribe, Obj, Served};
use crate::support::fake_openai::{Behavior, FakeOpenAi};

/// A tree with `allowed/site`, `outside`, and `allowed/escape` → `outside`.
struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    fn new() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("allowed/site")).unwrap();
        std::fs::create_dir_all(dir.path().join("outside")).unwrap();
        std::os::unix::fs::symlink(
            dir.path().join("outside"),
            dir.path().join("allowed/escape"),
        )
        .unwrap();
        Tree { dir }
    }

    /// `rel` in the tree as the serve resolves it (the temporary folder may be behind a link).
    fn at(&self, rel: &str) -> String {
        let base = self.dir.path().canonicalize().unwrap();
        let path = if rel.is_empty() { base } else { base.join(rel) };
        path.display().to_string()
    }
}

/// The error a request gets: `(code, message)`.
async fn refused(c: &jsonrpsee::ws_client::WsClient, method: &str, params: Value) -> (i32, String) {
    match c.request::<Value, _>(method, Obj(params.clone())).await {
        Err(ClientError::Call(e)) => (e.code(), e.message().to_string()),
        other => panic!("{method} {params} was not refused: {other:?}"),
    }
}

#[tokio::test]
async fn serve_confines_conversations_to_its_roots_and_a_tools_chat_writes_in_the_chosen_one() {
    let tree = Tree::new();
    let fake = FakeOpenAi::start(0, Behavior::text("unused")).unwrap();
    let config = format!(
        "[defaults]\nmodel = \"openai:gpt-ws\"\n\n[serve]\nroots = [\"{}\"]\n",
        tree.at("allowed")
    );
    let base_url = fake.base_url();
    let served = Served::start_with(
        &config,
        &[
            ("OPENAI_BASE_URL", base_url.as_str()),
            ("OPENAI_API_KEY", "sk-test-ws"),
        ],
        &[],
    );
    // The serve runs in the test's folder, outside the allowed one: the allowed one is the default.
    let said = served.stderr_with("genai: conversations work in");
    assert!(said.contains(&tree.at("allowed")), "{said}");
    let c = served.client().await;
    let init = call(&c, "Initialize", json!({})).await;
    assert_eq!(
        init["roots"],
        json!({"default": tree.at("allowed"), "allowed": [tree.at("allowed")]}),
        "{init}"
    );

    // Outside: plainly, by `..`, and through a link that leads out; each names the allowed folder.
    let climbing = format!("{}/site/../../outside", tree.at("allowed"));
    let escape = format!("{}/escape", tree.at("allowed"));
    for cwd in [tree.at("outside"), climbing, escape, "/".to_string()] {
        let (code, message) = refused(
            &c,
            "CreateConversation",
            json!({"cwd": cwd, "feature": "tools"}),
        )
        .await;
        assert_eq!(code, -32602, "{message}");
        assert!(
            message.contains("outside") && message.contains(&tree.at("allowed")),
            "{cwd}: {message}"
        );
        let (code, _) = refused(&c, "ListCommands", json!({"cwd": cwd, "mcp": false})).await;
        assert_eq!(code, -32602);
    }
    let (_, message) = refused(
        &c,
        "CreateConversation",
        json!({"cwd": format!("{}/nope", tree.at("allowed"))}),
    )
    .await;
    assert!(message.contains("no such folder"), "{message}");
    assert!(fake.requests().is_empty(), "nothing reached the model");

    // Inside (relative to the default root): used, resolved; the model's write lands there.
    let mut events = subscribe(&c, json!({})).await;
    let conv = call(
        &c,
        "CreateConversation",
        json!({"cwd": "site", "feature": "tools", "tools": ["workspace"], "mode": "edit"}),
    )
    .await;
    assert_eq!(conv["cwd"], tree.at("allowed/site"), "{conv}");
    let cid = conv["conversationId"].as_str().unwrap().to_string();
    let write = json!({"path": "note.txt", "content": "written by the model\n"}).to_string();
    fake.push(Behavior::calls("", &[("workspace__write_file", &write)]));
    fake.push(Behavior::text("Written."));
    let turn = call(
        &c,
        "OnNewMessage",
        json!({"conversationId": cid, "message": "Write the note"}),
    )
    .await;
    let turn_id = turn["turnId"].as_str().unwrap().to_string();
    let fin = next_event(&mut events, is_final(&turn_id)).await;
    assert_eq!(fin["params"]["isSuccess"], true, "{fin}");
    assert_eq!(
        std::fs::read_to_string(format!("{}/note.txt", tree.at("allowed/site"))).unwrap(),
        "written by the model\n"
    );
    assert!(std::fs::read_dir(tree.at("outside"))
        .unwrap()
        .next()
        .is_none());
    let listed = call(&c, "ListConversations", json!({})).await;
    let row = listed["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == cid.as_str())
        .cloned()
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(row["cwd"], tree.at("allowed/site"), "{row}");
    call(&c, "RemoveConversation", json!({"conversationId": cid})).await;
    let resumed = call(&c, "ResumeConversation", json!({"conversationId": cid})).await;
    assert_eq!(resumed["cwd"], tree.at("allowed/site"), "{resumed}");

    // No `cwd`: the default root.
    let plain = call(&c, "CreateConversation", json!({})).await;
    assert_eq!(plain["cwd"], tree.at("allowed"), "{plain}");
    let commands = call(&c, "ListCommands", json!({"mcp": false})).await;
    assert!(commands["commands"].is_array(), "{commands}");
}

#[tokio::test]
async fn serve_refuses_to_resume_a_tools_conversation_stored_outside_its_roots() {
    let tree = Tree::new();
    let fake = FakeOpenAi::start(0, Behavior::text("Done.")).unwrap();
    let base_url = fake.base_url();
    let vars = [
        ("OPENAI_BASE_URL", base_url.as_str()),
        ("OPENAI_API_KEY", "sk-test-ws"),
    ];
    let served = Served::start_with(
        &format!(
            "[defaults]\nmodel = \"openai:gpt-ws\"\n\n[serve]\nroots = [\"{}\"]\n",
            tree.at("allowed")
        ),
        &vars,
        &[],
    );
    // `genai ask` in the folder outside, with tools, on the same history (a stdio front-end: not
    // limited).
    let mut ask = served.genai(&["ask", "--tools=workspace", "Look around"]);
    ask.current_dir(tree.at("outside")).envs(vars);
    let o = ask.stdin(std::process::Stdio::null()).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let c = served.client().await;
    let listed = call(&c, "ListConversations", json!({})).await;
    let stored = &listed["conversations"][0];
    assert_eq!(stored["cwd"], tree.at("outside"), "{listed}");
    let (code, message) = refused(
        &c,
        "ResumeConversation",
        json!({"conversationId": stored["id"]}),
    )
    .await;
    assert_eq!(code, -32602, "{message}");
    assert!(
        message.contains(&tree.at("outside")) && message.contains(&tree.at("allowed")),
        "{message}"
    );
    // Its history can still be read.
    let history = call(
        &c,
        "GetConversationHistory",
        json!({"conversationId": stored["id"]}),
    )
    .await;
    assert!(history["messages"].to_string().contains("Look around"));
}
