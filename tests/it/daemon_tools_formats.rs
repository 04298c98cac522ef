//! The `tools` feature on the `gemini`, `bedrock-converse` and `ollama-chat` formats, through
//! the daemon against their fake providers and a fake plugin module: the model's first reply
//! has two tool calls, both run, the second request carries both results in the provider's
//! shape, the final answer is the summary, and the history holds the whole turn. Streamed turns
//! also send `OnToolCallChunk` for each call.

use std::path::Path;
use std::time::Duration;

use fake_plugin::{Answer, FakePlugin};
use rpc_client::{Daemon, DaemonConfig, Framing};
use serde_json::{json, Value};

use crate::support::behavior::{self, Faults};
use crate::support::{fake_bedrock, fake_gemini, fake_ollama, fake_plugin, rpc_client};

const WAIT: Duration = Duration::from_secs(30);
const PARTICIPATION: &str = r#"{"eventId":"E1","participation":"YES"}"#;
const VALIDATED: &str = "Participation of the user to event E1 has been validated.";

/// A reply of `text` that calls both tools of the `events` module at once.
fn both_calls<M: Faults>(text: &str) -> behavior::Behavior<M> {
    behavior::Behavior::calls(
        text,
        &[
            ("events__getEvents", "{}"),
            ("events__eventParticipation", PARTICIPATION),
        ],
    )
}

/// The `events` module, with `getEvents` failing and `eventParticipation` succeeding.
fn events_module() -> FakePlugin {
    let events = FakePlugin::start(None);
    events.push("eventParticipation", Answer::text(VALIDATED));
    events.push(
        "getEvents",
        Answer::json(json!({"error": "calendar offline"})),
    );
    events
}

/// A daemon with the `events` module enabled, after `Initialize` with `streaming`.
fn daemon(root: &Path, mut cfg: DaemonConfig, events: &FakePlugin, streaming: bool) -> Daemon {
    cfg.write_config(&events.enabled_as("events"));
    cfg = cfg.env("HOME", root.to_str().unwrap());
    let mut d = Daemon::spawn(&cfg);
    d.initialize("tools-formats", streaming);
    d
}

/// Creates a `tools` conversation and runs one turn; the conversation's agent id and the final
/// `OnFeatureResponse` params.
fn tools_turn(
    d: &mut Daemon,
    provider: &str,
    model: &str,
    format: &str,
) -> (String, String, Value) {
    let conv = d.call(
        "CreateConversation",
        json!({"feature": "tools", "serviceProvider": provider, "model": model}),
    );
    assert_eq!(conv["format"], format, "{conv}");
    let cid = conv["conversationId"].as_str().unwrap().to_string();
    let (turn_id, fin) = d.turn(&cid, "Sign me up for E1", WAIT);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let details = fin["detailedResponse"].to_string();
    assert!(
        details.contains("tool events.getEvents({}) → error: calendar offline")
            && details.contains("has been validated"),
        "{details}"
    );
    (conv["agentId"].as_str().unwrap().to_string(), turn_id, fin)
}

/// The history holds the prompt, both calls (with the ids the format gave them), both results
/// (the failed one marked) and the answer.
fn assert_whole_turn(d: &mut Daemon, agent_id: &str, ids: [&str; 2], summary: &str) {
    let h = d.call("GetHistory", json!({"agentId": agent_id}));
    let h = h.as_array().expect("GetHistory returns a list").clone();
    let roles: Vec<&str> = h.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"], "{h:?}");
    let parts = |m: &Value, kind: &str| -> Vec<Value> {
        m["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["type"] == kind)
            .cloned()
            .collect()
    };
    let calls: Vec<(String, String)> = parts(&h[1], "toolCall")
        .iter()
        .map(|c| (c["id"].to_string(), c["name"].to_string()))
        .collect();
    assert_eq!(
        calls,
        [
            (
                json!(ids[0]).to_string(),
                json!("events__getEvents").to_string()
            ),
            (
                json!(ids[1]).to_string(),
                json!("events__eventParticipation").to_string()
            )
        ]
    );
    assert_eq!(parts(&h[1], "toolCall")[1]["arguments"]["eventId"], "E1");
    let results: Vec<(Value, Value)> = parts(&h[2], "toolResult")
        .iter()
        .map(|r| (r["toolCallId"].clone(), r["isError"].clone()))
        .collect();
    assert_eq!(
        results,
        [(json!(ids[0]), json!(true)), (json!(ids[1]), json!(false))]
    );
    assert_eq!(h[3]["content"][0]["text"], summary, "{h:?}");
}

/// The `OnToolCallChunk` notifications of a turn, as (index, tool name when given, arguments).
fn call_chunks(d: &Daemon, turn_id: &str) -> Vec<(u64, Option<String>, String)> {
    d.log()
        .iter()
        .filter(|m| m["method"] == "OnToolCallChunk" && m["params"]["turnId"] == turn_id)
        .map(|m| {
            let p = &m["params"];
            (
                p["index"].as_u64().unwrap(),
                p["name"].as_str().map(str::to_string),
                p["arguments"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// Each call of a streamed reply reached the client, named after its tool, with its whole
/// arguments once its pieces are put together.
fn assert_streamed_calls(d: &Daemon, turn_id: &str) {
    let chunks = call_chunks(d, turn_id);
    for (index, tool, args) in [
        (0, "events.getEvents", "{}"),
        (1, "events.eventParticipation", PARTICIPATION),
    ] {
        let of_call: Vec<_> = chunks.iter().filter(|c| c.0 == index).collect();
        assert!(
            of_call.iter().any(|c| c.1.as_deref() == Some(tool)),
            "no OnToolCallChunk named {tool}: {chunks:?}"
        );
        let joined: String = of_call.iter().map(|c| c.2.as_str()).collect();
        let joined: Value = serde_json::from_str(&joined).unwrap();
        assert_eq!(joined, serde_json::from_str::<Value>(args).unwrap());
    }
}

#[test]
fn gemini_runs_parallel_function_calls_and_answers_them_in_one_turn() {
    use fake_gemini::Behavior;
    let events = events_module();
    let fake = fake_gemini::start(Behavior::reply("unused", 1));
    fake.push(both_calls(""));
    let summary = "You are registered for E1; the calendar is offline.";
    fake.push(Behavior::reply(summary, 3));
    let dir = tempfile::tempdir().unwrap();
    let cfg = DaemonConfig::in_dir(dir.path(), Framing::ContentLength, "daemon")
        .env("GEMINI_BASE_URL", &fake.url())
        .env("GEMINI_API_KEY", fake_gemini::KEY)
        .env("GOOGLE_API_KEY", "");
    let mut d = daemon(dir.path(), cfg, &events, true);
    let (agent, turn_id, fin) = tools_turn(&mut d, "gemini", "gemini-2.0-flash", "gemini");
    assert_eq!(fin["summary"], summary);

    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert!(requests[0].path.contains(":streamGenerateContent"));
    // Declarations in Gemini's schema subset: no `additionalProperties`, and no `parameters`
    // for a function without any.
    let declarations = &requests[0].body["tools"][0]["functionDeclarations"];
    assert_eq!(
        declarations[0]["name"], "events__getEvents",
        "{declarations}"
    );
    assert!(
        declarations[0].get("parameters").is_none(),
        "{declarations}"
    );
    assert_eq!(
        declarations[1]["parameters"],
        json!({"type": "object", "required": ["eventId", "participation"],
               "properties": {"eventId": {"type": "string", "description": "ID of the event"},
                              "participation": {"type": "string", "description": "YES or NO"}}})
    );
    // The second request: the model's two calls, then both responses in one user turn.
    let contents = requests[1].body["contents"].as_array().unwrap().clone();
    assert_eq!(contents.len(), 3, "{contents:?}");
    assert_eq!(
        contents[1],
        json!({"role": "model", "parts": [
            {"functionCall": {"name": "events__getEvents", "args": {}}},
            {"functionCall": {"name": "events__eventParticipation", "args": {"eventId": "E1", "participation": "YES"}}}
        ]})
    );
    assert_eq!(
        contents[2],
        json!({"role": "user", "parts": [
            {"functionResponse": {"name": "events__getEvents", "response": {"error": "calendar offline"}}},
            {"functionResponse": {"name": "events__eventParticipation", "response": {"output": VALIDATED}}}
        ]})
    );
    assert_streamed_calls(&d, &turn_id);
    assert_whole_turn(&mut d, &agent, ["call_0", "call_1"], summary);
    assert!(d.shutdown(WAIT).success());
}

/// A daemon's config against the fake Bedrock with its keys, and no other AWS variable of the
/// caller's.
fn bedrock_config(root: &Path, fake: &fake_bedrock::FakeBedrock) -> DaemonConfig {
    let mut cfg = DaemonConfig::in_dir(root, Framing::Lines, "daemon")
        .env("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", &fake.url())
        .env("AWS_REGION", fake_bedrock::REGION)
        .env("AWS_ACCESS_KEY_ID", fake_bedrock::ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", fake_bedrock::SECRET_KEY);
    for (k, _) in std::env::vars() {
        if k.starts_with("AWS_") && !cfg.env.iter().any(|(n, _)| n == k.as_str()) {
            cfg = cfg.env(&k, "");
        }
    }
    cfg
}

#[test]
fn bedrock_converse_streams_tool_uses_and_sends_both_results_in_one_message() {
    use fake_bedrock::{Accept, Behavior, FakeBedrock};
    let events = events_module();
    let fake = FakeBedrock::start(Accept {
        session_token: None,
    })
    .unwrap();
    fake.push(Behavior {
        reply: "Let me check.".into(),
        chunks: 2,
        tool_calls: vec![
            ("tooluse_1".into(), "events__getEvents".into(), "{}".into()),
            (
                "tooluse_2".into(),
                "events__eventParticipation".into(),
                PARTICIPATION.into(),
            ),
        ],
        ..Behavior::default()
    });
    let summary = "Done: you are registered for E1.";
    fake.push(Behavior::text(summary));
    let dir = tempfile::tempdir().unwrap();
    let cfg = bedrock_config(dir.path(), &fake);
    let mut d = daemon(dir.path(), cfg, &events, true);
    let model = "anthropic.claude-3-haiku-20240307-v1:0";
    let (agent, turn_id, fin) = tools_turn(&mut d, "bedrock", model, "bedrock-converse");
    assert_eq!(fin["summary"], summary);

    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(requests[0].action, "converse-stream");
    let spec = &requests[0].body["toolConfig"]["tools"][1]["toolSpec"];
    assert_eq!(spec["name"], "events__eventParticipation", "{spec}");
    assert_eq!(
        spec["inputSchema"]["json"]["required"],
        json!(["eventId", "participation"])
    );
    // The second request: text and both toolUse blocks, then one user message with both
    // toolResult blocks, the failed one with status error.
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert_eq!(
        messages[1],
        json!({"role": "assistant", "content": [
            {"text": "Let me check."},
            {"toolUse": {"toolUseId": "tooluse_1", "name": "events__getEvents", "input": {}}},
            {"toolUse": {"toolUseId": "tooluse_2", "name": "events__eventParticipation",
                         "input": {"eventId": "E1", "participation": "YES"}}}
        ]})
    );
    assert_eq!(
        messages[2],
        json!({"role": "user", "content": [
            {"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "calendar offline"}], "status": "error"}},
            {"toolResult": {"toolUseId": "tooluse_2", "content": [{"text": VALIDATED}]}}
        ]})
    );
    assert!(requests[1].body.get("toolConfig").is_some());
    // The input came in pieces: more than one chunk for the second call.
    let chunks = call_chunks(&d, &turn_id);
    assert!(
        chunks.iter().filter(|c| c.0 == 1).count() >= 3,
        "{chunks:?}"
    );
    assert_streamed_calls(&d, &turn_id);
    assert_whole_turn(&mut d, &agent, ["tooluse_1", "tooluse_2"], summary);
    assert!(d.shutdown(WAIT).success());
}

#[test]
fn ollama_chat_runs_tool_calls_without_ids_and_names_each_result() {
    use fake_ollama::Behavior;
    let events = events_module();
    let fake = fake_ollama::start(Behavior::reply("unused", 1));
    fake.push(both_calls(""));
    let summary = "You are in for E1; I could not read the calendar.";
    fake.push(Behavior::reply(summary, 2));
    let dir = tempfile::tempdir().unwrap();
    let cfg = DaemonConfig::in_dir(dir.path(), Framing::Lines, "daemon")
        .env("OLLAMA_HOST", &fake.url())
        .env("OLLAMA_API_KEY", "");
    // A client without streaming: whole answers, and no call chunks.
    let mut d = daemon(dir.path(), cfg, &events, false);
    let (agent, turn_id, fin) = tools_turn(&mut d, "ollama", "qwen3", "ollama-chat");
    assert_eq!(fin["summary"], summary);

    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(requests[0].body["stream"], false);
    assert_eq!(
        requests[0].body["tools"][1]["function"]["name"],
        "events__eventParticipation"
    );
    assert_eq!(requests[0].body["tools"][1]["type"], "function");
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    assert_eq!(messages.len(), 4, "{messages:?}");
    assert_eq!(
        messages[1]["tool_calls"],
        json!([
            {"type": "function", "function": {"index": 0, "name": "events__getEvents", "arguments": {}}},
            {"type": "function", "function": {"index": 1, "name": "events__eventParticipation",
                                              "arguments": {"eventId": "E1", "participation": "YES"}}}
        ])
    );
    assert_eq!(
        messages[2],
        json!({"role": "tool", "tool_name": "events__getEvents", "content": "calendar offline"})
    );
    assert_eq!(
        messages[3],
        json!({"role": "tool", "tool_name": "events__eventParticipation", "content": VALIDATED})
    );
    assert!(call_chunks(&d, &turn_id).is_empty());
    assert_whole_turn(&mut d, &agent, ["call_0", "call_1"], summary);
    assert!(d.shutdown(WAIT).success());
}

#[test]
fn ollama_chat_streams_whole_calls_as_chunks() {
    use fake_ollama::Behavior;
    let events = events_module();
    let fake = fake_ollama::start(Behavior::reply("unused", 1));
    fake.push(both_calls("Checking."));
    fake.push(Behavior::reply("Registered.", 2));
    let dir = tempfile::tempdir().unwrap();
    let cfg = DaemonConfig::in_dir(dir.path(), Framing::Lines, "daemon")
        .env("OLLAMA_HOST", &fake.url())
        .env("OLLAMA_API_KEY", "");
    let mut d = daemon(dir.path(), cfg, &events, true);
    let (agent, turn_id, fin) = tools_turn(&mut d, "ollama", "qwen3", "ollama-chat");
    assert_eq!(fin["summary"], "Registered.");
    assert_eq!(fake.requests()[0].body["stream"], true);
    assert_streamed_calls(&d, &turn_id);
    assert_whole_turn(&mut d, &agent, ["call_0", "call_1"], "Registered.");
    assert!(d.shutdown(WAIT).success());
}

/// Structured output and `tool_choice` on Converse: the schema becomes an answer tool beside
/// the module's, `tool_choice = required` becomes `toolChoice: {any}`, the model calls a tool
/// of the module, then answers through the answer tool; the client gets that tool's input as
/// the checked JSON. A conversation without tools forces the answer tool by name.
#[test]
fn bedrock_converse_answers_a_schema_through_its_answer_tool_beside_tool_choice() {
    use fake_bedrock::{Accept, Behavior, FakeBedrock};
    let events = events_module();
    let fake = FakeBedrock::start(Accept {
        session_token: None,
    })
    .unwrap();
    let answer = r#"{"eventId": "E1", "registered": true}"#;
    fake.push(Behavior::calls(
        "",
        &[("events__eventParticipation", PARTICIPATION)],
    ));
    fake.push(Behavior::calls("", &[("signup", answer)]));
    fake.push(Behavior::calls("", &[("signup", answer)]));
    let dir = tempfile::tempdir().unwrap();
    let cfg = bedrock_config(dir.path(), &fake);
    let mut d = daemon(dir.path(), cfg, &events, false);
    let schema = json!({"type": "object",
        "properties": {"eventId": {"type": "string"}, "registered": {"type": "boolean"}},
        "required": ["eventId", "registered"]});
    let model = "anthropic.claude-3-haiku-20240307-v1:0";
    let (cid, _) = d.create_conversation(json!({"feature": "tools", "serviceProvider": "bedrock",
        "model": model, "parameters": {"tool_choice": "required"},
        "responseSchema": schema, "responseSchemaName": "signup"}));
    let (_, fin) = d.turn(&cid, "Sign me up for E1", WAIT);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let summary: Value = serde_json::from_str(fin["summary"].as_str().unwrap()).unwrap();
    assert_eq!(summary, json!({"eventId": "E1", "registered": true}));
    assert!(
        fin["detailedResponse"]
            .to_string()
            .contains("has been validated"),
        "{fin}"
    );

    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    for r in &requests {
        let config = &r.body["toolConfig"];
        assert_eq!(config["toolChoice"], json!({"any": {}}), "{config}");
        let names: Vec<&str> = config["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["toolSpec"]["name"].as_str())
            .collect();
        assert_eq!(
            names,
            ["events__getEvents", "events__eventParticipation", "signup"],
            "{config}"
        );
        assert_eq!(
            config["tools"][2]["toolSpec"]["inputSchema"]["json"],
            schema
        );
    }

    // Alone, the answer tool is forced by name.
    let (cid, _) = d.create_conversation(json!({"serviceProvider": "bedrock", "model": model,
        "responseSchema": schema, "responseSchemaName": "signup"}));
    let (_, fin) = d.turn(&cid, "Am I registered for E1?", WAIT);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let summary: Value = serde_json::from_str(fin["summary"].as_str().unwrap()).unwrap();
    assert_eq!(summary["registered"], true, "{fin}");
    let config = &fake.requests()[2].body["toolConfig"];
    assert_eq!(
        config["toolChoice"],
        json!({"tool": {"name": "signup"}}),
        "{config}"
    );
    assert_eq!(config["tools"].as_array().unwrap().len(), 1, "{config}");
    assert!(d.shutdown(WAIT).success());
}
