//! A reply cut short is never silent: stopped at its token limit, or stopped by the local
//! engine's loop guard (which reports `repetition` on the OpenAI wire the local provider
//! speaks, the path the fake takes here), `genai ask` and `genai chat` say so in one line on
//! stderr, and the daemon reports `finishReason: "length"` with a note in its details.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::cli::{stderr, stdout, OpenAiCli};
use crate::support::fake_openai::{Behavior, FakeOpenAi, Mode};
use crate::support::rpc_client::{Daemon, DaemonConfig, Framing};

const TURN: Duration = Duration::from_secs(15);
const EXIT: Duration = Duration::from_secs(10);
const LOOPED: &str = "the reply was cut: it repeated itself";
const AT_LIMIT: &str = "the reply was cut: it reached its token limit (max_tokens)";

/// A reply of `text` that ends with `finish_reason`.
fn ending(text: &str, finish_reason: &'static str) -> Behavior {
    Behavior {
        mode: Mode::Finish(finish_reason),
        ..Behavior::text(text)
    }
}

#[test]
fn ask_and_chat_say_on_stderr_that_a_reply_was_cut() {
    let env = OpenAiCli::new();
    let reply = "of the mountain peaks of the mountain peaks";
    for (reason, note) in [("repetition", LOOPED), ("length", AT_LIMIT)] {
        for how in [None, Some("--no-stream")] {
            env.fake.push(ending(reply, reason));
            let mut args = vec!["ask", "-m", "openai:m", "Now make it about mountains"];
            args.extend(how);
            let o = env.run(&args, None);
            assert!(o.status.success(), "{reason} {how:?}: {}", stderr(&o));
            assert_eq!(stdout(&o), format!("{reply}\n"), "{reason} {how:?}");
            assert_eq!(stderr(&o), format!("genai: {note}\n"), "{reason} {how:?}");
        }
    }
    // `--json` tells scripts the reason clients know for a cut reply.
    env.fake.push(ending(reply, "repetition"));
    let o = env.run(&["ask", "--json", "-m", "openai:m", "again"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["finishReason"], "length", "{v}");
    assert_eq!(stderr(&o), format!("genai: {LOOPED}\n"));
    // The chat, piped: the same line after the reply.
    env.fake.push(ending(reply, "repetition"));
    let o = env.run(
        &["chat", "-m", "openai:m"],
        Some("Now make it about mountains\n"),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), format!("{reply}\n"));
    assert!(
        stderr(&o).lines().any(|l| l == format!("genai: {LOOPED}")),
        "{}",
        stderr(&o)
    );
    // A reply that ended on its own says nothing more.
    let o = env.run(&["ask", "-m", "openai:m", "hi"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
}

#[test]
fn the_daemon_reports_a_cut_reply_as_length_with_a_note_in_its_details() {
    let fake = FakeOpenAi::start(0, Behavior::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cfg = DaemonConfig::in_dir(dir.path(), Framing::Lines, "daemon")
        .env("OPENAI_BASE_URL", &fake.base_url())
        .env("OPENAI_API_KEY", "sk-test-dummy-key");
    let mut d = Daemon::spawn(&cfg);
    d.initialize("cut-replies", true);
    let (cid, _) = d.create_conversation(json!({"serviceProvider": "openai", "model": "m"}));
    for (reason, note) in [("repetition", LOOPED), ("length", AT_LIMIT)] {
        fake.push(ending("la la la", reason));
        let (_, fin) = d.turn(&cid, "Sing.", TURN);
        assert_eq!(fin["isSuccess"], true, "{fin}");
        assert_eq!(fin["finishReason"], "length", "{fin}");
        let details = fin["detailedResponse"].as_array().unwrap();
        assert!(details.iter().any(|l| l == note), "{reason}: {fin}");
    }
    let (_, fin) = d.turn(&cid, "Speak.", TURN);
    assert_eq!(fin["finishReason"], "stop", "{fin}");
    let details = fin["detailedResponse"].as_array().unwrap();
    assert!(
        details
            .iter()
            .all(|l| !l.as_str().unwrap().contains("was cut")),
        "{fin}"
    );
    assert!(d.shutdown(EXIT).success());
}
