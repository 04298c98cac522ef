//! genai's MCP server driven by the official MCP Python SDK's client (`mcp` from PyPI, which
//! `scripts/test.sh` installs and names in GENAI_TEST_MCP_PYTHON), from
//! `tests/mcp-python/client.py`, over stdio (`genai mcp`) and over streamable HTTP (`genai
//! serve`'s `/mcp` with the serve token): the tools listed, a read, a secret file refused, and
//! an edit genai asks about, accepted through the client's elicitation.

use std::process::Command;

use serde_json::Value;

use crate::support::cli;
use crate::support::fleet::{replica, REPLICA};
use crate::support::python_sdk;

use super::mcp_server::{repo_arg, Fixture, SERVED_TOOLS};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp-python/client.py");

/// The client script with `args`, in the environment genai would get (the fixture's folders,
/// the fake provider, loopback); what it printed.
fn client(f: &Fixture, sdk: &str, args: &[&str], token: Option<&str>) -> Value {
    let genai = f.genai(&[]);
    let mut python = Command::new("python3");
    python.arg(SCRIPT).args(args).env("PYTHONPATH", sdk);
    for (k, v) in genai.get_envs() {
        match v {
            Some(v) => python.env(k, v),
            None => python.env_remove(k),
        };
    }
    if let Some(token) = token {
        python.env("GENAI_TOKEN", token);
    }
    let out = cli::output(python);
    assert!(
        out.status.success(),
        "{}\n{}",
        cli::stdout(&out),
        cli::stderr(&out)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_python_sdks_client_lists_reads_is_refused_a_secret_and_answers_an_elicitation() {
    let Some(sdk) = python_sdk::find("mcp", "GENAI_TEST_MCP_PYTHON") else {
        return;
    };
    let f = Fixture::new();
    let got = client(
        &f,
        &sdk,
        &["stdio", env!("CARGO_BIN_EXE_genai"), &repo_arg(&f)],
        None,
    );
    check(&f, &got);
}

#[test]
fn the_python_sdks_client_does_the_same_over_streamable_http_on_genai_serve() {
    let Some(sdk) = python_sdk::find("mcp", "GENAI_TEST_MCP_PYTHON") else {
        return;
    };
    let f = Fixture::new();
    let token = cli::stdout(&cli::output(f.genai(&["serve", "--print-token"])));
    let token = token.trim();
    // The serve started in the repository works there, as `genai mcp --root` would.
    let (_serve, base) = replica(f.genai(REPLICA));
    let endpoint = format!("{base}/mcp");
    let got = client(&f, &sdk, &["http", &endpoint], Some(token));
    check(&f, &got);
}

/// What both transports must have done.
fn check(f: &Fixture, got: &Value) {
    assert_eq!(got["server"], "genai");
    let tools: Vec<&str> = got["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for name in SERVED_TOOLS {
        assert!(tools.contains(&name), "{name} missing from {tools:?}");
    }
    assert!(
        got["prompts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p == "greet"),
        "{got}"
    );
    assert_eq!(got["read"]["isError"], false, "{got}");
    assert!(
        got["read"]["text"].as_str().unwrap().contains("41"),
        "{got}"
    );
    assert_eq!(got["secret"]["isError"], true, "{got}");
    assert!(
        got["secret"]["text"].as_str().unwrap().contains("Refused"),
        "{got}"
    );
    // The edit asked, through elicitation, and ran once accepted.
    let asked = got["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{got}");
    assert!(
        asked[0].as_str().unwrap().contains("Edit src/lib.rs"),
        "{got}"
    );
    assert_eq!(got["edit"]["isError"], false, "{got}");
    let lib = std::fs::read_to_string(f.repo().join("src/lib.rs")).unwrap();
    assert!(lib.contains("43"), "{lib}");
}
