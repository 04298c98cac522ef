//! Chat on the real local model through `genai daemon` (the model, its skipping and the
//! helpers are `local_model.rs`'s): a streamed reply stored and the KV cache reused on the
//! next turn, the chat template carrying the system prompt and the history with the reply
//! ending at the end of turn, a reply without streaming and its stop strings, a cancelled
//! generation that stops at once, and a prompt larger than the context refused with the
//! counts.
//!
//! Built only with the `local` cargo feature (the default).

use std::time::{Duration, Instant};

use serde_json::json;

use crate::local_model::{
    conversation, initialize, ready, start, test_model, toml_string, usage, CANCELLED, EXIT, TURN,
};
use crate::support::rpc_client::{Daemon, DaemonConfig, Framing};

/// Waits until a line of the daemon's stderr matches (polling the file, with a deadline).
fn wait_stderr(d: &Daemon, what: &str, timeout: Duration, pred: impl Fn(&str) -> bool) {
    let deadline = Instant::now() + timeout;
    loop {
        if d.stderr_text().lines().any(&pred) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting until {what}; stderr:\n{}",
            d.stderr_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn streams_a_reply_stores_it_and_reuses_the_cache_on_the_next_turn() {
    let Some(model) = test_model() else { return };
    let (_dir, mut d) = ready(&model, "");
    let cid = conversation(&mut d, json!({"max_tokens": 24, "temperature": 0}));

    let (t1, fin1) = d.turn(&cid, "What is the capital of France?", TURN);
    assert_eq!(fin1["isSuccess"], true, "{fin1}");
    let summary = fin1["summary"].as_str().unwrap();
    assert!(!summary.trim().is_empty(), "empty reply: {fin1}");
    let (chunks, finals) = d.turn_events(&t1);
    let fin_at = finals.last().copied();
    assert!(!chunks.is_empty(), "no streamed chunk");
    assert!(
        chunks.iter().all(|(i, _)| Some(*i) < fin_at),
        "chunks after the final response"
    );
    let streamed: String = chunks.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(streamed, summary, "the chunks are the reply");
    let (prompt1, cached1, out1) = usage(&fin1);
    assert!(prompt1 > 0 && out1 > 0 && out1 <= 24, "{fin1}");
    assert_eq!(cached1, 0, "a fresh engine has nothing cached: {fin1}");
    assert_eq!(d.history(&cid).len(), 2);

    let (_, fin2) = d.turn(&cid, "What is the capital of Italy?", TURN);
    assert_eq!(fin2["isSuccess"], true, "{fin2}");
    assert!(!fin2["summary"].as_str().unwrap().trim().is_empty());
    let (prompt2, cached2, _) = usage(&fin2);
    assert!(prompt2 > prompt1, "turn 2's prompt holds turn 1: {fin2}");
    assert!(
        cached2 > 0 && cached2 < prompt2,
        "turn 2 evaluates only what is new ({cached2} of {prompt2} prompt tokens cached)"
    );
    assert!(
        cached2 >= prompt1 / 2,
        "most of turn 1 is reused ({cached2} cached, turn 1 prompt {prompt1})"
    );
    assert_eq!(d.history(&cid).len(), 4);
    assert!(d.shutdown(EXIT).success());
}

/// The prompts the engine rendered (its trace log line), in order, as logged (`Debug` form).
fn rendered_prompts(d: &Daemon) -> Vec<String> {
    d.stderr_text()
        .lines()
        .filter(|l| l.contains("rendered prompt"))
        .filter_map(|l| {
            let at = l.find("prompt=\"")? + "prompt=\"".len();
            let end = l.rfind('"')?;
            Some(l[at..end].to_string())
        })
        .collect()
}

/// `text` as it appears inside a `Debug`-formatted string (newlines escaped).
fn escaped(text: &str) -> String {
    let s = format!("{text:?}");
    s[1..s.len() - 1].to_string()
}

#[test]
fn the_chat_template_carries_the_system_prompt_and_history_and_the_reply_ends_at_end_of_turn() {
    let Some(model) = test_model() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cfg = DaemonConfig::in_dir(dir.path(), Framing::Lines, "daemon")
        .env(
            "GENAI_LOG",
            "info,genai_local=trace,genai_core::provider::local=trace",
        )
        .env("NO_COLOR", "1");
    cfg.write_config(&format!(
        "[service_providers.gemma]\nkind = \"local\"\nmodel = {}\n",
        toml_string(&model.display().to_string())
    ));
    let mut d = Daemon::spawn(&cfg);
    initialize(&mut d, true);
    let (cid, _) = d.create_conversation(json!({
        "serviceProvider": "gemma",
        "systemPrompt": "You are a geography teacher.",
        "parameters": {"max_tokens": 200, "temperature": 0},
    }));

    let q1 = "What is the capital of France?";
    let (_, fin1) = d.turn(&cid, q1, TURN);
    assert_eq!(fin1["isSuccess"], true, "{fin1}");
    let reply1 = fin1["summary"].as_str().unwrap().to_string();
    // The model's own template (ChatML) was applied, not a fallback.
    assert!(
        !d.stderr_text().contains("chat template:"),
        "a fallback template was used:\n{}",
        d.stderr_text()
    );
    let prompts = rendered_prompts(&d);
    assert_eq!(prompts.len(), 1, "{}", d.stderr_text());
    assert_eq!(
        prompts[0],
        escaped(&format!(
            "<|im_start|>system\nYou are a geography teacher.<|im_end|>\n<|im_start|>user\n{q1}<|im_end|>\n<|im_start|>assistant\n"
        ))
    );
    // The answer is right, and it ended at the end-of-turn token, well before the limit,
    // with no turn marker shown.
    assert!(reply1.contains("Paris"), "{reply1:?}");
    assert_eq!(fin1["finishReason"], "stop", "{fin1}");
    let (_, _, out1) = usage(&fin1);
    assert!(out1 < 200, "{fin1}");
    assert!(!reply1.contains("<|im_"), "{reply1:?}");

    // Turn 2 carries turn 1 whole: the system prompt, the question, the stored reply.
    let q2 = "And what is the capital of Italy?";
    let (_, fin2) = d.turn(&cid, q2, TURN);
    assert_eq!(fin2["isSuccess"], true, "{fin2}");
    let reply2 = fin2["summary"].as_str().unwrap();
    assert!(reply2.contains("Rome"), "{reply2:?}");
    assert_eq!(fin2["finishReason"], "stop", "{fin2}");
    let prompts = rendered_prompts(&d);
    assert_eq!(prompts.len(), 2);
    assert_eq!(
        prompts[1],
        format!(
            "{}{}",
            prompts[0],
            escaped(&format!(
                "{reply1}<|im_end|>\n<|im_start|>user\n{q2}<|im_end|>\n<|im_start|>assistant\n"
            ))
        )
    );
    assert_eq!(d.history(&cid).len(), 4);
    assert!(d.shutdown(EXIT).success());
}

#[test]
fn answers_without_streaming_and_honours_stop_strings() {
    let Some(model) = test_model() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut d = start(dir.path(), &model, "threads = 2\ncontext_size = 1024");
    initialize(&mut d, false);
    let cid = conversation(&mut d, json!({"max_tokens": 16, "temperature": 0}));
    let (t, fin) = d.turn(&cid, "Count from 1 to 10, separated by commas.", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let reply = fin["summary"].as_str().unwrap().to_string();
    assert!(!reply.trim().is_empty(), "{fin}");
    assert!(
        d.turn_events(&t).0.is_empty(),
        "no chunks without streaming"
    );

    // The same question again, with a word of that reply as a stop string: the reply ends
    // just before it (greedy, so the same text up to there) and the stop string is not shown.
    let (stop, at) = reply
        .match_indices(|c: char| c.is_alphanumeric())
        .map(|(i, _)| i)
        .filter(|&i| i > 0)
        .find_map(|i| {
            let word: String = reply[i..]
                .chars()
                .take_while(|c| c.is_alphanumeric())
                .collect();
            let starts_word = !reply[..i].ends_with(|c: char| c.is_alphanumeric());
            // A word after the first one, so the reply before it is not empty.
            let after_a_word = reply[..i].contains(|c: char| c.is_alphanumeric());
            (starts_word && after_a_word).then_some((word, i))
        })
        .unwrap_or_else(|| panic!("no second word to stop at in {reply:?}"));
    let at = reply.find(stop.as_str()).unwrap_or(at);
    let cid2 = conversation(
        &mut d,
        json!({"max_tokens": 16, "temperature": 0, "stop": [stop]}),
    );
    let (_, fin) = d.turn(&cid2, "Count from 1 to 10, separated by commas.", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let stopped = fin["summary"].as_str().unwrap();
    // Not always byte-equal to `reply[..at]`: the prompt's KV cache is reused from the first
    // conversation, and llama.cpp's logits differ slightly between batch shapes, so greedy
    // decoding may pick another token early. What must hold: it stopped, before the stop
    // string, which is not shown.
    let _ = at;
    assert!(
        !stopped.contains(stop.as_str()),
        "stop {stop:?} shown in {stopped:?}: {fin}"
    );
    assert!(
        stopped.len() < reply.len(),
        "{stopped:?} vs {reply:?}: {fin}"
    );
    assert_eq!(fin["finishReason"], "stop", "{fin}");
    assert!(d.shutdown(EXIT).success());
}

#[test]
fn cancel_ends_a_local_generation_promptly() {
    let Some(model) = test_model() else { return };
    let (_dir, mut d) = ready(&model, "");
    let cid = conversation(&mut d, json!({"max_tokens": 1000, "temperature": 0}));
    let t = d.send_message(
        &cid,
        "Count from 1 to 1000, writing every number in words, one per line.",
    );
    d.wait_first_chunk(&t, TURN);
    let (fin, took) = d.cancel_turn(&cid, &t, CANCELLED);
    assert_eq!(fin["isSuccess"], false, "{fin}");
    assert_eq!(fin["error"]["kind"], "cancelled", "{fin}");
    assert!(took < Duration::from_secs(2), "cancel took {took:?}");
    assert_eq!(d.history(&cid).len(), 0, "a cancelled turn was committed");
    // The generation itself stopped (the engine logs how it ended, at debug level).
    wait_stderr(&d, "generation stops", CANCELLED, |line| {
        line.contains("local generation done") && line.contains("cancelled")
    });

    // The engine is free again: the next turn runs (and gets the slot back).
    let cid = conversation(&mut d, json!({"max_tokens": 8, "temperature": 0}));
    let (_, fin) = d.turn(&cid, "Say hello.", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert!(d.shutdown(EXIT).success());
}

#[test]
fn a_prompt_larger_than_the_context_is_refused_with_the_counts() {
    let Some(model) = test_model() else { return };
    let (_dir, mut d) = ready(&model, "context_size = 256");
    let cid = conversation(&mut d, json!({"max_tokens": 8}));
    let long = "All work and no play makes Jack a dull boy. ".repeat(60);
    let (_, fin) = d.turn(&cid, &long, TURN);
    assert_eq!(fin["isSuccess"], false, "{fin}");
    assert_eq!(fin["error"]["kind"], "invalidParams", "{fin}");
    let message = fin["error"]["message"].as_str().unwrap();
    // Compaction (on by default) measures the turn before the engine would: the sizes and
    // what to do, nothing sent.
    assert!(
        message.contains("does not fit the model's context even after compaction")
            && message.contains("256 tokens of context − 8 for the reply")
            && message.contains("context_size"),
        "{message}"
    );
    assert_eq!(d.history(&cid).len(), 0);
    assert!(d.shutdown(EXIT).success());
}
