//! `genai serve`'s `/mcp`: genai's MCP server over streamable HTTP, driven by the `rmcp` SDK's
//! client (which declares no elicitation) on a serve started in a fixture repository. Only the
//! serve token from an allowed origin gets in; bad bodies are refused and the serve goes on;
//! the workspace tools run under the config's policy, a call that would ask is refused naming
//! the config rule that allows it; a SIGTERM with a session open still ends the serve cleanly.

use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::{json, Value};

use crate::support::cli;
use crate::support::fleet::{replica, REPLICA};
use crate::support::poll::wait_until;

use super::mcp_server::{text, Fixture, SECRET, SERVED_TOOLS};

/// An `initialize` request as any client first sends it.
fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "curl", "version": "1"}
    }})
}

/// A POST to `/mcp` with what a streamable HTTP client sends, plus `headers`.
async fn post(url: &str, body: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut req = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = req.send().await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

#[tokio::test]
async fn serve_answers_mcp_to_its_token_under_the_configs_policy_and_stops_cleanly() {
    let f = Fixture::new();
    let token = cli::stdout(&cli::output(f.genai(&["serve", "--print-token"])));
    let token = token.trim().to_string();
    let (mut serve, base) = replica(f.genai(REPLICA));
    let url = format!("{base}/mcp");
    let bearer = format!("Bearer {token}");
    let init = initialize().to_string();

    // No token, a wrong one, or a foreign page with the token: refused before MCP is spoken.
    assert_eq!(post(&url, &init, &[]).await.0, 401);
    let wrong = [("authorization", "Bearer not-the-token")];
    assert_eq!(post(&url, &init, &wrong).await.0, 401);
    let foreign = [
        ("authorization", bearer.as_str()),
        ("origin", "https://evil.example"),
    ];
    assert_eq!(post(&url, &init, &foreign).await.0, 403);
    // A body that is not JSON-RPC is the client's error, and the serve goes on.
    let (status, said) = post(&url, "{not json", &[("authorization", &bearer)]).await;
    assert!((400..500).contains(&status), "{status} {said}");

    // The SDK's HTTP client takes the TLS provider genai's own client installs.
    let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.clone()).auth_header(token.clone()),
    );
    let client = ().serve(transport).await.expect("initialize over HTTP");
    let info = client.peer().peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "genai");
    let tools = client.peer().list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for name in SERVED_TOOLS {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    let call = |tool: &str, arguments: Value| {
        let Value::Object(arguments) = arguments else {
            panic!("arguments are an object")
        };
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let peer = client.peer().clone();
        async move { serde_json::to_value(peer.call_tool(params).await.unwrap()).unwrap() }
    };
    // The serve's root is the folder it was started in: the repository.
    let read = call("read_file", json!({"path": "src/lib.rs"})).await;
    assert_eq!(read["isError"], false, "{read}");
    assert!(text(&read).contains("41"), "{read}");
    let secret = call("read_file", json!({"path": ".env"})).await;
    assert_eq!(secret["isError"], true, "{secret}");
    assert!(!secret.to_string().contains(SECRET), "{secret}");
    // An edit asks under the default mode; this client cannot answer, so it is refused with
    // the config rule that would allow it, and the file is untouched.
    let edit = call(
        "edit_file",
        json!({"path": "src/lib.rs", "old_text": "41", "new_text": "43"}),
    )
    .await;
    assert_eq!(edit["isError"], true, "{edit}");
    let said = text(&edit);
    assert!(
        said.contains("[permissions] allow") && said.contains("edit_file("),
        "{said}"
    );
    let lib = std::fs::read_to_string(f.repo().join("src/lib.rs")).unwrap();
    assert!(lib.contains("41") && !lib.contains("43"), "{lib}");

    // SIGTERM with the session still open: the serve ends its sessions and exits 0.
    unsafe { libc::kill(serve.0.id() as i32, libc::SIGTERM) };
    let mut status = None;
    wait_until("genai serve exits", Duration::from_secs(30), || {
        status = serve.0.try_wait().unwrap();
        status.is_some()
    });
    assert!(status.unwrap().success(), "{status:?}");
    drop(client);
}
