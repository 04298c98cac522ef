//! Subagents seen through the daemon: the scripted model of `subagents.rs` hands two tasks at
//! once over `genai daemon`, and each subagent's work arrives as `OnSubagentEvent`
//! notifications nested under its task call, in order (started, its call, the policy's
//! decision with what decided, the result, its text, its usage, finished), the refused read of
//! `.env` marked with its rule, all before the turn's one final `OnFeatureResponse`, which says
//! what it said before the notification existed.

use std::time::Duration;

use serde_json::{json, Value};

use crate::subagents::{two_tasks, Repo};
use crate::support::rpc_client::{Daemon, DaemonConfig, Framing};

const WAIT: Duration = Duration::from_secs(30);

/// The events of the notices nested under `call_id`, in arrival order.
fn nested<'a>(notices: &[&'a Value], call_id: &str) -> Vec<&'a Value> {
    notices
        .iter()
        .filter(|n| n["params"]["callId"] == call_id)
        .map(|n| &n["params"]["event"])
        .collect()
}

fn types<'a>(events: &[&'a Value]) -> Vec<&'a str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

#[test]
fn a_subagents_work_arrives_nested_under_its_task_call_before_the_final_response() {
    let r = Repo::new();
    two_tasks(&r);
    let home = tempfile::tempdir().unwrap();
    let cfg = DaemonConfig::in_dir(home.path(), Framing::ContentLength, "daemon")
        .env("OPENAI_BASE_URL", &r.env.fake.base_url())
        .env("OPENAI_API_KEY", "sk-test-subagents");
    cfg.write_config("");
    let mut d = Daemon::spawn(&cfg);
    d.call("Initialize", json!({"capabilities": {"streaming": true}}));
    let repo = r.base.path().join("repo").canonicalize().unwrap();
    let (cid, _) = d.create_conversation(json!({
        "feature": "tools", "serviceProvider": "openai", "model": "gpt-test",
        "tools": ["workspace"], "cwd": repo.to_str().unwrap()
    }));
    let turn_id = d.send_message(&cid, "Review and find the config");
    let fin = d.wait_final(&turn_id, WAIT)["params"].clone();

    // Every notice came before the final response, of this turn, under one of its task calls.
    let log = d.log().to_vec();
    let end = log
        .iter()
        .position(|m| m["method"] == "OnFeatureResponse" && m["params"]["final"] == true)
        .unwrap();
    let notices: Vec<&Value> = log
        .iter()
        .filter(|m| m["method"] == "OnSubagentEvent")
        .collect();
    assert!(!notices.is_empty(), "no OnSubagentEvent: {log:?}");
    assert!(log[end..].iter().all(|m| m["method"] != "OnSubagentEvent"));
    for n in &notices {
        let p = &n["params"];
        assert_eq!(
            (&p["conversationId"], &p["turnId"]),
            (&json!(cid), &json!(turn_id))
        );
        let agent = match p["callId"].as_str() {
            Some("task_rev") => "reviewer",
            Some("task_find") => "finder",
            other => panic!("a notice under {other:?}: {n}"),
        };
        assert_eq!(p["agent"], agent, "{n}");
    }

    let order = [
        "started",
        "toolCall",
        "permission",
        "toolResult",
        "text",
        "usage",
        "finished",
    ];
    let reviewer = nested(&notices, "task_rev");
    assert_eq!(types(&reviewer), order, "{reviewer:?}");
    assert_eq!(reviewer[0]["prompt"], "Review src/lib.rs");
    assert_eq!(
        (&reviewer[1]["id"], &reviewer[1]["name"]),
        (&json!("rev_1"), &json!("workspace.read_file"))
    );
    assert_eq!(reviewer[1]["arguments"], json!({"path": "src/lib.rs"}));
    assert_eq!(reviewer[2]["decision"], "allow");
    assert_eq!(reviewer[3]["isError"], false);
    assert!(reviewer[3]["output"].as_str().unwrap().contains("answer()"));
    assert_eq!(reviewer[4]["text"], "lib.rs is fine.");
    assert_eq!(
        *reviewer[6],
        json!({"type": "finished", "status": "success"})
    );

    let finder = nested(&notices, "task_find");
    assert_eq!(types(&finder), order, "{finder:?}");
    let denied = finder[2];
    assert_eq!(
        (&denied["id"], &denied["decision"], &denied["subject"]),
        (&json!("find_1"), &json!("deny"), &json!(".env")),
        "{denied}"
    );
    assert!(
        denied["by"].as_str().unwrap().contains("secret"),
        "the rule that refused: {denied}"
    );
    assert_eq!(finder[3]["isError"], true, "{:?}", finder[3]);
    assert_eq!(finder[4]["text"], "I was not allowed to read .env.");
    assert_eq!(finder[6]["status"], "success");
    let text = String::from_utf8_lossy(&d.raw_stdout()).into_owned();
    assert!(!text.contains("do-not-read"));

    // Each subagent's usage is its own requests', and the turn's adds them to the parent's.
    let tokens = |u: &Value| u["inputTokens"].as_u64().unwrap_or(0);
    let sub_tokens = tokens(&reviewer[5]["usage"]) + tokens(&finder[5]["usage"]);
    assert!(sub_tokens > 0, "{:?} {:?}", reviewer[5], finder[5]);
    assert!(tokens(&fin["usage"]) > sub_tokens, "{fin}");

    // The final response is as before: the answer, the subagents' lines in its details.
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(fin["summary"], "Review done; .env stays unread.");
    let details: Vec<&str> = fin["detailedResponse"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(
        details
            .iter()
            .any(|l| l.starts_with("subagent finder (task_find): ") && l.contains("deny")),
        "{details:?}"
    );
    assert!(
        details
            .iter()
            .any(|l| l.starts_with("subagent reviewer (task_rev): ")),
        "{details:?}"
    );
    assert!(fin.get("changedFiles").is_none(), "{fin}");
    assert!(d.shutdown(WAIT).success());
}
