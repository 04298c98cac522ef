//! Real clients no one here wrote, on `genai serve`'s gateway in front of scripted OpenAI-style
//! upstreams: Claude Code headless (`claude -p`, Anthropic's Messages API as
//! `/v1/messages?beta=true`) running its own Write tool on a model genai serves, and simonw's
//! `llm` with an OpenAI-compatible model entry (Chat Completions, streamed). scripts/test.sh
//! installs each pinned and names it in GENAI_TEST_CLAUDE_CODE (the `claude` program) and
//! GENAI_TEST_LLM (the folder pip installed `llm` into); a test whose variable is unset skips,
//! saying why (in CI it fails).

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

use crate::serve::Served;
use crate::support::fake_openai::{Behavior, FakeOpenAi};

/// The keys genai holds for the upstreams: they must never reach a client.
const MAIN_KEY: &str = "sk-upstream-main-0123456789abcdef";
const SMALL_KEY: &str = "sk-upstream-small-0123456789abcdef";

/// The client named by `var`, or `None` (with the reason printed) when it is unset outside CI.
fn client(var: &str, what: &str) -> Option<PathBuf> {
    match std::env::var_os(var) {
        Some(path) => Some(PathBuf::from(path)),
        None if std::env::var_os("CI").is_some() => {
            panic!("{var} is unset: scripts/test.sh installs {what} and sets it")
        }
        None => {
            eprintln!("skipped: {var} is unset (scripts/test.sh installs {what} and sets it)");
            None
        }
    }
}

/// A serve whose agents `claude-sonnet-4-5` (on `main`) and `claude-haiku-4-5` (on `small`)
/// are models of the two fakes, as a user maps Claude Code's model names to any model.
fn serve(main: &FakeOpenAi, small: &FakeOpenAi) -> Served {
    let config = format!(
        "[service_providers.main]\nkind = \"openai\"\nbase_url = \"{}\"\napi_key = \"{MAIN_KEY}\"\nmax_retries = 0\n\n\
         [service_providers.small]\nkind = \"openai\"\nbase_url = \"{}\"\napi_key = \"{SMALL_KEY}\"\nmax_retries = 0\n\n\
         [agents.claude-sonnet-4-5]\nprovider = \"main\"\nmodel = \"gpt-coder\"\n\n\
         [agents.claude-haiku-4-5]\nprovider = \"small\"\nmodel = \"gpt-small\"\n",
        main.base_url(),
        small.base_url()
    );
    Served::start_with(&config, &[], &[])
}

/// Runs `command` to its end on a blocking thread; its output, checked to have succeeded.
async fn run(mut command: Command) -> Output {
    let out = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// What each upstream request of a fake was, for the report and for failures: route, model,
/// the fields sent, and its messages' roles.
fn summary(fake: &FakeOpenAi) -> String {
    fake.requests()
        .iter()
        .map(|r| {
            let fields: Vec<&str> = r
                .body
                .as_object()
                .map(|o| o.keys().map(String::as_str).collect())
                .unwrap_or_default();
            let roles: Vec<&str> = r.body["messages"]
                .as_array()
                .map(|m| m.iter().filter_map(|m| m["role"].as_str()).collect())
                .unwrap_or_default();
            format!(
                "{} {} model={} fields={fields:?} roles={roles:?}",
                r.method, r.path, r.body["model"]
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn claude_code_runs_its_write_tool_through_genai_on_a_scripted_model() {
    let Some(claude) = client(
        "GENAI_TEST_CLAUDE_CODE",
        "Claude Code (@anthropic-ai/claude-code, npm)",
    ) else {
        return;
    };
    let main = FakeOpenAi::start(0, Behavior::text("All done: hello.txt is written.")).unwrap();
    let small = FakeOpenAi::start(0, Behavior::text("Writing a file")).unwrap();
    let served = serve(&main, &small);
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("hello.txt");
    // The model's first answer: Claude Code's own Write tool on a file of its folder.
    let input =
        serde_json::json!({"file_path": file, "content": "written by Claude Code through genai\n"});
    main.push(Behavior::calls("", &[("Write", &input.to_string())]));

    let mut command = Command::new(&claude);
    command
        .args([
            "-p",
            "Write hello.txt saying who wrote it.",
            "--output-format",
            "json",
            "--model",
            "claude-sonnet-4-5",
            "--allowedTools",
            "Write",
        ])
        .current_dir(work.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("CLAUDE_CONFIG_DIR", home.path().join(".claude"))
        .env("ANTHROPIC_BASE_URL", served.http_base())
        .env("ANTHROPIC_AUTH_TOKEN", &served.token)
        .env("ANTHROPIC_DEFAULT_HAIKU_MODEL", "claude-haiku-4-5")
        .env("ANTHROPIC_SMALL_FAST_MODEL", "claude-haiku-4-5")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("NO_PROXY", "127.0.0.1,localhost")
        .stdin(std::process::Stdio::null());
    let out = run(command).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report = format!(
        "main upstream:\n{}\nsmall upstream:\n{}",
        summary(&main),
        summary(&small)
    );
    eprintln!("what Claude Code's requests became upstream:\n{report}");
    let result: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}\n{report}"));
    assert_eq!(result["is_error"], false, "{result:#}\n{report}");
    assert_eq!(
        result["result"], "All done: hello.txt is written.",
        "{result:#}\n{report}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap_or_default(),
        "written by Claude Code through genai\n",
        "{report}"
    );

    // The tool's result went back to the model in a later request, as the tool's message.
    let requests = main.requests();
    assert!(requests.len() >= 2, "{report}");
    let first = &requests[0].body;
    assert_eq!(first["model"], "gpt-coder", "{report}");
    assert_eq!(first["stream"], true, "{report}");
    let offered: Vec<&str> = first["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools upstream: {report}"))
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(offered.contains(&"Write"), "{offered:?}");
    // Deferred tools reach the model only once a tool search loads them.
    assert!(!offered.contains(&"DeferredToolPlaceholder"), "{offered:?}");
    let last = &requests.last().unwrap().body;
    let messages = last["messages"].as_array().unwrap();
    let call = messages
        .iter()
        .find_map(|m| m["tool_calls"].as_array().and_then(|c| c.first()))
        .unwrap_or_else(|| panic!("the tool call is not in the history: {last}"));
    assert_eq!(call["function"]["name"], "Write");
    let result = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("no tool result upstream: {last}"));
    assert_eq!(result["tool_call_id"], call["id"]);
    assert!(
        result["content"].to_string().contains("hello.txt"),
        "{result}"
    );
    // The serve's token is the client's key: it never goes upstream.
    for r in main.requests().iter().chain(small.requests().iter()) {
        assert!(!String::from_utf8_lossy(&r.raw).contains(&served.token));
        for (name, value) in &r.headers {
            assert!(!value.contains(&served.token), "{name} upstream");
        }
    }
}

#[tokio::test]
async fn llm_answers_through_genai_with_an_openai_compatible_model_entry() {
    let Some(llm) = client("GENAI_TEST_LLM", "simonw's llm (PyPI)") else {
        return;
    };
    let main = FakeOpenAi::start(0, Behavior::reply("Bonjour from the upstream.", 3)).unwrap();
    let small = FakeOpenAi::start(0, Behavior::text("unused")).unwrap();
    let served = serve(&main, &small);
    let user = tempfile::tempdir().unwrap();
    std::fs::write(
        user.path().join("extra-openai-models.yaml"),
        format!(
            "- model_id: genai-coder\n  model_name: claude-sonnet-4-5\n  api_base: {}/v1\n  api_key_name: genai\n",
            &served.http_base()
        ),
    )
    .unwrap();
    let llm_command = |args: &[&str]| {
        let mut c = Command::new("python3");
        c.args(["-m", "llm"])
            .args(args)
            .env("PYTHONPATH", &llm)
            .env("LLM_USER_PATH", user.path())
            .env_remove("OPENAI_API_KEY")
            .env("NO_PROXY", "127.0.0.1,localhost")
            .stdin(std::process::Stdio::null());
        c
    };
    run(llm_command(&[
        "keys",
        "set",
        "genai",
        "--value",
        &served.token,
    ]))
    .await;
    let out = run(llm_command(&["-m", "genai-coder", "Say hello in French."])).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.trim(),
        "Bonjour from the upstream.",
        "{}",
        summary(&main)
    );
    let sent = main.last();
    assert_eq!(sent.body["model"], "gpt-coder");
    assert_eq!(sent.body["stream"], true, "llm streams by default");
    let question = sent.body["messages"].to_string();
    assert!(question.contains("Say hello in French."), "{question}");
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {MAIN_KEY}").as_str())
    );
    assert!(small.requests().is_empty());
}
