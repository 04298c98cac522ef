//! Fast tests of the session over the in-process scripted provider: the conversation queue,
//! cancellation, commit on success and nothing on failure, and one `Done` per turn.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;

use super::*;
use crate::error::ErrorKind;
use crate::feature::port::{Confirmation, HostedTurn, PromptEvent, PromptRef, TurnEvent, TurnRef};
use crate::feature::TurnOutcome;
use crate::message::Message;
use crate::provider::scripted::{text_stream, Answer, ScriptedProvider};
use crate::provider::StreamEvent;
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(10);

/// A client that records what the core tells it.
struct Recorder {
    turns: mpsc::UnboundedSender<(TurnRef, TurnEvent)>,
    prompts: Mutex<Vec<(PromptRef, PromptEvent)>>,
    hosted: Mutex<Vec<HostedTurn>>,
}

#[async_trait::async_trait]
impl ClientPort for Recorder {
    fn streaming(&self) -> bool {
        true
    }
    fn turn_event(&self, turn: &TurnRef, event: TurnEvent) {
        let _ = self.turns.send((turn.clone(), event));
    }
    fn prompt_event(&self, prompt: &PromptRef, event: PromptEvent) {
        self.prompts.lock().unwrap().push((prompt.clone(), event));
    }
    fn hosted_turn(&self, turn: HostedTurn) {
        self.hosted.lock().unwrap().push(turn);
    }
    async fn confirm(&self, _: Confirmation) -> Result<bool> {
        Ok(false)
    }
}

struct Fixture {
    fw: Arc<Framework>,
    provider: Arc<ScriptedProvider>,
    port: Arc<Recorder>,
    events: mpsc::UnboundedReceiver<(TurnRef, TurnEvent)>,
}

impl Fixture {
    fn new(steps: Vec<Answer>) -> Fixture {
        let (fw, provider) = scripted(steps);
        let (tx, events) = mpsc::unbounded_channel();
        let port = Arc::new(Recorder {
            turns: tx,
            prompts: Mutex::default(),
            hosted: Mutex::default(),
        });
        Fixture {
            fw,
            provider,
            port,
            events,
        }
    }

    fn open(&self) -> OpenConversation {
        let spec = ConversationSpec {
            model: ModelChoice::Named("scripted".into()),
            ..Default::default()
        };
        self.fw
            .create_conversation(spec, self.port.clone())
            .unwrap()
    }

    /// The events of turns until `n` of them are done: (turn id, chunks, outcome) in order.
    async fn done(&mut self, n: usize) -> Vec<(String, String, TurnOutcome)> {
        let mut chunks: HashMap<String, String> = HashMap::new();
        let mut done = Vec::new();
        while done.len() < n {
            let (turn, event) = tokio::time::timeout(DEADLINE, self.events.recv())
                .await
                .expect("a turn did not end in time")
                .expect("the core dropped the port");
            match event {
                TurnEvent::Chunk(c) => chunks.entry(turn.turn_id).or_default().push_str(&c),
                TurnEvent::Done(o) => {
                    let text = chunks.remove(&turn.turn_id).unwrap_or_default();
                    done.push((turn.turn_id, text, o));
                }
                _ => {}
            }
        }
        done
    }

    fn history(&self, c: &OpenConversation) -> Vec<String> {
        let (messages, _) = self
            .fw
            .history
            .history(&c.conversation_id, 100, None)
            .unwrap();
        messages
            .iter()
            .map(|m| format!("{}: {}", m.message.role.as_str(), m.message.text()))
            .collect()
    }
}

#[tokio::test]
async fn turns_of_one_conversation_run_in_order_and_each_sees_the_last() {
    let mut f = Fixture::new(vec![
        text_stream(&["Par", "is"], false),
        text_stream(&["Rome"], false),
    ]);
    let c = f.open();
    let t1 =
        f.fw.on_new_message(&c.conversation_id, Message::user("France?"))
            .unwrap();
    let t2 =
        f.fw.on_new_message(&c.conversation_id, Message::user("Italy?"))
            .unwrap();
    let done = f.done(2).await;
    assert_eq!(done[0].0, t1);
    assert_eq!(done[1].0, t2);
    assert_eq!(
        (done[0].1.as_str(), done[0].2.summary.as_str()),
        ("Paris", "Paris")
    );
    assert_eq!(done[1].2.summary, "Rome");
    assert!(done.iter().all(|d| d.2.error.is_none()));
    assert_eq!(
        f.provider.messages_of(1),
        ["user: France?", "assistant: Paris", "user: Italy?"]
    );
    assert_eq!(
        f.history(&c),
        [
            "user: France?",
            "assistant: Paris",
            "user: Italy?",
            "assistant: Rome"
        ]
    );
}

#[tokio::test]
async fn a_failed_turn_commits_nothing_and_the_next_one_goes_on() {
    let mut f = Fixture::new(vec![
        Answer::Fail("scripted: 500 Internal Server Error"),
        text_stream(&["fine"], false),
    ]);
    let c = f.open();
    f.fw.on_new_message(&c.conversation_id, Message::user("one"))
        .unwrap();
    let failed = f.done(1).await.remove(0).2;
    let e = failed.error.expect("the turn failed");
    assert_eq!(e.kind, ErrorKind::ProviderError);
    assert!(failed.summary.contains("500"), "{}", failed.summary);
    assert!(f.history(&c).is_empty(), "nothing is committed on failure");
    f.fw.on_new_message(&c.conversation_id, Message::user("two"))
        .unwrap();
    assert!(f.done(1).await[0].2.error.is_none());
    assert_eq!(f.history(&c), ["user: two", "assistant: fine"]);
    assert_eq!(
        f.provider.messages_of(1),
        ["user: two"],
        "the failed prompt is not resent"
    );
}

#[tokio::test]
async fn closed_for_good_a_conversation_without_a_turn_leaves_the_history() {
    let mut f = Fixture::new(vec![
        Answer::Fail("scripted: 500 Internal Server Error"),
        text_stream(&["kept"], false),
    ]);
    let (failed, kept, untouched) = (f.open(), f.open(), f.open());
    f.fw.on_new_message(&failed.conversation_id, Message::user("one"))
        .unwrap();
    assert!(f.done(1).await[0].2.error.is_some());
    f.fw.on_new_message(&kept.conversation_id, Message::user("two"))
        .unwrap();
    assert!(f.done(1).await[0].2.error.is_none());
    let stored = |id: &str| f.fw.store.conversation(id).unwrap().is_some();
    // Closed to be reopened (a command of the chat), an empty one stays.
    assert!(f
        .fw
        .remove_conversation(&untouched.conversation_id)
        .unwrap());
    assert!(stored(&untouched.conversation_id));
    assert!(f.fw.close_conversation(&failed.conversation_id).unwrap());
    assert!(!stored(&failed.conversation_id));
    f.fw.close_all();
    assert_eq!(f.fw.open_conversations(), 0);
    assert!(stored(&kept.conversation_id));
    // Not open any more, and still deleted when closed for good.
    assert!(!f.fw.close_conversation(&untouched.conversation_id).unwrap());
    assert!(!stored(&untouched.conversation_id));
}

#[tokio::test]
async fn a_reply_cut_short_ends_as_length_with_a_note_that_says_why() {
    let cut = |reason: &str| {
        Answer::Events(vec![
            StreamEvent::data(
                json!({"model": "m", "choices": [{"index": 0, "delta": {"content": "la la"}}]})
                    .to_string(),
            ),
            StreamEvent::data(
                json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
                    .to_string(),
            ),
            StreamEvent::data("[DONE]"),
        ])
    };
    let mut f = Fixture::new(vec![
        cut(crate::format::REPEATED),
        cut("length"),
        text_stream(&["done"], false),
    ]);
    let c = f.open();
    for _ in 0..3 {
        f.fw.on_new_message(&c.conversation_id, Message::user("sing"))
            .unwrap();
    }
    let done = f.done(3).await;
    let outcomes: Vec<_> = done
        .iter()
        .map(|d| (d.2.finish_reason.as_deref(), d.2.cut()))
        .collect();
    assert_eq!(
        outcomes,
        [
            (
                Some("length"),
                Some("the reply was cut: it repeated itself")
            ),
            (
                Some("length"),
                Some("the reply was cut: it reached its token limit (max_tokens)")
            ),
            (Some("stop"), None),
        ]
    );
}

#[tokio::test]
async fn cancel_stops_the_running_turn_only_and_commits_nothing() {
    let mut f = Fixture::new(vec![Answer::Hang, text_stream(&["after"], false)]);
    let c = f.open();
    let asked = f.provider.asked.notified();
    let t1 =
        f.fw.on_new_message(&c.conversation_id, Message::user("slow"))
            .unwrap();
    tokio::time::timeout(DEADLINE, asked)
        .await
        .expect("the provider was asked");
    let t2 =
        f.fw.on_new_message(&c.conversation_id, Message::user("next"))
            .unwrap();
    let target = CancelTarget {
        turn_id: Some(t1.clone()),
        ..Default::default()
    };
    assert!(f.fw.cancel(&target).unwrap());
    let done = f.done(2).await;
    assert_eq!(
        (done[0].0.as_str(), done[1].0.as_str()),
        (t1.as_str(), t2.as_str())
    );
    assert_eq!(
        done[0].2.error.as_ref().map(|e| e.kind),
        Some(ErrorKind::Cancelled)
    );
    assert!(done[1].2.error.is_none(), "the queued turn still runs");
    assert_eq!(f.history(&c), ["user: next", "assistant: after"]);
    // Nothing runs now: a cancel finds nothing, and one without a target is refused.
    assert!(!f.fw.cancel(&target).unwrap());
    let e = f.fw.cancel(&CancelTarget::default()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidParams);
}

#[tokio::test]
async fn closing_a_conversation_ends_every_queued_turn_once() {
    let mut f = Fixture::new(vec![Answer::Hang, Answer::Hang]);
    let c = f.open();
    let asked = f.provider.asked.notified();
    f.fw.on_new_message(&c.conversation_id, Message::user("a"))
        .unwrap();
    tokio::time::timeout(DEADLINE, asked)
        .await
        .expect("the provider was asked");
    f.fw.on_new_message(&c.conversation_id, Message::user("b"))
        .unwrap();
    assert!(f.fw.remove_conversation(&c.conversation_id).unwrap());
    let done = f.done(2).await;
    assert!(done
        .iter()
        .all(|d| d.2.error.as_ref().map(|e| e.kind) == Some(ErrorKind::Cancelled)));
    tokio::time::timeout(DEADLINE, f.fw.idle())
        .await
        .expect("idle");
    assert!(f.events.try_recv().is_err(), "no turn ends twice");
    let e =
        f.fw.on_new_message(&c.conversation_id, Message::user("c"))
            .unwrap_err();
    assert_eq!(e.kind, ErrorKind::UnknownConversation);
    assert!(
        f.fw.agent(&c.agent_id).is_err(),
        "its agent is gone with it"
    );
}

#[tokio::test]
async fn a_prompt_streams_to_its_sender_and_ends_once() {
    let f = Fixture::new(vec![text_stream(&["a", "b"], false)]);
    let agent =
        f.fw.create_agent(&ModelChoice::Named("scripted".into()), None)
            .unwrap();
    let id =
        f.fw.send_prompt(&agent, vec![Message::user("hi")], f.port.clone())
            .unwrap();
    tokio::time::timeout(DEADLINE, f.fw.idle())
        .await
        .expect("idle");
    let events = f.port.prompts.lock().unwrap();
    assert!(events
        .iter()
        .all(|(p, _)| p.request_id == id && p.agent_id == agent));
    let chunks: Vec<String> = events
        .iter()
        .filter_map(|(_, e)| match e {
            PromptEvent::Chunk(c) => Some(c.clone()),
            _ => None,
        })
        .collect();
    // Streamed in pieces (two, unless the redactor held one back because a key another test
    // remembered starts like it), which make the reply.
    assert!(!chunks.is_empty() && chunks.len() <= 2, "{chunks:?}");
    assert_eq!(chunks.concat(), "ab");
    let done: Vec<_> = events
        .iter()
        .filter_map(|(_, e)| match e {
            PromptEvent::Done(r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].as_ref().unwrap().message.text(), "ab");
    let history = f.fw.agent(&agent).unwrap().history().unwrap();
    assert_eq!(
        history.len(),
        2,
        "the prompt and its reply are in the agent's history"
    );
}

#[tokio::test]
async fn empty_messages_and_unknown_features_are_refused() {
    let f = Fixture::new(vec![]);
    let c = f.open();
    let e =
        f.fw.on_new_message(&c.conversation_id, Message::user("  "))
            .unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidParams);
    let spec = ConversationSpec {
        model: ModelChoice::Named("scripted".into()),
        feature: Some("nope".into()),
        ..Default::default()
    };
    let e = f.fw.create_conversation(spec, f.port.clone()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::UnknownComponent);
    let spec = ConversationSpec {
        model: ModelChoice::Named("scripted".into()),
        feature: Some("assistant".into()),
        tools: Some(vec!["x".into()]),
        ..Default::default()
    };
    let e = f.fw.create_conversation(spec, f.port.clone()).unwrap_err();
    assert!(e.message.contains("`tools` feature"), "{}", e.message);
}

#[tokio::test]
async fn a_hosted_feature_gets_the_turn_and_its_answer_ends_it() {
    let mut f = Fixture::new(vec![]);
    f.fw.register_feature("echo", "a client's feature", f.port.clone())
        .unwrap();
    let e =
        f.fw.register_feature("assistant", "", f.port.clone())
            .unwrap_err();
    assert!(e.message.contains("built-in"), "{}", e.message);
    let spec = ConversationSpec {
        model: ModelChoice::Named("scripted".into()),
        feature: Some("echo".into()),
        ..Default::default()
    };
    let c = f.fw.create_conversation(spec, f.port.clone()).unwrap();
    let turn =
        f.fw.on_new_message(&c.conversation_id, Message::user("hi"))
            .unwrap();
    // The hosting client gets the turn once it runs.
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while f.port.hosted.lock().unwrap().is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the turn reached the host"
        );
        tokio::task::yield_now().await;
    }
    let hosted = f.port.hosted.lock().unwrap()[0].clone();
    assert_eq!(
        (hosted.turn.turn_id.as_str(), hosted.feature.as_str()),
        (turn.as_str(), "echo")
    );
    assert_eq!(hosted.message.text(), "hi");
    let reply = |turn_id: Option<String>, is_final: bool, summary: &str| FeatureReply {
        conversation_id: c.conversation_id.clone(),
        turn_id,
        summary: summary.into(),
        detailed: vec!["step".into()],
        is_final,
        error: None,
    };
    let e =
        f.fw.on_feature_response(reply(Some("another".into()), true, "x"))
            .unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidParams);
    f.fw.on_feature_response(reply(Some(turn.clone()), false, "thinking"))
        .unwrap();
    f.fw.on_feature_response(reply(None, true, "hello back"))
        .unwrap();
    let (id, event) = tokio::time::timeout(DEADLINE, f.events.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(id.turn_id, turn);
    assert!(matches!(event, TurnEvent::Step { ref summary, .. } if summary == "thinking"));
    let done = f.done(1).await;
    assert_eq!(done[0].2.summary, "hello back");
    assert!(done[0].2.error.is_none());
    // Nothing waits any more: another answer has no turn to go to.
    let e =
        f.fw.on_feature_response(reply(None, true, "late"))
            .unwrap_err();
    assert_eq!(e.kind, ErrorKind::UnknownConversation);
    assert!(
        f.provider.bodies().is_empty(),
        "a hosted feature calls no model by itself"
    );
}

#[tokio::test]
async fn a_leaving_client_ends_only_the_turns_of_the_features_it_hosts() {
    let mut f = Fixture::new(vec![]);
    // A second hosting client beside the fixture's.
    let (tx, _other_events) = mpsc::unbounded_channel();
    let other = Arc::new(Recorder {
        turns: tx,
        prompts: Mutex::default(),
        hosted: Mutex::default(),
    });
    f.fw.register_feature("mine", "", f.port.clone()).unwrap();
    f.fw.register_feature("theirs", "", other.clone()).unwrap();
    let (fw, port) = (f.fw.clone(), f.port.clone());
    let open = move |feature: &str| {
        let spec = ConversationSpec {
            model: ModelChoice::Named("scripted".into()),
            feature: Some(feature.into()),
            ..Default::default()
        };
        fw.create_conversation(spec, port.clone())
    };
    let (mine, theirs) = (open("mine").unwrap(), open("theirs").unwrap());
    let mine_turn =
        f.fw.on_new_message(&mine.conversation_id, Message::user("a"))
            .unwrap();
    let theirs_turn =
        f.fw.on_new_message(&theirs.conversation_id, Message::user("b"))
            .unwrap();
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while f.port.hosted.lock().unwrap().is_empty() || other.hosted.lock().unwrap().is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "both hosts got their turn"
        );
        tokio::task::yield_now().await;
    }
    // The other client leaves: its turn ends with an error, ours still waits and is answered.
    let gone: Arc<dyn ClientPort> = other.clone();
    f.fw.client_gone(&gone);
    let done = f.done(1).await;
    assert_eq!(done[0].0, theirs_turn);
    assert!(
        done[0]
            .2
            .error
            .as_ref()
            .unwrap()
            .message
            .contains("went away"),
        "{:?}",
        done[0].2.error
    );
    f.fw.on_feature_response(FeatureReply {
        conversation_id: mine.conversation_id.clone(),
        summary: "still here".into(),
        is_final: true,
        ..Default::default()
    })
    .unwrap();
    let done = f.done(1).await;
    assert_eq!(
        (done[0].0.as_str(), done[0].2.summary.as_str()),
        (mine_turn.as_str(), "still here")
    );
    // Its feature has no host any more; ours still has.
    assert!(open("theirs").is_err());
    assert!(open("mine").is_ok());
}

#[tokio::test]
async fn a_leaving_client_takes_its_middleware_with_it() {
    let registry = crate::registry::Registry::new();
    let provider = ScriptedProvider::new(vec![]);
    registry.insert_provider("scripted", "openai", provider);
    let mut config = crate::config::Config::default();
    config.defaults.middleware = Some(vec!["redact".into()]);
    let store = Arc::new(crate::store::Store::in_memory().unwrap());
    let fw = Arc::new(Framework::new(config, registry, store));
    let (tx, _events) = mpsc::unbounded_channel();
    let host: Arc<dyn ClientPort> = Arc::new(Recorder {
        turns: tx,
        prompts: Mutex::default(),
        hosted: Mutex::default(),
    });
    let open = || {
        let spec = ConversationSpec {
            model: ModelChoice::Named("scripted".into()),
            ..Default::default()
        };
        fw.create_conversation(spec, host.clone())
    };
    fw.register_middleware("redact", None, host.clone())
        .unwrap();
    open().expect("its middleware is hosted");
    fw.client_gone(&host);
    let e = open().unwrap_err();
    assert_eq!(e.kind, ErrorKind::UnknownComponent, "{e:?}");
    assert!(
        e.message.contains("no middleware named `redact`"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn conversations_are_compacted_unless_their_agent_lists_fit_context_or_it_is_off() {
    let compacted = |toml: &str| {
        let registry = crate::registry::Registry::new();
        registry.insert_provider("scripted", "openai", ScriptedProvider::new(vec![]));
        let config: crate::config::Config = toml::from_str(toml).unwrap();
        let store = Arc::new(crate::store::Store::in_memory().unwrap());
        let fw = Arc::new(Framework::new(config, registry, store));
        let (tx, _events) = mpsc::unbounded_channel();
        let port: Arc<dyn ClientPort> = Arc::new(Recorder {
            turns: tx,
            prompts: Mutex::default(),
            hosted: Mutex::default(),
        });
        let spec = ConversationSpec {
            model: ModelChoice::Named("scripted".into()),
            ..Default::default()
        };
        let conv = fw.create_conversation(spec, port).unwrap();
        fw.agent(&conv.agent_id).unwrap().compaction.is_some()
    };
    assert!(compacted(""), "on by default");
    assert!(!compacted("[compaction]\nenabled = false\n"));
    let fit = "[defaults]\nmiddleware = [\"fit\"]\n[middleware.fit]\nkind = \"fit-context\"\n";
    assert!(!compacted(fit), "fit-context does what it did before");
}
