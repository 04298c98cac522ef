//! End-to-end tests of the local engine running several conversations at once (one context,
//! continuous batching) on the real test model, through `genai daemon` over stdio: each
//! conversation gets the text it gets alone (greedy), a cancel leaves the others untouched,
//! each next turn reuses its own cached prefix, a long prompt does not stop the other streams,
//! requests beyond the slots wait for one (told so by a progress note), and `ignore_eos` (which
//! the concurrent benchmark sends) runs a reply to its limit. Every wait has a deadline.
//!
//! Built only with the `local` cargo feature (the default); the model as in `local_model`.

use serde_json::{json, Value};

use crate::local_model::{conversation, ready, test_model, usage, CANCELLED, EXIT, TURN};
use crate::support::rpc_client::Daemon;

const PROMPTS: [&str; 4] = [
    "What is the capital of France?",
    "Name three colours.",
    "What is 2 + 2?",
    "Write one sentence about the sea.",
];
const COUNTING: &str = "Count from 1 to 1000, writing every number in words, one per line.";

fn short(d: &mut Daemon) -> String {
    conversation(d, json!({"max_tokens": 32, "temperature": 0}))
}

/// Each prompt's reply when it runs alone (in its own new conversation).
fn alone(d: &mut Daemon, prompts: &[&str]) -> Vec<String> {
    prompts
        .iter()
        .map(|p| {
            let cid = short(d);
            let (_, fin) = d.turn(&cid, p, TURN);
            assert_eq!(fin["isSuccess"], true, "{fin}");
            fin["summary"].as_str().unwrap().to_string()
        })
        .collect()
}

/// Sends each message to its conversation at once, then waits for every final answer.
fn at_once(d: &mut Daemon, turns: &[(String, &str)]) -> Vec<(String, Value)> {
    let ids: Vec<String> = turns
        .iter()
        .map(|(cid, text)| d.send_message(cid, text))
        .collect();
    ids.into_iter()
        .map(|t| {
            let fin = d.wait_final(&t, TURN)["params"].clone();
            (t, fin)
        })
        .collect()
}

fn summary(fin: &Value) -> &str {
    assert_eq!(fin["isSuccess"], true, "{fin}");
    fin["summary"].as_str().unwrap()
}

/// Where in the daemon's log the first chunk of a turn is.
fn first_chunk_at(d: &Daemon, turn: &str) -> usize {
    d.turn_events(turn).0.first().expect("no chunk").0
}

/// A new conversation counting to 1,000, once its first words came: (conversation, turn).
fn counting(d: &mut Daemon) -> (String, String) {
    let cid = conversation(d, json!({"max_tokens": 1000, "temperature": 0}));
    let t = d.send_message(&cid, COUNTING);
    d.wait_first_chunk(&t, TURN);
    (cid, t)
}

/// Sends a new conversation a prompt of about 2,500 tokens: five prompt chunks of the
/// scheduler (evaluated whole, it would stop the others for its whole length, or two turns of
/// 2,048). Returns (conversation, turn).
fn long_prompt(d: &mut Daemon) -> (String, String) {
    let text = "The quick brown fox jumps over the lazy dog near the river bank. ".repeat(180);
    let reader = conversation(d, json!({"max_tokens": 4, "temperature": 0}));
    let t = d.send_message(&reader, format!("{text}\nHow many foxes are there?"));
    (reader, t)
}

/// Shuts the daemon down and checks that it exited with success (else its stderr's tail).
fn exits_cleanly(d: &mut Daemon) {
    let st = d.shutdown(EXIT);
    let err = d.stderr_text();
    assert!(
        st.success(),
        "{st:?}: {}",
        &err[err.len().saturating_sub(3000)..]
    );
}

#[test]
fn four_conversations_at_once_give_their_single_stream_text_and_reuse_their_own_prefix() {
    let Some(model) = test_model() else { return };
    // The single-stream texts come from a daemon of their own, so that the conversations below
    // evaluate their whole prompts as those did (none finds another's cache).
    let (_dir, mut d) = ready(&model, "threads = 2");
    let expected = alone(&mut d, &PROMPTS);
    exits_cleanly(&mut d);
    let (_dir, mut d) = ready(&model, "threads = 2");

    let convs: Vec<String> = PROMPTS.iter().map(|_| short(&mut d)).collect();
    let turns: Vec<(String, &str)> = convs.iter().cloned().zip(PROMPTS).collect();
    let done = at_once(&mut d, &turns);
    // Four requests at once on four slots: none is told to wait for a slot (they once were
    // when they came between two steps, before the scheduler had taken the first).
    let waits: Vec<&Value> = d
        .log()
        .iter()
        .filter(|m| {
            m["method"] == "OnFeatureResponse"
                && m["params"]["final"] == false
                && m["params"]["summary"]
                    .as_str()
                    .is_some_and(|s| s.starts_with("waiting for a slot"))
        })
        .collect();
    assert!(waits.is_empty(), "free slots, yet: {waits:?}");
    for ((turn, fin), want) in done.iter().zip(&expected) {
        assert_eq!(
            summary(fin),
            want,
            "turn {turn} differs from its single-stream text"
        );
    }
    // They ran together: the last one started streaming before the first one ended.
    let first_final = d.turn_events(&done[0].0).1[0];
    assert!(
        first_chunk_at(&d, &done[3].0) < first_final,
        "the fourth conversation waited for the first one"
    );

    // The next turn of each, all at once again: each finds its own turn in the cache.
    let again: Vec<(String, &str)> = convs
        .iter()
        .map(|c| (c.clone(), "Say that again in other words."))
        .collect();
    let second = at_once(&mut d, &again);
    for ((_, fin1), (_, fin2)) in done.iter().zip(&second) {
        summary(fin2);
        let (prompt1, _, _) = usage(fin1);
        let (prompt2, cached2, _) = usage(fin2);
        assert!(
            cached2 >= prompt1 && cached2 < prompt2,
            "turn 2 reuses its own turn 1 ({cached2} of {prompt2} cached, turn 1 prompt {prompt1}): {fin2}"
        );
    }
    exits_cleanly(&mut d);
}

#[test]
fn a_cancel_leaves_the_other_conversations_untouched() {
    let Some(model) = test_model() else { return };
    let (_dir, mut d) = ready(&model, "threads = 2");
    let expected = alone(&mut d, &PROMPTS[..2]);

    let (long, counting) = counting(&mut d);
    let others: Vec<String> = PROMPTS[..2]
        .iter()
        .map(|p| {
            let cid = short(&mut d);
            d.send_message(&cid, p)
        })
        .collect();
    for t in &others {
        d.wait_first_chunk(t, TURN);
    }
    let (fin, _) = d.cancel_turn(&long, &counting, CANCELLED);
    assert_eq!(fin["error"]["kind"], "cancelled", "{fin}");
    for (t, want) in others.iter().zip(&expected) {
        let fin = d.wait_final(t, TURN)["params"].clone();
        assert_eq!(summary(&fin), want, "turn {t} changed by the cancel");
    }
    exits_cleanly(&mut d);
}

#[test]
fn a_long_prompt_does_not_stop_the_other_streams() {
    let Some(model) = test_model() else { return };
    let (_dir, mut d) = ready(&model, "threads = 2");
    let counters: Vec<(String, String)> = (0..2).map(|_| counting(&mut d)).collect();
    let (_, long) = long_prompt(&mut d);
    let sent_at = d.log().len();
    d.wait_first_chunk(&long, TURN);
    let prefilled_at = first_chunk_at(&d, &long);
    for (_, t) in &counters {
        let during = d
            .turn_events(t)
            .0
            .iter()
            .filter(|(i, _)| (sent_at..prefilled_at).contains(i))
            .count();
        assert!(
            during >= 3,
            "turn {t} got {during} chunks while the long prompt was evaluated"
        );
    }
    let fin = d.wait_final(&long, TURN)["params"].clone();
    let (prompt, _, _) = usage(&fin);
    assert!(prompt > 2000, "the long prompt is {prompt} tokens");
    for (cid, t) in &counters {
        d.cancel_turn(cid, t, CANCELLED);
    }
    exits_cleanly(&mut d);
}

#[test]
fn requests_beyond_the_slots_wait_for_one() {
    let Some(model) = test_model() else { return };
    let (_dir, mut d) = ready(&model, "threads = 2\nslots = 1");
    let expected = alone(&mut d, &PROMPTS[..1]);
    // The one slot is busy counting when the second request comes.
    let (long, counting) = counting(&mut d);
    let cid = short(&mut d);
    let waiting = d.send_message(&cid, PROMPTS[0]);
    // It is told it waits, and gets no text while the slot is busy.
    let note = d.wait_notification(
        |m| {
            m["method"] == "OnFeatureResponse"
                && m["params"]["turnId"] == waiting
                && m["params"]["final"] == false
        },
        TURN,
    );
    let summary_of_note = note["params"]["summary"].as_str().unwrap();
    assert!(summary_of_note.starts_with("waiting for a slot"), "{note}");
    assert!(d.turn_events(&waiting).0.is_empty(), "text before a slot");
    // The slot comes free: the waiting request runs, as it would alone.
    d.cancel_turn(&long, &counting, CANCELLED);
    let fin = d.wait_final(&waiting, TURN)["params"].clone();
    assert_eq!(summary(&fin), expected[0]);
    // The slot is free again: the next request is not told to wait.
    let next = d.send_message(&cid, PROMPTS[1]);
    let fin = d.wait_final(&next, TURN)["params"].clone();
    summary(&fin);
    let notes: Vec<&Value> = d
        .log()
        .iter()
        .filter(|m| m["params"]["turnId"] == next && m["params"]["final"] == false)
        .collect();
    assert!(notes.is_empty(), "a free slot, yet: {notes:?}");
    exits_cleanly(&mut d);
}

#[test]
fn ignore_eos_runs_a_reply_to_max_tokens() {
    let Some(model) = test_model() else { return };
    let (_dir, mut d) = ready(&model, "threads = 2");
    // Alone, the short answer ends well before its limit, at the end of its turn.
    let plain = conversation(&mut d, json!({"max_tokens": 64, "temperature": 0}));
    let (_, fin) = d.turn(&plain, PROMPTS[2], TURN);
    let (_, _, out) = usage(&fin);
    assert_eq!(fin["finishReason"], "stop", "{fin}");
    assert!(out < 64, "{fin}");
    // With ignore_eos (what bench-local sends both servers) it runs to the limit.
    let forced = conversation(
        &mut d,
        json!({"max_tokens": 64, "temperature": 0, "ignore_eos": true}),
    );
    let (_, fin) = d.turn(&forced, PROMPTS[2], TURN);
    assert_eq!(fin["finishReason"], "length", "{fin}");
    assert_eq!(usage(&fin).2, 64, "{fin}");
    assert!(!summary(&fin).is_empty());
    exits_cleanly(&mut d);
}

const SYSTEM: &str =
    "You are a patient teacher. Answer in plain words, briefly and kindly, for a child.";

/// A new conversation with the system prompt [`SYSTEM`].
fn taught(d: &mut Daemon, max_tokens: u32) -> String {
    let r = d.call(
        "CreateConversation",
        json!({"serviceProvider": "gemma", "systemPrompt": SYSTEM,
               "parameters": {"max_tokens": max_tokens, "temperature": 0}}),
    );
    r["conversationId"].as_str().unwrap().to_string()
}

/// A conversation with the system prompt [`SYSTEM`] that starts while another with it runs,
/// in a daemon with `extra` config. Returns its final answer.
fn beside_a_running_one(model: &std::path::Path, extra: &str, prompt: &str) -> Value {
    let (_dir, mut d) = ready(model, &format!("threads = 2\n{extra}"));
    let long = taught(&mut d, 1000);
    let counting = d.send_message(&long, COUNTING);
    d.wait_first_chunk(&counting, TURN);
    let cid = taught(&mut d, 32);
    let t = d.send_message(&cid, prompt);
    let fin = d.wait_final(&t, TURN)["params"].clone();
    d.cancel_turn(&long, &counting, CANCELLED);
    exits_cleanly(&mut d);
    fin
}

#[test]
fn a_new_conversation_copies_the_shared_prefix_of_another_and_keeps_its_text() {
    let Some(model) = test_model() else { return };
    let (_dir, mut d) = ready(&model, "threads = 2");
    let cid = taught(&mut d, 32);
    let (_, alone) = d.turn(&cid, PROMPTS[1], TURN);
    let expected = summary(&alone).to_string();
    exits_cleanly(&mut d);
    for extra in ["", "kv_unified = true"] {
        let fin = beside_a_running_one(&model, extra, PROMPTS[1]);
        let (prompt, cached, _) = usage(&fin);
        // The system prompt and the user turn's opening come from the running sequence.
        assert!(
            cached >= 20 && cached < prompt,
            "{extra:?}: {cached} of {prompt} cached: {fin}"
        );
        if extra.is_empty() {
            // A cache per sequence: the copied prefix holds the numbers evaluated alone.
            assert_eq!(summary(&fin), expected, "with a copied prefix");
        } else {
            summary(&fin);
        }
    }
}

#[test]
fn a_shutdown_just_after_cancels_exits_cleanly() {
    let Some(model) = test_model() else { return };
    let (_dir, mut d) = ready(&model, "threads = 2");
    let (counter, counting) = counting(&mut d);
    // Each step of this prompt's evaluation takes long.
    let (reader, long) = long_prompt(&mut d);
    let sent_at = d.log().len();
    // Three steps later the long prompt is in the batch.
    while d
        .turn_events(&counting)
        .0
        .iter()
        .filter(|(i, _)| *i >= sent_at)
        .count()
        < 3
    {
        d.wait_first_chunk(&counting, TURN);
    }
    // A cancelled turn ends at once; the engine drops its sequence only after the step it is
    // decoding, and the process must wait for that step before it exits.
    d.cancel_turn(&reader, &long, CANCELLED);
    d.cancel_turn(&counter, &counting, CANCELLED);
    exits_cleanly(&mut d);
}
