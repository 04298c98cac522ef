//! Codex (`codex exec`, the one scripts/test.sh installs as GENAI_TEST_CODEX) with genai as
//! both its model provider and an MCP server of its `config.toml`: one `genai serve` started in
//! a fixture repository answers Codex's Responses API (its model a scripted fake) and its
//! `[mcp_servers.genai]` over streamable HTTP at `/mcp`, the serve token read by both from the
//! environment. The model calls genai's `read_file` on a source file and on the repository's
//! `.env`: the first result reaches the model, the second is refused by genai's policy, and
//! the secret reaches neither the model nor Codex's output.

use serde_json::json;

use crate::gateway_codex::{codex, config, exec};
use crate::support::cli;
use crate::support::fake_openai::Behavior;
use crate::support::fleet::{replica, REPLICA};

use super::mcp_server::{Fixture, SECRET};

/// The name Codex gives a tool of its MCP server `genai`.
const READ: &str = "mcp__genai__read_file";

#[test]
fn codex_calls_genai_serves_mcp_read_file_and_a_secret_file_is_refused() {
    let Some(program) = codex() else {
        return;
    };
    let f = Fixture::new();
    let fake = &f.env.fake;
    let calls = [
        json!({"path": "src/lib.rs"}).to_string(),
        json!({"path": ".env"}).to_string(),
    ];
    fake.push(Behavior::calls(
        "",
        &[(READ, calls[0].as_str()), (READ, calls[1].as_str())],
    ));
    fake.push(Behavior::text("lib.rs holds 41; the .env is kept from me."));
    let token = cli::stdout(&cli::output(f.genai(&["serve", "--print-token"])));
    let token = token.trim().to_string();
    let (_serve, base) = replica(f.genai(REPLICA));
    let addr = base.trim_start_matches("http://").to_string();

    let home = tempfile::tempdir().unwrap();
    let mcp = format!(
        "\n[mcp_servers.genai]\nurl = \"http://{addr}/mcp\"\nbearer_token_env_var = \"GENAI_TOKEN\"\n"
    );
    std::fs::write(home.path().join("config.toml"), config(&addr) + &mcp).unwrap();
    let prompt = "Read src/lib.rs and .env with genai's read_file tool.";
    let (status, stdout, stderr) = exec(&program, home.path(), &f.repo(), &token, &[prompt]);
    let requests = fake.requests();
    let offered: Vec<String> = requests
        .first()
        .map(|r| {
            r.body["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    assert!(
        status.success(),
        "codex failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(offered.iter().any(|t| t == READ), "{offered:?}\n{stderr}");

    // Both results went back to the model: the source file's text, and genai's refusal.
    let last = &requests.last().unwrap().body;
    let results: Vec<String> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .collect();
    assert_eq!(results.len(), 2, "{last}");
    assert!(results.iter().any(|r| r.contains("41")), "{results:?}");
    assert!(results.iter().any(|r| r.contains("Refused")), "{results:?}");
    for r in &requests {
        assert!(!String::from_utf8_lossy(&r.raw).contains(SECRET));
    }
    assert!(!stdout.contains(SECRET) && !stderr.contains(SECRET));
    assert!(
        stdout.contains("the .env is kept from me"),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
}
