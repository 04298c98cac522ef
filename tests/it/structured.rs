//! Structured output end to end: `genai ask --schema` against each format's fake, the exact
//! request fields each format sends for a schema, the parsed reply on stdout (and under `reply`
//! with `--json`), the one retry with the validation errors, and the failure after it.

use std::process::Output;

use serde_json::{json, Value};

use crate::support::cli::{self, stderr, stdout, Folders};
use crate::support::{fake_anthropic, fake_gemini, fake_ollama, fake_openai};

const SCHEMA: &str = r#"{"type": "object", "properties": {"city": {"type": "string"}, "population": {"type": "integer", "minimum": 0}}, "required": ["city", "population"], "additionalProperties": false}"#;
const VALID: &str = r#"{"city": "Oslo", "population": 709000}"#;

fn schema() -> Value {
    serde_json::from_str(SCHEMA).unwrap()
}

/// `genai ask -m MODEL ARGS...` with these variables.
fn ask(dirs: &Folders, envs: &[(&str, String)], model: &str, args: &[&str]) -> Output {
    let mut c = dirs.genai(&["ask", "-m", model]);
    c.args(args);
    c.envs(envs.iter().map(|(k, v)| (*k, v.as_str())));
    cli::output(c)
}

fn openai(replies: &[&str]) -> fake_openai::FakeOpenAi {
    let fake = fake_openai::FakeOpenAi::start(0, fake_openai::Behavior::default()).unwrap();
    for r in replies {
        fake.push(fake_openai::Behavior::reply(r, 2));
    }
    fake
}

#[test]
fn openai_chat_sends_a_strict_json_schema_and_stdout_is_exactly_the_json() {
    let dirs = Folders::new();
    let fake = openai(&[VALID]);
    let env = [("OPENAI_BASE_URL", fake.base_url())];
    let o = ask(
        &dirs,
        &env,
        "openai:gpt-4o-mini",
        &["--schema", SCHEMA, "--schema-name", "city_facts", "Oslo?"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        format!("{}\n", serde_json::from_str::<Value>(VALID).unwrap())
    );
    let body = fake.requests().last().unwrap().body.clone();
    assert_eq!(
        body["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "city_facts", "schema": schema(), "strict": true}})
    );

    // A schema that OpenAI's strict mode would refuse goes without `strict`; from a file.
    let loose = dirs.config.path().join("loose.json");
    std::fs::write(
        &loose,
        r#"{"type": "object", "properties": {"city": {"type": "string"}}}"#,
    )
    .unwrap();
    fake.push(fake_openai::Behavior::reply(r#"{"city": "Oslo"}"#, 1));
    let o = ask(
        &dirs,
        &env,
        "openai:gpt-4o-mini",
        &["--json", "--schema", loose.to_str().unwrap(), "Oslo?"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(
        v["reply"],
        json!({"city": "Oslo"}),
        "the reply is an object"
    );
    let body = fake.requests().last().unwrap().body.clone();
    assert_eq!(body["response_format"]["json_schema"]["name"], "response");
    assert!(
        body["response_format"]["json_schema"]
            .get("strict")
            .is_none(),
        "{body}"
    );
}

#[test]
fn an_invalid_reply_is_retried_once_with_the_errors_then_fails_with_exit_code_1() {
    let dirs = Folders::new();
    let fake = openai(&[r#"{"city": "Oslo", "population": -5}"#, VALID]);
    let env = [("OPENAI_BASE_URL", fake.base_url())];
    let o = ask(
        &dirs,
        &env,
        "openai:gpt-4o-mini",
        &["--schema", SCHEMA, "Oslo?"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).trim(),
        serde_json::from_str::<Value>(VALID).unwrap().to_string()
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "one retry");
    let retry = &requests[1].body["messages"];
    let n = retry.as_array().unwrap().len();
    assert_eq!(retry[n - 2]["role"], "assistant");
    assert_eq!(
        retry[n - 2]["content"],
        r#"{"city": "Oslo", "population": -5}"#
    );
    let told = retry[n - 1]["content"].as_str().unwrap();
    assert!(
        told.contains("/population") && told.contains("minimum"),
        "{told}"
    );
    // Only the prompt and the valid reply are stored, never the retry.
    let list = cli::output(dirs.genai(&["sessions", "list", "--json"]));
    assert_eq!(cli::message_counts(&list), vec![2]);

    // Two invalid replies: the turn fails, saying why, and stdout stays empty.
    fake.push(fake_openai::Behavior::reply(
        "Oslo has about 700k people.",
        1,
    ));
    fake.push(fake_openai::Behavior::reply(r#"{"city": "Oslo"}"#, 1));
    let o = ask(
        &dirs,
        &env,
        "openai:gpt-4o-mini",
        &["--schema", SCHEMA, "Oslo?"],
    );
    cli::assert_fails_with(&o, 1, "does not match the response schema");
    assert!(stderr(&o).contains("population"), "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
}

#[test]
fn claude_answers_through_a_forced_tool_whose_input_is_the_json() {
    let dirs = Folders::new();
    let fake = fake_anthropic::FakeAnthropic::start(fake_anthropic::Behavior::default()).unwrap();
    fake.push(fake_anthropic::Behavior {
        reply: String::new(),
        tool_calls: vec![("toolu_1".into(), "city".into(), VALID.into())],
        ..Default::default()
    });
    let env = [
        ("ANTHROPIC_BASE_URL", fake.base_url()),
        ("ANTHROPIC_API_KEY", fake_anthropic::KEY.to_string()),
    ];
    let o = ask(
        &dirs,
        &env,
        "anthropic:claude-sonnet-4-5",
        &["--schema", SCHEMA, "--schema-name", "city", "Oslo?"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).trim(),
        serde_json::from_str::<Value>(VALID).unwrap().to_string()
    );
    let body = fake.requests().last().unwrap().body.clone();
    assert_eq!(body["tool_choice"], json!({"type": "tool", "name": "city"}));
    assert_eq!(body["tools"][0]["name"], "city");
    assert_eq!(body["tools"][0]["input_schema"], schema());
}

#[test]
fn gemini_gets_its_schema_subset_and_ollama_the_schema_as_format() {
    let dirs = Folders::new();
    let gemini = fake_gemini::start(fake_gemini::Behavior::reply(VALID, 2));
    let env = [
        ("GEMINI_BASE_URL", gemini.url()),
        ("GEMINI_API_KEY", fake_gemini::KEY.to_string()),
    ];
    let o = ask(
        &dirs,
        &env,
        "gemini:gemini-2.0-flash",
        &["--json", "--schema", SCHEMA, "Oslo?"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["reply"]["population"], 709000);
    let config = gemini.requests().last().unwrap().body["generationConfig"].clone();
    assert_eq!(config["responseMimeType"], "application/json");
    assert_eq!(
        config["responseSchema"],
        json!({"type": "object", "properties": {"city": {"type": "string"},
               "population": {"type": "integer", "minimum": 0}}, "required": ["city", "population"]})
    );

    let ollama = fake_ollama::start(fake_ollama::Behavior::reply(VALID, 2));
    let env = [("OLLAMA_HOST", format!("127.0.0.1:{}", ollama.port()))];
    let o = ask(
        &dirs,
        &env,
        "ollama:llama3.2",
        &["--schema", SCHEMA, "Oslo?"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).trim(),
        serde_json::from_str::<Value>(VALID).unwrap().to_string()
    );
    assert_eq!(ollama.requests().last().unwrap().body["format"], schema());
}

#[test]
fn a_model_configuration_response_schema_applies_to_every_turn() {
    let dirs = Folders::new();
    let fake = openai(&[VALID]);
    dirs.write_config(&format!(
        "[service_providers.corp]\nkind = \"openai\"\nbase_url = {}\napi_key = \"sk-x\"\n\n\
         [model_configurations.facts]\nformat = \"openai-chat\"\nmodel = \"gpt-4o-mini\"\nresponse_schema = {}\n\n\
         [agents.facts]\nprovider = \"corp\"\nmodel_configuration = \"facts\"\n",
        toml_string(&fake.base_url()),
        toml_string(SCHEMA)
    ));
    let env = [("OPENAI_BASE_URL", fake.base_url())];
    let o = ask(&dirs, &env, "facts", &["Oslo?"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let body = fake.requests().last().unwrap().body.clone();
    assert_eq!(body["response_format"]["json_schema"]["name"], "facts");
    assert_eq!(
        stdout(&o).trim(),
        serde_json::from_str::<Value>(VALID).unwrap().to_string()
    );

    // A schema that is not one is refused before anything is sent.
    let o = ask(
        &dirs,
        &env,
        "openai:gpt-4o-mini",
        &["--schema", r#"{"type": 3}"#, "x"],
    );
    cli::assert_fails_with(&o, 2, "not a JSON Schema");
}

fn toml_string(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// Over the daemon: `responseSchema` on `CreateConversation` holds for every turn, on
/// `OnNewMessage` for that turn, on `SendPrompt` for that prompt.
#[test]
fn the_daemon_takes_a_response_schema_per_conversation_turn_and_prompt() {
    use crate::support::rpc_client::{Daemon, DaemonConfig, Framing};
    let fake = openai(&[VALID, r#"{"ok": true}"#, r#"{"ok": false}"#]);
    let dir = tempfile::tempdir().unwrap();
    let cfg = DaemonConfig::in_dir(dir.path(), Framing::Lines, "daemon")
        .env("OPENAI_BASE_URL", &fake.base_url())
        .env("OPENAI_API_KEY", "sk-dummy");
    let mut d = Daemon::spawn(&cfg);
    d.initialize("structured-tests", true);
    let (cid, conv) = d.create_conversation(json!({"serviceProvider": "openai",
        "model": "gpt-4o-mini", "responseSchema": schema(), "responseSchemaName": "city"}));
    let turn = std::time::Duration::from_secs(15);
    let (t, fin) = d.turn(&cid, "Oslo?", turn);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let summary: Value = serde_json::from_str(fin["summary"].as_str().unwrap()).unwrap();
    assert_eq!(summary["city"], "Oslo");
    let (chunks, _) = d.turn_events(&t);
    assert_eq!(chunks.len(), 1, "the checked JSON comes as one chunk");
    assert_eq!(
        fake.requests()[0].body["response_format"]["json_schema"]["name"],
        "city"
    );

    // A turn's own schema replaces the conversation's.
    let flag =
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]});
    let r = d.call(
        "OnNewMessage",
        json!({"conversationId": cid, "message": "ok?",
        "responseSchema": flag}),
    );
    let fin = d.wait_final(r["turnId"].as_str().unwrap(), turn)["params"].clone();
    assert_eq!(fin["summary"], r#"{"ok":true}"#, "{fin}");
    assert_eq!(
        fake.requests()[1].body["response_format"]["json_schema"]["schema"],
        flag
    );

    let sent = d.call(
        "SendPrompt",
        json!({"agentId": conv["agentId"], "prompt": "ok?",
        "responseSchema": flag, "responseSchemaName": "flag"}),
    );
    let rid = sent["requestId"].as_str().unwrap().to_string();
    let resp = d.wait_notification(
        |m| m["method"] == "OnPromptResponse" && m["params"]["requestId"] == rid.as_str(),
        turn,
    );
    assert_eq!(
        resp["params"]["message"]["content"][0]["text"], r#"{"ok":false}"#,
        "{resp}"
    );
    assert_eq!(
        fake.requests()[2].body["response_format"]["json_schema"]["name"],
        "flag"
    );

    let e = d.call_err(
        "OnNewMessage",
        json!({"conversationId": cid, "message": "x",
        "responseSchema": {"type": 5}}),
    );
    assert_eq!(e["data"]["kind"], "invalidParams", "{e}");
    assert!(d.shutdown(std::time::Duration::from_secs(10)).success());
}

/// A schema given on `CreateConversation` is kept with the conversation: after a daemon
/// restart, the resumed conversation's next turn still sends it (the model has none).
#[test]
fn a_conversation_keeps_its_response_schema_across_a_daemon_restart() {
    use crate::support::rpc_client::{Daemon, DaemonConfig, Framing};
    let fake = openai(&[VALID, r#"{"city": "Bergen", "population": 291000}"#]);
    let dir = tempfile::tempdir().unwrap();
    let cfg = DaemonConfig::in_dir(dir.path(), Framing::Lines, "daemon")
        .env("OPENAI_BASE_URL", &fake.base_url())
        .env("OPENAI_API_KEY", "sk-dummy");
    let turn = std::time::Duration::from_secs(15);
    let mut d = Daemon::spawn(&cfg);
    d.initialize("structured-tests", true);
    let (cid, _) = d.create_conversation(json!({"serviceProvider": "openai",
        "model": "gpt-4o-mini", "responseSchema": schema(), "responseSchemaName": "city"}));
    let (_, fin) = d.turn(&cid, "Oslo?", turn);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert!(d.shutdown(std::time::Duration::from_secs(10)).success());

    let mut d = Daemon::spawn(&cfg);
    d.initialize("structured-tests", true);
    let resumed = d.call("ResumeConversation", json!({"conversationId": cid}));
    assert_eq!(resumed["conversationId"], cid.as_str(), "{resumed}");
    let (_, fin) = d.turn(&cid, "Bergen?", turn);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let summary: Value = serde_json::from_str(fin["summary"].as_str().unwrap()).unwrap();
    assert_eq!(summary["city"], "Bergen");
    let sent = &fake.requests()[1].body["response_format"];
    assert_eq!(sent["type"], "json_schema", "{sent}");
    assert_eq!(sent["json_schema"]["name"], "city", "{sent}");
    assert_eq!(sent["json_schema"]["schema"], schema(), "{sent}");
    assert!(d.shutdown(std::time::Duration::from_secs(10)).success());
}
