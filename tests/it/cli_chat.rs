//! `genai chat` in a real terminal (a tmux pane): replies stream and render, slash commands
//! act (/file, /model handing over to another provider, /new), Ctrl-C cancels a reply and
//! nothing of it is stored, Ctrl-C at the prompt clears the line, Alt-Enter starts a new line
//! of the prompt, Ctrl-D leaves with 0, and `-c` goes on with the stored conversation. Also driven by a pipe, as a script would.
//! Against the fake OpenAI and Anthropic servers.

use std::time::Duration;

use serde_json::Value;

use crate::support::cli::{self, stderr, stdout, Folders};
use crate::support::fake_anthropic::{self, FakeAnthropic};
use crate::support::fake_openai::{Behavior, FakeOpenAi};
use crate::support::tmux::{self, Pane};

const REPLY: &str = "# Greeting\nHello **bold** world.\n```rust\nfn main() {}\n```\nDone.";

struct Env {
    dirs: Folders,
    openai: FakeOpenAi,
    anthropic: FakeAnthropic,
}

impl Env {
    fn new(openai: Behavior) -> Env {
        Env {
            dirs: Folders::new(),
            openai: FakeOpenAi::start(0, openai).unwrap(),
            anthropic: FakeAnthropic::start(fake_anthropic::Behavior::text("Claude takes over."))
                .unwrap(),
        }
    }

    fn chat(&self, args: &[&str]) -> std::process::Command {
        let mut c = self.dirs.genai(&[&["chat"], args].concat());
        c.env("OPENAI_BASE_URL", self.openai.base_url())
            .env("ANTHROPIC_BASE_URL", self.anthropic.base_url())
            .env("ANTHROPIC_API_KEY", fake_anthropic::KEY)
            .env_remove("NO_COLOR");
        c
    }

    /// The message counts of the stored conversations, smallest first.
    fn stored_counts(&self) -> Vec<i64> {
        let o = cli::output(self.dirs.genai(&["sessions", "list", "--json"]));
        let mut counts = cli::message_counts(&o);
        counts.sort();
        counts
    }
}

/// The text of each message of a recorded OpenAI or Anthropic request body.
fn texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            parts => parts
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect(),
        })
        .collect()
}

#[test]
fn replies_render_and_file_model_and_new_commands_act() {
    if !tmux::available() {
        return;
    }
    let env = Env::new(Behavior::reply(REPLY, 5));
    let pane = Pane::start(&env.chat(&["-m", "openai:gpt-a"]));
    pane.wait_for_text("gpt-a> ", 1);

    pane.line("Say hello");
    let screen = pane.wait_for_text("gpt-a> ", 2);
    // Drawn as Markdown: the heading and the emphasis without their marks, the code block
    // highlighted.
    assert!(
        screen.contains("\nGreeting\nHello bold world.\n"),
        "{screen}"
    );
    assert!(!screen.contains("**bold**"), "{screen}");
    let coloured = pane.screen(true);
    assert!(coloured.contains("\x1b[1mbold"), "{coloured:?}");
    let code = &coloured[coloured.find("fn").unwrap() - 30..];
    assert!(code.contains("38;2;"), "{code:?}");

    // /file: the file goes with the next prompt, as a fenced block after it.
    let file = env.dirs.data.path().join("notes.txt");
    std::fs::write(&file, "the sea is blue\n").unwrap();
    pane.line(&format!("/file {}", file.display()));
    pane.wait_for_text("goes with the next prompt", 1);
    pane.line("Read it");
    pane.wait_for_text("gpt-a> ", 4);
    let sent = texts(&env.openai.last().body);
    let last = sent.last().unwrap();
    assert!(last.starts_with("Read it\n\n"), "{last}");
    assert!(
        last.contains("notes.txt") && last.contains("the sea is blue"),
        "{last}"
    );

    // An unknown command gets a line and changes nothing.
    pane.line("/modle x");
    pane.wait_for_text("unknown command /modle", 1);

    // /model: Claude takes the whole conversation over and answers the next prompt.
    pane.line("/model anthropic:claude-x");
    pane.wait_for_text("now on anthropic:claude-x", 1);
    pane.line("And you?");
    let screen = pane.wait_for_text("claude-x> ", 2);
    assert!(screen.contains("Claude takes over."), "{screen}");
    let body = env.anthropic.last().body;
    assert_eq!(body["model"], "claude-x");
    let sent = texts(&body);
    assert_eq!(sent.len(), 5, "{sent:?}");
    assert_eq!(sent[0], "Say hello");
    assert_eq!(sent[4], "And you?");
    assert_eq!(env.openai.requests().len(), 2);

    // /new: a new conversation, and Ctrl-D leaves with 0.
    pane.line("/new");
    pane.wait_for_text("new conversation", 2);
    pane.keys(&["C-d"]);
    pane.wait_for_text("[exited 0]", 1);
    // The conversation /new opened had no turn: it was not kept.
    assert_eq!(env.stored_counts(), [6]);
}

#[test]
fn ctrl_c_cancels_a_reply_and_keeps_nothing_and_c_goes_on_with_the_conversation() {
    if !tmux::available() {
        return;
    }
    // One line in ten slow pieces: its start shows before the line ends.
    let slow = Behavior {
        delay: Duration::from_millis(400),
        ..Behavior::reply(
            "alpha beta gamma delta epsilon zeta eta theta iota kappa\n",
            10,
        )
    };
    let env = Env::new(slow);
    // A first turn that is kept: `-c` goes on with a conversation that has one.
    env.openai.push(Behavior::text("Hi."));
    let pane = Pane::start(&env.chat(&["-m", "openai:gpt-a"]));
    pane.wait_for_text("gpt-a> ", 1);
    pane.line("Say hi");
    pane.wait_for_text("gpt-a> ", 2);
    pane.line("Count slowly");
    pane.wait_for_text("alpha", 1);
    pane.keys(&["C-c"]);
    let screen = pane.wait_for_text("gpt-a> ", 3);
    assert!(
        screen.contains("cancelled: nothing of this turn is kept"),
        "{screen}"
    );
    assert!(!screen.contains("kappa"), "the reply went on: {screen}");
    pane.keys(&["C-d"]);
    pane.wait_for_text("[exited 0]", 1);
    assert_eq!(env.stored_counts(), [2]);
    drop(pane);

    // -c: the same conversation goes on. The input history was kept: Up brings the last
    // prompt back, and Ctrl-C at the prompt clears it.
    let kept = std::fs::read_to_string(env.dirs.data.path().join("chat-history.txt")).unwrap();
    assert!(kept.contains("Count slowly"), "{kept}");
    env.openai.set_default(Behavior::text("Back again."));
    let pane = Pane::start(&env.chat(&["-c"]));
    pane.wait_for_text("continuing conversation", 1);
    pane.wait_for_text("gpt-a> ", 1);
    pane.keys(&["Up"]);
    pane.wait_for_text("gpt-a> Count slowly", 1);
    pane.keys(&["C-c"]);
    pane.wait_for_text("gpt-a> ", 2);
    // Alt-Enter goes on to a new line of the same prompt.
    pane.keys(&["-l", "Ready?"]);
    pane.keys(&["M-Enter"]);
    pane.line("Go.");
    let screen = pane.wait_for_text("gpt-a> ", 3);
    assert!(screen.contains("Back again."), "{screen}");
    let body = env.openai.last().body;
    assert_eq!(body["model"], "gpt-a");
    assert_eq!(texts(&body), ["Say hi", "Hi.", "Ready?\nGo."]);
    pane.keys(&["C-d"]);
    pane.wait_for_text("[exited 0]", 1);
    assert_eq!(env.stored_counts(), [4]);
}

#[test]
fn piped_lines_are_prompts_and_commands_and_a_failure_sets_the_exit_code() {
    let env = Env::new(Behavior::text("Piped answer."));
    let o = cli::output_with_stdin(
        env.chat(&["-m", "openai:gpt-a"]),
        Some("first\n/bogus\n/system Be brief.\n/params temperature=0.5\nsecond \\\ncontinued\n/model\n"),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "Piped answer.\nPiped answer.\nopenai:gpt-a\n",
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("unknown command /bogus"),
        "{}",
        stderr(&o)
    );
    // /system and /params reach the next request.
    let body = env.openai.last().body;
    assert_eq!(body["temperature"], 0.5);
    assert_eq!(
        texts(&body),
        ["Be brief.", "first", "Piped answer.", "second \ncontinued"]
    );
    assert_eq!(env.stored_counts(), [4]);
}

#[test]
fn a_command_file_runs_as_a_slash_command_in_a_terminal() {
    if !tmux::available() {
        return;
    }
    let env = Env::new(Behavior::reply("Buongiorno.", 2));
    let project = tempfile::tempdir().unwrap();
    let commands = project.path().join(".genai/commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(
        commands.join("translate.md"),
        "---\ndescription: Translate the text\narguments:\n  - name: lang\n    default: French\n---\nTranslate into {{lang}}: {{args}}\n",
    )
    .unwrap();
    let mut c = env.chat(&["-m", "openai:gpt-a"]);
    c.current_dir(project.path());
    let pane = Pane::start(&c);
    pane.wait_for_text("gpt-a> ", 1);
    pane.line("/help");
    let screen = pane.wait_for_text("/translate", 1);
    assert!(screen.contains("Translate the text"), "{screen}");
    pane.line("/translate lang=Italian Good morning");
    let screen = pane.wait_for_text("Buongiorno.", 1);
    assert!(screen.contains("gpt-a> "), "{screen}");
    let sent = texts(&env.openai.last().body);
    assert_eq!(sent, ["Translate into Italian: Good morning"]);
    pane.line("/translate lagn=x");
    pane.wait_for_text("has no argument `lagn` (it takes lang)", 1);
    assert_eq!(env.openai.requests().len(), 1);
    pane.keys(&["C-d"]);
    pane.wait_for_text("[exited 0]", 1);
}
