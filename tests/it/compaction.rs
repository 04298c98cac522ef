//! Compaction seen from outside: a conversation continued with `genai ask -c` against the
//! OpenAI fake, with `[compaction] context_tokens` small enough that its fourth turn nears the
//! context. What is SENT upstream after compaction (the summary in the system message, the
//! oldest turns gone, the last ones whole), the `compaction` event of `stream-json` against
//! its schema, the line on stderr, the history kept whole in `genai sessions show`, and
//! `/compact` in `genai chat`, whose summary the next turns reuse.

use std::path::PathBuf;

use serde_json::Value;

use crate::support::cli::{self, OpenAiCli};
use crate::support::fake_openai::Behavior;

/// About 127 tokens by genai's estimate (four characters a token).
fn long(label: &str) -> String {
    format!("{label} {}", "word ".repeat(96))
}

const SUMMARY: &str = "SUMMARY-7Q: they asked about src/lib.rs and decided on tabs.";

fn env() -> OpenAiCli {
    let env = OpenAiCli::new();
    env.dirs
        .write_config("[compaction]\ncontext_tokens = 1200\nreserve_tokens = 200\n");
    env
}

/// Each line of `stdout` as JSON, checked against `schemas/stream-event.json`.
fn events(stdout: &str) -> Vec<Value> {
    let schema_path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schemas/stream-event.json");
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    stdout
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).unwrap();
            let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{line} does not match: {errors:?}");
            v
        })
        .collect()
}

/// The texts of a request body's messages, as `role: text`.
fn sent(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| format!("{}: {}", m["role"].as_str().unwrap(), m["content"]))
        .collect()
}

#[test]
fn a_long_conversation_is_sent_compacted_said_in_the_event_stream_and_kept_whole() {
    let env = env();
    for i in 0..3 {
        env.fake
            .push(Behavior::reply(&long(&format!("answer {i}")), 4));
        let mut args = vec!["ask", "-m", "openai:gpt-test"];
        if i > 0 {
            args.push("-c");
        }
        let q = long(&format!("question {i}"));
        args.push(&q);
        let o = env.run(&args, None);
        assert_eq!(o.status.code(), Some(0), "{}", cli::stderr(&o));
        assert!(
            !cli::stderr(&o).contains("compacted"),
            "{}",
            cli::stderr(&o)
        );
    }
    assert_eq!(env.fake.requests().len(), 3);

    // The fourth turn nears the context: the same model summarises the two oldest turns,
    // then gets the turn with the summary in place of them.
    env.fake.push(Behavior::reply(SUMMARY, 1));
    env.fake.push(Behavior::reply("answer 3", 2));
    let q = long("question 3");
    let o = env.run(
        &[
            "ask",
            "-c",
            "-m",
            "openai:gpt-test",
            "--output-format",
            "stream-json",
            &q,
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", cli::stderr(&o));
    let lines = events(&cli::stdout(&o));
    let kinds: Vec<&str> = lines.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let at = kinds
        .iter()
        .position(|k| *k == "compaction")
        .expect("a compaction event");
    let first_text = kinds.iter().position(|k| *k == "text").unwrap();
    assert!(at < first_text, "said before the reply: {kinds:?}");
    let c = &lines[at];
    assert_eq!(c["turns"], 2, "{c}");
    assert!(c["tokensBefore"].as_u64().unwrap() > 800, "{c}");
    assert!(c["tokensAfter"].as_u64().unwrap() < 800, "{c}");
    assert_eq!(c["by"], "the conversation's model");

    let requests = env.fake.requests();
    assert_eq!(requests.len(), 5, "a summary request, then the turn's");
    let asked = sent(&requests[3].body);
    assert!(
        asked[0].contains("Summarise this earlier part"),
        "{asked:?}"
    );
    assert!(asked[1].contains("question 0") && asked[1].contains("answer 1"));
    assert!(!asked[1].contains("question 2"), "{asked:?}");
    let turn = sent(&requests[4].body);
    assert!(turn[0].starts_with("system: "), "{turn:?}");
    assert!(
        turn[0].contains(&format!(
            "Earlier in this conversation (summarised): {SUMMARY}"
        )),
        "{turn:?}"
    );
    assert!(!turn
        .iter()
        .any(|m| m.contains("question 0") || m.contains("answer 1")));
    assert!(turn[1].starts_with("user: \"question 2"), "{turn:?}");
    assert!(turn.last().unwrap().starts_with("user: \"question 3"));

    // The next run is another process: it keeps no summary, so it compacts again (within
    // one `genai chat`, daemon or ACP session the summary is reused: the test below).
    // Three turns now go, two pieces of transcript: the second grows the first's summary.
    env.fake.push(Behavior::reply("PART-ONE", 1));
    env.fake.push(Behavior::reply(SUMMARY, 1));
    env.fake.push(Behavior::reply("answer 4", 2));
    let o = env.run(&["ask", "-c", "-m", "openai:gpt-test", "question 4"], None);
    assert_eq!(o.status.code(), Some(0), "{}", cli::stderr(&o));
    assert!(
        cli::stderr(&o).contains("genai: compacted the "),
        "{}",
        cli::stderr(&o)
    );
    let requests = env.fake.requests();
    assert_eq!(requests.len(), 8, "two summary requests, then the turn's");
    assert!(sent(&requests[6].body)[1].contains("The summary so far: PART-ONE"));
    let turn = sent(&requests[7].body);
    assert!(turn[0].contains(SUMMARY), "{turn:?}");
    assert!(!turn.iter().any(|m| m.contains("question 0")), "{turn:?}");

    // The history keeps every turn.
    let o = env.run(&["sessions", "list", "--json"], None);
    let list: Value = serde_json::from_str(&cli::stdout(&o)).unwrap();
    let id = list[0]["id"].as_str().unwrap().to_string();
    let o = env.run(&["sessions", "show", &id], None);
    let shown = cli::stdout(&o);
    for i in 0..5 {
        assert!(shown.contains(&format!("question {i}")), "{shown}");
    }
    assert!(
        shown.contains("answer 0") && shown.contains("answer 4"),
        "{shown}"
    );
    assert!(
        !shown.contains(SUMMARY),
        "the summary is sent, not kept: {shown}"
    );
}

#[test]
fn slash_compact_in_chat_compacts_now_and_says_so() {
    let env = OpenAiCli::new();
    env.fake.push(Behavior::reply("one done", 1));
    env.fake.push(Behavior::reply("two done", 1));
    env.fake.push(Behavior::reply("three done", 1));
    env.fake.push(Behavior::reply(SUMMARY, 1));
    env.fake.push(Behavior::reply("four done", 1));
    env.fake.push(Behavior::reply("five done", 1));
    let o = env.run(
        &["chat", "-m", "openai:gpt-test"],
        Some("first\nsecond\nthird\n/compact\nfourth\nfifth\n"),
    );
    let err = cli::stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains(
            "genai: compacted the 1 earliest turn(s) into a summary by the conversation's model"
        ),
        "{err}"
    );
    let requests = env.fake.requests();
    assert_eq!(
        requests.len(),
        6,
        "one summary, reused by the two turns after it"
    );
    assert!(sent(&requests[3].body)[1].contains("user: first"));
    for n in [4, 5] {
        let turn = sent(&requests[n].body);
        assert!(turn[0].contains(SUMMARY), "{turn:?}");
        assert!(!turn.iter().any(|m| m == "user: \"first\""), "{turn:?}");
        assert!(turn.iter().any(|m| m == "user: \"second\""), "{turn:?}");
    }
}
