//! Tests of `TurnStream`: a turn's events and its one outcome, dropping or cancelling it, and
//! failed or refused turns.

use std::time::Duration;

use super::*;
use crate::error::ErrorKind;
use crate::provider::scripted::{text_stream, Answer, ScriptedProvider};
use crate::select::ModelChoice;
use crate::session::{scripted, CancelTarget, ConversationSpec, Framework};

const DEADLINE: Duration = Duration::from_secs(10);

/// A client that records the turn events its port is told.
struct Client(mpsc::UnboundedSender<(TurnRef, TurnEvent)>);

#[async_trait]
impl ClientPort for Client {
    fn streaming(&self) -> bool {
        true
    }
    fn turn_event(&self, turn: &TurnRef, event: TurnEvent) {
        let _ = self.0.send((turn.clone(), event));
    }
    fn prompt_event(&self, _: &PromptRef, _: PromptEvent) {}
    fn hosted_turn(&self, _: HostedTurn) {}
    async fn confirm(&self, _: Confirmation) -> Result<bool> {
        Ok(false)
    }
}

type Seen = mpsc::UnboundedReceiver<(TurnRef, TurnEvent)>;

/// A core over `answers` and one open conversation on it, and what its port is told.
fn open(answers: Vec<Answer>) -> (Arc<Framework>, String, Seen, Arc<ScriptedProvider>) {
    let (fw, provider) = scripted(answers);
    let (tx, seen) = mpsc::unbounded_channel();
    let spec = ConversationSpec {
        model: ModelChoice::Named("scripted".into()),
        ..Default::default()
    };
    let conv = fw.create_conversation(spec, Arc::new(Client(tx))).unwrap();
    (fw, conv.conversation_id, seen, provider)
}

async fn next(stream: &mut TurnStream) -> Option<TurnEvent> {
    tokio::time::timeout(DEADLINE, stream.next_event())
        .await
        .expect("the turn did not go on in time")
}

/// What the port is told until the end of a turn: its chunks and its outcome.
async fn port_until_done(seen: &mut Seen) -> (TurnRef, String, TurnOutcome) {
    let mut chunks = String::new();
    loop {
        let (turn, event) = tokio::time::timeout(DEADLINE, seen.recv())
            .await
            .expect("the port was not told the end in time")
            .expect("the core dropped the port");
        match event {
            TurnEvent::Chunk(c) => chunks.push_str(&c),
            TurnEvent::Done(o) => return (turn, chunks, o),
            _ => {}
        }
    }
}

fn kind(o: &TurnOutcome) -> Option<ErrorKind> {
    o.error.as_ref().map(|e| e.kind)
}

#[tokio::test]
async fn a_turn_streams_its_events_and_ends_with_its_outcome_once() {
    let (fw, id, mut seen, _) = open(vec![text_stream(&["Hel", "lo"], false)]);
    let mut turn = fw.run_turn(&id, Message::user("hi"), None).unwrap();
    assert_eq!(turn.turn().conversation_id, id);
    let mut chunks = String::new();
    let outcome = loop {
        match next(&mut turn).await.expect("a turn ends with Done") {
            TurnEvent::Chunk(c) => chunks.push_str(&c),
            TurnEvent::Done(o) => break o,
            _ => {}
        }
    };
    assert_eq!(chunks, "Hello");
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(outcome.summary, "Hello");
    assert!(next(&mut turn).await.is_none(), "nothing after Done");
    // The conversation's port saw the same turn.
    let (seen_turn, seen_chunks, seen_outcome) = port_until_done(&mut seen).await;
    assert_eq!(seen_turn.turn_id, turn.id());
    assert_eq!(
        (seen_chunks.as_str(), seen_outcome.summary.as_str()),
        ("Hello", "Hello")
    );
}

#[tokio::test]
async fn dropping_the_stream_cancels_the_running_and_the_queued_turn() {
    let (fw, id, mut seen, provider) = open(vec![Answer::Hang, Answer::Hang]);
    let asked = provider.asked.notified();
    let running = fw.run_turn(&id, Message::user("a"), None).unwrap();
    tokio::time::timeout(DEADLINE, asked)
        .await
        .expect("the provider was asked");
    let queued = fw.run_turn(&id, Message::user("b"), None).unwrap();
    let ids = [running.id().to_string(), queued.id().to_string()];
    drop(queued);
    drop(running);
    for id in ids {
        let (turn, _, outcome) = port_until_done(&mut seen).await;
        assert_eq!(turn.turn_id, id);
        assert_eq!(kind(&outcome), Some(ErrorKind::Cancelled));
    }
    tokio::time::timeout(DEADLINE, fw.idle())
        .await
        .expect("idle");
}

#[tokio::test]
async fn cancelling_by_turn_id_ends_the_stream_with_a_cancelled_outcome() {
    let (fw, id, _seen, provider) = open(vec![Answer::Hang]);
    let asked = provider.asked.notified();
    let turn = fw.run_turn(&id, Message::user("slow"), None).unwrap();
    tokio::time::timeout(DEADLINE, asked)
        .await
        .expect("the provider was asked");
    let target = CancelTarget {
        turn_id: Some(turn.id().to_string()),
        ..Default::default()
    };
    assert!(fw.cancel(&target).unwrap());
    let outcome = tokio::time::timeout(DEADLINE, turn.outcome())
        .await
        .expect("the turn ended");
    assert_eq!(kind(&outcome), Some(ErrorKind::Cancelled));
}

#[tokio::test]
async fn a_failed_turn_ends_the_stream_with_its_error() {
    let (fw, id, _seen, _) = open(vec![Answer::Fail("scripted: 500 Internal Server Error")]);
    let turn = fw.run_turn(&id, Message::user("hi"), None).unwrap();
    let outcome = tokio::time::timeout(DEADLINE, turn.outcome())
        .await
        .expect("the turn ended");
    let e = outcome.error.expect("the turn failed");
    assert_ne!(e.kind, ErrorKind::Cancelled);
    assert!(e.message.contains("500"), "{}", e.message);
}

#[tokio::test]
async fn a_refused_message_starts_no_stream() {
    let (fw, id, _seen, _) = open(Vec::new());
    let e = fw.run_turn(&id, Message::user("  "), None).unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidParams);
    let e = fw.run_turn("nope", Message::user("hi"), None).unwrap_err();
    assert_eq!(e.kind, ErrorKind::UnknownConversation);
}
