//! Other agents on genai's tools: a user whose config names a cloud model by default, after a
//! failed turn, starts `genai serve --background` and gives genai to two other agents as the
//! docs say. Claude Code, its model behind the serve's Anthropic API, runs `genai mcp` from the
//! project's `.mcp.json`: its model asks genai's `read_file` for the project's `.env`, genai
//! refuses, and the secret reaches neither the model nor the screen. Codex, its model behind
//! the serve's Responses API, reaches the same serve's `/mcp` with the serve token and reads a
//! source file through it. The serve answered both and still serves.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::json;

use crate::home::{Home, Run};
use crate::support::fake_openai::{Behavior, FakeOpenAi};

const SECRET: &str = "sk-journey-project-secret-5d1e";

/// An agent's program scripts/test.sh installs, or `None` (skipped, saying why) outside CI.
fn program(var: &str, what: &str) -> Option<PathBuf> {
    match std::env::var(var) {
        Ok(p) if std::path::Path::new(&p).exists() => Some(PathBuf::from(p)),
        _ if std::env::var_os("CI").is_some() => panic!("{var} is not set to {what}"),
        _ => {
            eprintln!("skipped: set {var} to {what} (scripts/test.sh installs it)");
            None
        }
    }
}

/// The tool results the model got in the fake's last request.
fn results(fake: &FakeOpenAi) -> Vec<String> {
    let requests = fake.requests();
    let last = &requests.last().expect("the model was asked").body;
    last["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .collect()
}

fn never_sent(fake: &FakeOpenAi) {
    for r in fake.requests() {
        assert!(!String::from_utf8_lossy(&r.raw).contains(SECRET));
    }
}

#[test]
fn claude_code_and_codex_use_genais_tools_and_a_secret_file_is_refused() {
    let Some(claude) = program("GENAI_TEST_CLAUDE_CODE", "Claude Code's program") else {
        return;
    };
    let Some(codex) = program("GENAI_TEST_CODEX", "Codex's program") else {
        return;
    };
    let mut home = Home::new();
    let fake = home.cloud_default_after_a_failed_turn("Done.");
    home.write_config(
        "[defaults]\nmodel = \"openai:gpt-journey\"\n\n[serve.models]\n\"claude-*\" = \"openai:gpt-journey\"\n",
    );
    let project = home.path().join("project");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(project.join("src/lib.rs"), "pub const ANSWER: u32 = 41;\n").unwrap();
    std::fs::write(project.join(".env"), format!("API_TOKEN={SECRET}\n")).unwrap();
    // As docs/MCP-SERVER.md gives it, with `genai` on the PATH.
    let mcp = json!({"mcpServers": {"genai": {"command": "genai", "args": ["mcp"]}}});
    std::fs::write(project.join(".mcp.json"), mcp.to_string()).unwrap();
    home.sh("genai --version").ok();
    let path = format!(
        "{}:{}",
        home.path().join(".local/bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );

    let serving = home.serve_in_background();
    let addr = serving.addr.clone();
    let token = home.run(&["serve", "--print-token"]).ok().stdout();
    let token = token.trim().to_string();

    // Claude Code: its model asks for the .env through genai mcp, and is refused.
    let read_env = json!({"path": ".env"}).to_string();
    fake.push(Behavior::calls(
        "",
        &[("mcp__genai__read_file", read_env.as_str())],
    ));
    fake.push(Behavior::text("The .env is kept from me."));
    let out = Command::new(&claude)
        .args(["-p", "Read .env with genai's read_file tool."])
        .args(["--output-format", "json", "--model", "claude-sonnet-4-5"])
        .args(["--mcp-config", ".mcp.json"])
        .args(["--allowedTools", "mcp__genai__read_file"])
        .current_dir(&project)
        .env_clear()
        .env("PATH", &path)
        .env("HOME", home.path())
        .env("CLAUDE_CONFIG_DIR", home.path().join(".claude"))
        .env("ANTHROPIC_BASE_URL", format!("http://{addr}"))
        .env("ANTHROPIC_AUTH_TOKEN", &token)
        .env("ANTHROPIC_DEFAULT_HAIKU_MODEL", "claude-sonnet-4-5")
        .env("ANTHROPIC_SMALL_FAST_MODEL", "claude-sonnet-4-5")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("ENABLE_TOOL_SEARCH", "false")
        .env("NO_PROXY", "127.0.0.1,localhost")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let out = Run(out);
    let (stdout, stderr) = (out.stdout(), out.stderr());
    assert!(out.0.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("The .env is kept from me."), "{stdout}");
    assert!(!stdout.contains(SECRET) && !stderr.contains(SECRET));
    let said = results(&fake);
    assert!(
        said.iter().any(|r| r.contains("Refused")),
        "{said:?}\n{stdout}"
    );
    never_sent(&fake);

    // Codex: the same serve is its model and its MCP server, by URL and token.
    let codex_home = home.path().join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::write(
        codex_home.join("config.toml"),
        format!(
            "model = \"openai:gpt-codex\"\nmodel_provider = \"genai\"\napproval_policy = \"never\"\n\
             check_for_update_on_startup = false\n\n[analytics]\nenabled = false\n\n\
             [model_providers.genai]\nname = \"genai\"\nbase_url = \"http://{addr}/v1\"\n\
             wire_api = \"responses\"\nenv_key = \"GENAI_TOKEN\"\nrequest_max_retries = 0\n\
             stream_max_retries = 0\n\n[mcp_servers.genai]\nurl = \"http://{addr}/mcp\"\n\
             bearer_token_env_var = \"GENAI_TOKEN\"\n"
        ),
    )
    .unwrap();
    // The serve works in the folder it was started in: the home.
    let read_lib = json!({"path": "project/src/lib.rs"}).to_string();
    fake.push(Behavior::calls(
        "",
        &[("mcp__genai__read_file", read_lib.as_str())],
    ));
    fake.push(Behavior::text("ANSWER is 41."));
    let out = Command::new(&codex)
        .args(["exec", "--skip-git-repo-check", "What is ANSWER?"])
        .current_dir(&project)
        .env("HOME", home.path())
        .env("CODEX_HOME", &codex_home)
        .env("GENAI_TOKEN", &token)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let out = Run(out);
    let (stdout, stderr) = (out.stdout(), out.stderr());
    assert!(out.0.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("ANSWER is 41."), "{stdout}\n{stderr}");
    let said = results(&fake);
    assert!(said.iter().any(|r| r.contains("41")), "{said:?}");
    never_sent(&fake);

    // The serve still answers its user.
    let models = home
        .sh(&format!(
            "curl -sS --max-time 30 -H 'Authorization: Bearer {token}' http://{addr}/v1/models"
        ))
        .ok()
        .stdout();
    assert!(models.contains("openai:"), "{models}");
    drop(serving);
}
