//! Codex (`@openai/codex` from npm) on `genai serve`'s Responses API: `codex exec` headless,
//! its `config.toml` naming genai as a custom model provider (`wire_api = "responses"`, the
//! serve token from an environment variable), in front of the fake OpenAI chat provider that
//! first answers with a call of Codex's own shell tool and then with a final text. Codex runs
//! the command, the command's output reaches the upstream in genai's second request, and Codex
//! prints the final text. `scripts/test.sh` installs Codex pinned into `target/codex` and sets
//! `GENAI_TEST_CODEX` to its program; without it the test fails when `CI` is set and is
//! skipped, saying why, otherwise.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::serve::Served;
use crate::support::fake_openai::{Behavior, FakeOpenAi};
use crate::support::poll::wait_until;

const UPSTREAM_KEY: &str = "sk-gateway-upstream-0123456789abcdef";

/// Codex's run: two model requests and a command, on a busy machine.
const WAIT: Duration = Duration::from_secs(180);

/// Codex's program, or `None` (the test is skipped) outside CI.
pub(crate) fn codex() -> Option<String> {
    match std::env::var("GENAI_TEST_CODEX") {
        Ok(p) if std::path::Path::new(&p).exists() => Some(p),
        _ if std::env::var_os("CI").is_some() => panic!(
            "GENAI_TEST_CODEX is not set to an installed @openai/codex (scripts/test.sh installs it)"
        ),
        _ => {
            eprintln!("skipped: set GENAI_TEST_CODEX to Codex's program (npm install @openai/codex) to run Codex on the gateway");
            None
        }
    }
}

/// Codex's settings for genai, as docs/GATEWAY.md gives them: genai as a custom provider on
/// the Responses API, with Codex's default tools (its web search, which genai leaves out, and
/// its sub-agents' namespace of tools, offered by joined names); no retries, no update check,
/// no analytics.
pub(crate) fn config(addr: &str) -> String {
    format!(
        r#"model = "openai:gpt-codex"
model_provider = "genai"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.genai]
name = "genai"
base_url = "http://{addr}/v1"
wire_api = "responses"
env_key = "GENAI_TOKEN"
request_max_retries = 0
stream_max_retries = 0
"#
    )
}

/// Kills Codex if the test ends before it does.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `codex exec --skip-git-repo-check ARGS` in `work`, its settings in `home` and the serve
/// token in GENAI_TOKEN, run to its end within [`WAIT`]: its status, stdout and stderr.
pub(crate) fn exec(
    program: &str,
    home: &std::path::Path,
    work: &std::path::Path,
    token: &str,
    args: &[&str],
) -> (std::process::ExitStatus, String, String) {
    let (out, err) = (home.join("stdout"), home.join("stderr"));
    let child = Command::new(program)
        .args(["exec", "--skip-git-repo-check"])
        .args(args)
        .current_dir(work)
        .env("CODEX_HOME", home)
        .env("GENAI_TOKEN", token)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let mut codex = Running(child);
    let mut status = None;
    wait_until("codex exec ends", WAIT, || {
        status = codex.0.try_wait().unwrap();
        status.is_some()
    });
    let read = |p: &std::path::Path| std::fs::read_to_string(p).unwrap_or_default();
    (status.unwrap(), read(&out), read(&err))
}

#[test]
fn codex_runs_its_shell_tool_through_genai_and_prints_the_final_text() {
    let Some(program) = codex() else {
        return;
    };
    let fake =
        FakeOpenAi::start(0, Behavior::text("All done: the proof file is written.")).unwrap();
    let command = "echo codex-ran > proof.txt && echo MARK-4217";
    let arguments = serde_json::json!({"cmd": command}).to_string();
    fake.push(Behavior::calls("", &[("exec_command", arguments.as_str())]));
    let url = fake.base_url();
    let served = Served::start_with(
        "",
        &[
            ("OPENAI_BASE_URL", url.as_str()),
            ("OPENAI_API_KEY", UPSTREAM_KEY),
        ],
        &[],
    );
    let home = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let addr = served
        .url
        .trim_start_matches("ws://")
        .trim_end_matches('/')
        .to_string();
    std::fs::write(home.path().join("config.toml"), config(&addr)).unwrap();
    let args = ["--sandbox", "danger-full-access", "Write the proof file."];
    let (status, stdout, stderr) = exec(
        &program,
        home.path(),
        workspace.path(),
        &served.token,
        &args,
    );
    let requests = fake.requests();
    eprintln!(
        "codex sent {} upstream requests: {:?}",
        requests.len(),
        requests
            .iter()
            .map(|r| format!("{} {}", r.method, r.path))
            .collect::<Vec<_>>()
    );
    assert!(
        status.success(),
        "codex failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(!stdout.contains(UPSTREAM_KEY) && !stderr.contains(UPSTREAM_KEY));

    // Codex ran the command the model asked for, in its workspace.
    let proof = std::fs::read_to_string(workspace.path().join("proof.txt"))
        .unwrap_or_else(|e| panic!("no proof file ({e})\nstdout:\n{stdout}\nstderr:\n{stderr}"));
    assert_eq!(proof.trim(), "codex-ran");

    // The command's output reached the upstream as the call's result, with the call before it.
    let with_result = requests.iter().find(|r| {
        r.body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|m| m["role"] == "tool" && m["content"].to_string().contains("MARK-4217"))
    });
    let sent = with_result.unwrap_or_else(|| {
        panic!("no upstream request carried the command's output: {requests:#?}")
    });
    let messages = sent.body["messages"].as_array().unwrap();
    let call = messages
        .iter()
        .find_map(|m| m["tool_calls"].as_array().and_then(|c| c.first()))
        .expect("the call before its result");
    assert_eq!(call["function"]["name"], "exec_command");
    let tool = messages.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool["tool_call_id"], call["id"]);
    // Codex's own tools were offered upstream as the model's native tools.
    let offered: Vec<&str> = sent.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(offered.contains(&"exec_command"), "{offered:?}");
    assert_eq!(sent.body["model"], Value::from("gpt-codex"));

    // And Codex printed the model's final text.
    assert!(
        stdout.contains("All done: the proof file is written."),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
}
