//! Commands (prompts kept as files) through `genai ask -t`, `genai chat`, the daemon's
//! `ListCommands`/`RunCommand` and `genai commands`, each checked in the request the fake
//! OpenAI server received: placeholders, defaults, the command's settings, Claude Code's and
//! Codex's files used unchanged, and the errors a bad file or a wrong argument give.

use std::path::Path;
use std::time::Duration;

use rpc_client::{Daemon, DaemonConfig, Framing};
use serde_json::{json, Value};

use crate::support::cli::{self, stderr, stdout, OpenAiCli as Env};
use crate::support::{fake_openai, rpc_client};

/// A project with a genai command, a Claude Code command and a Codex prompt; HOME is the
/// temp folder, so the user's own commands stay out.
struct Project {
    dir: tempfile::TempDir,
}

const TRANSLATE: &str = "---
description: Translate the input
system: You translate.
parameters:
  temperature: 0.25
arguments:
  - name: lang
    description: the target language
    default: French
  - name: tone
    default: plain
---
Translate into {{lang}} ({{tone}}):

{{input}}
";

const REVIEW: &str = "---
allowed-tools: Bash(git diff:*)
argument-hint: [pr-number] [priority]
description: Review a pull request
---
Review PR #$1 with priority $2.
";

const DRAFT: &str = "---
description: Draft a PR description
argument-hint: FILES=<paths>
---
Describe the change to $FILES.
";

impl Project {
    fn new() -> Project {
        let dir = tempfile::tempdir().unwrap();
        let p = Project { dir };
        p.write("repo/.genai/commands/translate.md", TRANSLATE);
        p.write("repo/.claude/commands/review.md", REVIEW);
        p.write("home/.codex/prompts/draftpr.md", DRAFT);
        p.write("repo/notes.md", "# Notes\n");
        p
    }

    fn repo(&self) -> std::path::PathBuf {
        self.dir.path().join("repo")
    }

    fn write(&self, relative: &str, text: &str) {
        let path = self.dir.path().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn genai(&self, env: &Env, args: &[&str], stdin: Option<&str>) -> std::process::Output {
        let mut c = env.cmd(args);
        c.current_dir(self.repo())
            .env("HOME", self.dir.path().join("home"))
            .env_remove("CODEX_HOME")
            .env_remove("CLAUDE_CONFIG_DIR");
        cli::output_with_stdin(c, stdin)
    }
}

/// The text of a request's last message.
fn last_text(body: &Value) -> String {
    let last = body["messages"].as_array().unwrap().last().unwrap().clone();
    match &last["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        other => panic!("unexpected content {other}"),
    }
}

#[test]
fn ask_t_renders_arguments_defaults_and_stdin_and_takes_the_commands_settings() {
    let env = Env::new();
    let p = Project::new();
    let o = p.genai(
        &env,
        &["ask", "-m", "openai:m", "-t", "translate", "lang=German"],
        Some("Good morning\n"),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let body = env.last_body();
    assert_eq!(
        last_text(&body),
        "Translate into German (plain):\n\nGood morning"
    );
    assert_eq!(body["messages"][0]["role"], "system", "{body}");
    assert_eq!(body["messages"][0]["content"], "You translate.", "{body}");
    assert_eq!(body["temperature"], json!(0.25), "{body}");
    // A flag wins over the command's setting.
    let o = p.genai(
        &env,
        &[
            "ask",
            "-m",
            "openai:m",
            "-t",
            "translate",
            "-p",
            "temperature=0.9",
            "-s",
            "Be brief.",
        ],
        Some("Hi"),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let body = env.last_body();
    assert_eq!(body["temperature"], json!(0.9), "{body}");
    assert_eq!(body["messages"][0]["content"], "Be brief.", "{body}");
    assert_eq!(last_text(&body), "Translate into French (plain):\n\nHi");
}

#[test]
fn claude_code_and_codex_files_run_unchanged() {
    let env = Env::new();
    let p = Project::new();
    let o = p.genai(
        &env,
        &["ask", "-m", "openai:m", "-t", "review", "42", "high"],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        last_text(&env.last_body()),
        "Review PR #42 with priority high."
    );
    let o = p.genai(
        &env,
        &["ask", "-m", "openai:m", "-t", "draftpr", "FILES=src/lib.rs"],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        last_text(&env.last_body()),
        "Describe the change to src/lib.rs."
    );
    // `git diff | genai ask -t NAME`: stdin follows a prompt that does not place it.
    let o = p.genai(
        &env,
        &["ask", "-m", "openai:m", "-t", "review", "7"],
        Some("diff --git\n"),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        last_text(&env.last_body()),
        "Review PR #7 with priority .\n\ndiff --git\n"
    );
}

#[test]
fn bad_files_and_wrong_arguments_are_named_and_nothing_is_sent() {
    let env = Env::new();
    let p = Project::new();
    p.write(
        "repo/.genai/commands/broken.md",
        "---\ndescription: x\nmodle: y\n---\nbody\n",
    );
    p.write(
        "repo/.genai/commands/needs.md",
        "---\narguments: [who]\n---\nHello {{who}}\n",
    );
    let before = env.fake.requests().len();
    let o = p.genai(&env, &["ask", "-m", "openai:m", "-t", "broken"], None);
    let repo = p.repo().canonicalize().unwrap_or(p.repo());
    cli::assert_fails_with(&o, 2, "broken.md:3: front matter: unknown field `modle`");
    let _ = repo;
    let o = p.genai(&env, &["ask", "-m", "openai:m", "-t", "needs"], None);
    cli::assert_fails_with(
        &o,
        2,
        "command `needs` needs its argument `who`: give who=VALUE",
    );
    let o = p.genai(
        &env,
        &["ask", "-m", "openai:m", "-t", "translate", "lagn=x"],
        None,
    );
    cli::assert_fails_with(
        &o,
        2,
        "command `translate` has no argument `lagn` (it takes lang, tone)",
    );
    let o = p.genai(&env, &["ask", "-m", "openai:m", "-t", "nope"], None);
    cli::assert_fails_with(&o, 2, "no command `nope`: there are ");
    assert_eq!(
        env.fake.requests().len(),
        before,
        "nothing reached the model"
    );
}

#[test]
fn a_commands_files_go_after_its_prompt_and_stay_inside_the_project() {
    let env = Env::new();
    let p = Project::new();
    p.write(
        "repo/.genai/commands/notes.md",
        "---\nfiles: [notes.md]\n---\nSummarize.\n",
    );
    p.write(
        "repo/.genai/commands/escape.md",
        "---\nfiles: [../secret.txt]\n---\nRead.\n",
    );
    p.write("secret.txt", "outside");
    p.write(
        "repo/.genai/commands/dotenv.md",
        "---\nfiles: [.env]\n---\nRead.\n",
    );
    p.write("repo/.env", "KEY=1");
    let o = p.genai(&env, &["ask", "-m", "openai:m", "-t", "notes"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        last_text(&env.last_body()),
        "Summarize.\n\nnotes.md:\n```markdown\n# Notes\n```"
    );
    let o = p.genai(&env, &["ask", "-m", "openai:m", "-t", "escape"], None);
    cli::assert_fails_with(&o, 2, "the command's file `../secret.txt`");
    let o = p.genai(&env, &["ask", "-m", "openai:m", "-t", "dotenv"], None);
    cli::assert_fails_with(&o, 2, "holds secrets");
}

#[test]
fn commands_list_and_show_render_exactly_what_ask_sends() {
    let env = Env::new();
    let p = Project::new();
    let o = p.genai(&env, &["commands", "list"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for line in ["translate", "review", "draftpr", "explain", "fix", "test"] {
        assert!(out.lines().any(|l| l.starts_with(line)), "{out}");
    }
    let o = p.genai(
        &env,
        &[
            "commands",
            "show",
            "translate",
            "--render",
            "tone=dry",
            "lang=Dutch",
        ],
        Some("Hello"),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let rendered = stdout(&o);
    assert_eq!(rendered, "Translate into Dutch (dry):\n\nHello\n");
    let o = p.genai(
        &env,
        &[
            "ask",
            "-m",
            "openai:m",
            "-t",
            "translate",
            "tone=dry",
            "lang=Dutch",
        ],
        Some("Hello"),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(format!("{}\n", last_text(&env.last_body())), rendered);
    let o = p.genai(&env, &["commands", "show", "review"], None);
    let shown = stdout(&o);
    assert!(
        shown.contains("not used by genai: allowed-tools: Bash(git diff:*)"),
        "{shown}"
    );
    assert!(
        shown.contains("arguments: [pr-number] [priority]"),
        "{shown}"
    );
}

#[test]
fn chat_runs_a_command_in_its_conversation() {
    let env = Env::new();
    let p = Project::new();
    let o = p.genai(
        &env,
        &["chat", "-m", "openai:m"],
        Some("/translate lang=Italian Good night\n/review 9 low\n/nope\n"),
    );
    let requests = env.fake.requests();
    let texts: Vec<String> = requests.iter().map(|r| last_text(&r.body)).collect();
    assert_eq!(
        texts,
        [
            "Translate into Italian (plain):\n\nGood night",
            "Review PR #9 with priority low."
        ]
    );
    // The second turn carries the first: one conversation.
    assert_eq!(requests[1].body["messages"].as_array().unwrap().len(), 3);
    assert!(
        stderr(&o).contains("unknown command /nope"),
        "{}",
        stderr(&o)
    );
    assert_eq!(o.status.code(), Some(2));
}

fn daemon(dir: &Path, fake: &fake_openai::FakeOpenAi, home: &Path) -> Daemon {
    let cfg = DaemonConfig::in_dir(dir, Framing::Lines, "daemon")
        .env("OPENAI_BASE_URL", &fake.base_url())
        .env("OPENAI_API_KEY", "sk-test-dummy")
        .env("HOME", &home.display().to_string());
    let mut d = Daemon::spawn(&cfg);
    d.initialize("commands-test", false);
    d
}

#[test]
fn the_daemon_lists_and_runs_commands_in_a_new_or_an_open_conversation() {
    let p = Project::new();
    let fake = fake_openai::FakeOpenAi::start(0, fake_openai::Behavior::default()).unwrap();
    let mut d = daemon(p.dir.path(), &fake, &p.dir.path().join("home"));
    let repo = p.repo().display().to_string();
    let listed = d.call("ListCommands", json!({"cwd": repo, "mcp": false}));
    let source = |name: &str| {
        listed["commands"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .map(|c| c["source"].clone())
    };
    assert_eq!(source("translate"), Some(json!("project")), "{listed}");
    assert_eq!(source("review"), Some(json!("claude-project")), "{listed}");
    assert_eq!(source("draftpr"), Some(json!("codex")), "{listed}");
    assert_eq!(source("explain"), Some(json!("builtin")), "{listed}");
    let wait = Duration::from_secs(15);
    let run = d.call(
        "RunCommand",
        json!({"name": "translate", "arguments": {"lang": "German"}, "input": "Good morning",
               "cwd": repo, "model": "openai:m"}),
    );
    assert_eq!(
        run["text"], "Translate into German (plain):\n\nGood morning",
        "{run}"
    );
    let fin = d.wait_final(run["turnId"].as_str().unwrap(), wait);
    assert_eq!(fin["params"]["isSuccess"], true, "{fin}");
    let body = fake.requests().last().unwrap().body.clone();
    assert_eq!(
        last_text(&body),
        "Translate into German (plain):\n\nGood morning"
    );
    assert_eq!(body["messages"][0]["content"], "You translate.", "{body}");
    assert_eq!(body["temperature"], json!(0.25), "{body}");
    // In the open conversation: its folder is the command's.
    let cid = run["conversationId"].clone();
    let again = d.call(
        "RunCommand",
        json!({"name": "/review", "text": "5 high", "conversationId": cid}),
    );
    assert_eq!(again["conversationId"], cid);
    let fin = d.wait_final(again["turnId"].as_str().unwrap(), wait);
    assert_eq!(fin["params"]["isSuccess"], true, "{fin}");
    let body = fake.requests().last().unwrap().body.clone();
    assert_eq!(last_text(&body), "Review PR #5 with priority high.");
    assert_eq!(body["messages"].as_array().unwrap().len(), 4, "{body}");
    // Errors are -32602 naming what is wrong.
    for (params, says) in [
        (
            json!({"name": "translate", "arguments": {"lagn": "x"}, "cwd": repo}),
            "no argument `lagn`",
        ),
        (json!({"name": "nope", "cwd": repo}), "no command `nope`"),
        (json!({"name": "draftpr", "cwd": repo}), "needs FILES"),
    ] {
        let e = d.call_err("RunCommand", params);
        assert_eq!(e["code"], -32602, "{e}");
        assert!(e["message"].as_str().unwrap().contains(says), "{e}");
    }
}

#[test]
fn an_mcp_servers_prompt_runs_as_a_command() {
    let env = Env::new();
    let p = Project::new();
    env.dirs.write_config(&format!(
        "[mcp_servers.srv]\ncommand = {:?}\nenabled = true\ninherit_env = [\"FAKE_MCP_MORE_TOOLS\"]\n",
        crate::mcp::fake_server().display().to_string()
    ));
    let run = |args: &[&str]| {
        let mut c = env.cmd(args);
        c.current_dir(p.repo())
            .env("HOME", p.dir.path().join("home"))
            .env("FAKE_MCP_MORE_TOOLS", "1");
        cli::output_with_stdin(c, None)
    };
    let o = run(&["ask", "-m", "openai:m", "-t", "srv.review", "fn g() {}"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(last_text(&env.last_body()), "Review this code: fn g() {}");
    let o = run(&["commands", "list", "--mcp"]);
    assert!(
        stdout(&o)
            .lines()
            .any(|l| l.starts_with("srv.review") && l.contains("mcp")),
        "{}",
        stdout(&o)
    );
    let o = run(&["ask", "-m", "openai:m", "-t", "srv.nothing"]);
    cli::assert_fails_with(&o, 2, "MCP server `srv` has no prompt `nothing`");
}
