//! Prompts kept as files: a user with a config that names another provider, after a failed
//! turn, in a project that already holds their Claude Code commands, writes a genai command
//! with `genai commands new` and `edit` (a typo first, named with its line), pipes a diff into
//! `genai ask -t`, renders it with `commands show --render`, runs the Claude Code command
//! unchanged, uses both from `genai chat`, and lists everything through `| head -1`.

use crate::home::Home;
use crate::support::fake_openai::{Behavior, FakeOpenAi, Mode};

const CLAUDE_REVIEW: &str =
    "---\nallowed-tools: Bash(git diff:*)\nargument-hint: [pr] [priority]\ndescription: Review a PR\n---\nReview PR #$1 with priority $2.\n";

/// What the user's editor writes: an `EDITOR` that copies this text over the file.
fn editor_writing(home: &Home, name: &str, text: &str) -> String {
    let source = home.path().join(format!("{name}.txt"));
    std::fs::write(&source, text).unwrap();
    format!("cp {}", source.display())
}

/// The text of the last request's last message.
fn last_text(fake: &FakeOpenAi) -> String {
    let requests = fake.requests();
    let body = &requests.last().expect("a request").body;
    let last = body["messages"].as_array().unwrap().last().unwrap();
    match &last["content"] {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[test]
fn a_user_writes_a_command_once_and_runs_it_from_the_shell_and_the_chat() {
    let mut home = Home::new();
    let fake = FakeOpenAi::start(0, Behavior::text("feat: add the answer")).unwrap();
    home.export("OPENAI_BASE_URL", &fake.base_url());
    home.export("OPENAI_API_KEY", "sk-journey");
    home.write_config(
        "[service_providers.claude]\nkind = \"anthropic\"\napi_key = \"sk-ant-never-used\"\n\n[defaults]\nmodel = \"openai:gpt-journey\"\n",
    );
    let project = home.path().join("project");
    std::fs::create_dir_all(project.join(".claude/commands")).unwrap();
    std::fs::create_dir_all(project.join(".git")).unwrap();
    std::fs::write(project.join(".claude/commands/review.md"), CLAUDE_REVIEW).unwrap();
    let in_project = |line: &str| home.sh(&format!("cd project && {line}"));

    // A failed turn first: the server is down.
    fake.set_default(Behavior::mode(Mode::Error {
        status: 503,
        message: "overloaded".into(),
        code: String::new(),
    }));
    let failed = in_project("genai ask -t review 1 high");
    assert_eq!(failed.code(), Some(1), "{}", failed.stderr());
    fake.set_default(Behavior::text("feat: add the answer"));

    // A new command file, in the repository's .genai/commands.
    let new = in_project("genai commands new commit").ok();
    let path = project.join(".genai/commands/commit.md");
    assert_eq!(new.stdout().trim(), path.display().to_string());
    // The user's first edit has a typo: the edit says where, and the command will not run.
    let typo = "---\ndescription: Commit message\nparamters:\n  temperature: 0.1\n---\nWrite the commit message for this diff.\n\n{{input}}\n";
    let edit = editor_writing(&home, "typo", typo);
    let said = in_project(&format!("EDITOR='{edit}' genai commands edit commit"));
    assert_eq!(said.code(), Some(2), "{}", said.stderr());
    assert!(
        said.stderr()
            .contains("commit.md:3: front matter: unknown field `paramters`"),
        "{}",
        said.stderr()
    );
    let before = fake.requests().len();
    in_project("echo diff | genai ask -t commit").fails(2, "unknown field `paramters`");
    assert_eq!(fake.requests().len(), before, "a bad command sends nothing");
    let fixed = typo.replace("paramters", "parameters");
    let edit = editor_writing(&home, "fixed", &fixed);
    in_project(&format!("EDITOR='{edit}' genai commands edit commit")).ok();

    // The diff piped in, the reply piped into head: quiet, exact.
    let diff = "diff --git a/src/lib.rs b/src/lib.rs\n+pub fn answer() -> u32 { 42 }";
    std::fs::write(project.join("change.diff"), diff).unwrap();
    let run = in_project("genai ask -t commit < change.diff | head -1").ok();
    assert_eq!(run.stdout(), "feat: add the answer\n");
    let sent = last_text(&fake);
    assert_eq!(
        sent,
        format!("Write the commit message for this diff.\n\n{diff}")
    );
    assert_eq!(fake.requests().last().unwrap().body["temperature"], 0.1);
    // What `show --render` prints is what was sent.
    let rendered = in_project("genai commands show commit --render < change.diff").ok();
    assert_eq!(rendered.stdout(), format!("{sent}\n"));

    // The Claude Code command, unchanged.
    in_project("genai ask -t review 12 high").ok();
    assert_eq!(last_text(&fake), "Review PR #12 with priority high.");

    // Both from a chat, in one conversation.
    in_project("printf '/commit the API changed\\n/review 3 low\\n' | genai chat").ok();
    let requests = fake.requests();
    let n = requests.len();
    assert_eq!(
        last_text(&fake),
        "Review PR #3 with priority low.",
        "{:?}",
        requests[n - 1].body
    );
    let chat_first = &requests[n - 2].body["messages"];
    let chat_first = chat_first.as_array().unwrap().last().unwrap()["content"].clone();
    assert_eq!(
        chat_first,
        "Write the commit message for this diff.\n\nthe API changed"
    );

    // Listings piped into head end quietly; the history has the turns.
    for line in [
        "genai commands list | head -1",
        "genai commands show review | head -1",
    ] {
        let run = in_project(line);
        assert_eq!(run.code(), Some(0), "{line}: {}", run.stderr());
        assert!(!run.stderr().contains("panicked"), "{}", run.stderr());
    }
    let listed = in_project("genai commands list").ok().stdout();
    assert!(
        listed.contains("commit") && listed.contains("review"),
        "{listed}"
    );
    let sessions = home.run(&["sessions", "list", "--json"]).ok().stdout();
    let sessions: serde_json::Value = serde_json::from_str(&sessions).unwrap();
    assert!(sessions.as_array().unwrap().len() >= 3, "{sessions}");
    // The other provider's key went nowhere.
    for r in fake.requests() {
        assert!(!r.body.to_string().contains("sk-ant-never-used"));
    }
}
