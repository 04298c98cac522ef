//! `genai ask -c -m`: a conversation goes on with the same model, or another model takes its
//! whole history over; each turn's model is recorded. Against the fake OpenAI and Anthropic
//! servers, run as a user would.

use serde_json::Value;

use crate::support::cli::{self, stderr, Folders};
use crate::support::{fake_anthropic, fake_openai};

struct Env {
    dirs: Folders,
    openai: fake_openai::FakeOpenAi,
    anthropic: fake_anthropic::FakeAnthropic,
}

impl Env {
    fn new() -> Env {
        Env {
            dirs: Folders::new(),
            openai: fake_openai::FakeOpenAi::start(0, Default::default()).unwrap(),
            anthropic: fake_anthropic::FakeAnthropic::start(Default::default()).unwrap(),
        }
    }

    fn ask(&self, args: &[&str]) {
        let mut c = self.dirs.genai(&[&["ask"], args].concat());
        c.env("OPENAI_BASE_URL", self.openai.base_url())
            .env("ANTHROPIC_BASE_URL", self.anthropic.base_url())
            .env("ANTHROPIC_API_KEY", fake_anthropic::KEY);
        let o = cli::output_with_stdin(c, None);
        assert!(o.status.success(), "ask {args:?}: {}", stderr(&o));
    }

    fn store(&self) -> genai_core::store::Store {
        genai_core::store::Store::open(&self.dirs.data.path().join("history.db")).unwrap()
    }
}

fn last_body(requests: Vec<fake_openai::RecordedRequest>) -> Value {
    requests.last().expect("no request").body.clone()
}

#[test]
fn the_same_model_goes_on_and_another_takes_the_whole_history_over() {
    let env = Env::new();
    env.ask(&["-m", "openai:gpt-a", "-s", "Be terse.", "first"]);
    // -c with the same model: an ordinary continuation.
    env.ask(&["-c", "-m", "openai:gpt-a", "second"]);
    let body = last_body(env.openai.requests());
    assert_eq!(body["model"], "gpt-a");
    let texts: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        [
            "Be terse.",
            "first",
            "Hello from the fake provider.",
            "second"
        ]
    );

    // Another model of another provider and format: Claude gets the system prompt and all
    // four messages before the new one, in its own wire shape.
    let id = env.store().last_conversation().unwrap().unwrap();
    env.ask(&["--cid", &id[..10], "-m", "anthropic:claude-x", "third"]);
    let body = last_body(env.anthropic.requests());
    assert_eq!(body["model"], "claude-x");
    assert_eq!(body["system"], "Be terse.");
    let messages = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "user", "assistant", "user"],
        "{body}"
    );
    assert!(messages[4].to_string().contains("third"), "{body}");
    assert!(messages[0].to_string().contains("first"), "{body}");

    // The conversation now runs on Claude (plain -c goes on there), and each message names
    // the model of its turn.
    env.ask(&["-c", "fourth"]);
    assert_eq!(
        last_body(env.anthropic.requests())["messages"]
            .as_array()
            .unwrap()
            .len(),
        7
    );
    let store = env.store();
    let rec = store.conversation(&id).unwrap().unwrap();
    assert_eq!(
        (rec.provider.as_str(), rec.model.as_str()),
        ("anthropic", "claude-x")
    );
    assert_eq!(rec.format, "claude-messages");
    let (messages, _) = store.history(&id, 100, None).unwrap();
    let models: Vec<Option<&str>> = messages.iter().map(|m| m.model.as_deref()).collect();
    let (a, c) = (Some("gpt-a"), Some("claude-x"));
    assert_eq!(models, [a, a, a, a, c, c, c, c]);
}

#[test]
fn sessions_export_as_markdown_and_json_and_rename() {
    let env = Env::new();
    env.ask(&["-m", "openai:gpt-a", "first question"]);
    env.ask(&["-c", "-m", "anthropic:claude-x", "second question"]);
    let id = env.store().last_conversation().unwrap().unwrap();
    let sessions = |args: &[&str]| {
        let o = cli::output(env.dirs.genai(&[&["sessions"], args].concat()));
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        cli::stdout(&o)
    };
    let md = sessions(&["export", &id[..8]]);
    assert!(md.starts_with("# first question\n"), "{md}");
    for part in [
        "## user\n\nfirst question\n",
        "## assistant (openai:gpt-a)\n\nHello from the fake provider.\n",
        "## user\n\nsecond question\n",
        "## assistant (anthropic:claude-x)\n\nHello from the fake Claude.\n",
    ] {
        assert!(md.contains(part), "{part:?} in {md}");
    }
    let json: Value =
        serde_json::from_str(&sessions(&["export", &id, "--format", "json"])).unwrap();
    assert_eq!(json["conversation"]["id"], id.as_str());
    assert_eq!(json["messages"].as_array().unwrap().len(), 4);
    assert_eq!(json["messages"][3]["model"], "claude-x");

    // Listing filters: a model of any turn, and an age.
    assert!(sessions(&["list", "--model", "GPT-A"]).contains(&id));
    assert!(sessions(&["list", "--model", "claude", "--since", "1h"]).contains(&id));
    assert!(!sessions(&["list", "--model", "gemini"]).contains(&id));
    assert!(!sessions(&["list", "--since", "2999-01-01"]).contains(&id));
    let o = cli::output(env.dirs.genai(&["sessions", "list", "--since", "soon"]));
    cli::assert_fails_with(&o, 2, "--since takes a date");

    // Search: every word, highlighted (a pipe gets brackets), JSON for scripts.
    let found = sessions(&["search", "SECOND", "question"]);
    assert!(found.starts_with(&id), "{found}");
    assert!(found.contains("[user #3] [second] [question]"), "{found}");
    let found: Value = serde_json::from_str(&sessions(&["search", "fake", "--json"])).unwrap();
    assert_eq!(found.as_array().unwrap().len(), 2, "{found}");
    assert!(sessions(&["search", "absent"]).is_empty());

    sessions(&["rename", &id[..8], "Capitals, revisited"]);
    assert!(sessions(&["export", &id]).starts_with("# Capitals, revisited\n"));
    let o = cli::output(env.dirs.genai(&["sessions", "rename", &id, "  "]));
    cli::assert_fails_with(&o, 2, "empty");
}
