//! Real clients no one here wrote, on `genai serve`'s gateway in front of scripted OpenAI-style
//! upstreams: Claude Code headless (`claude -p`, Anthropic's Messages API as
//! `/v1/messages?beta=true`) running its own Write tool on a model genai serves, under a model
//! name it knows, a `PROVIDER:MODEL` name it does not (it then sends its environment note as a
//! `system` message, adaptive thinking and an effort) and an alias of `[serve.models]`; and
//! simonw's `llm` with an OpenAI-compatible model entry (Chat Completions, streamed). scripts/test.sh
//! installs each pinned and names it in GENAI_TEST_CLAUDE_CODE (the `claude` program) and
//! GENAI_TEST_LLM (the folder pip installed `llm` into); a test whose variable is unset skips,
//! saying why (in CI it fails).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::serve::Served;
use crate::support::fake_openai::{Behavior, FakeOpenAi};

/// The keys genai holds for the upstreams: they must never reach a client.
const MAIN_KEY: &str = "sk-upstream-main-0123456789abcdef";
const SMALL_KEY: &str = "sk-upstream-small-0123456789abcdef";

/// The client named by `var`, or `None` (with the reason printed) when it is unset outside CI.
pub(crate) fn client(var: &str, what: &str) -> Option<PathBuf> {
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
/// are models of the two fakes, as a user maps Claude Code's model names to any model; whose
/// built-in `openai` provider is `main` too (so `openai:gpt-4o-mini` is a model of it); and
/// whose alias `coder` is `main:gpt-aliased`.
pub(crate) fn serve(main: &FakeOpenAi, small: &FakeOpenAi) -> Served {
    let config = format!(
        "[service_providers.main]\nkind = \"openai\"\nbase_url = \"{}\"\napi_key = \"{MAIN_KEY}\"\nmax_retries = 0\n\n\
         [service_providers.small]\nkind = \"openai\"\nbase_url = \"{}\"\napi_key = \"{SMALL_KEY}\"\nmax_retries = 0\n\n\
         [agents.claude-sonnet-4-5]\nprovider = \"main\"\nmodel = \"gpt-coder\"\n\n\
         [agents.claude-haiku-4-5]\nprovider = \"small\"\nmodel = \"gpt-small\"\n\n\
         [serve.models]\n\"coder\" = \"main:gpt-aliased\"\n",
        main.base_url(),
        small.base_url()
    );
    let url = main.base_url();
    let vars = [
        ("OPENAI_BASE_URL", url.as_str()),
        ("OPENAI_API_KEY", MAIN_KEY),
    ];
    Served::start_with(&config, &vars, &[])
}

/// Claude Code headless on the serve (`claude -p PROMPT --output-format json --model MODEL`,
/// its Write tool allowed, its small model MODEL too) in `work`, with its own home and
/// nothing of the caller's environment but PATH.
pub(crate) fn claude_code(
    claude: &Path,
    served: &Served,
    model: &str,
    prompt: &str,
    home: &Path,
    work: &Path,
) -> Command {
    let mut command = Command::new(claude);
    command
        .args(["-p", prompt, "--output-format", "json", "--model", model])
        .args(["--allowedTools", "Write"])
        .current_dir(work)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("CLAUDE_CONFIG_DIR", home.join(".claude"))
        .env("ANTHROPIC_BASE_URL", served.http_base())
        .env("ANTHROPIC_AUTH_TOKEN", &served.token)
        .env("ANTHROPIC_DEFAULT_HAIKU_MODEL", model)
        .env("ANTHROPIC_SMALL_FAST_MODEL", model)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("NO_PROXY", "127.0.0.1,localhost")
        .stdin(std::process::Stdio::null());
    command
}

/// The JSON result Claude Code printed, checked to be no error.
fn result_of(out: &Output, report: &str) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let result: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}\n{report}"));
    assert_eq!(result["is_error"], false, "{result:#}\n{report}");
    result
}

/// Asserts that Claude Code ended with `said` and that its Write tool left `text` in `file`.
#[track_caller]
fn assert_wrote(out: &Output, report: &str, said: &str, file: &std::path::Path, text: &str) {
    let result = result_of(out, report);
    assert_eq!(result["result"], said, "{result:#}\n{report}");
    assert_eq!(
        std::fs::read_to_string(file).unwrap_or_default(),
        text,
        "{report}"
    );
}

/// The roles of an upstream request's messages.
fn roles(body: &Value) -> Vec<&str> {
    body["messages"]
        .as_array()
        .map(|m| m.iter().filter_map(|m| m["role"].as_str()).collect())
        .unwrap_or_default()
}

/// Runs `command` to its end on a blocking thread; its output, checked to have succeeded.
pub(crate) async fn run(mut command: Command) -> Output {
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
            format!(
                "{} {} model={} fields={fields:?} roles={:?}",
                r.method,
                r.path,
                r.body["model"],
                roles(&r.body)
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

    let prompt = "Write hello.txt saying who wrote it.";
    let mut command = claude_code(
        &claude,
        &served,
        "claude-sonnet-4-5",
        prompt,
        home.path(),
        work.path(),
    );
    command
        .env("ANTHROPIC_DEFAULT_HAIKU_MODEL", "claude-haiku-4-5")
        .env("ANTHROPIC_SMALL_FAST_MODEL", "claude-haiku-4-5");
    let out = run(command).await;
    let report = format!(
        "main upstream:\n{}\nsmall upstream:\n{}",
        summary(&main),
        summary(&small)
    );
    eprintln!("what Claude Code's requests became upstream:\n{report}");
    assert_wrote(
        &out,
        &report,
        "All done: hello.txt is written.",
        &file,
        "written by Claude Code through genai\n",
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
async fn claude_code_runs_on_a_provider_model_name_it_does_not_know() {
    let Some(claude) = client(
        "GENAI_TEST_CLAUDE_CODE",
        "Claude Code (@anthropic-ai/claude-code, npm)",
    ) else {
        return;
    };
    let main = FakeOpenAi::start(0, Behavior::text("Done: note.txt is written.")).unwrap();
    let small = FakeOpenAi::start(0, Behavior::text("unused")).unwrap();
    let served = serve(&main, &small);
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("note.txt");
    let input = serde_json::json!({"file_path": file, "content": "a note\n"});
    main.push(Behavior::calls("", &[("Write", &input.to_string())]));

    // The name the README gives: Claude Code does not know it, so its environment note comes
    // as a `system` message (text blocks, then a string once the history goes on), with
    // adaptive thinking and an effort.
    let model = "openai:gpt-4o-mini";
    let command = claude_code(
        &claude,
        &served,
        model,
        "Write note.txt.",
        home.path(),
        work.path(),
    );
    let out = run(command).await;
    let report = format!("upstream:\n{}", summary(&main));
    eprintln!("what Claude Code's requests became upstream:\n{report}");
    assert_wrote(
        &out,
        &report,
        "Done: note.txt is written.",
        &file,
        "a note\n",
    );

    let requests = main.requests();
    assert!(requests.len() >= 2, "{report}");
    let first = &requests[0].body;
    assert_eq!(first["model"], "gpt-4o-mini", "{report}");
    // One system message, first: Claude Code's system prompt, then its environment note.
    assert_eq!(roles(first), ["system", "user"], "{report}");
    let system = first["messages"][0]["content"].as_str().unwrap_or_default();
    let note = system
        .find("# Environment")
        .unwrap_or_else(|| panic!("the environment note is not in the system prompt: {system}"));
    assert!(
        note > 0,
        "nothing of `system` came before the note: {system}"
    );
    assert!(
        system[note..].contains(&format!("You are powered by the model {model}.")),
        "{system}"
    );
    let last = &requests.last().unwrap().body;
    assert_eq!(
        roles(last),
        ["system", "user", "assistant", "tool"],
        "{report}"
    );
    assert!(
        last["messages"][0]["content"]
            .as_str()
            .unwrap_or_default()
            .contains("# Environment"),
        "{last}"
    );
    // Its adaptive thinking and effort are no setting of an OpenAI model that does not reason.
    for r in &requests {
        assert!(r.body.get("reasoning_effort").is_none(), "{}", r.body);
    }
    assert!(small.requests().is_empty(), "{}", summary(&small));
}

#[tokio::test]
async fn claude_code_runs_on_an_alias_of_serve_models() {
    let Some(claude) = client(
        "GENAI_TEST_CLAUDE_CODE",
        "Claude Code (@anthropic-ai/claude-code, npm)",
    ) else {
        return;
    };
    let main = FakeOpenAi::start(0, Behavior::text("Hello through the alias.")).unwrap();
    let small = FakeOpenAi::start(0, Behavior::text("unused")).unwrap();
    let served = serve(&main, &small);
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();

    let command = claude_code(
        &claude,
        &served,
        "coder",
        "Say hello.",
        home.path(),
        work.path(),
    );
    let out = run(command).await;
    let report = format!("upstream:\n{}", summary(&main));
    eprintln!("what Claude Code's requests became upstream:\n{report}");
    let result = result_of(&out, &report);
    assert_eq!(
        result["result"], "Hello through the alias.",
        "{result:#}\n{report}"
    );
    let requests = main.requests();
    assert_eq!(requests.len(), 1, "{report}");
    let sent = &requests[0].body;
    assert_eq!(sent["model"], "gpt-aliased", "{report}");
    assert_eq!(roles(sent), ["system", "user"], "{report}");
    let system = sent["messages"][0]["content"].as_str().unwrap_or_default();
    assert!(
        system.contains("You are powered by the model coder."),
        "{system}"
    );
    assert!(
        sent["messages"][1]["content"]
            .to_string()
            .contains("Say hello."),
        "{sent}"
    );
    assert!(small.requests().is_empty(), "{}", summary(&small));
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
