//! `ListTools` and `CallTool` over the daemon's protocol, against fake plugin modules: tools of
//! the enabled modules, a module that is down reported beside the others, calls answered while
//! other requests go on, and errors as JSON-RPC errors or tool errors; the `tools` feature's
//! parallel tool calls (OpenAI's and Claude's), and a conversation's tools kept after a
//! restart. What a tool call asks of the client is in `daemon_tools_client.rs`.

use std::time::Duration;

use fake_plugin::{Answer, FakePlugin};
use rpc_client::{Daemon, DaemonConfig, Framing};
use serde_json::{json, Value};

use crate::support::{fake_anthropic, fake_openai, fake_plugin, rpc_client};

pub(crate) const WAIT: Duration = Duration::from_secs(20);

fn daemon(root: &std::path::Path, config: &str) -> Daemon {
    let cfg = DaemonConfig::in_dir(root, Framing::Lines, "daemon");
    cfg.write_config(config);
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

#[test]
fn the_tools_feature_runs_parallel_tool_calls_and_commits_the_whole_turn() {
    use fake_openai::{Behavior, FakeOpenAi};
    let events = FakePlugin::start(None);
    events.push(
        "eventParticipation",
        Answer::text("Participation of the user to event E1 has been validated."),
    );
    events.push(
        "getEvents",
        Answer::json(json!({"error": "calendar offline"})),
    );
    let fake = FakeOpenAi::start(0, Behavior::default()).unwrap();
    // The model asks for two tools in one reply, then answers.
    fake.push(Behavior {
        reply: String::new(),
        tool_calls: vec![
            ("call_1".into(), "events__getEvents".into(), "{}".into()),
            (
                "call_2".into(),
                "events__eventParticipation".into(),
                r#"{"eventId":"E1","participation":"YES"}"#.into(),
            ),
        ],
        ..Behavior::default()
    });
    fake.push(Behavior::reply(
        "You are registered for E1; the calendar is offline.",
        3,
    ));
    let dir = tempfile::tempdir().unwrap();
    let (mut d, cid) = tools_daemon(dir.path(), &fake, &events);
    let (turn_id, fin) = d.turn(&cid, "Sign me up for E1", WAIT);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(
        fin["summary"],
        "You are registered for E1; the calendar is offline."
    );
    let details = fin["detailedResponse"].to_string();
    assert!(
        details.contains("tool events.eventParticipation")
            && details.contains("has been validated")
            && details.contains("tool events.getEvents({}) → error: calendar offline"),
        "{details}"
    );

    // The calls streamed to the client as they came, under their tool names.
    let pieces: Vec<Value> = d
        .log()
        .iter()
        .filter(|m| m["method"] == "OnToolCallChunk" && m["params"]["turnId"] == turn_id)
        .map(|m| m["params"].clone())
        .collect();
    let named: Vec<(u64, &str)> = pieces
        .iter()
        .filter_map(|p| Some((p["index"].as_u64()?, p["name"].as_str()?)))
        .collect();
    assert_eq!(
        named,
        [(0, "events.getEvents"), (1, "events.eventParticipation")],
        "{pieces:?}"
    );
    let arguments: String = pieces
        .iter()
        .filter(|p| p["index"] == 1)
        .map(|p| p["arguments"].as_str().unwrap())
        .collect();
    assert_eq!(arguments, r#"{"eventId":"E1","participation":"YES"}"#);

    // The first request offered both tools under wire names with their schemas.
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let tools = &requests[0].body["tools"];
    assert_eq!(
        tools[1]["function"]["name"], "events__eventParticipation",
        "{tools}"
    );
    assert_eq!(
        tools[1]["function"]["parameters"]["required"],
        json!(["eventId", "participation"])
    );
    // The second carried the calls and both results, the failed one marked as such.
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    assert_eq!(messages.len(), 4, "{messages:?}");
    assert_eq!(messages[1]["tool_calls"].as_array().unwrap().len(), 2);
    assert_eq!(messages[2]["role"], "tool");
    assert_eq!(messages[2]["tool_call_id"], "call_1");
    assert!(messages[2]["content"]
        .to_string()
        .contains("calendar offline"));
    assert_eq!(messages[3]["tool_call_id"], "call_2");
    assert!(messages[3]["content"]
        .to_string()
        .contains("has been validated"));
    // The module got the arguments as a JSON string.
    let call = events
        .requests()
        .into_iter()
        .find(|r| r.body["method"] == "eventParticipation")
        .unwrap();
    assert_eq!(
        call.body["params"],
        "{\"eventId\":\"E1\",\"participation\":\"YES\"}"
    );
    // The whole turn is stored: prompt, calls, results, answer.
    let h = d.history(&cid);
    assert_eq!(h.len(), 4, "{h:?}");
    assert!(d.shutdown(WAIT).success());
}

#[test]
fn the_tools_feature_runs_parallel_tool_uses_on_claude() {
    use fake_anthropic::{Behavior, FakeAnthropic};
    let events = FakePlugin::start(None);
    let fake = FakeAnthropic::start(Behavior::default()).unwrap();
    fake.push(Behavior {
        reply: "Let me check.".into(),
        tool_calls: vec![
            ("toolu_1".into(), "events__getEvents".into(), "{}".into()),
            (
                "toolu_2".into(),
                "events__eventParticipation".into(),
                r#"{"eventId":"E2","participation":"NO"}"#.into(),
            ),
        ],
        ..Behavior::default()
    });
    fake.push(Behavior::text("Done: you will not attend E2."));
    let dir = tempfile::tempdir().unwrap();
    let cfg = DaemonConfig::in_dir(dir.path(), Framing::ContentLength, "daemon")
        .env("ANTHROPIC_BASE_URL", &fake.base_url())
        .env("ANTHROPIC_API_KEY", fake_anthropic::KEY);
    let (mut d, cid) = tools_conversation(cfg, &events, "anthropic", "claude-test");
    let (_, fin) = d.turn(&cid, "I cannot make it to E2", WAIT);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(fin["summary"], "Done: you will not attend E2.");
    // tool_use blocks and their input_json_delta pieces streamed to the client.
    let named: Vec<String> = d
        .log()
        .iter()
        .filter(|m| m["method"] == "OnToolCallChunk")
        .filter_map(|m| m["params"]["name"].as_str().map(str::to_string))
        .collect();
    assert_eq!(named, ["events.getEvents", "events.eventParticipation"]);

    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].body["tools"][1],
        json!({"name": "events__eventParticipation", "description": "Update the participation status to an event.",
               "input_schema": {"type": "object", "additionalProperties": false, "required": ["eventId", "participation"],
                                "properties": {"eventId": {"type": "string", "description": "ID of the event"},
                                               "participation": {"type": "string", "description": "YES or NO"}}}})
    );
    // Claude gets its tool_use blocks back, then one user turn with both tool_result blocks.
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    assert_eq!(messages.len(), 3, "{messages:?}");
    let uses: Vec<&str> = messages[1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    assert_eq!(uses, ["toolu_1", "toolu_2"]);
    assert_eq!(
        messages[1]["content"][2]["input"],
        json!({"eventId": "E2", "participation": "NO"})
    );
    assert_eq!(messages[2]["role"], "user");
    let results: Vec<&str> = messages[2]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["tool_use_id"].as_str().unwrap())
        .collect();
    assert_eq!(results, ["toolu_1", "toolu_2"]);
    assert!(messages[2]["content"][1]["content"]
        .to_string()
        .contains("eventParticipation done"));
    assert!(d.shutdown(WAIT).success());
}

/// A daemon with the `events` module enabled and the built-in `openai` on `fake`, and a
/// `tools` conversation on it.
pub(crate) fn tools_daemon(
    root: &std::path::Path,
    fake: &fake_openai::FakeOpenAi,
    events: &FakePlugin,
) -> (Daemon, String) {
    let cfg = DaemonConfig::in_dir(root, Framing::Lines, "daemon")
        .env("OPENAI_BASE_URL", &fake.base_url())
        .env("OPENAI_API_KEY", "sk-test-tools");
    tools_conversation(cfg, events, "openai", "gpt-test")
}

/// A daemon of `cfg` with the `events` module enabled, and a `tools` conversation on `provider`
/// and `model`; the daemon and the conversation id.
fn tools_conversation(
    cfg: DaemonConfig,
    events: &FakePlugin,
    provider: &str,
    model: &str,
) -> (Daemon, String) {
    cfg.write_config(&events.enabled_as("events"));
    let mut d = Daemon::spawn(&cfg);
    let (cid, _) = d.create_conversation(
        json!({"feature": "tools", "serviceProvider": provider, "model": model}),
    );
    (d, cid)
}

pub(crate) fn calls(tool: &str, args: &str) -> fake_openai::Behavior {
    fake_openai::Behavior {
        reply: String::new(),
        tool_calls: vec![("call_1".into(), tool.into(), args.into())],
        ..fake_openai::Behavior::default()
    }
}

#[test]
fn a_conversation_uses_the_tools_it_was_given_also_after_a_restart() {
    let events = FakePlugin::start(None);
    let fake = fake_openai::FakeOpenAi::start(0, fake_openai::Behavior::text("unused")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cfg = DaemonConfig::in_dir(dir.path(), Framing::Lines, "daemon")
        .env("OPENAI_BASE_URL", &fake.base_url())
        .env("OPENAI_API_KEY", "sk-test-tools");
    cfg.write_config(&format!(
        "[plugins.events]\nurl = \"{0}\"\nenabled = true\n\n[plugins.spare]\nurl = \"{0}\"\n",
        events.base_url()
    ));
    let offered = |fake: &fake_openai::FakeOpenAi| -> Vec<String> {
        let last = fake.requests().last().unwrap().body.clone();
        last["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| t["function"]["name"].as_str().unwrap().to_string())
            .collect()
    };

    let mut d = Daemon::spawn(&cfg);
    // Names that are not sources, and tools for a feature that does not use them, are refused.
    let e = d.call_err(
        "CreateConversation",
        json!({"tools": ["nope"], "serviceProvider": "openai", "model": "gpt-test"}),
    );
    assert!(
        e["message"].as_str().unwrap().contains(
            "no tool source `nope`; built in: workspace; configured plugins: events, spare; MCP servers: none"
        ),
        "{e}"
    );
    let e = d.call_err(
        "CreateConversation",
        json!({"feature": "assistant", "tools": ["events"], "serviceProvider": "openai", "model": "gpt-test"}),
    );
    assert!(
        e["message"].as_str().unwrap().contains("`tools` feature"),
        "{e}"
    );
    // One tool of a module that is not enabled; `tools` implies the feature.
    let conv = d.call(
        "CreateConversation",
        json!({"tools": ["spare.getEvents"], "serviceProvider": "openai", "model": "gpt-test"}),
    );
    assert_eq!(conv["feature"], "tools");
    let cid = conv["conversationId"].as_str().unwrap().to_string();
    fake.push(fake_openai::Behavior::text("First."));
    d.turn(&cid, "hello", WAIT);
    assert_eq!(offered(&fake), ["spare__getEvents"]);
    // A conversation that names no tools gets the enabled modules.
    let other = d.call(
        "CreateConversation",
        json!({"feature": "tools", "serviceProvider": "openai", "model": "gpt-test"}),
    );
    fake.push(fake_openai::Behavior::text("Other."));
    d.turn(other["conversationId"].as_str().unwrap(), "hello", WAIT);
    assert_eq!(
        offered(&fake),
        ["events__getEvents", "events__eventParticipation"]
    );
    assert!(d.shutdown(WAIT).success());

    // A new daemon resumes the conversation with the same selection.
    let mut d = Daemon::spawn(&cfg);
    d.call("ResumeConversation", json!({"conversationId": cid}));
    fake.push(fake_openai::Behavior::text("Second."));
    let (_, fin) = d.turn(&cid, "again", WAIT);
    assert_eq!(fin["summary"], "Second.", "{fin}");
    assert_eq!(offered(&fake), ["spare__getEvents"]);
    assert!(d.shutdown(WAIT).success());
}
