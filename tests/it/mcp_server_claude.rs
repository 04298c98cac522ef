//! Claude Code headless (`claude -p`) with `genai mcp` as an MCP server of its `--mcp-config`,
//! its model a scripted fake behind `genai serve`'s Anthropic API (as `gateway_clients` runs
//! it): the model calls genai's `read_file` on the fixture's `.env`, genai refuses it, and the
//! refusal, never the secret, goes back to the model. Claude Code is the one scripts/test.sh
//! installs (GENAI_TEST_CLAUDE_CODE); the test skips, saying why, when it is unset.

use serde_json::json;

use crate::gateway_clients::{claude_code, client, run, serve};
use crate::support::fake_openai::{Behavior, FakeOpenAi};

use super::mcp_server::{Fixture, SECRET};

#[tokio::test]
async fn claude_code_calls_genai_mcp_and_a_secret_file_is_refused() {
    let Some(claude) = client(
        "GENAI_TEST_CLAUDE_CODE",
        "Claude Code (@anthropic-ai/claude-code, npm)",
    ) else {
        return;
    };
    let f = Fixture::new();
    let main = FakeOpenAi::start(0, Behavior::text("The file is kept from me.")).unwrap();
    let small = FakeOpenAi::start(0, Behavior::text("unused")).unwrap();
    let served = serve(&main, &small);
    main.push(Behavior::calls(
        "",
        &[(
            "mcp__genai__read_file",
            &json!({"path": ".env"}).to_string(),
        )],
    ));
    // genai mcp runs on the fixture's own folders, in its repository.
    let genai = f.genai(&[]);
    let env: serde_json::Map<String, serde_json::Value> = genai
        .get_envs()
        .filter_map(|(k, v)| {
            Some((
                k.to_string_lossy().into_owned(),
                json!(v?.to_string_lossy()),
            ))
        })
        .collect();
    let config = json!({"mcpServers": {"genai": {
        "command": env!("CARGO_BIN_EXE_genai"),
        "args": ["mcp", "--root", f.repo()],
        "env": env,
    }}});
    let home = tempfile::tempdir().unwrap();
    let config_file = home.path().join("mcp.json");
    std::fs::write(&config_file, config.to_string()).unwrap();

    let prompt = "Read .env with genai's read_file tool.";
    let mut command = claude_code(
        &claude,
        &served,
        "claude-sonnet-4-5",
        prompt,
        home.path(),
        &f.repo(),
    );
    command
        .arg("--mcp-config")
        .arg(&config_file)
        .args(["--allowedTools", "mcp__genai__read_file"])
        .env("ENABLE_TOOL_SEARCH", "false");
    let out = run(command).await;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!stdout.contains(SECRET), "{stdout}");

    let requests = main.requests();
    let last = &requests.last().unwrap().body;
    let result = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("no tool result went back to the model: {last}"));
    let said = result["content"].to_string();
    assert!(said.contains("Refused"), "{said}");
    for r in &requests {
        assert!(!String::from_utf8_lossy(&r.raw).contains(SECRET));
    }
}
