//! MCP servers as tool sources, over the daemon's protocol, against `examples/fake-mcp-server`
//! (a hand-written MCP server): their tools in `ListTools` as `NAME.tool`, calls, tool errors,
//! a server that dies (restarted once, then reported), one that cannot start, opt-in listing,
//! a model's tool call through the `tools` feature, no child left behind by the daemon, and a
//! server's minimal environment. Servers over HTTP are in `mcp_http.rs`; structured results,
//! images, resources and prompts in `mcp_content.rs`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rpc_client::{Daemon, DaemonConfig, Framing};
use serde_json::{json, Value};

use crate::support::poll::wait_until;
use crate::support::{fake_openai, rpc_client};

pub(crate) const WAIT: Duration = Duration::from_secs(20);

/// The fake server, built by cargo beside the binary under test (`cargo test` and
/// `cargo build --all-targets` build examples; `cargo test --test it mcp` alone does not).
pub(crate) fn fake_server() -> PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_genai"));
    let path = bin
        .parent()
        .unwrap()
        .join("examples")
        .join(format!("fake-mcp-server{}", std::env::consts::EXE_SUFFIX));
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fake-mcp-server.rs");
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    assert!(
        modified(&path) >= modified(&source),
        "{} is missing or older than its source: run `cargo build --example fake-mcp-server` \
         (or `cargo test` without target filters)",
        path.display()
    );
    path
}

/// A `[mcp_servers.NAME]` section for the fake server; `extra` is more TOML lines.
/// A server given the fake's extra tools and resources: the variable must be passed on by name,
/// since a server does not inherit genai's environment.
pub(crate) const MORE_TOOLS: &str = "enabled = true\ninherit_env = [\"FAKE_MCP_MORE_TOOLS\"]";

pub(crate) fn server(name: &str, pid_file: &Path, extra: &str) -> String {
    format!(
        "[mcp_servers.{name}]\ncommand = {:?}\nenv = {{ FAKE_MCP_PID_FILE = {:?} }}\n{extra}\n",
        fake_server().display().to_string(),
        pid_file.display().to_string(),
    )
}

pub(crate) fn daemon_with(root: &Path, config: &str, env: &[(&str, &str)]) -> Daemon {
    let mut cfg = DaemonConfig::in_dir(root, Framing::Lines, "daemon");
    for (k, v) in env {
        cfg = cfg.env(k, v);
    }
    cfg.write_config(config);
    Daemon::spawn(&cfg)
}

pub(crate) fn daemon(root: &Path, config: &str) -> Daemon {
    daemon_with(root, config, &[])
}

/// The pids the fake server wrote, one per start.
pub(crate) fn pids(file: &Path) -> Vec<u32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Whether the process `pid` exists and is not a zombie.
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit_once(')').map(|(_, r)| r.trim_start());
            !matches!(state.and_then(|s| s.chars().next()), Some('Z') | Some('X'))
        }
        Err(_) => false,
    }
}

pub(crate) fn names(r: &Value) -> Vec<String> {
    r["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

pub(crate) fn message(e: &Value) -> String {
    e["message"].as_str().unwrap_or_default().to_string()
}

#[test]
fn tools_of_an_mcp_server_are_listed_and_called() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("srv.pids");
    let mut d = daemon(dir.path(), &server("srv", &pid_file, MORE_TOOLS));

    // Started on demand: nothing runs before the first use.
    std::thread::sleep(Duration::from_millis(200));
    assert!(pids(&pid_file).is_empty(), "started before first use");

    let r = d.call("ListTools", json!({}));
    assert_eq!(
        names(&r),
        ["srv.add", "srv.echo", "srv.fail", "srv.slow", "srv.crash"],
        "{r}"
    );
    assert_eq!(r["tools"][0]["source"], "mcp:srv");
    assert_eq!(r["tools"][0]["description"], "Adds two numbers.");
    assert_eq!(
        r["tools"][0]["inputSchema"]["required"],
        json!(["a", "b"]),
        "{r}"
    );
    assert_eq!(r["errors"], json!([]));

    let r = d.call(
        "CallTool",
        json!({"name": "srv.add", "arguments": {"a": 2, "b": 3}}),
    );
    assert_eq!(
        (r["text"].as_str(), r["isError"].as_bool()),
        (Some("5"), Some(false)),
        "{r}"
    );

    // A tool's `isError` is a tool error for the caller, not a protocol error.
    let r = d.call("CallTool", json!({"name": "srv.fail"}));
    assert_eq!(
        (r["text"].as_str(), r["isError"].as_bool()),
        (Some("the fail tool failed, as it does"), Some(true)),
        "{r}"
    );
    // A JSON-RPC error of the server, and an unknown tool, are errors naming the server.
    let e = d.call_err(
        "CallTool",
        json!({"name": "srv.add", "arguments": {"a": "x"}}),
    );
    assert!(
        message(&e).contains("MCP server `srv`") && message(&e).contains("add needs numbers"),
        "{e}"
    );
    let e = d.call_err("CallTool", json!({"name": "srv.nothing"}));
    assert!(
        message(&e).contains("no tool `nothing`; it has: add, echo"),
        "{e}"
    );

    // One process served all of it.
    assert_eq!(pids(&pid_file).len(), 1);
}

#[test]
fn a_server_that_dies_is_restarted_once_then_reported() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("srv.pids");
    let mut d = daemon(dir.path(), &server("srv", &pid_file, ""));

    let e = d.call_err("CallTool", json!({"name": "srv.crash"}));
    let m = message(&e);
    assert!(m.contains("MCP server `srv`") && m.contains("died"), "{e}");
    assert!(m.contains("exit status: 3"), "{e}");
    assert!(m.contains("crashing as asked"), "the last stderr line: {e}");
    assert!(m.contains("restarted on its next use"), "{e}");
    let first = pids(&pid_file);
    assert_eq!(first.len(), 1);
    wait_until("the crashed server is gone", WAIT, || !alive(first[0]));

    // Restarted on the next use, which works.
    let r = d.call(
        "CallTool",
        json!({"name": "srv.echo", "arguments": {"text": "again"}}),
    );
    assert_eq!(r["text"], "again", "{r}");
    assert_eq!(pids(&pid_file).len(), 2);

    // A second death is reported, and the server is left alone after it.
    let e = d.call_err("CallTool", json!({"name": "srv.crash"}));
    assert!(message(&e).contains("not restarted any more"), "{e}");
    let e = d.call_err(
        "CallTool",
        json!({"name": "srv.add", "arguments": {"a": 1, "b": 1}}),
    );
    let m = message(&e);
    assert!(
        m.contains("MCP server `srv`")
            && m.contains("not restarted any more")
            && m.contains("exit status: 3"),
        "{e}"
    );
    let r = d.call("ListTools", json!({"tools": ["srv"]}));
    assert_eq!(r["errors"][0]["source"], "srv", "{r}");
    assert_eq!(pids(&pid_file).len(), 2, "started a third time");
    // The daemon goes on.
    assert!(d.call("ListTools", json!({}))["tools"].is_array());
}

#[test]
fn servers_that_cannot_start_are_clear_errors_and_the_daemon_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("dying.pids");
    let config = format!(
        "[mcp_servers.missing]\ncommand = \"/nonexistent/mcp-server-xyz\"\nenabled = true\n\n\
         [mcp_servers.dying]\ncommand = {:?}\nenv = {{ FAKE_MCP_DIE_ON_START = \"1\", FAKE_MCP_PID_FILE = {:?} }}\n",
        fake_server().display().to_string(),
        pid_file.display().to_string(),
    );
    let mut d = daemon(dir.path(), &config);

    let r = d.call("ListTools", json!({}));
    assert_eq!(r["tools"], json!([]), "{r}");
    assert_eq!(r["errors"][0]["source"], "missing", "{r}");
    let m = r["errors"][0]["message"].as_str().unwrap();
    assert!(
        m.contains("MCP server `missing`") && m.contains("command not found"),
        "{r}"
    );
    let e = d.call_err("CallTool", json!({"name": "missing.add"}));
    assert!(message(&e).contains("command not found"), "{e}");

    let e = d.call_err("CallTool", json!({"name": "dying.add"}));
    let m = message(&e);
    assert!(
        m.contains("MCP server `dying`") && m.contains("handshake"),
        "{e}"
    );
    assert!(
        m.contains("exit status: 2") && m.contains("told to die on start"),
        "{e}"
    );
    assert!(!m.contains('\n'), "one line: {m}");

    // The env values never show up in errors; the daemon still serves.
    assert!(!m.contains(&pid_file.display().to_string()), "{e}");
    let e = d.call_err("CallTool", json!({"name": "nowhere.f"}));
    assert!(message(&e).contains("MCP servers: dying, missing"), "{e}");
}

#[test]
fn servers_are_opt_in_and_a_slow_call_times_out() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("off.pids");
    let mut d = daemon(dir.path(), &server("off", &pid_file, "timeout_secs = 1"));

    // Not enabled: not in the default list, and not started.
    let r = d.call("ListTools", json!({}));
    assert_eq!(r["tools"], json!([]), "{r}");
    assert!(pids(&pid_file).is_empty());
    // Named, it is.
    let r = d.call("ListTools", json!({"tools": ["off.echo"]}));
    assert_eq!(names(&r), ["off.echo"], "{r}");
    let r = d.call("ListTools", json!({"tools": ["off"]}));
    assert_eq!(names(&r).len(), 5, "{r}");

    let started = Instant::now();
    let e = d.call_err(
        "CallTool",
        json!({"name": "off.slow", "arguments": {"ms": 5000}}),
    );
    assert!(message(&e).contains("did not answer within 1 s"), "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    // The server is still there, and answers once the slow call is done.
    let r = d.call(
        "CallTool",
        json!({"name": "off.echo", "arguments": {"text": "hi"}}),
    );
    assert_eq!(r["text"], "hi", "{r}");
    assert_eq!(pids(&pid_file).len(), 1);
}

#[test]
fn the_model_calls_an_mcp_tool_and_gets_its_result() {
    use fake_openai::{Behavior, FakeOpenAi};
    let fake = FakeOpenAi::start(0, Behavior::default()).unwrap();
    fake.push(Behavior {
        reply: String::new(),
        tool_calls: vec![(
            "call_1".into(),
            "srv__add".into(),
            r#"{"a":20,"b":22}"#.into(),
        )],
        ..Behavior::default()
    });
    fake.push(Behavior::text("It is 42."));
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("srv.pids");
    let mut d = daemon_with(
        dir.path(),
        &server("srv", &pid_file, MORE_TOOLS),
        &[
            ("OPENAI_BASE_URL", &fake.base_url()),
            ("OPENAI_API_KEY", "sk-test-mcp"),
        ],
    );
    let (cid, _) = d.create_conversation(
        json!({"feature": "tools", "serviceProvider": "openai", "model": "gpt-test"}),
    );
    let (_, fin) = d.turn(&cid, "What is 20 + 22?", WAIT);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(fin["summary"], "It is 42.");

    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let tools = requests[0].body["tools"].to_string();
    assert!(
        tools.contains("srv__add") && tools.contains("Adds two numbers."),
        "{tools}"
    );
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    let result = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("no tool result: {messages:?}"));
    assert_eq!(result["tool_call_id"], "call_1");
    assert!(result["content"].to_string().contains("42"), "{result}");
}

#[test]
fn the_daemon_leaves_no_mcp_server_behind() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("srv.pids");
    // A stubborn server that does not exit when its stdin closes: the daemon must kill it.
    let config = format!(
        "[mcp_servers.srv]\ncommand = {:?}\nenabled = true\n\
         env = {{ FAKE_MCP_PID_FILE = {:?}, FAKE_MCP_IGNORE_EOF = \"1\" }}\n",
        fake_server().display().to_string(),
        pid_file.display().to_string(),
    );
    let mut d = daemon(dir.path(), &config);
    let r = d.call("ListTools", json!({}));
    assert_eq!(names(&r).len(), 5, "{r}");
    let pid = pids(&pid_file)[0];
    assert!(alive(pid));

    d.close_stdin();
    assert!(d.wait_exit(WAIT).success());
    wait_until("the MCP server is gone", WAIT, || !alive(pid));
    // Its stdout is not ours: nothing but JSON-RPC reached the client.
    assert!(String::from_utf8_lossy(&d.raw_stdout())
        .lines()
        .all(|l| l.trim().is_empty() || serde_json::from_str::<Value>(l).is_ok()));
}

#[test]
fn a_program_that_does_not_speak_mcp_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    // Prints a line that is not JSON-RPC, then keeps its stdin open.
    let config = "[mcp_servers.chatty]\ncommand = \"sh\"\n\
                  args = [\"-c\", \"echo hello, I am not MCP; echo oops >&2; cat >/dev/null\"]\n";
    let mut d = daemon(dir.path(), config);
    let started = Instant::now();
    let e = d.call_err("CallTool", json!({"name": "chatty.add"}));
    let m = message(&e);
    eprintln!("answered in {:?}: {m}", started.elapsed());
    assert!(
        m.contains("MCP server `chatty`")
            && m.contains("not an MCP server")
            && m.contains("hello, I am not MCP"),
        "{e}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(!m.contains('\n'), "one line: {m}");
    assert!(d.call("ListTools", json!({}))["tools"].is_array());
}

#[test]
fn a_server_gets_a_minimal_environment_plus_what_its_config_names() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("srv.pids");
    // FAKE_MCP_TOKEN stands for a provider's key in genai's environment.
    let echo = |d: &mut Daemon, tool: &str| {
        d.call(
            "CallTool",
            json!({"name": format!("{tool}.echo"), "arguments": {"text": "|"}}),
        )["text"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let config = format!(
        "{}{}",
        server("plain", &pid_file, ""),
        server("named", &pid_file, "inherit_env = ['FAKE_MCP_TOKEN']")
    );
    let env = [("FAKE_MCP_TOKEN", "daemon-env-token-123")];
    let mut d = daemon_with(dir.path(), &config, &env);
    assert_eq!(echo(&mut d, "plain"), "|", "genai's environment leaked");
    // Passed on purpose, and still never shown in a daemon message.
    let named = echo(&mut d, "named");
    assert_eq!(named, "********|");
    assert!(d.shutdown(WAIT).success());
}
