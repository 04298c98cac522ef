//! Subagents driven from outside: `genai ask --tools=workspace --output-format stream-json`
//! against the fake OpenAI server, routed by what each request holds (the subagents' system
//! prompts), in a fixture repository with a Claude Code definition and a genai one. The model
//! hands two tasks at once; the fake holds both subagents' first requests until both arrived
//! (a gate, no sleep), so they provably run at once. One subagent's read of `.env` is refused
//! by the policy: the refusal is nested under its task call, its answer is the call's result,
//! and the parent still answers. `genai agents list` shows both definitions.

use std::os::unix::process::CommandExt;
use std::process::{Command, Output};

use serde_json::{json, Value};

use crate::plan_mode::{events, of_type};
use crate::support::cli::{self, OpenAiCli};
use crate::support::fake_openai::{Behavior, Gate, RecordedRequest};

const REVIEWER: &str = "---\nname: reviewer\ndescription: Reviews Rust code\ntools: Read, Grep, WebSearch\nmodel: sonnet\ncolor: red\n---\nYou are the reviewer. Read the code you are given.\n";
const FINDER: &str = "---\ndescription: Finds configuration\ntools: [read_file, list]\n---\nYou are the finder. Look for the configuration.\n";

/// A fixture repository with two subagents and genai's folders, the model a fake.
pub(crate) struct Repo {
    pub(crate) env: OpenAiCli,
    pub(crate) base: tempfile::TempDir,
}

impl Repo {
    pub(crate) fn new() -> Repo {
        let base = tempfile::tempdir().unwrap();
        let repo = base.path().join("repo");
        for dir in [".git", "src", ".claude/agents", ".genai/agents"] {
            std::fs::create_dir_all(repo.join(dir)).unwrap();
        }
        std::fs::write(repo.join("src/lib.rs"), "pub fn answer() -> u32 { 42 }\n").unwrap();
        std::fs::write(repo.join(".env"), "TOKEN=do-not-read\n").unwrap();
        std::fs::write(repo.join(".claude/agents/review.md"), REVIEWER).unwrap();
        std::fs::write(repo.join(".genai/agents/finder.md"), FINDER).unwrap();
        Repo {
            env: OpenAiCli::new(),
            base,
        }
    }

    /// `genai ARGS` in the repository, in its own session (no terminal to ask on).
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut c: Command = self.env.cmd(args);
        c.current_dir(self.base.path().join("repo"));
        // SAFETY: setsid is async-signal-safe; it only detaches the child from the terminal.
        unsafe {
            c.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        c
    }

    /// [`Repo::command`] run to its end.
    pub(crate) fn genai(&self, args: &[&str]) -> Output {
        cli::output(self.command(args))
    }

    /// The repository's own agents folder.
    pub(crate) fn agents(&self) -> std::path::PathBuf {
        self.base.path().join("repo/.genai/agents")
    }
}

/// A reply of tool calls with these ids (wire name, arguments).
pub(crate) fn calls(calls: &[(&str, &str, Value)]) -> Behavior {
    Behavior {
        reply: String::new(),
        tool_calls: calls
            .iter()
            .map(|(id, name, args)| (id.to_string(), name.to_string(), args.to_string()))
            .collect(),
        ..Behavior::default()
    }
}

/// Whose request it is (`reviewer`, `finder` or the parent's) and whether tool results came.
fn whose(r: &RecordedRequest) -> (&'static str, bool) {
    let text = r.body["messages"].to_string();
    let who = match () {
        _ if text.contains("You are the reviewer") => "reviewer",
        _ if text.contains("You are the finder") => "finder",
        _ => "parent",
    };
    (who, text.contains("\"role\":\"tool\""))
}

/// The wire names of the tools a request offered.
fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Scripts the model: the parent hands `reviewer` (`task_rev`, reads src/lib.rs) and `finder`
/// (`task_find`, reads .env, refused) their tasks at once; both subagents' first requests are
/// held until both came.
pub(crate) fn two_tasks(r: &Repo) {
    let gate = Gate::new(2);
    r.env.fake.wire().route(move |req| {
        let behavior = match whose(req) {
            ("parent", false) => calls(&[
                (
                    "task_rev",
                    "workspace__task",
                    json!({"agent": "reviewer", "prompt": "Review src/lib.rs"}),
                ),
                (
                    "task_find",
                    "workspace__task",
                    json!({"agent": "finder", "prompt": "Read .env"}),
                ),
            ]),
            ("reviewer", false) => {
                let read = calls(&[(
                    "rev_1",
                    "workspace__read_file",
                    json!({"path": "src/lib.rs"}),
                )]);
                return Some((read, Some(gate.clone())));
            }
            ("finder", false) => {
                let read = calls(&[("find_1", "workspace__read_file", json!({"path": ".env"}))]);
                return Some((read, Some(gate.clone())));
            }
            ("reviewer", true) => Behavior::text("lib.rs is fine."),
            ("finder", true) => Behavior::text("I was not allowed to read .env."),
            _ => Behavior::text("Review done; .env stays unread."),
        };
        Some((behavior, None))
    });
}

#[test]
fn two_subagents_run_at_once_and_a_refused_call_is_nested_under_its_task() {
    let r = Repo::new();
    two_tasks(&r);
    let o = r.genai(&[
        "ask",
        "--tools=workspace",
        "-m",
        "openai:gpt-test",
        "--output-format",
        "stream-json",
        "Review and find the config",
    ]);
    let seen = events(&o);
    // A refused call ends the run as refused (exit 5); the parent still answered.
    assert_eq!(o.status.code(), Some(5), "{}", cli::stderr(&o));
    let result = of_type(&seen, "result")[0];
    assert_eq!(result["reply"], "Review done; .env stays unread.");

    let nested = |id: &str| -> Vec<&Value> {
        seen.iter()
            .filter(|e| e["parent_tool_use_id"] == id)
            .collect()
    };
    // The parent's two task calls, not nested; each subagent's events under its own.
    let tasks: Vec<&Value> = of_type(&seen, "tool_call")
        .into_iter()
        .filter(|e| e["name"] == "workspace.task")
        .collect();
    assert_eq!(tasks.len(), 2, "{seen:?}");
    assert!(tasks.iter().all(|t| t.get("parent_tool_use_id").is_none()));
    let reviewer = nested("task_rev");
    assert!(
        reviewer.iter().all(|e| e["subagent"] == "reviewer"),
        "{reviewer:?}"
    );
    let kinds: Vec<&str> = reviewer
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["tool_call", "permission", "tool_result"],
        "{reviewer:?}"
    );
    assert_eq!(reviewer[1]["decision"], "allow");
    assert!(reviewer[2]["output"].as_str().unwrap().contains("answer()"));

    let finder = nested("task_find");
    assert!(
        finder.iter().all(|e| e["subagent"] == "finder"),
        "{finder:?}"
    );
    let denied: Vec<&&Value> = finder
        .iter()
        .filter(|e| e["type"] == "permission")
        .collect();
    assert_eq!(denied.len(), 1, "{finder:?}");
    assert_eq!(denied[0]["decision"], "deny");
    assert_eq!(denied[0]["subject"], ".env");
    assert!(!o.stdout.windows(11).any(|w| w == b"do-not-read"));

    // The subagents' answers are the task calls' results.
    let results = of_type(&seen, "tool_result");
    let of_task = |id: &str| {
        results
            .iter()
            .find(|e| e["id"] == id && e.get("parent_tool_use_id").is_none())
            .unwrap_or_else(|| panic!("no result of {id}: {seen:?}"))
    };
    assert_eq!(of_task("task_rev")["output"], "lib.rs is fine.");
    assert_eq!(of_task("task_rev")["isError"], false);
    assert_eq!(
        of_task("task_find")["output"],
        "I was not allowed to read .env."
    );

    // Each subagent had its own context and its definition's tools, and no task tool.
    let requests = r.env.fake.requests();
    assert_eq!(requests.len(), 6);
    for req in &requests {
        let tools = offered(&req.body);
        match whose(req).0 {
            "parent" => assert!(tools.contains(&"workspace__task".to_string()), "{tools:?}"),
            "reviewer" => {
                assert!(
                    tools.contains(&"workspace__read_file".to_string()),
                    "{tools:?}"
                );
                assert!(
                    tools.contains(&"workspace__search".to_string()),
                    "{tools:?}"
                );
                assert!(!tools
                    .iter()
                    .any(|t| t == "workspace__task" || t == "workspace__edit_file"));
                assert!(!req.body["messages"].to_string().contains("Review and find"));
            }
            _ => {
                assert!(tools.contains(&"workspace__list".to_string()), "{tools:?}");
                assert!(!tools
                    .iter()
                    .any(|t| t == "workspace__task" || t == "workspace__run_command"));
            }
        }
    }
    let parent_first = &requests[0].body;
    let task_tool = parent_first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "workspace__task")
        .unwrap();
    let about = task_tool["function"]["description"].as_str().unwrap();
    assert!(about.contains("- reviewer: Reviews Rust code"), "{about}");
    assert!(about.contains("- finder: Finds configuration"), "{about}");
}

#[test]
fn agents_list_shows_claude_codes_and_genais_definitions() {
    let r = Repo::new();
    std::fs::write(
        r.base.path().join("repo/.genai/agents/broken.md"),
        "---\nmode: sideways\n---\nx\n",
    )
    .unwrap();
    let o = r.genai(&["agents", "list"]);
    assert_eq!(o.status.code(), Some(0), "{}", cli::stderr(&o));
    let out = cli::stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[0].starts_with("finder") && lines[0].contains("project"),
        "{out}"
    );
    assert!(
        lines[1].starts_with("reviewer") && lines[1].contains("claude-project"),
        "{out}"
    );
    assert!(
        cli::stderr(&o).contains("broken.md:2"),
        "{}",
        cli::stderr(&o)
    );

    let o = r.genai(&["agents", "show", "reviewer", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", cli::stderr(&o));
    let shown: Value = serde_json::from_str(&cli::stdout(&o)).unwrap();
    assert_eq!(
        shown["tools"],
        json!(["workspace.read_file", "workspace.search"])
    );
    assert_eq!(shown["unknownTools"], json!(["WebSearch"]));
    assert_eq!(shown["unused"], json!(["color: red"]));

    let o = r.genai(&["agents", "show", "nobody"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(
        cli::stderr(&o).contains("no subagent `nobody`"),
        "{}",
        cli::stderr(&o)
    );
}

#[test]
fn a_definitions_model_is_the_one_its_subagent_runs_on_and_an_unreachable_one_fails_its_task() {
    let r = Repo::new();
    let agents = r.agents();
    std::fs::write(
        agents.join("cheap.md"),
        "---\ndescription: Summarises cheaply\nmodel: openai:gpt-mini\n---\nYou are cheap.\n",
    )
    .unwrap();
    std::fs::write(
        agents.join("lost.md"),
        "---\ndescription: Runs nowhere\nmodel: nowhere:x\n---\nYou are lost.\n",
    )
    .unwrap();
    r.env.fake.wire().route(move |req| {
        let text = req.body["messages"].to_string();
        let behavior = match () {
            _ if text.contains("You are cheap") => Behavior::text("Short summary."),
            _ if text.contains("\"role\":\"tool\"") => Behavior::text("Both tasks came back."),
            _ => calls(&[
                (
                    "task_cheap",
                    "workspace__task",
                    json!({"agent": "cheap", "prompt": "Summarise src/lib.rs"}),
                ),
                (
                    "task_lost",
                    "workspace__task",
                    json!({"agent": "lost", "prompt": "Anything"}),
                ),
            ]),
        };
        Some((behavior, None))
    });
    let o = r.genai(&[
        "ask",
        "--tools=workspace",
        "-m",
        "openai:gpt-test",
        "--output-format",
        "stream-json",
        "Summarise",
    ]);
    let seen = events(&o);
    let result = of_type(&seen, "result")[0];
    assert_eq!(result["reply"], "Both tasks came back.", "{seen:?}");

    // The subagent's request went to its definition's model, the parent's to its own; the
    // unreachable one sent nothing.
    let requests = r.env.fake.requests();
    let models: Vec<(bool, &str)> = requests
        .iter()
        .map(|q| {
            let cheap = q.body["messages"].to_string().contains("You are cheap");
            (cheap, q.body["model"].as_str().unwrap())
        })
        .collect();
    assert_eq!(models.len(), 3, "{models:?}");
    assert!(models.contains(&(true, "gpt-mini")), "{models:?}");
    assert_eq!(
        models
            .iter()
            .filter(|(c, m)| !c && *m == "gpt-test")
            .count(),
        2,
        "{models:?}"
    );
    assert!(!requests
        .iter()
        .any(|q| q.body["messages"].to_string().contains("You are lost")));

    let results = of_type(&seen, "tool_result");
    let of_task = |id: &str| {
        *results
            .iter()
            .find(|e| e["id"] == id && e.get("parent_tool_use_id").is_none())
            .unwrap_or_else(|| panic!("no result of {id}: {seen:?}"))
    };
    assert_eq!(of_task("task_cheap")["output"], "Short summary.");
    assert_eq!(of_task("task_cheap")["isError"], false);
    let lost = of_task("task_lost");
    assert_eq!(lost["isError"], true, "{lost}");
    let why = lost["output"].as_str().unwrap();
    assert!(
        why.contains("lost") && why.contains("`nowhere:x`") && why.contains("model: inherit"),
        "{why}"
    );
}
