//! A daemon's life: restart and resume, the end of input, `Shutdown`, and daemons sharing one
//! data folder (started one after the other or together).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::daemon::{
    config, conversation_id, create_conversation, fake, initialize, slow_stream,
    streaming_daemon_on, text_of, EXIT, MODEL, TURN,
};
use crate::support::fake_openai::{Behavior, FakeOpenAi};
use crate::support::rpc_client::{strict_content_length_frames, Daemon, Framing};

#[test]
fn restart_and_resume_a_conversation() {
    let fake = fake(Behavior::reply("Paris is the capital of France.", 3));
    let dir = tempfile::tempdir().unwrap();
    let first_question = "What is the capital of France?";

    let system = "Answer in one sentence.";

    let mut d = Daemon::spawn(&config(dir.path(), Framing::Lines, "first", &fake));
    initialize(&mut d, true);
    let (cid, conv) = d.create_conversation(json!({"serviceProvider": "openai", "model": MODEL, "systemPrompt": system, "parameters": {"temperature": 0.25}}));
    let (_, fin) = d.turn(&cid, first_question, TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let first = fake.requests().last().cloned().unwrap();
    assert_eq!(first.body["temperature"], 0.25, "{}", first.body);
    assert_eq!(
        first.body["messages"][0],
        json!({"role": "system", "content": system})
    );
    // A parameter changed later is remembered too.
    d.call(
        "SetModelParameter",
        json!({"agentId": conv["agentId"], "name": "top_p", "value": 0.75}),
    );
    let status = d.shutdown(EXIT);
    assert_eq!(status.code(), Some(0), "{status:?}");

    fake.set_default(Behavior::reply("Rome is the capital of Italy.", 3));
    let mut d = Daemon::spawn(&config(dir.path(), Framing::ContentLength, "second", &fake));
    initialize(&mut d, true);
    let listed = d.call("ListConversations", json!({"pageSize": 10}));
    let convs = listed["conversations"].as_array().unwrap();
    assert_eq!(convs.len(), 1, "{listed}");
    assert_eq!(convs[0]["id"], cid.as_str(), "{listed}");
    assert_eq!(convs[0]["title"], first_question, "{listed}");
    assert_eq!(convs[0]["messageCount"], 2, "{listed}");
    assert_eq!(convs[0]["model"], MODEL, "{listed}");

    // Not open in this daemon until resumed.
    let e = d.call_err(
        "OnNewMessage",
        json!({"conversationId": cid, "message": "hello?"}),
    );
    assert_eq!(e["data"]["kind"], "unknownConversation", "{e}");

    let resumed = d.call("ResumeConversation", json!({"conversationId": &cid[..8]}));
    assert_eq!(resumed["conversationId"], cid.as_str(), "{resumed}");
    assert_eq!(resumed["serviceProvider"], "openai", "{resumed}");
    assert_eq!(resumed["model"], MODEL, "{resumed}");
    let agent_id = resumed["agentId"].as_str().unwrap().to_string();
    let live = d.call("GetHistory", json!({"agentId": agent_id}));
    let live = live.as_array().unwrap().clone();
    assert_eq!(live.len(), 3, "{live:?}");
    assert_eq!(live[0]["role"], "system", "system first: {live:?}");
    assert_eq!(text_of(&live[0]), system);
    // Resuming an open conversation gives the same agent.
    let again = d.call("ResumeConversation", json!({"conversationId": cid}));
    assert_eq!(again["agentId"], agent_id.as_str(), "{again}");

    let (_, fin) = d.turn(&cid, "And of Italy?", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(fin["summary"], "Rome is the capital of Italy.");
    let last = fake.requests().last().cloned().unwrap();
    assert_eq!(last.body["temperature"], 0.25, "the parameters were lost");
    assert_eq!(last.body["top_p"], 0.75, "SetModelParameter was lost");
    assert_eq!(
        last.body["messages"],
        json!([
            {"role": "system", "content": system},
            {"role": "user", "content": first_question},
            {"role": "assistant", "content": "Paris is the capital of France."},
            {"role": "user", "content": "And of Italy?"},
        ]),
        "the model did not see the history"
    );
    assert_eq!(d.history(&cid).len(), 4);
    let status = d.shutdown(EXIT);
    assert_eq!(status.code(), Some(0), "{status:?}");
}

#[test]
fn end_of_input_finishes_running_turns_before_exit() {
    let fake = fake(Behavior {
        reply: "Finished after stdin closed.".into(),
        chunks: 3,
        delay: Duration::from_millis(150),
        ..Behavior::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let mut d = Daemon::spawn(&config(dir.path(), Framing::Lines, "first", &fake));
    initialize(&mut d, true);
    let cid = conversation_id(&mut d);
    let turn_id = d.send_message(&cid, "answer after I hang up");
    d.close_stdin();
    let status = d.wait_exit(EXIT);
    assert_eq!(status.code(), Some(0), "{status:?}");
    let fin = d.wait_final(&turn_id, Duration::ZERO)["params"].clone();
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(fin["summary"], "Finished after stdin closed.");

    // And it was committed.
    let mut d = Daemon::spawn(&config(dir.path(), Framing::Lines, "second", &fake));
    assert_eq!(d.history(&cid).len(), 2);
    d.close_stdin();
    assert!(d.wait_exit(EXIT).success());
}

/// A client that closed its end of stdout has left (as `head` does): `genai daemon` and
/// `genai acp` stop with 0 at the end of input and say why in the log only.
#[test]
fn a_client_that_closed_stdout_ends_the_front_end_cleanly() {
    use std::io::Write;
    use std::process::Stdio;

    let fake = fake(Behavior::default());
    let dir = tempfile::tempdir().unwrap();
    for front in ["daemon", "acp"] {
        let cfg = config(dir.path(), Framing::Lines, front, &fake);
        let mut child = crate::support::cli::genai_in(&cfg.data_dir, &cfg.config_dir, &[front])
            .env("GENAI_LOG", "info")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The read end goes before anything is written: the answer meets a closed pipe.
        drop(child.stdout.take());
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"no/such\"}\n")
            .unwrap();
        drop(stdin);
        let deadline = Instant::now() + EXIT;
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        let log = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "genai {front}: {log}");
        assert!(
            log.contains("the client closed stdout"),
            "genai {front}: {log}"
        );
        assert!(!log.contains("stdio failed"), "genai {front}: {log}");
    }
}

#[test]
fn shutdown_cancels_running_and_queued_turns_and_exits() {
    let (fake, _dir, mut d) = streaming_daemon_on(slow_stream(), Framing::ContentLength);
    let cid = conversation_id(&mut d);
    let running = d.send_message(&cid, "count slowly");
    let queued = d.send_message(&cid, "and again");
    d.wait_first_chunk(&running, TURN);
    let asked = Instant::now();
    let status = d.shutdown(EXIT);
    let took = asked.elapsed();
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(took < Duration::from_secs(3), "Shutdown took {took:?}");
    for t in [&running, &queued] {
        let fin = d.wait_final(t, Duration::ZERO)["params"].clone();
        assert_eq!(fin["isSuccess"], false, "{fin}");
        assert_eq!(fin["error"]["kind"], "cancelled", "{fin}");
    }
    assert_eq!(
        fake.requests().len(),
        1,
        "the queued turn reached the provider"
    );
    strict_content_length_frames(&d.raw_stdout()).unwrap();
}

/// Starts `n` daemons on one data dir at once and asks each for its conversations;
/// returns the failures (stderr of a daemon that did not answer).
fn start_together(root: &Path, fake: &FakeOpenAi, n: usize) -> (Vec<Daemon>, Vec<String>) {
    let mut ds: Vec<Daemon> = (0..n)
        .map(|i| Daemon::spawn(&config(root, Framing::Lines, &format!("d{i}"), fake)))
        .collect();
    let mut failures = Vec::new();
    for d in ds.iter_mut() {
        let answered = d
            .try_send_raw(
                b"{\"jsonrpc\":\"2.0\",\"id\":\"list\",\"method\":\"ListConversations\"}\n",
            )
            .is_ok()
            && d.try_wait_for(
                |m| m["id"] == "list" && m.get("result").is_some(),
                Duration::from_secs(10),
            )
            .is_some();
        if !answered {
            failures.push(d.stderr_text());
        }
    }
    (ds, failures)
}

#[test]
fn two_daemons_share_a_data_dir() {
    let fake = fake(Behavior::reply("Shared.", 2));
    let dir = tempfile::tempdir().unwrap();
    // Create the history first (see the next test for a fresh folder).
    let mut d = Daemon::spawn(&config(dir.path(), Framing::Lines, "init", &fake));
    d.call("ListConversations", json!({}));
    d.close_stdin();
    assert!(d.wait_exit(EXIT).success());

    let (mut ds, failures) = start_together(dir.path(), &fake, 2);
    assert!(failures.is_empty(), "{failures:?}");
    let mut turns = Vec::new();
    for d in ds.iter_mut() {
        let mut mine = Vec::new();
        for _ in 0..3 {
            let conv = create_conversation(d);
            let cid = conv["conversationId"].as_str().unwrap().to_string();
            let turn_id = d.send_message(&cid, "shared history");
            mine.push((cid, turn_id));
        }
        turns.push(mine);
    }
    for (d, mine) in ds.iter_mut().zip(&turns) {
        for (_, turn_id) in mine {
            let fin = d.wait_final(turn_id, TURN)["params"].clone();
            assert_eq!(fin["isSuccess"], true, "{fin}");
        }
    }
    // Each sees the other's conversations.
    for d in ds.iter_mut() {
        let listed = d.call("ListConversations", json!({"pageSize": 100}));
        assert_eq!(
            listed["conversations"].as_array().unwrap().len(),
            6,
            "{listed}"
        );
        for (cid, _) in turns.iter().flatten() {
            assert_eq!(d.history(cid).len(), 2);
        }
    }
    for mut d in ds {
        assert!(d.shutdown(EXIT).success());
    }
}

#[test]
fn daemons_started_together_on_a_fresh_data_dir_all_start() {
    let fake = fake(Behavior::reply("unused", 1));
    for _ in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let (ds, failures) = start_together(dir.path(), &fake, 3);
        assert!(failures.is_empty(), "a daemon did not start: {failures:?}");
        drop(ds);
    }
}
