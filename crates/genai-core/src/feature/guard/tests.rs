//! Tests of the guard over a scripted client: "always" answers saved and followed, one question
//! at a time, no file change without its checkpoint, and unknown tools under the mode.

use std::sync::Mutex;

use async_trait::async_trait;
use serde_json::json;

use crate::error::Result;
use crate::feature::port::{
    ClientPort, Confirmation, HostedTurn, PermissionAnswer, PermissionAsk, PromptEvent, PromptRef,
    TurnEvent, TurnRef,
};
use crate::provider::scripted::{calls_body, text_body, Answer};
use crate::select::ModelChoice;
use crate::session::{ConversationSpec, PermissionFlags};

/// A client that answers every ask with the next of its answers, and keeps the asks.
struct Answering {
    answers: Mutex<Vec<PermissionAnswer>>,
    asked: Mutex<Vec<PermissionAsk>>,
}

#[async_trait]
impl ClientPort for Answering {
    fn streaming(&self) -> bool {
        false
    }
    fn turn_event(&self, _: &TurnRef, _: TurnEvent) {}
    fn prompt_event(&self, _: &PromptRef, _: PromptEvent) {}
    fn hosted_turn(&self, _: HostedTurn) {}
    async fn confirm(&self, _: Confirmation) -> Result<bool> {
        Ok(false)
    }
    async fn ask_permission(&self, ask: PermissionAsk) -> Result<PermissionAnswer> {
        self.asked.lock().unwrap().push(ask);
        Ok(self.answers.lock().unwrap().remove(0))
    }
}

struct Project {
    root: tempfile::TempDir,
    home: tempfile::TempDir,
}

impl Project {
    fn new() -> Project {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("a.txt"), "one\n").unwrap();
        Project {
            root,
            home: tempfile::tempdir().unwrap(),
        }
    }

    /// Runs one turn per script pair (the calls, then the reply) in one conversation.
    async fn turns(
        &self,
        with_home: bool,
        flags: PermissionFlags,
        calls: &[(&str, serde_json::Value)],
        answers: Vec<PermissionAnswer>,
    ) -> (Vec<String>, Vec<PermissionAsk>) {
        let replies: Vec<Vec<(&str, serde_json::Value)>> =
            calls.iter().map(|c| vec![c.clone()]).collect();
        self.replies(with_home, flags, &replies, answers).await
    }

    /// Runs one turn per reply of `replies` (its calls together, then the answer).
    async fn replies(
        &self,
        with_home: bool,
        flags: PermissionFlags,
        replies: &[Vec<(&str, serde_json::Value)>],
        answers: Vec<PermissionAnswer>,
    ) -> (Vec<String>, Vec<PermissionAsk>) {
        let calls = replies;
        let script: Vec<Answer> = replies
            .iter()
            .flat_map(|reply| {
                let ids: Vec<String> = (1..=reply.len()).map(|i| format!("call_{i}")).collect();
                let reply: Vec<(&str, &str, serde_json::Value)> = reply
                    .iter()
                    .zip(&ids)
                    .map(|((tool, args), id)| (id.as_str(), *tool, args.clone()))
                    .collect();
                [calls_body(&reply), text_body("done")]
            })
            .collect();
        let (fw, _) = crate::session::scripted(script);
        let fw = if with_home {
            let paths = crate::config::Paths {
                config_dir: self.home.path().join("config"),
                data_dir: self.home.path().join("data"),
            };
            let fw = std::sync::Arc::try_unwrap(fw)
                .ok()
                .unwrap()
                .with_home(&paths);
            std::sync::Arc::new(fw)
        } else {
            fw
        };
        let port = std::sync::Arc::new(Answering {
            answers: Mutex::new(answers),
            asked: Mutex::default(),
        });
        let spec = ConversationSpec {
            model: ModelChoice::Named("scripted".into()),
            tools: Some(vec!["workspace".into()]),
            cwd: Some(self.root.path().display().to_string()),
            permissions: flags,
            ..Default::default()
        };
        let conv = fw.create_conversation(spec, port.clone()).unwrap();
        let mut details = Vec::new();
        for _ in calls {
            let turn = fw
                .run_turn(
                    &conv.conversation_id,
                    crate::message::Message::user("go"),
                    None,
                )
                .unwrap();
            details.extend(turn.outcome().await.detailed);
        }
        let asked = std::mem::take(&mut *port.asked.lock().unwrap());
        (details, asked)
    }

    fn text(&self) -> String {
        std::fs::read_to_string(self.root.path().join("a.txt")).unwrap()
    }
}

fn edit(old: &str, new: &str) -> (&'static str, serde_json::Value) {
    (
        "workspace__edit_file",
        json!({"path": "a.txt", "old_text": old, "new_text": new}),
    )
}

#[tokio::test]
async fn allow_always_is_saved_and_followed_and_reject_always_holds_for_the_conversation() {
    let p = Project::new();
    let (details, asked) = p
        .turns(
            true,
            PermissionFlags::default(),
            &[edit("one", "two"), edit("two", "three")],
            vec![PermissionAnswer::AllowAlways],
        )
        .await;
    assert_eq!(asked.len(), 1, "{details:?}");
    assert_eq!(asked[0].always_rule, "workspace.edit_file(/a.txt)");
    assert_eq!(p.text(), "three\n");
    let saved = std::fs::read_to_string(p.home.path().join("config/projects.toml")).unwrap();
    assert!(saved.contains("workspace.edit_file(/a.txt)"), "{saved}");
    assert!(
        details
            .iter()
            .any(|d| d.contains("allow by the user (allow_always")),
        "{details:?}"
    );

    let p = Project::new();
    let (details, asked) = p
        .turns(
            true,
            PermissionFlags::default(),
            &[edit("one", "two"), edit("one", "three")],
            vec![PermissionAnswer::RejectAlways],
        )
        .await;
    assert_eq!(asked.len(), 1, "{details:?}");
    assert_eq!(p.text(), "one\n");
    assert!(
        details.iter().any(|d| d.contains("reject always")),
        "{details:?}"
    );
}

#[tokio::test]
async fn the_calls_of_one_reply_ask_one_at_a_time_and_an_always_answer_settles_the_rest() {
    let p = Project::new();
    std::fs::create_dir(p.root.path().join("src")).unwrap();
    for name in ["a", "b", "c"] {
        std::fs::write(p.root.path().join(format!("src/{name}.txt")), "one\n").unwrap();
    }
    let edit_in = |name: &str| {
        (
            "workspace__edit_file",
            json!({"path": format!("src/{name}.txt"), "old_text": "one", "new_text": "two"}),
        )
    };
    let reply = vec![edit_in("a"), edit_in("b"), edit_in("c")];
    let (details, asked) = p
        .replies(
            true,
            PermissionFlags::default(),
            &[reply],
            vec![PermissionAnswer::AllowAlways],
        )
        .await;
    assert_eq!(asked.len(), 1, "{details:?}");
    assert_eq!(asked[0].always_rule, "workspace.edit_file(src/**)");
    for name in ["a", "b", "c"] {
        let text = std::fs::read_to_string(p.root.path().join(format!("src/{name}.txt")));
        assert_eq!(text.unwrap(), "two\n", "{details:?}");
    }
}

#[tokio::test]
async fn no_file_changes_without_its_checkpoint_and_unknown_tools_obey_the_mode() {
    // Without a data folder there is no checkpoint, so the edit is refused.
    let p = Project::new();
    let full = PermissionFlags {
        mode: Some(crate::permission::Mode::Full),
        ..Default::default()
    };
    let (details, _) = p.turns(false, full, &[edit("one", "two")], vec![]).await;
    assert_eq!(p.text(), "one\n");
    assert!(
        details
            .iter()
            .any(|d| d.contains("checkpoint store cannot be opened")),
        "{details:?}"
    );
    // A tool of no offered source, in read-only mode: denied by the mode before it runs.
    let read_only = PermissionFlags {
        mode: Some(crate::permission::Mode::ReadOnly),
        ..Default::default()
    };
    let (details, asked) = p
        .turns(true, read_only, &[("calc__add", json!({"a": 1}))], vec![])
        .await;
    assert!(asked.is_empty());
    assert!(
        details
            .iter()
            .any(|d| d.contains("permission: calc__add") && d.contains("deny by mode read-only")),
        "{details:?}"
    );
}
