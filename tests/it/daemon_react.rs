//! The `tools` feature's ReAct text loop over the daemon's protocol, against a scripted model
//! (the fake OpenAI server) and a fake plugin module `calc`: through the generic http-template
//! connector (no native tool calls, so ReAct is chosen), and through openai-chat forced to
//! ReAct by `[features.tools] mode = "react"`.

use std::time::Duration;

use fake_openai::{Behavior, FakeOpenAi};
use fake_plugin::{Answer, FakePlugin};
use rpc_client::{Daemon, DaemonConfig, Framing};
use serde_json::{json, Value};

use crate::support::messages::roles;
use crate::support::{fake_openai, fake_plugin, rpc_client};

const WAIT: Duration = Duration::from_secs(20);

/// A module `calc` with one function, `add(a, b)`.
fn calc() -> FakePlugin {
    let calc = FakePlugin::start(None);
    calc.set_manifest(json!({
        "schema_version": "v1",
        "name_for_human": "Calculator",
        "name_for_model": "calc",
        "description_for_human": "Arithmetic.",
        "description_for_model": "Arithmetic on numbers.",
        "auth": {"type": "none"},
        "api": {
            "type": "functions",
            "functions": [
                {"method": "add({ a: \"first number\", b: \"second number\" })", "name": "add", "description": "Adds two numbers."}
            ],
            "endpoint": format!("{}/ai-functions", calc.base_url())
        }
    }));
    calc
}

fn daemon(root: &std::path::Path, config: &str, fake: &FakeOpenAi) -> Daemon {
    let cfg = DaemonConfig::in_dir(root, Framing::Lines, "daemon")
        .env("OPENAI_BASE_URL", &fake.base_url())
        .env("OPENAI_API_KEY", "sk-test-react")
        .env("FAKE_KEY", "k-test-react");
    cfg.write_config(config);
    Daemon::spawn(&cfg)
}

/// The text of every request message (role: text), for assertions on what the model saw.
fn texts(messages: &Value) -> Vec<(String, String)> {
    messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let content = match &m["content"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (m["role"].as_str().unwrap_or("").to_string(), content)
        })
        .collect()
}

#[test]
fn the_http_template_connector_uses_react_and_streams_only_the_final_answer() {
    let calc = calc();
    calc.push("add", Answer::text("The sum is 5."));
    let fake = FakeOpenAi::start(0, Behavior::reply("unused", 1)).unwrap();
    fake.push(Behavior::reply(
        "Thought: I should add the numbers.\nAction: calc.add\nAction Input: {\"a\": \"2\", \"b\": \"3\"}",
        7,
    ));
    fake.push(Behavior::reply(
        "Thought: I know it now.\nFinal Answer: 5",
        6,
    ));
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        r#"
[plugins.calc]
url = "{calc}"
enabled = true

[service_providers.generic]
kind = "http"
base_url = "{base}/chat/completions"
api_key_env = "FAKE_KEY"
[service_providers.generic.headers]
Authorization = "Bearer ${{credential.api_key}}"

[model_configurations.template]
format = "http-template"
model = "scripted"
[model_configurations.template.parameters]
request_body = '''{{"model": "${{parameters.model}}", "messages": ${{parameters.messages}}, "stream": ${{parameters.stream}}}}'''
response_filter = "$.choices[0].message.content"
stream_filter = "$.choices[0].delta.content"
stream_done = "[DONE]"

[agents.generic]
provider = "generic"
model_configuration = "template"
feature = "tools"
"#,
        calc = calc.base_url(),
        base = fake.base_url()
    );
    let mut d = daemon(dir.path(), &config, &fake);
    d.initialize("react-tests", true);
    let (cid, conv) = d.create_conversation(json!({"agent": "generic"}));
    let agent_id = conv["agentId"].as_str().unwrap().to_string();
    let (turn_id, fin) = d.turn(&cid, "What is 2 + 3?", WAIT);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(fin["summary"], "5", "{fin}");
    let details = fin["detailedResponse"].to_string();
    assert!(
        details.contains("tool mode: ReAct (the http-template format has no native tool calls")
            && details.contains("2 requests to the model")
            && details.contains("tool calc.add"),
        "{details}"
    );

    // The module was called once, with the arguments of the Action Input.
    let calls: Vec<_> = calc
        .requests()
        .into_iter()
        .filter(|r| r.path == "/ai-functions")
        .collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].body["method"], "add");
    assert_eq!(calls[0].body["params"], "{\"a\":\"2\",\"b\":\"3\"}");

    // Both requests carried the instructions; the second the step and the observation.
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let first = texts(&requests[0].body["messages"]);
    assert_eq!(first[0].0, "system", "{first:?}");
    assert!(
        first[0].1.contains("- calc__add: Adds two numbers.")
            && first[0].1.contains("Action Input:")
            && first[0].1.contains("Final Answer:"),
        "{}",
        first[0].1
    );
    assert!(requests[0].body.get("tools").is_none());
    let second = texts(&requests[1].body["messages"]);
    assert_eq!(second.len(), 4, "{second:?}");
    assert_eq!(second[2].0, "assistant");
    assert!(second[2].1.contains("Action: calc.add"), "{second:?}");
    assert_eq!(
        second[3],
        ("user".to_string(), "Observation: The sum is 5.".to_string())
    );

    // Only the final answer was streamed.
    let streamed = d.streamed(&turn_id);
    assert!(!streamed.is_empty(), "nothing streamed");
    assert!(
        streamed
            .iter()
            .all(|c| !c.contains("Action") && !c.contains("Thought")),
        "{streamed:?}"
    );
    assert_eq!(streamed.concat(), "5");

    // The history holds the prompt, the step (call and result) and the answer.
    let h = d.call("GetHistory", json!({"agentId": agent_id}));
    let roles = roles(&h);
    let h = h.as_array().unwrap();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"], "{h:?}");
    let call = h[1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["type"] == "toolCall")
        .unwrap();
    assert_eq!(call["id"], "react_1_0");
    assert_eq!(call["name"], "calc__add");
    assert_eq!(call["arguments"], json!({"a": "2", "b": "3"}));
    assert_eq!(h[2]["content"][0]["toolCallId"], "react_1_0");
    assert_eq!(h[2]["content"][0]["content"][0]["text"], "The sum is 5.");
    assert_eq!(h[3]["content"][0]["text"], "5");
    assert!(d.shutdown(WAIT).success());
}

#[test]
fn openai_forced_to_react_gets_a_stop_sequence_and_corrections_for_wrong_actions() {
    let calc = calc();
    let fake = FakeOpenAi::start(0, Behavior::reply("unused", 1)).unwrap();
    // An unknown tool and malformed JSON, in parallel; then a final answer.
    fake.push(Behavior::reply(
        "Action: calc.multiply\nAction Input: {\"a\": 2}\n\nAction: calc__add\nAction Input: {\"a\": 2,",
        1,
    ));
    fake.push(Behavior::reply("I cannot compute that.", 1));
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[plugins.calc]\nurl = \"{}\"\nenabled = true\n\n[features.tools]\nmode = \"react\"\n",
        calc.base_url()
    );
    let mut d = daemon(dir.path(), &config, &fake);
    let (cid, _) = d.create_conversation(
        json!({"feature": "tools", "serviceProvider": "openai", "model": "gpt-test"}),
    );
    let (_, fin) = d.turn(&cid, "What is 2 * 3?", WAIT);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(fin["summary"], "I cannot compute that.");
    assert!(
        fin["detailedResponse"]
            .to_string()
            .contains("tool mode: ReAct ([features.tools] mode = \\\"react\\\")"),
        "{fin}"
    );

    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[0].body.get("tools").is_none(), "no native tools");
    assert_eq!(requests[0].body["stop"], json!(["Observation:"]));
    // Neither action ran: the model was told why, each in its line of the observation.
    assert!(!calc.requests().iter().any(|r| r.path == "/ai-functions"));
    let second = texts(&requests[1].body["messages"]);
    let observation = &second.last().unwrap().1;
    assert!(
        observation.starts_with("Observation:\n- calc.multiply: error from calc.multiply: `calc.multiply` is not a tool. The tools are: calc__add."),
        "{observation}"
    );
    assert!(
        observation
            .contains("- calc__add: error from calc__add: the Action Input is not valid JSON"),
        "{observation}"
    );
    assert!(d.shutdown(WAIT).success());
}
