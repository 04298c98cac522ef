//! The terminal asks with what it will do: in a real terminal, a user lets the model fix a
//! project. Before the edit runs the terminal shows its diff, coloured, and before a command
//! the whole command line; after the turn, one line per changed file and the command that
//! undoes it, which puts the file back.

use crate::home::Home;
use crate::support::fake_openai::{Behavior, FakeOpenAi};
use crate::support::tmux::{self, Pane};

const CALC: &str = "def add(a, b):\n    return a - b\n";

#[test]
fn an_edit_shows_its_diff_and_a_command_its_line_before_the_question() {
    if !tmux::available() {
        return;
    }
    let mut home = Home::new();
    let fake = FakeOpenAi::start(0, Behavior::text("Fixed.")).unwrap();
    home.export("OPENAI_BASE_URL", &fake.base_url());
    home.export("OPENAI_API_KEY", "sk-journey");
    let project = home.path().join("proj");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("calc.py"), CALC).unwrap();

    let edit = serde_json::json!({
        "path": "calc.py", "old_text": "return a - b", "new_text": "return a + b"
    });
    let test = serde_json::json!({"command": "grep -n 'return' calc.py"});
    fake.push(Behavior::calls(
        "",
        &[("workspace__edit_file", &edit.to_string())],
    ));
    fake.push(Behavior::calls(
        "",
        &[("workspace__run_command", &test.to_string())],
    ));
    fake.push(Behavior::text("Fixed: add adds."));

    let mut ask =
        home.shell("cd proj && genai ask -m openai:gpt-journey --tools=workspace 'fix it'");
    ask.env("TERM", "xterm-256color");
    let pane = Pane::start(&ask);
    let screen = pane.wait_for_text("Allow?", 1);
    let at = screen.find("Edit calc.py").expect("the question's title");
    let question = &screen[at..];
    assert!(
        question.contains("-    return a - b") && question.contains("+    return a + b"),
        "{screen}"
    );
    assert!(question.find("+    return a + b") < question.find("Allow?"));
    // Coloured: the removed line red, the added one green.
    let coloured = pane.screen(true);
    assert!(
        coloured.contains("\x1b[31m-    return a - b")
            && coloured.contains("\x1b[32m+    return a + b"),
        "{coloured:?}"
    );
    pane.line("y");

    // The command, whole, before its own question.
    let screen = pane.wait_for_text("Allow?", 2);
    assert!(screen.contains("$ grep -n 'return' calc.py"), "{screen}");
    pane.line("y");
    let screen = pane.wait_for_text("[exited 0]", 1);
    assert!(screen.contains("Fixed: add adds."), "{screen}");
    assert!(screen.contains("genai: changed calc.py: +1 -1"), "{screen}");
    let undo = screen
        .lines()
        .find_map(|l| l.split("to put them back: ").nth(1))
        .unwrap_or_else(|| panic!("no undo command: {screen}"))
        .trim()
        .to_string();
    assert!(undo.starts_with("genai undo --turn "), "{undo}");
    assert_eq!(
        std::fs::read_to_string(project.join("calc.py")).unwrap(),
        CALC.replace("a - b", "a + b")
    );

    // The command it gave puts the file back.
    home.sh(&format!("cd proj && {undo}")).ok();
    assert_eq!(
        std::fs::read_to_string(project.join("calc.py")).unwrap(),
        CALC
    );
}
