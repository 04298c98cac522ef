//! Tests of the `tools` feature: action markers held back while streamed, found and removed;
//! plan mode (the model told to plan, an edit refused, the plan tool's call a plan event).

use super::*;
use serde_json::json;

#[test]
fn streamed_markers_are_held_back_and_dropped_when_known() {
    let known = |m: &str| m == "[[WAVE]]";
    let mut f = MarkerFilter::default();
    let pieces = [
        "Hello [",
        "[WA",
        "VE]] and [[NOT",
        "]] a [",
        "b] ok [[",
        "x\ny",
    ];
    let shown: Vec<String> = pieces.iter().map(|p| f.push(p, known)).collect();
    assert_eq!(
        shown,
        ["Hello ", "", " and ", "[[NOT]] a ", "[b] ok ", "[[x\ny"]
    );
    assert_eq!(f.push("tail [[open", known), "tail ");
    assert_eq!(f.flush(), "[[open");
    let mut f = MarkerFilter::default();
    let long = format!("[[{}", "a".repeat(300));
    assert_eq!(f.push(&long, known), long);
}

#[test]
fn action_markers_are_found_in_order_and_removed() {
    let actions = vec![
        json!({"code": "[[ACTION.PLAY_ANIMATION.WAIT]]", "type": "PLAY_ANIMATION"}),
        json!({"code": "WAVE", "type": "GESTURE"}),
        json!({"code": "UNUSED", "type": "X"}),
    ];
    let (found, shown) = take_actions(
        "Hello [[WAVE]] and now [[ACTION.PLAY_ANIMATION.WAIT]] then [[WAVE]]",
        &actions,
    );
    let types: Vec<&str> = found.iter().map(|a| a["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["GESTURE", "PLAY_ANIMATION", "GESTURE"]);
    assert_eq!(shown, "Hello  and now  then");
    let (found, shown) = take_actions("no markers", &actions);
    assert!(found.is_empty());
    assert_eq!(shown, "no markers");
}

/// A client that asks nothing (turns are followed through their `TurnStream`).
struct Quiet;

#[async_trait]
impl ClientPort for Quiet {
    fn streaming(&self) -> bool {
        false
    }
    fn turn_event(&self, _: &super::super::port::TurnRef, _: TurnEvent) {}
    fn prompt_event(&self, _: &super::super::port::PromptRef, _: super::super::port::PromptEvent) {}
    fn hosted_turn(&self, _: super::super::port::HostedTurn) {}
    async fn confirm(&self, _: super::super::port::Confirmation) -> crate::error::Result<bool> {
        Ok(false)
    }
}

#[tokio::test]
async fn in_plan_mode_the_model_is_told_to_plan_an_edit_is_refused_and_the_plan_is_an_event() {
    use crate::provider::scripted::{calls_body, text_body};
    use genai_protocol::plan::{PlanPriority, PlanStatus};
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.txt"), "one\n").unwrap();
    let edit = json!({"path": "a.txt", "old_text": "one", "new_text": "two"});
    let plan = json!({"entries": [
        {"content": "Change a.txt", "status": "pending", "priority": "high"},
        {"content": "Say so", "status": "pending"}
    ]});
    let (fw, provider) = crate::session::scripted(vec![
        calls_body(&[("call_1", "workspace__edit_file", edit)]),
        calls_body(&[("call_2", "workspace__plan", plan)]),
        text_body("planned"),
    ]);
    let spec = crate::session::ConversationSpec {
        model: crate::select::ModelChoice::Named("scripted".into()),
        tools: Some(vec!["workspace".into()]),
        cwd: Some(root.path().display().to_string()),
        permissions: crate::session::PermissionFlags {
            mode: Some(Mode::Plan),
            ..Default::default()
        },
        ..Default::default()
    };
    let conv = fw.create_conversation(spec, Arc::new(Quiet)).unwrap();
    let mut turn = fw
        .run_turn(&conv.conversation_id, Message::user("fix a.txt"), None)
        .unwrap();
    let (mut plans, mut refused) = (Vec::new(), Vec::new());
    let outcome = loop {
        match turn.next_event().await.expect("the turn ends with Done") {
            TurnEvent::Plan { entries } => plans.push(entries),
            TurnEvent::ToolFinished {
                output,
                is_error: true,
                ..
            } => refused.push(output),
            TurnEvent::Done(outcome) => break outcome,
            _ => {}
        }
    };
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(
        std::fs::read_to_string(root.path().join("a.txt")).unwrap(),
        "one\n"
    );
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(refused[0].contains("(plan mode:"), "{}", refused[0]);
    assert_eq!(plans.len(), 1);
    assert_eq!(plans[0].len(), 2);
    assert_eq!(plans[0][0].content, "Change a.txt");
    assert_eq!(plans[0][0].priority, Some(PlanPriority::High));
    assert_eq!(plans[0][1].status, PlanStatus::Pending);
    let asked = provider.messages_of(0).join("\n");
    assert!(asked.contains("You are in plan mode"), "{asked}");
    let offered: Vec<String> = provider.bodies()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(
        offered.contains(&"workspace__plan".to_string()),
        "{offered:?}"
    );
    // The call and its answer are in the history, for the next turn to find.
    let last = provider.messages_of(2).join("\n");
    assert!(last.contains("Plan recorded: 2 steps"), "{last}");
}
