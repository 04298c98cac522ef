//! Tests of the `task` tool: a subagent under a stricter mode than its parent's, its events
//! nested under the task call, and its failure the call's error result, never the parent's.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;

use super::super::port::{ClientPort, Confirmation, HostedTurn, PromptEvent, PromptRef, TurnRef};
use super::super::TurnEvent;
use crate::message::Message;
use crate::permission::Mode;
use crate::provider::scripted::{calls_body, text_body, Answer};

/// A client that asks nothing (turns are followed through their `TurnStream`).
struct Quiet;

#[async_trait]
impl ClientPort for Quiet {
    fn streaming(&self) -> bool {
        false
    }
    fn turn_event(&self, _: &TurnRef, _: TurnEvent) {}
    fn prompt_event(&self, _: &PromptRef, _: PromptEvent) {}
    fn hosted_turn(&self, _: HostedTurn) {}
    async fn confirm(&self, _: Confirmation) -> crate::error::Result<bool> {
        Ok(false)
    }
}

#[tokio::test]
async fn a_subagent_only_narrows_the_mode_and_its_failure_is_the_calls_error_result() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.txt"), "one\n").unwrap();
    std::fs::create_dir_all(root.path().join(".genai/agents")).unwrap();
    let helper = "---\ndescription: Helps\nmode: read-only\n---\nYou help.\n";
    std::fs::write(root.path().join(".genai/agents/helper.md"), helper).unwrap();
    let edit = json!({"path": "a.txt", "old_text": "one", "new_text": "two"});
    let task = json!({"agent": "helper", "prompt": "Change a.txt"});
    let (fw, provider) = crate::session::scripted(vec![
        calls_body(&[("call_1", "workspace__task", task)]),
        calls_body(&[("sub_1", "workspace__edit_file", edit)]),
        Answer::Fail("the subagent's model is down"),
        text_body("went on"),
    ]);
    let spec = crate::session::ConversationSpec {
        model: crate::select::ModelChoice::Named("scripted".into()),
        tools: Some(vec!["workspace".into()]),
        cwd: Some(root.path().display().to_string()),
        permissions: crate::session::PermissionFlags {
            mode: Some(Mode::Edit),
            ..Default::default()
        },
        ..Default::default()
    };
    let conv = fw.create_conversation(spec, Arc::new(Quiet)).unwrap();
    let mut turn = fw
        .run_turn(&conv.conversation_id, Message::user("go"), None)
        .unwrap();
    let (mut nested, mut task_result) = (Vec::new(), None);
    let outcome = loop {
        match turn.next_event().await.expect("the turn ends with Done") {
            TurnEvent::Subagent {
                call_id,
                agent,
                event,
            } => nested.push((call_id, agent, *event)),
            TurnEvent::ToolFinished {
                id,
                output,
                is_error,
                ..
            } => task_result = Some((id, output, is_error)),
            TurnEvent::Done(outcome) => break outcome,
            _ => {}
        }
    };
    // The parent goes on and answers.
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(outcome.summary, "went on");
    let (id, output, is_error) = task_result.expect("the task call ended");
    assert_eq!(id, "call_1");
    assert!(is_error);
    assert!(
        output.contains("The subagent helper failed") && output.contains("model is down"),
        "{output}"
    );
    // The edit, allowed in the parent's edit mode, was refused in the helper's read-only.
    assert_eq!(
        std::fs::read_to_string(root.path().join("a.txt")).unwrap(),
        "one\n"
    );
    let denied = nested.iter().find_map(|(call, agent, e)| match e {
        TurnEvent::Decision(d) => Some((call.as_str(), agent.as_str(), d.decision.as_str())),
        _ => None,
    });
    assert_eq!(denied, Some(("call_1", "helper", "deny")));
    // Its start comes first with the task's prompt, its end last with its failure.
    match nested.first().map(|(_, _, e)| e) {
        Some(TurnEvent::Started { prompt }) => assert!(prompt.contains("Change a.txt"), "{prompt}"),
        other => panic!("the subagent's first event is {other:?}"),
    }
    match nested.last().map(|(_, _, e)| e) {
        Some(TurnEvent::Done(o)) => assert!(
            o.error
                .as_ref()
                .is_some_and(|e| e.message.contains("model is down")),
            "{o:?}"
        ),
        other => panic!("the subagent's last event is {other:?}"),
    }
    // The subagent's own context: its definition as system prompt, then the task's prompt.
    let sent = provider.messages_of(1).join("\n");
    assert!(
        sent.contains("You help.") && sent.contains("Change a.txt"),
        "{sent}"
    );
    assert!(!sent.contains("go\n"), "{sent}");
    let offered = provider.bodies()[1]["tools"].to_string();
    assert!(!offered.contains("workspace__task"), "{offered}");
    assert!(provider.bodies()[0]["tools"]
        .to_string()
        .contains("- helper: Helps"));
}
