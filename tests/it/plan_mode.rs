//! Plan mode driven from outside: `genai ask --mode plan` against a scripted model (the OpenAI
//! fake answers each request with the next queued tool calls) in a fixture repository, with no
//! terminal. In plan mode an edit is refused saying how to carry the plan out, the model's
//! `plan` tool call is a `plan` event of stream-json (checked against its schema) and a
//! checklist on stderr; then `genai ask -c --mode edit "go"` finds the plan in the history and
//! carries it out, each status update an event.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::{json, Value};

use crate::support::cli::{self, OpenAiCli};
use crate::support::fake_openai::Behavior;

const LIB: &str = "pub fn answer() -> u32 {\n    41\n}\n";

/// A fixture repository and genai's folders, the model a fake.
struct Repo {
    env: OpenAiCli,
    base: tempfile::TempDir,
}

impl Repo {
    fn new() -> Repo {
        let base = tempfile::tempdir().unwrap();
        let repo = base.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("src")).unwrap();
        std::fs::write(repo.join("src/lib.rs"), LIB).unwrap();
        Repo {
            env: OpenAiCli::new(),
            base,
        }
    }

    fn lib(&self) -> String {
        std::fs::read_to_string(self.base.path().join("repo/src/lib.rs")).unwrap()
    }

    /// The model answers with each of `calls` (workspace tool, arguments), one request each,
    /// then with `reply`.
    fn script(&self, calls: &[(&str, Value)], reply: &str) {
        for (tool, args) in calls {
            let wire = format!("workspace__{tool}");
            self.env
                .fake
                .push(Behavior::calls("", &[(wire.as_str(), &args.to_string())]));
        }
        self.env.fake.push(Behavior::text(reply));
    }

    /// `genai ARGS` in the repository, in its own session (no terminal to ask on).
    fn genai(&self, args: &[&str]) -> Output {
        let mut c: Command = self.env.cmd(args);
        c.current_dir(self.base.path().join("repo"));
        // SAFETY: setsid is async-signal-safe; it only detaches the child from the terminal.
        unsafe {
            c.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        cli::output(c)
    }
}

/// Each line of `stdout` as JSON, checked against `schemas/stream-event.json`.
pub(crate) fn events(o: &Output) -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schemas/stream-event.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    cli::stdout(o)
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).unwrap();
            let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{line} does not match: {errors:?}");
            v
        })
        .collect()
}

pub(crate) fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn plan(steps: &[(&str, &str)]) -> Value {
    let entries: Vec<Value> = steps
        .iter()
        .map(|(content, status)| json!({"content": content, "status": status}))
        .collect();
    json!({ "entries": entries })
}

const READ: &str = "Read src/lib.rs";
const BUMP: &str = "Make answer() return 42";

fn edit() -> Value {
    json!({"path": "src/lib.rs", "old_text": "41", "new_text": "42"})
}

/// Whether a request's messages hold a call of the `plan` tool.
fn sends_a_plan_call(body: &Value) -> bool {
    body["messages"].as_array().unwrap().iter().any(|m| {
        m["tool_calls"].as_array().is_some_and(|calls| {
            calls
                .iter()
                .any(|c| c["function"]["name"] == "workspace__plan")
        })
    })
}

#[test]
fn plan_mode_refuses_an_edit_and_streams_the_plan_then_edit_mode_carries_it_out() {
    let r = Repo::new();
    let pending = plan(&[(READ, "pending"), (BUMP, "pending")]);
    r.script(
        &[
            ("read_file", json!({"path": "src/lib.rs"})),
            ("edit_file", edit()),
            ("plan", pending.clone()),
        ],
        "The plan: read the function, then bump it.",
    );
    let o = r.genai(&[
        "ask",
        "--tools=workspace",
        "-m",
        "openai:gpt-test",
        "--mode",
        "plan",
        "--output-format",
        "stream-json",
        "Plan the fix",
    ]);
    let seen = events(&o);
    // The refused edit ends the run as refused (exit 5): nothing was changed.
    assert_eq!(o.status.code(), Some(5), "{}", cli::stderr(&o));
    assert_eq!(r.lib(), LIB);
    let decided = of_type(&seen, "permission");
    assert_eq!(decided.len(), 3, "{seen:?}");
    assert_eq!(decided[0]["decision"], "allow");
    assert_eq!(decided[1]["name"], "workspace.edit_file");
    assert_eq!(decided[1]["decision"], "deny");
    let by = decided[1]["by"].as_str().unwrap();
    assert!(
        by.starts_with("plan mode:") && by.contains("--mode edit"),
        "{by}"
    );
    assert_eq!(decided[2]["name"], "workspace.plan");
    assert_eq!(decided[2]["decision"], "allow");
    let plans = of_type(&seen, "plan");
    assert_eq!(plans.len(), 1, "{seen:?}");
    assert_eq!(plans[0]["entries"], pending["entries"]);
    let results = of_type(&seen, "tool_result");
    assert_eq!(results[1]["isError"], true);
    assert_eq!(results[2]["isError"], false);

    // The model was told it plans, and offered the plan tool beside the workspace's.
    let requests = r.env.fake.requests();
    let first = &requests[0].body;
    let asked = first["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(asked["role"], "user");
    assert!(
        asked.to_string().contains("You are in plan mode"),
        "{first}"
    );
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"workspace__plan") && tools.contains(&"workspace__edit_file"));

    // `-c --mode edit "go"`: the plan is in what is sent, and each update is an event.
    let asked_before = requests.len();
    r.script(
        &[
            ("plan", plan(&[(READ, "completed"), (BUMP, "in_progress")])),
            ("edit_file", edit()),
            ("plan", plan(&[(READ, "completed"), (BUMP, "completed")])),
        ],
        "Done: answer() returns 42.",
    );
    let o = r.genai(&[
        "ask",
        "-c",
        "--mode",
        "edit",
        "--output-format",
        "stream-json",
        "go",
    ]);
    let seen = events(&o);
    assert_eq!(o.status.code(), Some(0), "{}", cli::stderr(&o));
    assert_eq!(r.lib(), LIB.replace("41", "42"));
    let requests = r.env.fake.requests();
    let go = &requests[asked_before].body;
    assert!(
        sends_a_plan_call(go),
        "the plan is not in what is sent: {go}"
    );
    let asked = go["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(asked["content"], "go", "{go}");
    let statuses: Vec<Vec<&str>> = of_type(&seen, "plan")
        .iter()
        .map(|p| {
            let entries = p["entries"].as_array().unwrap();
            entries
                .iter()
                .map(|e| e["status"].as_str().unwrap())
                .collect()
        })
        .collect();
    assert_eq!(
        statuses,
        [
            vec!["completed", "in_progress"],
            vec!["completed", "completed"]
        ]
    );
}

#[test]
fn a_plan_is_a_checklist_on_stderr_and_a_bad_plan_is_the_models_error() {
    let r = Repo::new();
    r.script(
        &[
            ("plan", json!({"entries": []})),
            (
                "plan",
                json!({"entries": [
                    {"content": READ, "status": "completed"},
                    {"content": BUMP, "status": "in_progress", "priority": "high"},
                    {"content": "Run the tests", "status": "pending"}
                ]}),
            ),
        ],
        "Planned.",
    );
    let o = r.genai(&[
        "ask",
        "--tools=workspace",
        "-m",
        "openai:gpt-test",
        "--mode",
        "plan",
        "Plan the fix",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", cli::stderr(&o));
    assert_eq!(cli::stdout(&o).trim(), "Planned.");
    let err = cli::stderr(&o);
    assert!(
        err.contains("Plan:\n  [x] Read src/lib.rs\n  [~] Make answer() return 42 (high)\n  [ ] Run the tests\n"),
        "{err}"
    );
    // The empty plan went back to the model as an error it can act on, and showed nothing.
    assert_eq!(err.matches("Plan:").count(), 1, "{err}");
    let requests = r.env.fake.requests();
    let answered = requests[1].body["messages"].as_array().unwrap();
    let result = answered.last().unwrap();
    assert_eq!(result["role"], "tool");
    assert!(
        result["content"].to_string().contains("at least one step"),
        "{result}"
    );
}
