//! Every listing command piped into `head -1`: the user sees one line, and genai ends quietly
//! when the pipe closes (no panic, not a word about the pipe, exit 0), as ripgrep does.

use crate::home::Home;
use crate::support::fake_openai::{Behavior, FakeOpenAi};

#[test]
fn every_listing_piped_into_head_ends_quietly() {
    let mut home = Home::new();
    // The models folder too has something to list.
    let Some(()) = home.install_demo_model() else {
        return;
    };
    let fake = FakeOpenAi::start(0, Behavior::text("A line.\n".repeat(2000).as_str())).unwrap();
    home.export("OPENAI_BASE_URL", &fake.base_url());
    home.export("OPENAI_API_KEY", "sk-journey");
    // Something in the history for the sessions commands to print.
    for q in ["first question", "second question"] {
        home.run(&["ask", "-m", "openai:fast", q]).ok();
    }
    let id = home.run(&["sessions", "list", "--json"]).ok().stdout();
    let id: serde_json::Value = serde_json::from_str(&id).unwrap();
    let id = id
        .as_array()
        .and_then(|a| a.first())
        .and_then(|c| c["id"].as_str())
        .expect("sessions list --json has an id")
        .to_string();

    let commands = [
        "genai params".to_string(),
        "genai sessions list".into(),
        format!("genai sessions show {id}"),
        "genai sessions search question".into(),
        format!("genai sessions export {id}"),
        "genai usage".into(),
        "genai components".into(),
        "genai keys list".into(),
        "genai config show".into(),
        "genai schema".into(),
        "genai models list".into(),
        "genai --help".into(),
        "genai ask -m openai:fast 'Write many lines'".into(),
    ];
    for command in commands {
        let run = home.sh(&format!("{command} | head -1"));
        assert_eq!(
            run.code(),
            Some(0),
            "`{command} | head -1`: stderr:\n{}",
            run.stderr()
        );
        // What a command says of itself (such as `keys list` noting that no keyring answers
        // here) may stay; nothing about the closed pipe may.
        for said in ["pipe", "panicked", "os error", "failed printing"] {
            assert!(
                !run.stderr().to_lowercase().contains(said),
                "`{command} | head -1` said {said:?}:\n{}",
                run.stderr()
            );
        }
        assert_eq!(run.stdout().lines().count(), 1, "`{command} | head -1`");
    }
}
