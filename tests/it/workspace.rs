//! The workspace tools through `genai ask --tools=workspace`, driven by a scripted model (the
//! OpenAI fake answers each request with the next queued tool calls) in a fresh fixture
//! repository: what reached the model, and what is on the disk after each read, search, edit,
//! command, refusal, hook and undo.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

use crate::support::cli::{self, OpenAiCli};
use crate::support::fake_openai::Behavior;

const LIB: &str = "pub fn answer() -> u32 {\n    41\n}\n";
const SECRET: &str = "sk-fixture-secret-0123456789";
const OUTSIDE: &str = "the text of a file outside the workspace";

/// A fixture repository (`repo/`) beside a folder outside it, and genai's folders.
struct Fixture {
    env: OpenAiCli,
    base: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let base = tempfile::tempdir().unwrap();
        let repo = base.path().join("repo");
        let write = |rel: &str, text: &str| {
            let path = repo.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        write(".gitignore", "target/\n");
        write("src/lib.rs", LIB);
        write(
            "README.md",
            "# Fixture\n\nThe answer lives in src/lib.rs.\n",
        );
        write("target/out.txt", "build junk that says answer\n");
        write(".env", &format!("API_TOKEN={SECRET}\n"));
        write("AGENTS.md", "Always run the tests with `cargo test`.\n");
        let outside = base.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("notes.txt"), OUTSIDE).unwrap();
        std::os::unix::fs::symlink(&outside, repo.join("link")).unwrap();
        Fixture {
            env: OpenAiCli::new(),
            base,
        }
    }

    fn repo(&self) -> PathBuf {
        self.base.path().join("repo")
    }

    fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.repo().join(rel)).ok()
    }

    /// `genai ARGS` in the repository, with no terminal to ask on (its own session).
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

    /// `genai ask --tools=workspace -m openai:gpt-test --json EXTRA... PROMPT`, the model
    /// answering with `calls` one request each, then `Done.`.
    fn ask(&self, extra: &[&str], calls: &[(&str, Value)]) -> (Output, Value) {
        for (tool, args) in calls {
            let wire = format!("workspace__{tool}");
            self.env
                .fake
                .push(Behavior::calls("", &[(wire.as_str(), &args.to_string())]));
        }
        self.env.fake.push(Behavior::text("Done."));
        let mut args = vec![
            "ask",
            "--tools=workspace",
            "-m",
            "openai:gpt-test",
            "--json",
        ];
        args.extend_from_slice(extra);
        args.push("Work on the project");
        let o = cli::output(self.genai(&args));
        let v: Value = serde_json::from_str(cli::stdout(&o).trim()).unwrap_or(Value::Null);
        (o, v)
    }

    /// The tool results the model got, in order (the last request's tool messages).
    fn tool_results(&self) -> Vec<String> {
        let last = self.env.last_body();
        last["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| match &m["content"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect()
    }

    /// Every byte every request carried to the model.
    fn all_sent(&self) -> String {
        self.env
            .fake
            .requests()
            .iter()
            .map(|r| String::from_utf8_lossy(&r.raw).into_owned())
            .collect()
    }
}

fn sandboxed() -> bool {
    matches!(
        genai_core::workspace::sandbox::support(),
        genai_core::workspace::sandbox::Support::Landlock { .. }
    )
}

fn details(v: &Value) -> String {
    v["details"]
        .as_array()
        .map(|d| {
            d.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

#[test]
fn the_model_reads_searches_edits_and_runs_and_undo_puts_every_byte_back() {
    let f = Fixture::new();
    let before_readme = f.read("README.md").unwrap();
    let (o, v) = f.ask(
        &["--mode", "full"],
        &[
            ("read_file", json!({"path": "src/lib.rs"})),
            ("search", json!({"pattern": "answer"})),
            (
                "edit_file",
                json!({"path": "src/lib.rs", "old_text": "    41", "new_text": "    42"}),
            ),
            (
                "write_file",
                json!({"path": "notes/plan.md", "content": "the plan\n"}),
            ),
            (
                "run_command",
                json!({"command": "cat src/lib.rs; echo made > made.txt"}),
            ),
        ],
    );
    assert!(o.status.success(), "{}", cli::stderr(&o));
    assert_eq!(v["reply"], "Done.", "{v}");
    let results = f.tool_results();
    assert_eq!(results.len(), 5, "{results:?}");
    // The read: numbered lines.
    assert!(
        results[0].contains("1\tpub fn answer() -> u32 {"),
        "{}",
        results[0]
    );
    // The search: the source file, not the ignored build output.
    assert!(
        results[1].contains("src/lib.rs:1:pub fn answer"),
        "{}",
        results[1]
    );
    assert!(results[1].contains("README.md:3:"), "{}", results[1]);
    assert!(!results[1].contains("target/out.txt"), "{}", results[1]);
    // The edit: a unified diff.
    assert!(
        results[2].contains("-    41") && results[2].contains("+    42"),
        "{}",
        results[2]
    );
    assert!(results[3].contains("notes/plan.md"), "{}", results[3]);
    assert_eq!(f.read("src/lib.rs").unwrap(), LIB.replace("41", "42"));
    assert_eq!(f.read("notes/plan.md").unwrap(), "the plan\n");
    if sandboxed() {
        assert!(
            results[4].contains("    42") && results[4].contains("exit status 0"),
            "{}",
            results[4]
        );
        assert_eq!(f.read("made.txt").unwrap(), "made\n");
    }
    // The project's AGENTS.md went into the system prompt, and the details name it.
    let first = &f.env.fake.requests()[0].body;
    assert!(first["messages"][0]["content"]
        .to_string()
        .contains("Always run the tests with `cargo test`."));
    let d = details(&v);
    assert!(
        d.contains("project context:") && d.contains("AGENTS.md"),
        "{d}"
    );
    assert!(
        d.contains("permission: workspace.edit_file(src/lib.rs) allow by mode full"),
        "{d}"
    );

    // The turn is listed with the files it changed, and undone byte for byte.
    let o = cli::output(f.genai(&["checkpoints", "--json"]));
    assert!(o.status.success(), "{}", cli::stderr(&o));
    let listed: Value = serde_json::from_str(&cli::stdout(&o)).unwrap();
    assert_eq!(
        listed[0]["files"],
        json!(["src/lib.rs", "notes/plan.md"]),
        "{listed}"
    );
    assert_eq!(listed[0]["conversationId"], v["conversationId"]);
    let o = cli::output(f.genai(&["undo"]));
    assert!(o.status.success(), "{}", cli::stderr(&o));
    assert!(
        cli::stdout(&o).contains("src/lib.rs: restored"),
        "{}",
        cli::stdout(&o)
    );
    assert_eq!(f.read("src/lib.rs").unwrap(), LIB);
    assert!(
        !f.repo().join("notes").exists(),
        "the folder the turn made is gone"
    );
    assert_eq!(f.read("README.md").unwrap(), before_readme);
    // Nothing of genai's was written into the repository.
    let mut names: Vec<String> = std::fs::read_dir(f.repo())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut expected = vec![
        ".env",
        ".git",
        ".gitignore",
        "AGENTS.md",
        "README.md",
        "link",
        "src",
        "target",
    ];
    if sandboxed() {
        expected.push("made.txt");
        expected.sort();
    }
    assert_eq!(names, expected);
    // A second undo has nothing left to undo.
    let o = cli::output(f.genai(&["undo"]));
    assert!(!o.status.success());
    assert!(cli::stderr(&o).contains("undo"), "{}", cli::stderr(&o));
}

#[test]
fn refusals_reach_the_model_and_leave_the_disk_and_the_secrets_alone() {
    let f = Fixture::new();
    let (o, v) = f.ask(
        &[],
        &[
            ("read_file", json!({"path": "../outside/notes.txt"})),
            ("read_file", json!({"path": "link/notes.txt"})),
            (
                "read_file",
                json!({"path": f.base.path().join("outside/notes.txt")}),
            ),
            ("read_file", json!({"path": ".env"})),
            ("search", json!({"pattern": "sk-fixture"})),
            (
                "edit_file",
                json!({"path": "src/lib.rs", "old_text": "41", "new_text": "0"}),
            ),
            ("run_command", json!({"command": "touch pwned"})),
        ],
    );
    assert_eq!(o.status.code(), Some(5), "{}", cli::stderr(&o));
    let results = f.tool_results();
    assert_eq!(results.len(), 7, "{results:?}");
    for r in &results[..3] {
        assert!(r.contains("outside the workspace"), "{r}");
    }
    assert!(
        results[3].contains("Refused") && results[3].contains("secret file"),
        "{}",
        results[3]
    );
    assert!(results[4].contains("no matches"), "{}", results[4]);
    for r in &results[5..] {
        assert!(r.contains("Refused") && r.contains("no one to ask"), "{r}");
    }
    let sent = f.all_sent();
    assert!(!sent.contains(SECRET), "the .env value reached the model");
    assert!(
        !sent.contains(OUTSIDE),
        "a file outside the root reached the model"
    );
    assert_eq!(f.read("src/lib.rs").unwrap(), LIB);
    assert!(!f.repo().join("pwned").exists());
    cli::assert_stderr_says(&o, "no terminal to ask on");
    let d = details(&v);
    assert!(
        d.contains("permission: workspace.read_file(.env) deny by secret file"),
        "{d}"
    );

    // Read-only refuses edits even with --yes; deny beats allow.
    let (o, _) = f.ask(
        &["--mode", "read-only", "--yes"],
        &[(
            "edit_file",
            json!({"path": "src/lib.rs", "old_text": "41", "new_text": "0"}),
        )],
    );
    assert_eq!(o.status.code(), Some(5), "{}", cli::stderr(&o));
    assert!(
        f.tool_results()[0].contains("mode read-only"),
        "{:?}",
        f.tool_results()
    );
    let (o, _) = f.ask(
        &[
            "--mode",
            "full",
            "--allow",
            "run_command(touch*)",
            "--deny",
            "run_command(touch*)",
        ],
        &[("run_command", json!({"command": "touch pwned"}))],
    );
    assert_eq!(o.status.code(), Some(5), "{}", cli::stderr(&o));
    assert!(
        f.tool_results()[0].contains("rule deny"),
        "{:?}",
        f.tool_results()
    );
    assert_eq!(f.read("src/lib.rs").unwrap(), LIB);
    assert!(!f.repo().join("pwned").exists());
}

#[test]
fn a_project_file_tightens_but_never_loosens_the_users_rules() {
    let f = Fixture::new();
    std::fs::create_dir_all(f.repo().join(".genai")).unwrap();
    std::fs::write(
        f.repo().join(".genai/permissions.toml"),
        "mode = \"full\"\nallow = [\"run_command\"]\ndeny = [\"read_file(README.md)\"]\n",
    )
    .unwrap();
    let (o, v) = f.ask(
        &[],
        &[
            ("run_command", json!({"command": "touch pwned"})),
            ("read_file", json!({"path": "README.md"})),
        ],
    );
    assert_eq!(o.status.code(), Some(5), "{}", cli::stderr(&o));
    let results = f.tool_results();
    assert!(results[0].contains("no one to ask"), "{results:?}");
    assert!(
        results[1].contains(".genai/permissions.toml"),
        "{results:?}"
    );
    assert!(!f.repo().join("pwned").exists());
    let d = details(&v);
    assert!(d.contains("can only tighten"), "{d}");
}

#[test]
fn commands_run_in_the_sandbox_cannot_write_outside_reach_the_network_or_read_secrets() {
    if !sandboxed() {
        eprintln!("skipped: this kernel offers no Landlock sandbox");
        return;
    }
    let f = Fixture::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!(
        "echo inside > inside.txt; touch ../escaped.txt; cat .env; \
         bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED'; echo end"
    );
    let (o, _) = f.ask(
        &["--mode", "full"],
        &[("run_command", json!({"command": script}))],
    );
    assert!(o.status.success(), "{}", cli::stderr(&o));
    let result = &f.tool_results()[0];
    assert_eq!(f.read("inside.txt").unwrap(), "inside\n");
    assert!(!f.base.path().join("escaped.txt").exists(), "{result}");
    assert!(
        !result.contains("CONNECTED") && result.contains("end"),
        "{result}"
    );
    assert!(!result.contains(SECRET), "{result}");
    assert!(!f.all_sent().contains(SECRET));
}

#[test]
fn a_pre_tool_use_hook_blocks_with_its_reason_in_claude_codes_shape() {
    let f = Fixture::new();
    let seen = f.base.path().join("hook-input.json");
    f.env.dirs.write_config(&format!(
        "[[hooks.pre_tool_use]]\nmatcher = \"Bash\"\ncommand = \"cat > '{}'; echo 'no commands on Fridays' >&2; exit 2\"\n",
        seen.display()
    ));
    let (o, v) = f.ask(
        &["--mode", "full"],
        &[
            ("run_command", json!({"command": "touch pwned"})),
            ("read_file", json!({"path": "README.md"})),
        ],
    );
    assert_eq!(o.status.code(), Some(5), "{}", cli::stderr(&o));
    let results = f.tool_results();
    assert!(
        results[0].contains("Blocked by a hook: no commands on Fridays"),
        "{results:?}"
    );
    assert!(
        results[1].contains("# Fixture"),
        "the hook matches Bash only: {results:?}"
    );
    assert!(!f.repo().join("pwned").exists());
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "Bash");
    assert_eq!(input["tool_input"]["command"], "touch pwned");
    assert_eq!(input["session_id"], v["conversationId"]);
    let cwd = Path::new(input["cwd"].as_str().unwrap());
    assert_eq!(cwd, f.repo().canonicalize().unwrap());
    assert!(details(&v).contains("the pre_tool_use hook"), "{v}");

    // The decisions stay with the turn in the history.
    let id = v["conversationId"].as_str().unwrap();
    let o = cli::output(f.genai(&["sessions", "show", id, "--json"]));
    let shown: Value = serde_json::from_str(&cli::stdout(&o)).unwrap();
    let decisions = shown["decisions"].as_array().unwrap();
    assert_eq!(decisions.len(), 3, "{shown}");
    assert_eq!(decisions[0]["tool"], "workspace.run_command");
    assert_eq!(decisions[1]["decision"], "deny");
    assert_eq!(decisions[2]["argument"], "README.md");
}

#[test]
fn genai_chat_asks_on_the_terminal_saves_always_answers_and_undoes_with_slash_undo() {
    use crate::support::tmux::{self, Pane};
    if !tmux::available() {
        return;
    }
    let f = Fixture::new();
    let edit = |old: &str, new: &str| {
        json!({"path": "src/lib.rs", "old_text": old, "new_text": new}).to_string()
    };
    let fake = &f.env.fake;
    // Turn 1: asked, answered y. Turn 2: asked, answered a (always). Turn 3: not asked.
    fake.push(Behavior::calls(
        "",
        &[("workspace__edit_file", &edit("41", "42"))],
    ));
    fake.push(Behavior::text("Now 42."));
    fake.push(Behavior::calls(
        "",
        &[("workspace__edit_file", &edit("42", "43"))],
    ));
    fake.push(Behavior::text("Now 43."));
    fake.push(Behavior::calls(
        "",
        &[("workspace__edit_file", &edit("43", "44"))],
    ));
    fake.push(Behavior::text("Now 44."));
    let mut c = f
        .env
        .cmd(&["chat", "--tools=workspace", "-m", "openai:gpt-a"]);
    c.current_dir(f.repo()).env_remove("NO_COLOR");
    let pane = Pane::start(&c);
    pane.wait_for_text("gpt-a> ", 1);

    pane.line("Bump it");
    pane.wait_for_text("Allow? [y]es, [n]o, [a]lways", 1);
    let screen = pane.screen(false);
    assert!(screen.contains("Edit src/lib.rs (mode ask)"), "{screen}");
    pane.line("y");
    pane.wait_for_text("Now 42.", 1);
    assert_eq!(f.read("src/lib.rs").unwrap(), LIB.replace("41", "42"));

    pane.line("Again");
    pane.wait_for_text("Allow? [y]es, [n]o, [a]lways", 2);
    pane.line("a");
    pane.wait_for_text("Now 43.", 1);
    let saved = std::fs::read_to_string(f.env.dirs.config.path().join("projects.toml")).unwrap();
    assert!(saved.contains("workspace.edit_file(src/**)"), "{saved}");

    pane.line("Once more");
    let screen = pane.wait_for_text("Now 44.", 1);
    assert_eq!(
        screen.matches("Allow? [y]es").count(),
        2,
        "asked a third time: {screen}"
    );
    assert_eq!(f.read("src/lib.rs").unwrap(), LIB.replace("41", "44"));

    // /undo: the last turn's change, back byte for byte.
    pane.line("/undo");
    pane.wait_for_text("src/lib.rs: restored", 1);
    assert_eq!(f.read("src/lib.rs").unwrap(), LIB.replace("41", "43"));
}

#[test]
fn a_continued_conversation_keeps_its_mode_until_new_flags_replace_it() {
    let f = Fixture::new();
    let (o, v) = f.ask(
        &["--mode", "read-only"],
        &[("read_file", json!({"path": "README.md"}))],
    );
    assert!(o.status.success(), "{}", cli::stderr(&o));
    let id = v["conversationId"].as_str().unwrap().to_string();
    let edit = json!({"path": "src/lib.rs", "old_text": "41", "new_text": "42"});
    // Continued without flags: still read-only, even with --yes.
    let (o, _) = f.ask(&["--cid", &id, "--yes"], &[("edit_file", edit.clone())]);
    assert_eq!(o.status.code(), Some(5), "{}", cli::stderr(&o));
    assert!(
        f.tool_results().last().unwrap().contains("mode read-only"),
        "{:?}",
        f.tool_results()
    );
    assert_eq!(f.read("src/lib.rs").unwrap(), LIB);
    // New flags replace the stored ones.
    let (o, _) = f.ask(&["--cid", &id, "--mode", "edit"], &[("edit_file", edit)]);
    assert!(o.status.success(), "{}", cli::stderr(&o));
    assert_eq!(f.read("src/lib.rs").unwrap(), LIB.replace("41", "42"));
}

#[test]
fn star_beside_workspace_offers_the_enabled_sources_too() {
    use crate::support::fake_plugin::FakePlugin;
    let f = Fixture::new();
    let module = FakePlugin::start(None);
    f.env.dirs.write_config(&format!(
        "[plugins.events]\nurl = \"{}\"\nenabled = true\n",
        module.base_url()
    ));
    let offered = |selection: &str| {
        f.env.fake.push(Behavior::text("ok"));
        let o = cli::output(f.genai(&["ask", selection, "-m", "openai:gpt-test", "Hi"]));
        assert!(o.status.success(), "{}", cli::stderr(&o));
        let mut names: Vec<String> = f.env.last_body()["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_string())
            .collect();
        names.sort();
        names
    };
    let both = offered("--tools=workspace,*");
    let has = |names: &[String], name: &str| names.iter().any(|n| n == name);
    assert!(has(&both, "workspace__read_file"), "{both:?}");
    assert!(has(&both, "events__getEvents"), "{both:?}");
    let alone = offered("--tools=workspace");
    let events = alone.iter().any(|n| n.starts_with("events__"));
    // The workspace's seven tools and its plan tool, no other source's.
    assert!(!events && alone.len() == 8, "{alone:?}");
    assert!(has(&alone, "workspace__plan"), "{alone:?}");
}

#[test]
fn old_checkpoints_are_pruned_by_the_next_process_that_changes_a_file() {
    let f = Fixture::new();
    f.env
        .dirs
        .write_config("[checkpoints]\nmax_age_days = 0\nmax_megabytes = 512\n");
    let edit =
        |old: &str, new: &str| json!({"path": "src/lib.rs", "old_text": old, "new_text": new});
    let (o, first) = f.ask(&["--mode", "edit"], &[("edit_file", edit("41", "42"))]);
    assert!(o.status.success(), "{}", cli::stderr(&o));
    let (o, second) = f.ask(&["--mode", "edit"], &[("edit_file", edit("42", "43"))]);
    assert!(o.status.success(), "{}", cli::stderr(&o));
    let o = cli::output(f.genai(&["checkpoints", "--json"]));
    let listed: Value = serde_json::from_str(&cli::stdout(&o)).unwrap();
    let turns: Vec<&Value> = listed.as_array().unwrap().iter().collect();
    assert_eq!(turns.len(), 1, "{listed}");
    assert_eq!(turns[0]["conversationId"], second["conversationId"]);
    assert_ne!(turns[0]["conversationId"], first["conversationId"]);
}
