//! `genai serve`'s conversations on Postgres (`[store] url`): two replicas on one throwaway
//! cluster, each driven by a WebSocket client of the daemon protocol, in front of the fake
//! OpenAI provider. A conversation started on one replica is listed, read, found (with its
//! highlight), continued and deleted through the other; `genai serve migrate` copies a SQLite
//! serve's conversations once; Postgres away fails a turn with a clear error that shows no
//! password, and the same serve runs the next turn once Postgres is back.

use std::time::Instant;

use jsonrpsee::core::client::{ClientT, Subscription};
use jsonrpsee::ws_client::WsClient;
use serde_json::{json, Value};

use crate::serve::{call, is_final, next_event, subscribe, Obj, Served};
use crate::serve_postgres::{replica, UPSTREAM_KEY, WAIT};
use crate::support::fake_openai::{Behavior, FakeOpenAi};
use crate::support::postgres::{Cluster, PASSWORD};

/// Sends `text` to conversation `cid` and waits for the turn's final event on `events`.
async fn turn(c: &WsClient, events: &mut Subscription<Value>, cid: &str, text: &str) -> Value {
    let t = call(
        c,
        "OnNewMessage",
        json!({"conversationId": cid, "message": text}),
    )
    .await;
    let id = t["turnId"].as_str().unwrap().to_string();
    next_event(events, is_final(&id)).await
}

/// A new conversation on `c`, followed: its id and its events.
async fn open(c: &WsClient) -> (String, Subscription<Value>) {
    let conv = call(c, "CreateConversation", json!({})).await;
    let cid = conv["conversationId"].as_str().unwrap().to_string();
    (
        cid.clone(),
        subscribe(c, json!({"conversationId": cid})).await,
    )
}

/// The ids `c` lists.
async fn listed(c: &WsClient) -> Vec<String> {
    let list = call(c, "ListConversations", json!({"pageSize": 50})).await;
    let ids = list["conversations"].as_array().unwrap().iter();
    ids.map(|r| r["id"].as_str().unwrap().to_string()).collect()
}

/// The texts of conversation `cid`'s messages as `c` reads them, in order.
async fn texts(c: &WsClient, cid: &str) -> Vec<String> {
    let h = call(
        c,
        "GetConversationHistory",
        json!({"conversationId": cid, "pageSize": 50}),
    )
    .await;
    let messages = h["messages"].as_array().unwrap().iter();
    messages
        .map(|m| match &m["content"] {
            Value::String(text) => text.clone(),
            parts => {
                let parts = parts.as_array().unwrap().iter();
                let text = parts.filter_map(|p| p["text"].as_str());
                text.collect::<Vec<_>>().join(" ")
            }
        })
        .collect()
}

#[tokio::test]
async fn two_replicas_share_a_conversation_its_turns_its_search_and_its_deletion() {
    let Some(db) = Cluster::start() else { return };
    let fake = FakeOpenAi::start(0, Behavior::text("Lifetimes outlive borrows.")).unwrap();
    let a = replica(&db, &fake, false);
    let b = replica(&db, &fake, true);
    let on_a = a.client().await;
    let on_b = b.client().await;

    let (cid, mut a_events) = open(&on_a).await;
    let done = turn(
        &on_a,
        &mut a_events,
        &cid,
        "Why does the borrow checker refuse this?",
    )
    .await;
    assert_eq!(
        done["params"]["summary"], "Lifetimes outlive borrows.",
        "{done}"
    );

    // B, which never saw it, lists it, reads it and finds it.
    assert!(listed(&on_b).await.contains(&cid), "B does not list {cid}");
    assert_eq!(
        texts(&on_b, &cid).await,
        [
            "Why does the borrow checker refuse this?",
            "Lifetimes outlive borrows."
        ]
    );
    let found = call(
        &on_b,
        "SearchConversations",
        json!({"query": "borrow CHECKER", "limit": 5}),
    )
    .await;
    let hit = &found["hits"][0];
    assert_eq!(hit["conversationId"], cid.as_str(), "{found}");
    assert_eq!(
        (hit["seq"].as_i64(), hit["role"].as_str()),
        (Some(1), Some("user"))
    );
    assert_eq!(hit["title"], "Why does the borrow checker refuse this?");
    let snippet = hit["snippet"].as_str().unwrap();
    assert!(snippet.contains("**borrow** **checker**"), "{snippet}");
    let none = call(
        &on_b,
        "SearchConversations",
        json!({"query": "borrow nothing"}),
    )
    .await;
    assert_eq!(none["hits"], json!([]), "every word is needed");

    // B continues it; A reads both turns.
    call(&on_b, "ResumeConversation", json!({"conversationId": cid})).await;
    let mut b_events = subscribe(&on_b, json!({"conversationId": cid})).await;
    let done = turn(&on_b, &mut b_events, &cid, "And from replica B?").await;
    assert!(done["params"]["error"].is_null(), "{done}");
    let history = texts(&on_a, &cid).await;
    assert_eq!(history.len(), 4, "{history:?}");
    assert_eq!(history[2], "And from replica B?");
    let sent = fake.requests();
    let last = sent.last().unwrap().body.to_string();
    assert!(
        last.contains("Why does the borrow checker refuse this?"),
        "B's turn ran on A's history: {last}"
    );

    // Deleted on B, it is gone for A.
    call(&on_b, "DeleteConversation", json!({"conversationId": cid})).await;
    assert!(!listed(&on_a).await.contains(&cid));
    assert_eq!(db.psql("SELECT COUNT(*) FROM messages"), "0");
    for served in [&a, &b] {
        assert!(!served.log().contains(PASSWORD), "{}", served.log());
    }
}

#[tokio::test]
async fn serve_migrate_copies_a_sqlite_serves_conversations_once() {
    let Some(db) = Cluster::start() else { return };
    let fake = FakeOpenAi::start(0, Behavior::text("Copied answer.")).unwrap();
    let base_url = fake.base_url();
    let mut sqlite = Served::start_with(
        "[defaults]\nmodel = \"openai:gpt-pg\"\n",
        &[
            ("OPENAI_BASE_URL", base_url.as_str()),
            ("OPENAI_API_KEY", UPSTREAM_KEY),
        ],
        &["--no-preload"],
    );
    let c = sqlite.client().await;
    let (cid, mut events) = open(&c).await;
    turn(&c, &mut events, &cid, "Remember the migrated walrus").await;
    drop(c);
    sqlite.terminate();
    assert!(sqlite.exit_within(WAIT).success());

    let migrate = || {
        let file = sqlite.data_dir().join("history.db");
        let args = ["serve", "migrate", "--from", file.to_str().unwrap(), "--to"];
        let o = sqlite
            .genai(&args)
            .arg(db.url())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(o.status.success(), "{stderr}");
        assert!(!stderr.contains(PASSWORD), "{stderr}");
        stderr
    };
    let first = migrate();
    assert!(
        first.contains(
            "1 conversations copied (2 messages, 0 tool-call decisions), 0 there already"
        ),
        "{first}"
    );
    let again = migrate();
    assert!(
        again.contains(
            "0 conversations copied (0 messages, 0 tool-call decisions), 1 there already"
        ),
        "{again}"
    );
    assert_eq!(db.psql("SELECT COUNT(*) FROM messages"), "2");

    let pg = replica(&db, &fake, false);
    let c = pg.client().await;
    assert!(listed(&c).await.contains(&cid));
    assert_eq!(
        texts(&c, &cid).await,
        ["Remember the migrated walrus", "Copied answer."]
    );
    let found = call(&c, "SearchConversations", json!({"query": "walrus"})).await;
    assert_eq!(found["hits"][0]["conversationId"], cid.as_str(), "{found}");
    // It goes on there.
    call(&c, "ResumeConversation", json!({"conversationId": cid})).await;
    let mut events = subscribe(&c, json!({"conversationId": cid})).await;
    turn(&c, &mut events, &cid, "Still there?").await;
    assert_eq!(texts(&c, &cid).await.len(), 4);
}

#[tokio::test]
async fn postgres_away_fails_a_turn_clearly_and_the_same_serve_goes_on_once_it_is_back() {
    let Some(db) = Cluster::start() else { return };
    let fake = FakeOpenAi::start(0, Behavior::text("Answered.")).unwrap();
    let served = replica(&db, &fake, false);
    let c = served.client().await;
    let (cid, mut events) = open(&c).await;
    turn(&c, &mut events, &cid, "first").await;

    db.halt();
    let started = Instant::now();
    let sent = c
        .request::<Value, _>(
            "OnNewMessage",
            Obj(json!({"conversationId": cid, "message": "second"})),
        )
        .await;
    let error = match sent {
        Ok(t) => {
            let id = t["turnId"].as_str().unwrap().to_string();
            let done = next_event(&mut events, is_final(&id)).await;
            let kind = &done["params"]["error"]["kind"];
            assert!(kind == "store" || kind == "timeout", "{done}");
            done["params"]["error"]["message"].to_string()
        }
        Err(e) => e.to_string(),
    };
    eprintln!("the turn failed in {:?}: {error}", started.elapsed());
    assert!(
        error.contains("the shared database postgres://genai:"),
        "{error}"
    );
    assert!(!error.contains(PASSWORD), "{error}");
    // The serve goes on: other calls answer.
    let comps = call(&c, "ListComponents", json!({})).await;
    assert!(comps["serviceProviders"].is_array());

    db.resume();
    let done = turn(&c, &mut events, &cid, "third").await;
    assert!(done["params"]["error"].is_null(), "{done}");
    assert_eq!(
        texts(&c, &cid).await,
        ["first", "Answered.", "third", "Answered."],
        "the failed turn committed nothing"
    );
    assert!(!served.log().contains(PASSWORD), "{}", served.log());
}
