//! `genai ask --output-format stream-json` and the budgets of an unattended run, driven by a
//! scripted model (the OpenAI fake answers each request with the next queued tool calls) in
//! a fixture repository, with no terminal: every line is checked against
//! `schemas/stream-event.json`, then what the events, the exit code, the history and
//! `genai undo` say.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

use crate::support::cli::{self, OpenAiCli};
use crate::support::fake_openai::{Behavior, Mode};

const LIB: &str = "pub fn answer() -> u32 {\n    41\n}\n";
const SECRET: &str = "sk-stream-fixture-secret-42";

/// A fixture repository and genai's folders, the model a fake.
struct Run {
    env: OpenAiCli,
    base: tempfile::TempDir,
}

impl Run {
    fn new() -> Run {
        let base = tempfile::tempdir().unwrap();
        let repo = base.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("src")).unwrap();
        std::fs::write(repo.join("src/lib.rs"), LIB).unwrap();
        std::fs::write(repo.join("README.md"), "# Fixture\n").unwrap();
        std::fs::write(repo.join(".env"), format!("TOKEN={SECRET}\n")).unwrap();
        Run {
            env: OpenAiCli::new(),
            base,
        }
    }

    fn repo(&self) -> PathBuf {
        self.base.path().join("repo")
    }

    /// The model answers with each of `calls` (workspace tool, arguments), one request each.
    fn script(&self, calls: &[(&str, Value)]) {
        for (tool, args) in calls {
            let wire = format!("workspace__{tool}");
            self.env
                .fake
                .push(Behavior::calls("", &[(wire.as_str(), &args.to_string())]));
        }
    }

    /// `genai ARGS` in the repository, in its own session (no terminal to ask on).
    fn genai(&self, args: &[&str]) -> Command {
        let mut c = self.env.cmd(args);
        c.current_dir(self.repo());
        // SAFETY: setsid is async-signal-safe; it only detaches the child from the terminal.
        unsafe {
            c.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        c
    }

    /// `genai ask --tools=workspace -m openai:gpt-test --output-format stream-json EXTRA...`,
    /// its lines parsed, each checked against the schema.
    fn stream(&self, extra: &[&str]) -> (Output, Vec<Value>) {
        let mut args = vec![
            "ask",
            "--tools=workspace",
            "-m",
            "openai:gpt-test",
            "--output-format",
            "stream-json",
        ];
        args.extend_from_slice(extra);
        args.push("Work on the project");
        let o = cli::output(self.genai(&args));
        let events = lines(&cli::stdout(&o));
        (o, events)
    }
}

/// Each line of `stdout` as JSON, checked against `schemas/stream-event.json`.
fn lines(stdout: &str) -> Vec<Value> {
    let schema_path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schemas/stream-event.json");
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    stdout
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("not one JSON object per line ({e}): {line}"));
            let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{line} does not match: {errors:?}");
            v
        })
        .collect()
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn edit() -> Value {
    json!({"path": "src/lib.rs", "old_text": "41", "new_text": "42"})
}

#[test]
fn stream_json_follows_a_turn_line_by_line_from_start_to_its_result() {
    let r = Run::new();
    r.script(&[
        ("read_file", json!({"path": "README.md"})),
        ("edit_file", edit()),
    ]);
    r.env
        .fake
        .push(Behavior::reply("Bumped the answer.\nAll done.", 6));
    let (o, events) = r.stream(&["--allow", "edit_file(src/**)"]);
    assert_eq!(o.status.code(), Some(0), "{}", cli::stderr(&o));
    let first = &events[0];
    assert_eq!(first["type"], "start", "{events:?}");
    assert_eq!(first["model"], "gpt-test");
    let turn = first["turnId"].as_str().unwrap();
    let last = events.last().unwrap();
    assert_eq!(last["type"], "result");
    assert_eq!(last["status"], "success");
    assert_eq!(last["exitCode"], 0);
    assert_eq!(last["conversationId"], first["conversationId"]);
    assert_eq!(last["reply"], "Bumped the answer.\nAll done.");
    assert!(last["usage"]["inputTokens"].as_u64().unwrap() > 0, "{last}");

    // Each call: asked, decided by what, run; in that order.
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let calls = of_type(&events, "tool_call");
    assert_eq!(calls.len(), 2, "{kinds:?}");
    assert_eq!(calls[0]["name"], "workspace.read_file");
    assert_eq!(calls[1]["arguments"], edit());
    let decided = of_type(&events, "permission");
    assert_eq!(decided[0]["decision"], "allow");
    assert_eq!(decided[1]["decision"], "allow");
    assert!(
        decided[1]["by"]
            .as_str()
            .unwrap()
            .contains("edit_file(src/**)"),
        "{:?}",
        decided[1]
    );
    assert_eq!(decided[1]["subject"], "src/lib.rs");
    let at = |kind: &str, id: &Value| {
        events
            .iter()
            .position(|e| e["type"] == kind && &e["id"] == id)
            .unwrap_or_else(|| panic!("no {kind} for {id}: {kinds:?}"))
    };
    for call in &calls {
        let id = &call["id"];
        assert!(at("tool_call", id) < at("permission", id));
        assert!(at("permission", id) < at("tool_result", id));
    }
    let changed = of_type(&events, "file_changed");
    assert_eq!(changed.len(), 1, "{kinds:?}");
    assert!(changed[0]["path"].as_str().unwrap().ends_with("src/lib.rs"));
    assert_eq!(
        (&changed[0]["added"], &changed[0]["removed"]),
        (&json!(1), &json!(1))
    );
    assert_eq!(changed[0]["checkpoint"], turn);

    // Text pieces coalesced to lines: the whole reply, each event a run of whole lines or
    // the rest at the end.
    let text: Vec<&str> = of_type(&events, "text")
        .iter()
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(text.concat(), "Bumped the answer.\nAll done.");
    assert!(text.len() < 6, "6 pieces were not coalesced: {text:?}");
    assert!(text[0].ends_with('\n'), "{text:?}");
    assert_eq!(of_type(&events, "usage").len(), 1);
    assert_eq!(
        std::fs::read_to_string(r.repo().join("src/lib.rs")).unwrap(),
        LIB.replace("41", "42")
    );
}

#[test]
fn a_refused_call_is_an_event_the_rule_is_said_once_and_the_run_ends_with_exit_5() {
    let r = Run::new();
    r.script(&[
        ("read_file", json!({"path": ".env"})),
        ("edit_file", edit()),
        ("edit_file", edit()),
    ]);
    r.env.fake.push(Behavior::text("I could not."));
    let (o, events) = r.stream(&[]);
    assert_eq!(o.status.code(), Some(5), "{}", cli::stderr(&o));
    let decided = of_type(&events, "permission");
    assert_eq!(decided.len(), 3, "{events:?}");
    assert!(decided.iter().all(|d| d["decision"] == "deny"));
    assert!(decided[0]["by"].as_str().unwrap().contains("secret file"));
    let last = events.last().unwrap();
    assert_eq!(
        (&last["status"], &last["exitCode"], &last["refused"]),
        (&json!("refused"), &json!(5), &json!(3))
    );
    let stderr = cli::stderr(&o);
    assert_eq!(
        stderr.matches("--allow 'workspace.edit_file(").count(),
        1,
        "the rule is said once: {stderr}"
    );
    assert!(!cli::stdout(&o).contains(SECRET));
    assert_eq!(
        std::fs::read_to_string(r.repo().join("src/lib.rs")).unwrap(),
        LIB
    );
}

#[test]
fn max_steps_stops_the_run_stores_the_turn_exits_4_and_its_edit_is_undone() {
    let r = Run::new();
    r.script(&[
        ("edit_file", edit()),
        ("read_file", json!({"path": "README.md"})),
        ("read_file", json!({"path": "README.md"})),
    ]);
    r.env.fake.push(Behavior::text("never sent"));
    let (o, events) = r.stream(&["--yes", "--max-steps", "1"]);
    assert_eq!(o.status.code(), Some(4), "{}", cli::stderr(&o));
    cli::assert_stderr_says(&o, "budget reached: 1 rounds of tool calls");
    let last = events.last().unwrap();
    assert_eq!(
        (&last["status"], &last["budget"]),
        (&json!("budget_reached"), &json!("max-steps"))
    );
    // One round ran; the second reply's calls were not.
    assert_eq!(of_type(&events, "tool_result").len(), 1);
    assert_eq!(r.env.fake.requests().len(), 2);
    let cid = last["conversationId"].as_str().unwrap();
    let shown = cli::output(r.genai(&["sessions", "show", cid, "--json"]));
    assert!(shown.status.success(), "{}", cli::stderr(&shown));
    assert!(cli::stdout(&shown).contains("Work on the project"));
    let undo = cli::output(r.genai(&["undo"]));
    assert!(undo.status.success(), "{}", cli::stderr(&undo));
    assert_eq!(
        std::fs::read_to_string(r.repo().join("src/lib.rs")).unwrap(),
        LIB
    );
}

#[test]
fn max_cost_needs_a_known_price_and_stops_the_run_once_spent() {
    let r = Run::new();
    let (o, events) = r.stream(&["--max-cost", "0.01"]);
    assert_eq!(o.status.code(), Some(2), "{}", cli::stderr(&o));
    cli::assert_stderr_says(&o, "--max-cost needs the price of");
    assert!(events.is_empty(), "nothing was sent: {events:?}");
    assert!(r.env.fake.requests().is_empty());

    // A dollar a token: the first request spends more than the limit.
    r.env
        .dirs
        .write_config("[pricing.\"openai:*\"]\ninput = 1000000.0\noutput = 1000000.0\n");
    r.script(&[
        ("read_file", json!({"path": "README.md"})),
        ("read_file", json!({"path": "README.md"})),
    ]);
    r.env.fake.push(Behavior::text("never sent"));
    let (o, events) = r.stream(&["--max-cost", "0.5"]);
    assert_eq!(o.status.code(), Some(4), "{}", cli::stderr(&o));
    let last = events.last().unwrap();
    assert_eq!(last["budget"], "max-cost");
    assert!(last["cost"].as_f64().unwrap() >= 0.5, "{last}");
    assert_eq!(r.env.fake.requests().len(), 1);
    assert!(of_type(&events, "tool_result").is_empty());
}

#[test]
fn max_time_stops_before_the_next_round_and_bad_budgets_are_usage_errors() {
    let r = Run::new();
    r.script(&[("read_file", json!({"path": "README.md"}))]);
    r.env.fake.push(Behavior::text("never sent"));
    let (o, events) = r.stream(&["--max-time", "1ms"]);
    assert_eq!(o.status.code(), Some(4), "{}", cli::stderr(&o));
    assert_eq!(events.last().unwrap()["budget"], "max-time");
    for bad in [
        ["--max-time", "soon"],
        ["--max-time", "0"],
        ["--max-steps", "0"],
        ["--max-cost=-1", "--max-cost"],
    ] {
        let (o, _) = r.stream(&bad[..1 + usize::from(!bad[0].contains('='))]);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {}", cli::stderr(&o));
        cli::assert_stderr_says(&o, bad[0].split('=').next().unwrap());
    }
}

#[test]
fn json_gives_the_status_and_a_failed_turn_streams_its_error_then_its_result() {
    let r = Run::new();
    r.env.fake.push(Behavior::text("Fine."));
    let o = cli::output(r.genai(&[
        "ask",
        "-m",
        "openai:gpt-test",
        "--output-format",
        "json",
        "hello",
    ]));
    assert!(o.status.success(), "{}", cli::stderr(&o));
    let v: Value = serde_json::from_str(cli::stdout(&o).trim()).unwrap();
    assert_eq!(
        (&v["status"], &v["reply"]),
        (&json!("success"), &json!("Fine."))
    );

    r.env.fake.push(Behavior::mode(Mode::Error {
        status: 400,
        message: "upstream refused".into(),
        code: String::new(),
    }));
    let (o, events) = r.stream(&[]);
    assert_eq!(o.status.code(), Some(1), "{}", cli::stderr(&o));
    let n = events.len();
    assert_eq!(events[n - 2]["type"], "error", "{events:?}");
    assert_eq!(
        (&events[n - 1]["status"], &events[n - 1]["reply"]),
        (&json!("error"), &Value::Null)
    );
}

#[test]
fn the_event_stream_piped_into_head_ends_quietly() {
    let r = Run::new();
    r.env.fake.push(Behavior::reply(
        &(1..=300).map(|i| format!("line {i}\n")).collect::<String>(),
        300,
    ));
    let mut c = r.genai(&[
        "ask",
        "-m",
        "openai:gpt-test",
        "--output-format",
        "stream-json",
        "count",
    ]);
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut first = [0u8; 16];
    std::io::Read::read_exact(&mut out, &mut first).unwrap();
    drop(out);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", cli::stderr(&o));
    assert!(cli::stderr(&o).is_empty(), "{}", cli::stderr(&o));
}
