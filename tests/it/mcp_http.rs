//! MCP servers over the streamable-HTTP transport (`examples/fake-mcp-server --http`): a tool
//! source with the headers its config names (a wrong key keeps its tools out, unshown), and a
//! server that must have a command or a URL, not both.

use serde_json::json;

use crate::mcp::{daemon, fake_server, names};
use crate::support::rpc_client::{DaemonConfig, Framing};

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
