//! A user hands work to two subagents at once: a Claude Code definition they already had
//! (`.claude/agents/`) and one of genai's (`.genai/agents/`). `genai agents list` shows both;
//! one `genai ask` in edit mode makes the model start both, which run at once (the fake holds
//! their first requests until both came). The test writer's new file is a change of the
//! parent's turn, so `genai undo` takes it back; the auditor's read of `.env` is refused and
//! said under its task in the event stream, and the parent still answers.

use serde_json::json;

use crate::home::Home;
use crate::support::fake_openai::{Behavior, FakeOpenAi, Gate, RecordedRequest};

const AUDITOR: &str = "---\nname: auditor\ndescription: Audits secrets handling\ntools: Read, Grep, Glob\nmodel: haiku\n---\nYou are the auditor. Check how secrets are read.\n";
const TESTER: &str = "---\ndescription: Writes tests\ntools: [read_file, write_file]\n---\nYou are the tester. Write a test for what you are given.\n";

fn calls(calls: &[(&str, &str, serde_json::Value)]) -> Behavior {
    Behavior {
        reply: String::new(),
        tool_calls: calls
            .iter()
            .map(|(id, name, args)| (id.to_string(), name.to_string(), args.to_string()))
            .collect(),
        ..Behavior::default()
    }
}

/// The model's script: the parent starts both subagents, each acts once, then answers.
fn script(r: &RecordedRequest, gate: &Gate) -> (Behavior, Option<Gate>) {
    let text = r.body["messages"].to_string();
    let answered = text.contains("\"role\":\"tool\"");
    let write = json!({"path": "tests/answer.rs", "content": "#[test]\nfn answer() {}\n"});
    match (
        text.contains("You are the auditor"),
        text.contains("You are the tester"),
        answered,
    ) {
        (true, _, false) => {
            let read = calls(&[("a1", "workspace__read_file", json!({"path": ".env"}))]);
            (read, Some(gate.clone()))
        }
        (_, true, false) => {
            let written = calls(&[("t1", "workspace__write_file", write)]);
            (written, Some(gate.clone()))
        }
        (true, _, true) => (Behavior::text("The .env file is protected."), None),
        (_, true, true) => (Behavior::text("Wrote tests/answer.rs."), None),
        (false, false, false) => (
            calls(&[
                (
                    "audit",
                    "workspace__task",
                    json!({"agent": "auditor", "prompt": "Audit .env use"}),
                ),
                (
                    "test",
                    "workspace__task",
                    json!({"agent": "tester", "prompt": "Test answer()"}),
                ),
            ]),
            None,
        ),
        (false, false, true) => (Behavior::text("Audited and tested."), None),
    }
}

#[test]
fn two_subagents_work_at_once_one_refused_and_the_test_they_wrote_is_undone() {
    let mut home = Home::new();
    let fake = FakeOpenAi::start(0, Behavior::text("ok")).unwrap();
    let gate = Gate::new(2);
    fake.wire().route(move |r| Some(script(r, &gate)));
    home.export("OPENAI_BASE_URL", &fake.base_url());
    home.export("OPENAI_API_KEY", "sk-journey-subagents");
    home.write_config("[defaults]\nmodel = \"openai:gpt-journey\"\n");
    let project = home.path().join("project");
    for dir in [".git", "src", ".claude/agents", ".genai/agents"] {
        std::fs::create_dir_all(project.join(dir)).unwrap();
    }
    std::fs::write(
        project.join("src/lib.rs"),
        "pub fn answer() -> u32 { 42 }\n",
    )
    .unwrap();
    std::fs::write(project.join(".env"), "DB_PASSWORD=hunter2-journey\n").unwrap();
    std::fs::write(project.join(".claude/agents/auditor.md"), AUDITOR).unwrap();
    std::fs::write(project.join(".genai/agents/tester.md"), TESTER).unwrap();
    let in_project = |line: &str| home.sh(&format!("cd project && setsid -w {line}"));

    let listed = in_project("genai agents list").ok();
    assert!(listed.stdout().contains("auditor"), "{}", listed.stdout());
    assert!(listed.stdout().contains("tester"), "{}", listed.stdout());

    let run = in_project(
        "genai ask --tools=workspace --mode edit --output-format stream-json 'Audit and test' > events.jsonl; echo \"exit=$?\"",
    )
    .ok();
    // The refused read makes the run end as refused; the parent answered all the same.
    assert!(run.stdout().contains("exit=5"), "{}", run.stderr());
    let reply = in_project("tail -n 1 events.jsonl | jq -r .reply").ok();
    assert_eq!(reply.stdout(), "Audited and tested.\n");
    let denied = in_project(
        "jq -r 'select(.type == \"permission\" and .decision == \"deny\") | \"\\(.subagent) \\(.parent_tool_use_id) \\(.subject)\"' events.jsonl",
    )
    .ok();
    assert_eq!(denied.stdout(), "auditor audit .env\n");
    let answers = in_project(
        "jq -r 'select(.type == \"tool_result\" and .name == \"workspace.task\") | \"\\(.id): \\(.output)\"' events.jsonl | sort",
    )
    .ok();
    assert_eq!(
        answers.stdout(),
        "audit: The .env file is protected.\ntest: Wrote tests/answer.rs.\n"
    );
    let changed = in_project(
        "jq -r 'select(.type == \"file_changed\") | \"\\(.subagent) \\(.path | split(\"/\") | last)\"' events.jsonl",
    )
    .ok();
    assert_eq!(changed.stdout(), "tester answer.rs\n");
    let events = std::fs::read_to_string(project.join("events.jsonl")).unwrap();
    assert!(
        !events.contains("hunter2-journey"),
        "the secret reached the stream"
    );
    assert!(project.join("tests/answer.rs").exists());

    // The subagent's file is a change of the parent's turn: undo takes it back.
    in_project("genai undo").ok();
    assert!(!project.join("tests/answer.rs").exists());
}

/// The summariser's script: the parent hands it a task, it answers, the parent sums up.
fn summary_script(r: &RecordedRequest) -> Behavior {
    let text = r.body["messages"].to_string();
    match (
        text.contains("You summarise"),
        text.contains("\"role\":\"tool\""),
    ) {
        (true, _) => Behavior::text("Two functions, both tested."),
        (false, false) => calls(&[(
            "sum",
            "workspace__task",
            json!({"agent": "summariser", "prompt": "Summarise src/lib.rs"}),
        )]),
        (false, true) => Behavior::text("Summed up."),
    }
}

#[test]
fn a_subagent_on_a_model_without_a_key_fails_its_task_then_runs_on_the_cheaper_agent_named() {
    let mut home = Home::new();
    let fake = FakeOpenAi::start(0, Behavior::text("ok")).unwrap();
    fake.wire().route(|r| Some((summary_script(r), None)));
    home.export("OPENAI_BASE_URL", &fake.base_url());
    home.export("OPENAI_API_KEY", "sk-journey-subagent-model");
    home.write_config(
        "[defaults]\nmodel = \"openai:gpt-journey\"\n\n[agents.cheap]\nprovider = \"openai\"\nmodel = \"gpt-cheap\"\n",
    );
    let project = home.path().join("project");
    std::fs::create_dir_all(project.join(".genai/agents")).unwrap();
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(project.join("src/lib.rs"), "pub fn a() {}\npub fn b() {}\n").unwrap();
    let definition = |model: &str| {
        let text = format!(
            "---\ndescription: Summarises code\nmodel: {model}\ntools: [read_file]\n---\nYou summarise code.\n"
        );
        std::fs::write(project.join(".genai/agents/summariser.md"), text).unwrap();
    };
    let in_project = |line: &str| home.sh(&format!("cd project && setsid -w {line}"));

    // First written for a model the user has no key for: the task fails with the reason, and
    // the parent's turn goes on and answers.
    definition("anthropic:claude-journey");
    let shown = in_project("genai agents show summariser").ok();
    assert!(
        shown.stdout().contains("model: anthropic:claude-journey"),
        "{}",
        shown.stdout()
    );
    let first = in_project(
        "genai ask --tools=workspace --json 'Summarise the code' > first.json; echo \"exit=$?\"",
    )
    .ok();
    assert!(first.stdout().contains("exit=0"), "{}", first.stderr());
    let failed = in_project("jq -r .reply first.json").ok();
    assert_eq!(failed.stdout(), "Summed up.\n");
    let task = fake
        .requests()
        .into_iter()
        .find(|r| r.body["messages"].to_string().contains("\"role\":\"tool\""))
        .expect("the parent got the task's result");
    let result = task.body["messages"].to_string();
    assert!(
        result.contains("claude-journey") && result.contains("ANTHROPIC_API_KEY"),
        "the task's error names the model and the missing key: {result}"
    );
    assert!(!fake
        .requests()
        .iter()
        .any(|r| r.body["model"] == "claude-journey"));

    // Pointed at an agent of the config: the subagent's requests go to that model.
    definition("cheap");
    let before = fake.requests().len();
    let second = in_project("genai ask --tools=workspace 'Summarise the code'").ok();
    assert_eq!(second.stdout(), "Summed up.\n");
    let models: Vec<String> = fake.requests()[before..]
        .iter()
        .map(|r| {
            let who = match r.body["messages"].to_string().contains("You summarise") {
                true => "subagent",
                false => "parent",
            };
            format!("{who} {}", r.body["model"].as_str().unwrap())
        })
        .collect();
    assert_eq!(
        models,
        [
            "parent gpt-journey",
            "subagent gpt-cheap",
            "parent gpt-journey"
        ]
    );
}
