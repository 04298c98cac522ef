//! A long chat on the local demo model with a small context: a user who keeps telling the
//! model about files sees genai compact the conversation (a line on stderr) and the model go
//! on answering every prompt; afterwards `genai sessions show` still has every turn, and
//! `/compact` compacts at once and says what it did.

use crate::home::Home;

const DEMO: &str = "smollm2-135m-instruct-q4_1";
const TURNS: usize = 10;

fn prompt(i: usize) -> String {
    format!(
        "Note {i}: the file src/part{i}.rs holds the parser for format number {i}, and we decided to keep it as it is. Reply with one short sentence."
    )
}

#[test]
fn a_long_local_chat_compacts_goes_on_answering_and_keeps_every_turn() {
    let home = Home::new();
    let Some(()) = home.install_demo_model() else {
        return;
    };
    // A context of 512 tokens: a few turns overflow it.
    home.write_config(&format!(
        "[service_providers.small]\nkind = \"local\"\nmodel = \"{DEMO}\"\ncontext_size = 512\n\n[compaction]\nthreshold = 0.6\n"
    ));
    // `/compact` early, before the context asks for it; then on until it does.
    let mut input: String = (0..3).map(|i| prompt(i) + "\n").collect();
    input.push_str("/compact\n");
    input.extend((3..TURNS).map(|i| prompt(i) + "\n"));
    input.push_str("Which files did I name?\n");
    let chat = home
        .run_with_stdin(
            &[
                "chat",
                "-m",
                "small",
                "-p",
                "temperature=0",
                "-p",
                "max_tokens=24",
            ],
            &input,
        )
        .ok();
    let err = chat.stderr();
    let compactions: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("genai: compacted the "))
        .collect();
    // Once for /compact (the first turn of three), then on its own as the chat goes on.
    assert!(compactions.len() >= 2, "stderr:\n{err}");
    assert!(
        compactions[0].starts_with("genai: compacted the 1 earliest turn(s)"),
        "{err}"
    );
    assert!(
        compactions[0].contains("by the conversation's model")
            && compactions[0].contains("(the history keeps every turn)"),
        "{err}"
    );
    assert!(!err.contains("does not fit"), "{err}");

    // Every turn was answered and kept: the history shows them all.
    let list = home.run(&["sessions", "list", "--json"]).ok().stdout();
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    let id = list[0]["id"].as_str().unwrap().to_string();
    assert_eq!(
        list[0]["messageCount"].as_u64(),
        Some(2 * (TURNS as u64 + 1)),
        "every prompt and its answer: {list}"
    );
    let shown = home.run(&["sessions", "show", &id]).ok().stdout();
    for i in 0..TURNS {
        assert!(
            shown.contains(&format!("Note {i}: the file src/part{i}.rs")),
            "{shown}"
        );
    }
    assert!(shown.contains("Which files did I name?"), "{shown}");
    assert!(
        !shown.contains("Earlier in this conversation (summarised)"),
        "the summary is sent, never kept: {shown}"
    );
}
