//! MCP servers as tool sources, over the daemon's protocol, against `examples/fake-mcp-server`
//! (a hand-written MCP server): their tools in `ListTools` as `NAME.tool`, calls, tool errors,
//! a server that dies (restarted once, then reported), one that cannot start, opt-in listing,
//! a model's tool call through the `tools` feature, and no child left behind by the daemon.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rpc_client::{Daemon, DaemonConfig, Framing};
use serde_json::{json, Value};

use crate::support::poll::wait_until;
use crate::support::{fake_openai, rpc_client};

const WAIT: Duration = Duration::from_secs(20);

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
const MORE_TOOLS: &str = "enabled = true\ninherit_env = [\"FAKE_MCP_MORE_TOOLS\"]";

fn server(name: &str, pid_file: &Path, extra: &str) -> String {
    format!(
        "[mcp_servers.{name}]\ncommand = {:?}\nenv = {{ FAKE_MCP_PID_FILE = {:?} }}\n{extra}\n",
        fake_server().display().to_string(),
        pid_file.display().to_string(),
    )
}

fn daemon_with(root: &Path, config: &str, env: &[(&str, &str)]) -> Daemon {
    let mut cfg = DaemonConfig::in_dir(root, Framing::Lines, "daemon");
    for (k, v) in env {
        cfg = cfg.env(k, v);
    }
    cfg.write_config(config);
    Daemon::spawn(&cfg)
}

fn daemon(root: &Path, config: &str) -> Daemon {
    daemon_with(root, config, &[])
}

/// The pids the fake server wrote, one per start.
fn pids(file: &Path) -> Vec<u32> {
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

fn names(r: &Value) -> Vec<String> {
    r["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

fn message(e: &Value) -> String {
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
fn structured_results_are_checked_and_a_changed_tool_list_is_followed() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("srv.pids");
    let mut d = daemon_with(
        dir.path(),
        &server("srv", &pid_file, MORE_TOOLS),
        &[("FAKE_MCP_MORE_TOOLS", "1")],
    );
    // Structured content that fits the tool's outputSchema reaches the caller.
    let r = d.call(
        "CallTool",
        json!({"name": "srv.shape", "arguments": {"n": 4}}),
    );
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(
        serde_json::from_str::<Value>(r["text"].as_str().unwrap()).unwrap(),
        json!({"double": 8.0})
    );
    // Content that does not fit is a tool error naming the mismatch.
    let r = d.call(
        "CallTool",
        json!({"name": "srv.shape", "arguments": {"n": -1}}),
    );
    let text = r["text"].as_str().unwrap();
    assert_eq!(r["isError"], true, "{r}");
    assert!(
        text.contains("does not match its outputSchema") && text.contains("/double"),
        "{text}"
    );

    // The server adds a tool and says so: the next listing has it, and it can be called.
    let before = names(&d.call("ListTools", json!({})));
    assert!(!before.contains(&"srv.grown".to_string()), "{before:?}");
    let r = d.call("CallTool", json!({"name": "srv.grow"}));
    assert_eq!(r["text"], "grown", "{r}");
    wait_until("the changed tool list is followed", WAIT, || {
        names(&d.call("ListTools", json!({}))).contains(&"srv.grown".to_string())
    });
    let r = d.call("CallTool", json!({"name": "srv.grown"}));
    assert_eq!(r["text"], "I am new", "{r}");
    assert_eq!(pids(&pid_file).len(), 1, "listed again, not restarted");
}

/// The fake server serving MCP's streamable-HTTP transport; killed when dropped.
struct HttpServer {
    child: std::process::Child,
    url: String,
}

impl HttpServer {
    fn start(key: &str) -> HttpServer {
        use std::io::BufRead;
        let mut child = std::process::Command::new(fake_server())
            .arg("--http")
            .env("FAKE_MCP_HTTP_KEY", key)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("the fake MCP server starts");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line.trim().trim_start_matches("listening on ").to_string();
        HttpServer { child, url }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_streamable_http_server_is_a_tool_source_with_its_headers() {
    let web = HttpServer::start("k-123");
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[mcp_servers.web]\nurl = {:?}\nheaders = {{ X-Test-Key = \"k-123\" }}\nenabled = true\n\
         [mcp_servers.locked]\nurl = {:?}\nheaders = {{ X-Test-Key = \"wrong\" }}\nenabled = true\n",
        web.url, web.url
    );
    let mut d = daemon(dir.path(), &config);
    let r = d.call("ListTools", json!({}));
    let listed = names(&r);
    assert!(listed.contains(&"web.add".to_string()), "{r}");
    assert!(!listed.iter().any(|n| n.starts_with("locked.")), "{r}");
    let errors = r["errors"].to_string();
    assert!(
        errors.contains("locked") && !errors.contains("wrong"),
        "{errors}"
    );
    let r = d.call(
        "CallTool",
        json!({"name": "web.add", "arguments": {"a": 2, "b": 3}}),
    );
    assert_eq!(
        (r["text"].as_str(), r["isError"].as_bool()),
        (Some("5"), Some(false)),
        "{r}"
    );
}

#[test]
fn an_mcp_server_has_a_command_or_a_url() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = DaemonConfig::in_dir(dir.path(), Framing::Lines, "daemon");
    cfg.write_config("[mcp_servers.both]\ncommand = \"x\"\nurl = \"http://127.0.0.1:1/mcp\"\n");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_genai"))
        .args(["config", "show"])
        .env("GENAI_CONFIG_DIR", &cfg.config_dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("exactly one of `command` (stdio) or `url` (HTTP)"),
        "{err}"
    );
}

#[test]
fn an_image_an_mcp_tool_answers_reaches_a_model_that_takes_images() {
    use crate::support::fake_anthropic::{Behavior, FakeAnthropic, KEY};
    let fake = FakeAnthropic::start(Behavior::default()).unwrap();
    fake.push(Behavior::calls("", &[("srv__picture", "{}")]));
    fake.push(Behavior::text("A red dot."));
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("srv.pids");
    let mut d = daemon_with(
        dir.path(),
        &server("srv", &pid_file, MORE_TOOLS),
        &[
            ("ANTHROPIC_BASE_URL", &fake.base_url()),
            ("ANTHROPIC_API_KEY", KEY),
            ("FAKE_MCP_MORE_TOOLS", "1"),
        ],
    );
    let (cid, _) = d.create_conversation(
        json!({"feature": "tools", "serviceProvider": "anthropic", "model": "claude-test", "tools": ["srv.picture"]}),
    );
    let (_, fin) = d.turn(&cid, "Show me the picture", WAIT);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let result = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|b| b["type"] == "tool_result")
        .expect("a tool result");
    let kinds: Vec<&str> = result["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["text", "image"], "{result}");
    assert_eq!(result["content"][1]["source"]["media_type"], "image/png");
}

#[test]
fn resources_and_prompts_of_an_mcp_server_are_listed_read_and_fetched() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("srv.pids");
    let config = format!(
        "{}{}",
        server("srv", &pid_file, MORE_TOOLS),
        server("plain", &dir.path().join("plain.pids"), MORE_TOOLS)
    );
    let mut d = daemon_with(dir.path(), &config, &[("FAKE_MCP_MORE_TOOLS", "1")]);
    let r = d.call("ListResources", json!({"sources": ["srv"]}));
    assert_eq!(
        r["resources"],
        json!([{"source": "srv", "uri": "memo://greeting", "name": "greeting",
                "description": "A greeting.", "mimeType": "text/plain"}]),
        "{r}"
    );
    let r = d.call(
        "ReadResource",
        json!({"source": "srv", "uri": "memo://greeting"}),
    );
    assert_eq!(
        r["contents"],
        json!([{"type": "text", "text": "Content of memo://greeting:\nHello from a resource"}]),
        "{r}"
    );
    let e = d.call_err(
        "ReadResource",
        json!({"source": "srv", "uri": "memo://nothing"}),
    );
    assert!(message(&e).contains("memo://nothing"), "{e}");
    let e = d.call_err(
        "ReadResource",
        json!({"source": "nope", "uri": "memo://greeting"}),
    );
    assert!(message(&e).contains("no tool source `nope`"), "{e}");

    let r = d.call("ListPrompts", json!({}));
    let prompts = r["prompts"].as_array().unwrap();
    assert_eq!(prompts.len(), 2, "both enabled servers list `review`: {r}");
    assert_eq!(prompts[0]["name"], "review");
    assert_eq!(prompts[0]["arguments"][0]["required"], true);
    let r = d.call(
        "GetPrompt",
        json!({"source": "srv", "name": "review", "arguments": {"code": "fn f() {}"}}),
    );
    assert_eq!(r["messages"][0]["role"], "user", "{r}");
    assert_eq!(
        r["messages"][0]["content"][0]["text"],
        "Review this code: fn f() {}"
    );
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
