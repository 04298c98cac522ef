//! Continue after a failed turn: a turn that fails keeps nothing, `-c` goes on with the last
//! conversation that has something in it, and the listings show no empty conversations.

use crate::home::Home;
use crate::support::fake_openai::{Behavior, FakeOpenAi, Mode};

#[test]
fn a_failed_turn_is_not_what_continue_picks_up() {
    let mut home = Home::new();
    let fake = FakeOpenAi::start(0, Behavior::text("Nice to meet you, Zed.")).unwrap();
    home.export("OPENAI_BASE_URL", &fake.base_url());
    home.export("OPENAI_API_KEY", "sk-journey");

    home.run(&["ask", "-m", "openai:fast", "My name is Zed"])
        .ok();

    // The next question fails on the server's side: the user is told, with exit code 1.
    // (Every retry fails too.)
    fake.set_default(Behavior::mode(Mode::Error {
        status: 500,
        message: "the server broke".into(),
        code: String::new(),
    }));
    let failed = home.run(&["ask", "-m", "openai:fast", "Tell me a joke"]);
    assert_ne!(failed.code(), Some(0), "a 500 must not look like success");
    assert!(
        failed.stderr().contains("the server broke"),
        "stderr: {}",
        failed.stderr()
    );

    fake.set_default(Behavior::text("Your name is Zed."));

    // `-c` continues the conversation that has the name in it.
    home.run(&["ask", "-c", "What is my name?"]).ok();
    let asked = fake.last().body.to_string();
    assert!(
        asked.contains("My name is Zed"),
        "-c lost the history: {asked}"
    );
    assert!(
        !asked.contains("Tell me a joke"),
        "-c took the failed turn: {asked}"
    );

    // One conversation is listed, with a title; nothing untitled or empty.
    let list = home.run(&["sessions", "list"]).ok().stdout();
    assert!(!list.contains("(untitled)"), "sessions list:\n{list}");
    let rows = list.lines().filter(|l| l.contains("Zed")).count();
    assert_eq!(rows, 1, "sessions list:\n{list}");
}
