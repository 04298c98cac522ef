//! A CI job runs genai unattended: no terminal, the key in the environment, a config that
//! already names another provider. It follows the run's event stream with `jq` as it comes,
//! the run reaches its step budget after an edit and ends with exit code 4, the turn is in
//! the history and `genai undo` puts the file back; a run whose call the policy refuses says
//! once which rule would allow it and ends with exit code 5.

use crate::home::Home;
use crate::support::fake_openai::{Behavior, FakeOpenAi};

const LIB: &str = "pub fn answer() -> u32 {\n    41\n}\n";
const KEY: &str = "sk-ci-journey-key-0042";

fn call(tool: &str, args: serde_json::Value) -> Behavior {
    Behavior::calls("", &[(tool, &args.to_string())])
}

#[test]
fn a_ci_job_follows_the_event_stream_reaches_its_budget_and_undoes_the_edit() {
    let mut home = Home::new();
    let fake = FakeOpenAi::start(0, Behavior::text("ok")).unwrap();
    home.export("OPENAI_BASE_URL", &fake.base_url());
    home.export("OPENAI_API_KEY", KEY);
    home.write_config(
        "[service_providers.claude]\nkind = \"anthropic\"\napi_key = \"sk-ant-never-used\"\n\n[defaults]\nmodel = \"openai:gpt-ci\"\n",
    );
    let project = home.path().join("project");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(project.join("src/lib.rs"), LIB).unwrap();
    let edit = serde_json::json!({"path": "src/lib.rs", "old_text": "41", "new_text": "42"});
    let in_project = |line: &str| home.sh(&format!("cd project && setsid -w {line}"));

    // The model edits, then wants to go on: the budget of one round stops it.
    fake.push(call("workspace__edit_file", edit.clone()));
    fake.push(call(
        "workspace__read_file",
        serde_json::json!({"path": "src/lib.rs"}),
    ));
    let run = in_project(
        "genai ask --tools=workspace --mode edit --max-steps 1 --output-format stream-json 'Fix the answer' > events.jsonl; echo \"exit=$?\"",
    )
    .ok();
    assert!(run.stdout().contains("exit=4"), "{}", run.stderr());
    assert!(
        run.stderr()
            .contains("budget reached: 1 rounds of tool calls"),
        "{}",
        run.stderr()
    );
    let events = std::fs::read_to_string(project.join("events.jsonl")).unwrap();
    assert!(!events.contains(KEY), "the key reached the event stream");
    let changed = in_project(
        "jq -r 'select(.type == \"file_changed\") | \"\\(.path | split(\"/\") | last) +\\(.added) -\\(.removed)\"' events.jsonl",
    )
    .ok();
    assert_eq!(changed.stdout(), "lib.rs +1 -1\n");
    let result =
        in_project("tail -n 1 events.jsonl | jq -c '[.type, .status, .exitCode, .budget]'").ok();
    assert_eq!(
        result.stdout(),
        "[\"result\",\"budget_reached\",4,\"max-steps\"]\n"
    );
    assert_eq!(
        std::fs::read_to_string(project.join("src/lib.rs")).unwrap(),
        LIB.replace("41", "42")
    );
    // The turn is stored; undo puts the file back.
    let cid = in_project("jq -r 'select(.type == \"start\") | .conversationId' events.jsonl")
        .ok()
        .stdout();
    let shown = home.run(&["sessions", "show", cid.trim()]).ok();
    assert!(
        shown.stdout().contains("Fix the answer"),
        "{}",
        shown.stdout()
    );
    in_project("genai undo").ok();
    assert_eq!(
        std::fs::read_to_string(project.join("src/lib.rs")).unwrap(),
        LIB
    );

    // Streamed straight into jq: a command the policy asks about is refused with no terminal,
    // the rule is said once though the model asks twice, and the exit code is 5.
    let command = serde_json::json!({"command": "cargo clippy"});
    fake.push(call("workspace__run_command", command.clone()));
    fake.push(call("workspace__run_command", command));
    fake.push(Behavior::text("I could not run clippy."));
    let piped = in_project(
        "genai ask --tools=workspace --mode edit --output-format stream-json 'Run clippy' | jq -c 'select(.type == \"permission\") | .decision'; echo \"exit=${PIPESTATUS[0]}\"",
    )
    .ok();
    assert_eq!(
        piped.stdout(),
        "\"deny\"\n\"deny\"\nexit=5\n",
        "{}",
        piped.stderr()
    );
    assert_eq!(
        piped
            .stderr()
            .matches("--allow 'workspace.run_command(cargo clippy")
            .count(),
        1,
        "{}",
        piped.stderr()
    );
}
