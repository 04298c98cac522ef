//! A user plans a change before making it: `genai ask --mode plan` reads the project, its edit
//! is refused saying how to carry the plan out, and the plan shows as a checklist; then
//! `genai ask -c --mode edit "go"` carries it out, the checklist ticking as steps finish, and
//! the file changes only then.

use crate::home::Home;
use crate::support::fake_openai::{Behavior, FakeOpenAi};

const LIB: &str = "pub fn answer() -> u32 {\n    41\n}\n";

fn call(tool: &str, args: serde_json::Value) -> Behavior {
    Behavior::calls("", &[(tool, &args.to_string())])
}

fn plan(read: &str, bump: &str) -> Behavior {
    call(
        "workspace__plan",
        serde_json::json!({"entries": [
            {"content": "Read src/lib.rs", "status": read},
            {"content": "Return 42 from answer()", "status": bump, "priority": "high"}
        ]}),
    )
}

#[test]
fn a_plan_made_in_plan_mode_is_carried_out_in_edit_mode() {
    let mut home = Home::new();
    let fake = FakeOpenAi::start(0, Behavior::text("ok")).unwrap();
    home.export("OPENAI_BASE_URL", &fake.base_url());
    home.export("OPENAI_API_KEY", "sk-plan-journey-key");
    home.write_config("[defaults]\nmodel = \"openai:gpt-plan\"\n");
    let project = home.path().join("project");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(project.join("src/lib.rs"), LIB).unwrap();
    let edit = serde_json::json!({"path": "src/lib.rs", "old_text": "41", "new_text": "42"});
    let in_project = |line: &str| home.sh(&format!("cd project && setsid -w {line}"));

    // Planning: the model reads, tries an edit (refused), then answers with its plan.
    fake.push(call(
        "workspace__read_file",
        serde_json::json!({"path": "src/lib.rs"}),
    ));
    fake.push(call("workspace__edit_file", edit.clone()));
    fake.push(plan("pending", "pending"));
    fake.push(Behavior::text("Plan ready: two steps."));
    let planned = in_project(
        "genai ask --tools=workspace --mode plan 'Make answer() return 42'; echo \"exit=$?\"",
    );
    let (out, err) = (planned.stdout(), planned.stderr());
    assert!(out.contains("Plan ready: two steps."), "{out}{err}");
    // A refused call ends the run with exit code 5, as in CI; nothing changed.
    assert!(out.contains("exit=5"), "{out}{err}");
    assert!(
        err.contains("Plan:\n  [ ] Read src/lib.rs\n  [ ] Return 42 from answer() (high)\n"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(project.join("src/lib.rs")).unwrap(),
        LIB
    );

    // Carrying it out: the steps tick as they finish, and the file changes.
    fake.push(plan("completed", "in_progress"));
    fake.push(call("workspace__edit_file", edit));
    fake.push(plan("completed", "completed"));
    fake.push(Behavior::text("Done: answer() returns 42."));
    let done = in_project("genai ask -c --mode edit go").ok();
    let err = done.stderr();
    let ticking = err.find("  [x] Read src/lib.rs\n  [~] Return 42 from answer() (high)\n");
    let ticked = err.find("  [x] Read src/lib.rs\n  [x] Return 42 from answer() (high)\n");
    assert!(
        matches!((ticking, ticked), (Some(a), Some(b)) if a < b),
        "{err}"
    );
    assert!(done.stdout().contains("Done: answer() returns 42."));
    assert_eq!(
        std::fs::read_to_string(project.join("src/lib.rs")).unwrap(),
        LIB.replace("41", "42")
    );
}
