//! The ACP agent's view of a subagent: a `task` call's `tool_call_update` content carries the
//! subagent's progress (its calls, a refused read), and the call ends with its answer.

use super::*;
use genai_core::provider::scripted::{calls_body, text_body};

#[tokio::test]
async fn a_task_calls_updates_carry_its_subagents_progress_and_its_answer() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join(".claude/agents")).unwrap();
    let auditor = "---\nname: auditor\ndescription: Audits\ntools: Read\n---\nYou audit.\n";
    std::fs::write(root.path().join(".claude/agents/auditor.md"), auditor).unwrap();
    std::fs::write(root.path().join(".env"), "KEY=never-shown\n").unwrap();
    let task = json!({"agent": "auditor", "prompt": "Read .env"});
    let (fw, _) = framework(
        Arc::new(Store::in_memory().unwrap()),
        vec![
            calls_body(&[("task_1", "workspace__task", task)]),
            calls_body(&[("a_1", "workspace__read_file", json!({"path": ".env"}))]),
            text_body(".env is protected."),
            text_body("Audited."),
        ],
    );
    let mut c = Client::start(fw);
    c.init().await;
    let id = c.new_session(root.path().to_str().unwrap()).await;
    let (r, before) = c
        .call(
            "session/prompt",
            json!({"sessionId": id, "prompt": [
                {"type": "text", "text": "Audit"}
            ]}),
        )
        .await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    let calls = updates(&before, "tool_call");
    // Only the parent's call is a call of the session; the subagent's are its content.
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["toolCallId"], "task_1");
    let of_task: Vec<Value> = updates(&before, "tool_call_update")
        .into_iter()
        .filter(|u| u["toolCallId"] == "task_1")
        .collect();
    let progress: Vec<&str> = of_task
        .iter()
        .filter(|u| u.get("status").is_none())
        .filter_map(|u| u["content"][0]["content"]["text"].as_str())
        .collect();
    let last = progress.last().expect("the subagent's progress");
    assert!(
        last.contains("[auditor] calling workspace.read_file"),
        "{last}"
    );
    assert!(
        last.contains("[auditor] refused workspace.read_file(.env)"),
        "{last}"
    );
    let end = of_task.last().unwrap();
    assert_eq!(end["status"], "completed");
    assert_eq!(end["rawOutput"]["text"], ".env is protected.");
    assert_eq!(texts(&updates(&before, "agent_message_chunk")), "Audited.");
    assert!(!before.iter().any(|m| m.to_string().contains("never-shown")));
    c.close().await;
}
