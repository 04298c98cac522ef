//! Components and history: standalone agents, components created at run time, and listing,
//! paging, removing, deleting and searching conversations.

use std::time::Duration;

use serde_json::json;

use crate::support::daemon::{
    assert_error_kind, create_conversation, slow_stream, streaming_daemon, text_of, EXIT, MODEL,
    TURN,
};
use crate::support::fake_openai::Behavior;

#[test]
fn standalone_agents_prompt_cancel_and_remove() {
    let (fake, _dir, mut d) = streaming_daemon(Behavior::reply("Agent reply.", 3));

    let agent = d.call(
        "CreateAIAgent",
        json!({"serviceProvider": "openai", "model": "agent-model"}),
    );
    let agent_id = agent["agentId"].as_str().unwrap().to_string();
    let sent = d.call(
        "SendPrompt",
        json!({"agentId": agent_id, "prompt": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Hi agent"},
        ]}),
    );
    let rid = sent["requestId"].as_str().unwrap().to_string();
    let resp = d.wait_notification(
        |m| m["method"] == "OnPromptResponse" && m["params"]["requestId"] == rid.as_str(),
        TURN,
    )["params"]
        .clone();
    assert_eq!(resp["isSuccess"], true, "{resp}");
    assert_eq!(text_of(&resp["message"]), "Agent reply.");
    assert!(resp["usage"].is_object(), "{resp}");
    let body = fake.requests().last().unwrap().body.clone();
    assert_eq!(body["model"], "agent-model");
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "You are terse."})
    );

    let h = d.call("GetHistory", json!({"agentId": agent_id}));
    let roles: Vec<&str> = h
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant"], "{h}");

    // A slow prompt, cancelled by its request id.
    fake.set_default(slow_stream());
    let sent = d.call(
        "SendPrompt",
        json!({"agentId": agent_id, "prompt": "count"}),
    );
    let rid = sent["requestId"].as_str().unwrap().to_string();
    d.wait_notification(
        |m| m["method"] == "OnPromptResponseChunk" && m["params"]["requestId"] == rid.as_str(),
        TURN,
    );
    let r = d.call("Cancel", json!({"requestId": rid}));
    assert_eq!(r["cancelled"], true, "{r}");
    let resp = d.wait_notification(
        |m| m["method"] == "OnPromptResponse" && m["params"]["requestId"] == rid.as_str(),
        Duration::from_secs(3),
    )["params"]
        .clone();
    assert_eq!(resp["isSuccess"], false, "{resp}");
    assert_eq!(resp["error"]["kind"], "cancelled", "{resp}");
    let h = d.call("GetHistory", json!({"agentId": agent_id}));
    assert_eq!(
        h.as_array().unwrap().len(),
        3,
        "a cancelled prompt was kept: {h}"
    );

    // A conversation's agent cannot be removed directly.
    let conv = create_conversation(&mut d);
    let e = d.call_err("RemoveAIAgent", json!({"agentId": conv["agentId"]}));
    assert_eq!(e["data"]["kind"], "invalidParams", "{e}");

    assert_eq!(
        d.call("RemoveAIAgent", json!({"agentId": agent_id})),
        json!({})
    );
    let e = d.call_err("GetHistory", json!({"agentId": agent_id}));
    assert_eq!(e["data"]["kind"], "unknownAgent", "{e}");
    let e = d.call_err("RemoveAIAgent", json!({"agentId": agent_id}));
    assert_eq!(e["data"]["kind"], "unknownAgent", "{e}");
    assert!(d.shutdown(EXIT).success());
}

#[test]
fn runtime_components() {
    let (fake, _dir, mut d) = streaming_daemon(Behavior::reply("Configured.", 2));

    let r = d.call(
        "CreateModelConfiguration",
        json!({"name": "precise", "format": "openai-chat", "model": "precise-model", "parameters": {"temperature": 0.1, "max_tokens": 50}}),
    );
    assert_eq!(r, json!({}));
    let comps = d.call("ListComponents", json!({}));
    let mc = comps["modelConfigurations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "precise")
        .cloned()
        .unwrap_or_else(|| panic!("{comps}"));
    assert_eq!(mc["model"], "precise-model");
    assert_eq!(mc["parameters"]["max_tokens"], 50);

    let conv = d.call(
        "CreateConversation",
        json!({"serviceProvider": "openai", "modelConfiguration": "precise"}),
    );
    assert_eq!(conv["model"], "precise-model", "{conv}");
    let cid = conv["conversationId"].as_str().unwrap().to_string();
    let (_, fin) = d.turn(&cid, "be precise", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let body = fake.requests().last().unwrap().body.clone();
    assert_eq!(body["model"], "precise-model");
    assert_eq!(body["temperature"], 0.1);
    assert_eq!(body["max_tokens"], 50);

    // Refusals.
    let refusals = [
        (
            "CreateModelConfiguration",
            json!({"name": "bad", "format": "no-such-format", "model": "x"}),
            "unknownComponent",
        ),
        (
            "CreateModelConfiguration",
            json!({"name": "bad", "format": "openai-chat", "model": "x", "parameters": {"temperature": 9}}),
            "invalidParameter",
        ),
        (
            "CreateServiceProvider",
            json!({"name": "bad", "kind": "no-such-kind", "settings": {}}),
            "unknownComponent",
        ),
        (
            "CreateServiceProvider",
            json!({"name": "bad", "kind": "openai", "settings": {"no_such_setting": 1}}),
            "invalidParams",
        ),
        (
            "CreateConversation",
            json!({"serviceProvider": "no-such-provider", "model": "x"}),
            "unknownComponent",
        ),
        (
            "CreateConversation",
            json!({"serviceProvider": "openai", "modelConfiguration": "precise", "model": "x"}),
            "invalidParams",
        ),
        (
            "CreateConversation",
            json!({"feature": "no-such-feature", "serviceProvider": "openai", "model": "x"}),
            "unknownComponent",
        ),
        (
            "CreateConversation",
            json!({"serviceProvider": "openai", "model": "x", "parameters": {"temp": 1}}),
            "invalidParameter",
        ),
    ];
    for (method, params, kind) in refusals {
        let e = d.call_err(method, params);
        assert_eq!(e["data"]["kind"], kind, "{method}: {e}");
    }

    assert_eq!(
        d.call("RemoveComponent", json!({"name": "precise"})),
        json!({})
    );
    let e = d.call_err("RemoveComponent", json!({"name": "precise"}));
    assert_eq!(e["data"]["kind"], "unknownComponent", "{e}");
    let e = d.call_err(
        "CreateConversation",
        json!({"serviceProvider": "openai", "modelConfiguration": "precise"}),
    );
    assert_eq!(e["data"]["kind"], "unknownComponent", "{e}");
    // The open conversation keeps its own copy.
    let (_, fin) = d.turn(&cid, "still precise?", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert!(d.shutdown(EXIT).success());
}

#[test]
fn list_page_remove_and_delete_conversations() {
    const N: usize = 7;
    let (_fake, _dir, mut d) = streaming_daemon(Behavior::reply("Listed.", 1));
    let mut cids = Vec::new();
    for i in 0..N {
        let conv = create_conversation(&mut d);
        let cid = conv["conversationId"].as_str().unwrap().to_string();
        let (_, fin) = d.turn(&cid, format!("conversation {i}"), TURN);
        assert_eq!(fin["isSuccess"], true, "{fin}");
        cids.push(cid);
    }
    let long = format!("{} end", "word ".repeat(30));
    let long_conv = create_conversation(&mut d);
    let long_id = long_conv["conversationId"].as_str().unwrap().to_string();
    let (_, fin) = d.turn(&long_id, &long, TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let newest = d.call("ListConversations", json!({"pageSize": 1}));
    let rec = &newest["conversations"][0];
    assert_eq!(rec["id"], long_id.as_str(), "{newest}");
    let title = rec["title"].as_str().unwrap();
    assert_eq!(title.chars().count(), 80, "{title:?}");
    assert!(
        title.starts_with("word word") && title.ends_with('…'),
        "{title:?}"
    );
    assert!(newest["nextCursor"].is_string(), "{newest}");
    assert_eq!(
        d.call("DeleteConversation", json!({"conversationId": long_id})),
        json!({})
    );
    let (titled_id, _) = d.create_conversation(
        json!({"serviceProvider": "openai", "model": MODEL, "title": "  My   titled\nchat  "}),
    );
    // Listed once a turn is committed; the client's title stays.
    let (_, fin) = d.turn(&titled_id, "hello", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let (eph_id, _) = d.create_conversation(
        json!({"serviceProvider": "openai", "model": MODEL, "ephemeral": true}),
    );
    let (_, fin) = d.turn(&eph_id, "forget me", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");

    // Pages of 3 cover every stored conversation once, newest first.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..10 {
        let mut p = json!({"pageSize": 3});
        if let Some(c) = &cursor {
            p["cursor"] = json!(c);
        }
        let page = d.call("ListConversations", p);
        let convs = page["conversations"].as_array().unwrap();
        assert!(convs.len() <= 3);
        seen.extend(convs.iter().cloned());
        match page["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    let ids: Vec<&str> = seen.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), N + 1, "{ids:?}");
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        N + 1,
        "a conversation was listed twice: {ids:?}"
    );
    assert!(
        !ids.contains(&eph_id.as_str()),
        "an ephemeral conversation was stored"
    );
    let updated: Vec<i64> = seen
        .iter()
        .map(|c| c["updatedAt"].as_i64().unwrap())
        .collect();
    assert!(
        updated.windows(2).all(|w| w[0] >= w[1]),
        "not newest first: {updated:?}"
    );
    let titled_rec = seen.iter().find(|c| c["id"] == titled_id.as_str()).unwrap();
    assert_eq!(titled_rec["title"], "My titled chat");
    let first = seen.iter().find(|c| c["id"] == cids[0].as_str()).unwrap();
    assert_eq!(first["title"], "conversation 0");

    // History pages.
    let page = d.call(
        "GetConversationHistory",
        json!({"conversationId": cids[0], "pageSize": 1}),
    );
    assert_eq!(page["messages"].as_array().unwrap().len(), 1);
    let cursor = page["nextCursor"]
        .as_str()
        .expect("a next cursor")
        .to_string();
    let page = d.call(
        "GetConversationHistory",
        json!({"conversationId": cids[0], "pageSize": 1, "cursor": cursor}),
    );
    assert_eq!(page["messages"][0]["role"], "assistant", "{page}");
    assert!(page.get("nextCursor").is_none(), "{page}");

    // RemoveConversation closes it but keeps it stored.
    assert_eq!(
        d.call("RemoveConversation", json!({"conversationId": cids[1]})),
        json!({})
    );
    let e = d.call_err(
        "OnNewMessage",
        json!({"conversationId": cids[1], "message": "hi"}),
    );
    assert_eq!(e["data"]["kind"], "unknownConversation", "{e}");
    let e = d.call_err("RemoveConversation", json!({"conversationId": cids[1]}));
    assert_eq!(e["data"]["kind"], "unknownConversation", "{e}");
    assert_eq!(d.history(&cids[1]).len(), 2);
    let resumed = d.call("ResumeConversation", json!({"conversationId": cids[1]}));
    assert_eq!(resumed["conversationId"], cids[1].as_str());

    // DeleteConversation removes it for good.
    assert_eq!(
        d.call("DeleteConversation", json!({"conversationId": cids[2]})),
        json!({})
    );
    let e = d.call_err(
        "GetConversationHistory",
        json!({"conversationId": cids[2], "pageSize": 10}),
    );
    assert_eq!(e["data"]["kind"], "unknownConversation", "{e}");
    let e = d.call_err("ResumeConversation", json!({"conversationId": cids[2]}));
    assert_eq!(e["data"]["kind"], "unknownConversation", "{e}");
    let listed = d.call("ListConversations", json!({"pageSize": 100}));
    assert_eq!(listed["conversations"].as_array().unwrap().len(), N);

    // Prefixes: none matches, or too short to be unique ("0" starts every ULID of this era).
    let e = d.call_err("ResumeConversation", json!({"conversationId": "ZZZZZZZZ"}));
    assert_eq!(e["data"]["kind"], "unknownConversation", "{e}");
    let e = d.call_err("ResumeConversation", json!({"conversationId": "0"}));
    assert_eq!(e["data"]["kind"], "unknownConversation", "{e}");
    assert!(e["message"].as_str().unwrap().contains("several"), "{e}");
    assert!(d.shutdown(EXIT).success());
}

#[test]
fn search_conversations_finds_every_word_with_highlights() {
    let (_fake, _dir, mut d) = streaming_daemon(Behavior::reply("Paris is the capital.", 2));
    let cid = create_conversation(&mut d)["conversationId"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, fin) = d.turn(&cid, "What is the capital of France?", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let r = d.call("SearchConversations", json!({"query": "CAPITAL france"}));
    let hits = r["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 1, "{r}");
    assert_eq!(hits[0]["conversationId"], cid.as_str());
    assert_eq!(hits[0]["seq"], 1);
    assert_eq!(hits[0]["role"], "user");
    assert_eq!(hits[0]["snippet"], "What is the **capital** of **France**?");
    let r = d.call(
        "SearchConversations",
        json!({"query": "capital", "limit": 5}),
    );
    assert_eq!(r["hits"].as_array().unwrap().len(), 2, "{r}");
    let e = d.call_err("SearchConversations", json!({"query": " "}));
    assert_error_kind(&e, -32602, "invalidParams");
}
