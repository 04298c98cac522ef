//! Chat in a real terminal across `/model`: the local model answers first, then the user hands
//! the conversation to the company server the config names, and the server sees what was said
//! before; the local model is still reachable by name afterwards.

use crate::home::Home;
use crate::support::fake_openai::{Behavior, FakeOpenAi};
use crate::support::tmux::{self, Pane};

#[test]
fn chat_starts_locally_and_hands_over_to_a_configured_server() {
    if !tmux::available() {
        return;
    }
    let home = Home::new();
    let Some(()) = home.install_demo_model() else {
        return;
    };
    let corp = FakeOpenAi::start(0, Behavior::text("Corp has it.")).unwrap();
    home.write_config(&format!(
        "[service_providers.corp]\nkind = \"openai\"\nbase_url = \"{}\"\napi_key = \"corp-key\"\n",
        corp.base_url()
    ));

    let mut chat = home.genai(&["chat", "-m", "local", "-p", "max_tokens=8"]);
    chat.env("TERM", "xterm-256color");
    let pane = Pane::start(&chat);
    pane.line("Remember the word kiwi.");
    // The local model answers something; then the prompt comes back.
    pane.wait_for("the local reply and the next prompt", |s| {
        s.lines().filter(|l| l.contains("> ")).count() >= 2
    });

    pane.line("/model corp:corp-model");
    pane.wait_for_text("now on corp:corp-model", 1);
    pane.line("Which word?");
    pane.wait_for_text("Corp has it.", 1);
    let body = corp.last().body.to_string();
    assert!(
        body.contains("kiwi"),
        "the server did not get the history: {body}"
    );

    pane.keys(&["C-d"]);
    pane.wait_for_text("[exited 0]", 1);
}
