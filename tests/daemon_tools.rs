//! `ListTools` and `CallTool` over the daemon's protocol, against fake plugin modules: tools of
//! the enabled modules, a module that is down reported beside the others, calls answered while
//! other requests go on, and errors as JSON-RPC errors or tool errors.

#![allow(clippy::duplicate_mod)]

#[path = "support/fake_openai.rs"]
mod fake_openai;
#[path = "support/fake_plugin.rs"]
mod fake_plugin;
#[path = "support/rpc_client.rs"]
mod rpc_client;

use std::time::Duration;

use fake_plugin::{Answer, FakePlugin};
use rpc_client::{Daemon, DaemonConfig, Framing};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(20);

fn daemon(root: &std::path::Path, config: &str) -> Daemon {
    let cfg = DaemonConfig::in_dir(root, Framing::Lines, "daemon");
    std::fs::create_dir_all(&cfg.config_dir).unwrap();
    std::fs::write(cfg.config_dir.join("config.toml"), config).unwrap();
    Daemon::spawn(&cfg)
}

#[test]
fn list_and_call_tools_of_plugin_modules() {
    let events = FakePlugin::start(None);
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let mut d = daemon(
        dir.path(),
        &format!(
            "[plugins.events]\nurl = \"{}\"\nenabled = true\n\n[plugins.down]\nurl = \"http://127.0.0.1:{closed}\"\nenabled = true\n\n[plugins.spare]\nurl = \"{}\"\n",
            events.base_url(),
            events.base_url()
        ),
    );

    // The enabled modules: two tools from `events`, and `down` reported, not fatal.
    let r = d.call("ListTools", json!({}));
    let names: Vec<&str> = r["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["events.getEvents", "events.eventParticipation"],
        "{r}"
    );
    assert_eq!(
        r["tools"][1]["inputSchema"]["properties"]["eventId"]["description"],
        "ID of the event"
    );
    assert_eq!(r["tools"][1]["source"], "plugin:events");
    assert_eq!(r["errors"][0]["source"], "down", "{r}");
    assert!(
        r["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("cannot fetch"),
        "{r}"
    );
    // Named selection: a module that is not enabled, and one tool of it.
    let r = d.call("ListTools", json!({"tools": ["spare.getEvents"]}));
    assert_eq!(r["tools"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(r["tools"][0]["name"], "spare.getEvents");

    // A call: arguments reach the module as a JSON string; the answer's fields come back.
    events.push(
        "eventParticipation",
        Answer::json(json!({
            "text": "Confirm?",
            "askConfirmation": true,
            "confirmationLink": format!("{}/confirmations/C1", events.base_url()),
            "collectResponse": true,
            "collectResponseLink": format!("{}/collection/E1", events.base_url()),
            "actions": [{"code": "[[WAVE]]", "type": "PLAY_ANIMATION"}]
        })),
    );
    let r = d.call(
        "CallTool",
        json!({"name": "events.eventParticipation", "arguments": {"eventId": "E1", "participation": "YES"}}),
    );
    assert_eq!(r["text"], "Confirm?");
    assert_eq!(r["isError"], false);
    assert!(r["confirmationLink"]
        .as_str()
        .unwrap()
        .ends_with("/confirmations/C1"));
    assert!(r["collectLink"]
        .as_str()
        .unwrap()
        .ends_with("/collection/E1"));
    assert_eq!(r["actions"][0]["code"], "[[WAVE]]");
    let call = events
        .requests()
        .into_iter()
        .rfind(|r| r.path == "/ai-functions")
        .unwrap();
    assert_eq!(
        call.body["params"],
        "{\"eventId\":\"E1\",\"participation\":\"YES\"}"
    );

    // A module error is a tool error (a result), not a protocol error.
    events.push(
        "getEvents",
        Answer::json(json!({"error": "Unknown method"})),
    );
    let r = d.call("CallTool", json!({"name": "events.getEvents"}));
    assert_eq!(
        (r["text"].as_str(), r["isError"].as_bool()),
        (Some("Unknown method"), Some(true))
    );

    // Wrong names and arguments are JSON-RPC errors, and the daemon goes on.
    let e = d.call_err("CallTool", json!({"name": "getEvents"}));
    assert_eq!(e["code"], -32602, "{e}");
    let e = d.call_err("CallTool", json!({"name": "nowhere.f"}));
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("configured plugins: down, events, spare"),
        "{e}"
    );
    let e = d.call_err(
        "CallTool",
        json!({"name": "events.getEvents", "arguments": [1]}),
    );
    assert_eq!(e["code"], -32602, "{e}");
    let e = d.call_err("CallTool", json!({"name": "events.dance"}));
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("getEvents, eventParticipation"),
        "{e}"
    );

    // A slow tool does not hold other requests up: ListComponents is answered first.
    events.push(
        "getEvents",
        Answer {
            delay: Duration::from_millis(1500),
            ..Answer::text("slow events")
        },
    );
    let slow = d.send_request("CallTool", json!({"name": "events.getEvents"}));
    let quick = d.send_request("ListComponents", json!({}));
    let first = d.wait_response(&json!(quick), WAIT);
    assert!(first["result"].is_object(), "{first}");
    let later: Value = d.wait_response(&json!(slow), WAIT);
    assert_eq!(later["result"]["text"], "slow events", "{later}");

    // End of input waits for a call still running, then exits 0.
    events.push(
        "getEvents",
        Answer {
            delay: Duration::from_millis(500),
            ..Answer::text("last")
        },
    );
    let last = d.send_request("CallTool", json!({"name": "events.getEvents"}));
    d.close_stdin();
    assert!(d.wait_exit(WAIT).success());
    assert_eq!(
        d.wait_response(&json!(last), WAIT)["result"]["text"],
        "last"
    );
}
