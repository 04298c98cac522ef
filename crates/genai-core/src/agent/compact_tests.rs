//! Compaction through an agent on the scripted provider: what is sent once a conversation
//! nears its context (the system prompt, the last turns, the summary), the history kept
//! whole, the summary reused and grown on later turns, `/compact`, an unknown context, and
//! the error of a turn that cannot fit.

use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use super::testing::{agent, text_body, ScriptedProvider, CONVERSATION};
use super::AIAgent;
use crate::compaction::{Compacted, Compaction, CompactionConfig};
use crate::message::Message;
use crate::middleware::testing::FakeHelpers;
use crate::store::{History, NewMessage, Store};

const SYSTEM: &str = "Be brief.\n\nThe project's instructions (AGENTS.md files): use tabs.";

/// `turns` long turns (about 264 tokens each), the first naming a file in a tool call.
fn long_turns(turns: usize) -> Vec<Message> {
    let mut m = Vec::new();
    for i in 0..turns {
        m.push(Message::user(format!(
            "question {i} {}",
            "word ".repeat(100)
        )));
        m.push(Message::assistant(format!(
            "answer {i} {}",
            "word ".repeat(100)
        )));
    }
    m
}

/// An agent whose stored and in-memory history is `history`, compacted with a context of
/// `context` tokens, 200 of them for the reply (1200: it compacts over 800), its summaries
/// written by the agent `scribe` when given, else by its own model.
fn compacting(
    provider: Arc<ScriptedProvider>,
    history: Vec<Message>,
    context: Option<u64>,
    scribe: Option<Arc<FakeHelpers>>,
) -> (AIAgent, Arc<Store>) {
    let store = Arc::new(Store::in_memory().unwrap());
    let mut a = agent(
        provider,
        Some(store.clone()),
        Some(Message::system(SYSTEM)),
        history.clone(),
    );
    let rows: Vec<NewMessage> = history.into_iter().map(NewMessage::from).collect();
    store
        .commit_turn_by(
            CONVERSATION,
            Some(&Message::system(SYSTEM)),
            "scripted",
            "m",
            &rows,
        )
        .unwrap();
    let config = CompactionConfig {
        context_tokens: context,
        reserve_tokens: Some(200),
        agent: scribe.as_ref().map(|_| "scribe".to_string()),
        ..Default::default()
    };
    let helpers = scribe.unwrap_or_else(|| FakeHelpers::answering("unused"));
    a.compaction = Compaction::of(&config, helpers, Arc::default())
        .unwrap()
        .map(Arc::new);
    (a, store)
}

/// Sends `text`; returns what compactions the turn told.
async fn ask(a: &AIAgent, text: &str) -> crate::error::Result<Vec<Compacted>> {
    let told = Mutex::new(Vec::new());
    let on = |c: &Compacted| told.lock().unwrap().push(c.clone());
    a.send_prompt_observed(
        vec![Message::user(text)],
        None,
        Some(&on),
        &CancellationToken::new(),
        None,
        None,
    )
    .await?;
    Ok(told.into_inner().unwrap())
}

fn stored(store: &Store) -> Vec<Message> {
    store.full_history(CONVERSATION).unwrap().1
}

#[tokio::test]
async fn a_conversation_over_the_threshold_is_sent_compacted_and_kept_whole() {
    let provider = ScriptedProvider::new(vec![
        text_body("Part one."),
        text_body("They asked about src/lib.rs and decided on tabs."),
        text_body("answer 6"),
        text_body("answer 7"),
    ]);
    let history = long_turns(6);
    let (a, store) = compacting(provider.clone(), history.clone(), Some(1200), None);

    let told = ask(&a, "question 6").await.unwrap();
    assert_eq!(told.len(), 1, "{told:?}");
    let c = &told[0];
    assert_eq!(c.turns, 4, "{c:?}");
    assert!(c.tokens_before > 1400 && c.tokens_after < 800, "{c:?}");
    assert_eq!(c.by, "the conversation's model");
    // The same model wrote the summary of the oldest turns, a piece at a time so that each
    // request fits its context: the second piece grows the first's summary.
    let summary_asked = provider.messages_of(0);
    assert!(summary_asked[0].contains("file paths"), "{summary_asked:?}");
    assert!(summary_asked[1].contains("user: question 0"));
    let grown = provider.messages_of(1);
    assert!(grown[1].starts_with("user: The summary so far: Part one."));
    assert!(grown[1].contains("user: question 2") && !grown[1].contains("question 0"));
    // Then the turn's request: the system prompt (AGENTS.md in it) with the summary, the
    // turns after the summarised ones, the new message last.
    let sent = provider.messages_of(2);
    assert!(
        sent[0].starts_with(&format!("system: {SYSTEM}")),
        "{sent:?}"
    );
    assert!(sent[0].contains("They asked about src/lib.rs and decided on tabs."));
    assert!(!sent.iter().skip(1).any(|m| m.contains("question 0 ")));
    assert!(sent.iter().any(|m| m.starts_with("user: question 5 ")));
    assert!(sent.iter().any(|m| m.starts_with("assistant: answer 5 ")));
    assert_eq!(sent.last().unwrap(), "user: question 6");
    // The history keeps every turn.
    let mut expected = history.clone();
    expected.push(Message::user("question 6"));
    assert_eq!(stored(&store)[..13], expected[..]);
    assert_eq!(stored(&store).len(), 14);

    // The next turn reuses the summary: one request, no new summary, nothing told.
    let told = ask(&a, "question 7").await.unwrap();
    assert!(told.is_empty(), "{told:?}");
    assert_eq!(provider.bodies().len(), 4);
    let sent = provider.messages_of(3);
    assert!(sent[0].contains("They asked about src/lib.rs and decided on tabs."));
    assert_eq!(sent.last().unwrap(), "user: question 7");
    assert_eq!(stored(&store).len(), 16);
}

#[tokio::test]
async fn a_kept_summary_grows_by_the_turns_after_it_and_is_not_written_again() {
    let provider = ScriptedProvider::new(vec![text_body("answer 6"), text_body("answer 7")]);
    let scribe = FakeHelpers::answering("Summary.");
    let (a, _store) = compacting(
        provider.clone(),
        long_turns(6),
        Some(1200),
        Some(scribe.clone()),
    );
    let told = ask(&a, "question 6").await.unwrap();
    assert_eq!(told[0].by, "agent scribe");
    let first = scribe.asked().len();
    assert!(first >= 1 && scribe.asked()[0].0 == "scribe");
    // A long turn pushes it over again: the summary so far and the turns after it are
    // summarised, never the whole conversation again.
    let long = format!("question 7 {}", "word ".repeat(400));
    let told = ask(&a, &long).await.unwrap();
    assert_eq!(told.len(), 1, "{told:?}");
    let asked = scribe.asked();
    assert_eq!(asked.len(), first + 1, "one piece more");
    let text = asked[first].1[1].text();
    assert!(text.starts_with("The summary so far: Summary."), "{text}");
    assert!(text.contains("user: question 4") && !text.contains("question 0"));
    assert_eq!(provider.bodies().len(), 2, "only the turns' requests");
}

#[tokio::test]
async fn compact_now_summarises_all_but_the_last_turns_whatever_the_size() {
    let provider = ScriptedProvider::new(vec![text_body("Short summary."), text_body("ok")]);
    let history = vec![
        Message::user("one"),
        Message::assistant("1"),
        Message::user("two"),
        Message::assistant("2"),
        Message::user("three"),
        Message::assistant("3"),
    ];
    let (a, store) = compacting(provider.clone(), history, None, None);
    let c = a.compact_now().await.unwrap();
    assert_eq!(c.turns, 1, "the last two turns are kept: {c:?}");
    // Nothing more to compact: said, not done.
    let e = a.compact_now().await.unwrap_err();
    assert!(e.message.contains("nothing to compact"), "{e}");
    ask(&a, "four").await.unwrap();
    let sent = provider.messages_of(1);
    assert!(sent[0].contains("Short summary."), "{sent:?}");
    assert!(!sent.iter().any(|m| m == "user: one"));
    assert!(sent.iter().any(|m| m == "user: two"));
    assert_eq!(stored(&store).len(), 8);
}

#[tokio::test]
async fn a_model_of_unknown_context_is_not_compacted() {
    let provider = ScriptedProvider::new(vec![text_body("ok")]);
    let (a, _store) = compacting(provider.clone(), long_turns(20), None, None);
    assert!(ask(&a, "next").await.unwrap().is_empty());
    assert_eq!(provider.messages_of(0).len(), 1 + 40 + 1);
}

#[tokio::test]
async fn a_turn_that_cannot_fit_even_alone_is_a_clear_error_and_sends_nothing() {
    let provider = ScriptedProvider::new(vec![text_body("never")]);
    let (a, store) = compacting(provider.clone(), long_turns(2), Some(1200), None);
    let huge = "word ".repeat(5000);
    let e = ask(&a, &huge).await.unwrap_err();
    assert!(e.message.contains("needs about"), "{e}");
    assert!(
        e.message
            .contains("1200 tokens of context − 200 for the reply"),
        "{e}"
    );
    assert!(e.message.contains("start a new conversation"), "{e}");
    assert!(provider.bodies().is_empty());
    assert_eq!(stored(&store).len(), 4);
}
