//! End-to-end tests of the `local` provider on a real model (SmolLM2-135M-Instruct, Q4_1 GGUF,
//! an instruction-tuned model with a ChatML chat template): `genai daemon` over stdio, with a
//! `[service_providers.gemma] kind = "local"` instance (the name is historical). Here: the
//! `tools` feature's ReAct loop, schema-constrained replies, and tool calls constrained by a
//! grammar (required and auto); plain chat is in `local_model_chat.rs`, on the helpers here.
//!
//! The model is `GENAI_TEST_MODEL` if set, else `smollm2-135m-instruct-q4_1` in the default models
//! folder (where `scripts/install-demo-model.sh` puts it). Without it the tests fail when `CI`
//! is set and are skipped, saying why, otherwise. Replies are kept short (`max_tokens`) and
//! greedy (`temperature = 0`) so that the tests are quick and repeatable; every wait has a
//! deadline.
//!
//! Built only with the `local` cargo feature (the default).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use rpc_client::{Daemon, DaemonConfig, Framing};

use crate::support::{fake_plugin, rpc_client};

/// The longest a turn may take (model load included) on a busy CI machine.
pub(crate) const TURN: Duration = Duration::from_secs(180);
/// The longest a turn of two grammar-constrained generations may take: llama.cpp checks every
/// token of the vocabulary against the grammar, which a loaded CI machine makes slow.
const GRAMMAR_TURN: Duration = Duration::from_secs(600);
/// The longest a cancelled turn may take to end.
pub(crate) const CANCELLED: Duration = Duration::from_secs(5);
pub(crate) const EXIT: Duration = Duration::from_secs(30);
const MODEL_NAME: &str = "smollm2-135m-instruct-q4_1";

/// The test model, or `None` (after saying why) when it is absent and `CI` is not set.
pub(crate) fn test_model() -> Option<PathBuf> {
    let path = match std::env::var_os("GENAI_TEST_MODEL") {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => genai_core::config::Paths::from_env()
            .ok()
            .and_then(|paths| {
                genai_core::models::ModelLibrary::open(&paths)
                    .resolve(MODEL_NAME)
                    .ok()
            }),
    };
    match path {
        Some(p) if p.is_file() => Some(p),
        other => {
            let why = format!(
                "the local test model is absent ({}): run scripts/install-demo-model.sh or set GENAI_TEST_MODEL to a GGUF file",
                other.map_or_else(
                    || format!("no {MODEL_NAME} in the models folder"),
                    |p| format!("{} is not a file", p.display())
                )
            );
            if std::env::var_os("CI").is_some_and(|v| !v.is_empty()) {
                panic!("{why}");
            }
            eprintln!("skipping: {why}");
            None
        }
    }
}

/// A daemon whose config has a `gemma` provider running `model` (with extra TOML settings).
pub(crate) fn start(root: &Path, model: &Path, extra: &str) -> Daemon {
    let cfg = DaemonConfig::in_dir(root, Framing::Lines, "daemon");
    let toml = format!(
        "[service_providers.gemma]\nkind = \"local\"\nmodel = {}\n{extra}\n",
        toml_string(&model.display().to_string())
    );
    cfg.write_config(&toml);
    Daemon::spawn(&cfg)
}

/// [`start`] in a folder of its own, initialized for streaming; the folder lives as long as
/// the returned `TempDir` (keep it bound while the daemon runs).
pub(crate) fn ready(model: &Path, extra: &str) -> (tempfile::TempDir, Daemon) {
    let dir = tempfile::tempdir().unwrap();
    let mut d = start(dir.path(), model, extra);
    initialize(&mut d, true);
    (dir, d)
}

pub(crate) fn toml_string(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

pub(crate) fn initialize(d: &mut Daemon, streaming: bool) {
    d.initialize("local-model-tests", streaming);
}

pub(crate) fn conversation(d: &mut Daemon, parameters: Value) -> String {
    let r = d.call(
        "CreateConversation",
        json!({"serviceProvider": "gemma", "parameters": parameters}),
    );
    r["conversationId"].as_str().unwrap().to_string()
}

pub(crate) fn usage(fin: &Value) -> (u64, u64, u64) {
    let u = &fin["usage"];
    let n = |k: &str| u[k].as_u64().unwrap_or(0);
    (n("inputTokens"), n("cacheReadTokens"), n("outputTokens"))
}

#[test]
fn the_tools_feature_runs_a_react_loop_on_the_local_model() {
    let Some(model) = test_model() else { return };
    let events = fake_plugin::FakePlugin::start(None);
    let dir = tempfile::tempdir().unwrap();
    // ReAct as the explicit mode (the local engine has native calls by grammar).
    let plugins = format!(
        "\n[plugins.events]\nurl = {}\nenabled = true\n\n[features.tools]\nmode = \"react\"\n",
        toml_string(&events.base_url())
    );
    let mut d = start(dir.path(), &model, &plugins);
    initialize(&mut d, true);
    let parameters = json!({"max_tokens": 48, "temperature": 0});
    let question = "Which events are coming up? Use the events__getEvents tool.";

    // The same question without tools: the prompt the ReAct instructions are added to.
    let plain = conversation(&mut d, parameters.clone());
    let (_, fin) = d.turn(&plain, question, TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let (plain_prompt, _, _) = usage(&fin);

    let (cid, _) = d.create_conversation(
        json!({"feature": "tools", "serviceProvider": "gemma", "parameters": parameters}),
    );
    let (t, fin) = d.turn(&cid, question, TURN);
    let history = d.call(
        "GetConversationHistory",
        json!({"conversationId": cid, "pageSize": 100}),
    )["messages"]
        .clone();
    eprintln!(
        "summary: {}\ndetails: {}\nhistory: {}",
        fin["summary"],
        serde_json::to_string_pretty(&fin["detailedResponse"]).unwrap(),
        serde_json::to_string_pretty(&history).unwrap()
    );
    assert_eq!(fin["isSuccess"], true, "{fin}");

    // ReAct was chosen (by the config), within the round limit.
    let details = fin["detailedResponse"].to_string();
    let marker = "tool mode: ReAct ([features.tools] mode = \\\"react\\\"); ";
    let at = details.find(marker).unwrap_or_else(|| panic!("{details}")) + marker.len();
    let rounds: usize = details[at..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no round count in {details}"));
    assert!((1..=9).contains(&rounds), "{rounds} rounds: {details}");

    // Every request carried the instructions with the tool list: the first alone is far longer
    // than the same question without tools.
    let (prompt, _, _) = usage(&fin);
    assert!(
        prompt > plain_prompt + 100,
        "{prompt} prompt tokens with ReAct, {plain_prompt} without"
    );

    // The history: the prompt, one call and one result message per round but the last, the
    // answer; each call that could run reached the module.
    let h = history.as_array().unwrap();
    assert_eq!(h.len(), 2 * rounds, "{history}");
    assert_eq!(h[0]["role"], "user");
    assert_eq!(h[h.len() - 1]["role"], "assistant");
    for step in h[1..h.len() - 1].chunks(2) {
        assert_eq!(
            (&step[0]["role"], &step[1]["role"]),
            (&json!("assistant"), &json!("tool"))
        );
    }
    let ran = h
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|p| p["type"] == "toolResult" && p["isError"] == false)
        .count();
    let called = events
        .requests()
        .iter()
        .filter(|r| r.path == "/ai-functions")
        .count();
    assert_eq!(ran, called, "tool results vs module calls");
    let answer = h[h.len() - 1]["content"][0]["text"].as_str().unwrap_or("");
    assert_eq!(fin["summary"].as_str().unwrap().trim(), answer.trim());
    assert!(!answer.contains("Action:"), "{answer}");

    // Only the final answer was streamed.
    let (chunks, _) = d.turn_events(&t);
    let streamed: String = chunks.iter().map(|(_, c)| c.as_str()).collect();
    assert!(!streamed.contains("Action:"), "{streamed}");
    assert_eq!(streamed, answer, "the chunks are the final answer");
    assert!(d.shutdown(EXIT).success());
}

/// `genai ask --schema` on the local model: the reply is constrained by a grammar made from the
/// schema, so even this tiny model's JSON parses and validates, whatever the schema. Greedy, the
/// replies are exactly those of the grammar applied to the whole vocabulary at every step (as
/// genai sampled before it asked the grammar about the chain's pick only, as llama-server does,
/// and before a refused greedy pick was answered from the pass's best tokens): the engine's log
/// shows both shortcuts were taken.
#[test]
fn schema_constrained_replies_parse_and_validate_on_the_local_model() {
    let Some(model) = test_model() else { return };
    let dirs = crate::support::cli::Folders::new();
    dirs.write_config(&format!(
        "[service_providers.gemma]\nkind = \"local\"\nmodel = {}\n",
        toml_string(&model.display().to_string())
    ));
    let schemas = [
        json!({"type": "object", "properties": {"city": {"type": "string", "maxLength": 40},
               "population": {"type": "integer", "minimum": 0}},
               "required": ["city", "population"], "additionalProperties": false}),
        json!({"type": "object", "properties": {"mood": {"enum": ["happy", "sad", "calm"]},
               "tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 3},
               "sure": {"type": "boolean"}}, "required": ["mood", "tags", "sure"]}),
        json!({"type": "object", "properties": {"point": {"type": "object",
               "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"]}},
               "required": ["point"]}),
        json!({"type": "object", "properties": {"numbers": {"type": "array",
               "items": {"type": "integer"}, "minItems": 30, "maxItems": 30}}, "required": ["numbers"]}),
    ];
    // What the grammar-first sampler answered (the same model file, greedy, 2 threads).
    let numbers: Vec<u32> = (1..=30).collect();
    let before = [
        json!({"city": "Paris", "population": 3151222000u64}),
        json!({"mood": "happy", "tags": ["Paris", "France", "2022-01-01T0"], "sure": false}),
        json!({"point": {"x": 123, "y": 123}}),
        json!({ "numbers": numbers }),
    ];
    let (mut refused, mut full_passes) = (0, 0);
    for (schema, before) in schemas.into_iter().zip(before) {
        let text = schema.to_string();
        let mut ask = dirs.genai(&[
            "ask",
            "-m",
            "gemma",
            "--no-log",
            "-p",
            "temperature=0",
            "-p",
            "max_tokens=160",
            "--schema",
            &text,
            "Describe Paris as JSON.",
        ]);
        ask.env("GENAI_LOG", "genai_local::scheduler=debug");
        let o = crate::support::cli::output(ask);
        let out = crate::support::cli::stdout(&o);
        let err = crate::support::cli::stderr(&o);
        assert!(o.status.success(), "{schema}: {err}");
        let counts = err
            .split("grammar_refusals_full_passes=(")
            .nth(1)
            .and_then(|rest| rest.split_once(')'))
            .and_then(|(pair, _)| pair.split_once(", "))
            .unwrap_or_else(|| panic!("{schema}: no refusal counts in the log: {err}"));
        refused += counts.0.parse::<u32>().unwrap();
        full_passes += counts.1.parse::<u32>().unwrap();
        let value: Value = serde_json::from_str(out.trim())
            .unwrap_or_else(|e| panic!("{schema}: stdout is not just JSON ({e}): {out:?}"));
        let validator = jsonschema::validator_for(&schema).unwrap();
        assert!(validator.is_valid(&value), "{schema}: {value}");
        assert_eq!(out, format!("{value}\n"), "stdout is exactly the JSON");
        assert_eq!(value, before, "{schema}: the greedy reply changed");
    }
    assert!(
        full_passes < refused,
        "the grammar refused {refused} picks: {full_passes} needed a pass over the vocabulary"
    );
}

/// A schema whose grammar forces one token pair over and over (`[7, 7, 7, ...]`, 80 tokens) is
/// not taken for a loop: the reply is the whole array (the loop check once cut it at 48 tokens
/// and the JSON did not parse).
#[test]
fn a_constrained_reply_that_repeats_is_not_cut_as_a_loop() {
    let Some(model) = test_model() else { return };
    let dirs = crate::support::cli::Folders::new();
    dirs.write_config(&format!(
        "[service_providers.gemma]\nkind = \"local\"\nmodel = {}\n",
        toml_string(&model.display().to_string())
    ));
    let schema = json!({"type": "array", "items": {"const": 7}, "minItems": 40, "maxItems": 40});
    let o = crate::support::cli::output(dirs.genai(&[
        "ask",
        "-m",
        "gemma",
        "--no-log",
        "-p",
        "temperature=0",
        "-p",
        "max_tokens=300",
        "--schema",
        &schema.to_string(),
        "Say seven forty times.",
    ]));
    let out = crate::support::cli::stdout(&o);
    assert!(o.status.success(), "{}", crate::support::cli::stderr(&o));
    let value: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(value, json!(vec![7; 40]));
}

/// A daemon on `model` with the fake `events` module, and a `tools` conversation offered its
/// `getEvents` with this `tool_choice`: greedy, short replies, one round of calls then the
/// answer (two generations at most).
fn events_conversation(
    dir: &Path,
    model: &Path,
    tool_choice: &str,
) -> (Daemon, fake_plugin::FakePlugin, String) {
    let events = fake_plugin::FakePlugin::start(None);
    let plugins = format!(
        "\n[plugins.events]\nurl = {}\nenabled = true\n\n[features.tools]\nmax_steps = 1\n",
        toml_string(&events.base_url())
    );
    let mut d = start(dir, model, &plugins);
    initialize(&mut d, false);
    let parameters = json!({"max_tokens": 48, "temperature": 0, "tool_choice": tool_choice});
    let (cid, _) = d.create_conversation(json!({"feature": "tools", "serviceProvider": "gemma",
        "tools": ["events.getEvents"], "parameters": parameters}));
    (d, events, cid)
}

/// Native tool calls on the local model: with `tool_choice = "required"` the grammar forces a
/// call of the offered tool, which the tool loop runs; the model answers after it.
#[test]
fn a_required_tool_call_by_grammar_reaches_the_plugin_on_the_local_model() {
    let Some(model) = test_model() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (mut d, events, cid) = events_conversation(dir.path(), &model, "required");
    let (_, fin) = d.turn(&cid, "Which events are coming up?", GRAMMAR_TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let details = fin["detailedResponse"].to_string();
    assert!(
        !details.contains("ReAct"),
        "native calls, not ReAct: {details}"
    );
    let history = d.history(&cid);
    let call = history
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|p| p["type"] == "toolCall")
        .unwrap_or_else(|| panic!("no tool call in {history:?}"));
    assert_eq!(call["name"], "events__getEvents", "{call}");
    assert!(call["arguments"].is_object(), "{call}");
    let result = history
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|p| p["type"] == "toolResult")
        .unwrap_or_else(|| panic!("no tool result in {history:?}"));
    assert_eq!(result["isError"], false, "{result}");
    let called = events
        .requests()
        .iter()
        .filter(|r| r.path == "/ai-functions")
        .count();
    assert!(called >= 1, "the module was not called");
    assert_eq!(history.last().unwrap()["role"], "assistant");
    assert!(d.shutdown(EXIT).success());
}

/// The whole `{"tool_call": ...}` objects in `text`: calls the engine should have parsed out
/// (a fragment, such as one cut off by `max_tokens` inside a code block, is not one).
fn whole_calls(text: &str) -> Vec<Value> {
    text.match_indices('{')
        .filter_map(|(i, _)| {
            serde_json::Deserializer::from_str(&text[i..])
                .into_iter::<Value>()
                .next()?
                .ok()
        })
        .filter(|v| v.get("tool_call").is_some())
        .collect()
}

/// `tool_choice = "auto"` on the local model: the grammar is lazy (free text until the call's
/// opening words), so the greedy model either answers in text or makes a call. Whichever it
/// did must be well-formed: a call is parsed out of the text (no raw call JSON in any reply),
/// names the offered tool with object arguments and reaches the module; a text answer calls
/// nothing. The prompt repeats the engine's own call instruction, which the 135M demo model
/// follows (greedy, it calls), but either outcome passes when it is well-formed.
#[test]
fn an_auto_tool_choice_yields_text_or_a_well_formed_call_on_the_local_model() {
    let Some(model) = test_model() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (mut d, events, cid) = events_conversation(dir.path(), &model, "auto");
    let (_, fin) = d.turn(
        &cid,
        r#"Which events are coming up? To call a function, answer with only this JSON object: {"tool_call": {"name": "events__getEvents", "arguments": {}}}"#,
        GRAMMAR_TURN,
    );
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let details = fin["detailedResponse"].to_string();
    assert!(
        !details.contains("ReAct"),
        "native calls, not ReAct: {details}"
    );
    let history = d.history(&cid);
    let parts: Vec<(String, Value)> = history
        .iter()
        .flat_map(|m| {
            let role = m["role"].as_str().unwrap_or_default().to_string();
            let content = m["content"].as_array().cloned().unwrap_or_default();
            content.into_iter().map(move |p| (role.clone(), p))
        })
        .collect();
    let summary = fin["summary"].as_str().unwrap_or_default();
    for (role, p) in &parts {
        let text = p["text"].as_str().unwrap_or_default();
        let leaked = whole_calls(text);
        assert!(
            role != "assistant" || leaked.is_empty(),
            "a call leaked into the reply's text: {leaked:?} in {text:?}"
        );
    }
    let leaked = whole_calls(summary);
    assert!(
        leaked.is_empty(),
        "a call leaked into the summary: {leaked:?} in {summary:?}"
    );
    let calls: Vec<&Value> = parts
        .iter()
        .map(|(_, p)| p)
        .filter(|p| p["type"] == "toolCall")
        .collect();
    let module_calls = events
        .requests()
        .iter()
        .filter(|r| r.path == "/ai-functions")
        .count();
    if calls.is_empty() {
        assert!(!summary.trim().is_empty(), "neither a call nor text: {fin}");
        assert_eq!(module_calls, 0, "the module was called without a call");
    } else {
        for call in &calls {
            assert_eq!(call["name"], "events__getEvents", "{call}");
            assert!(call["arguments"].is_object(), "{call}");
        }
        let results = parts
            .iter()
            .filter(|(_, p)| p["type"] == "toolResult" && p["isError"] == false)
            .count();
        assert_eq!(results, calls.len(), "{history:?}");
        assert!(module_calls >= 1, "the module was not called");
    }
    eprintln!(
        "auto tool choice: {} call(s), summary {summary:?}",
        calls.len()
    );
    assert_eq!(history.last().unwrap()["role"], "assistant");
    assert!(d.shutdown(EXIT).success());
}

/// The workspace on the demo model: `genai ask --tools=workspace.read_file` with a required
/// call, greedy. The grammar makes the 135M model call `read_file` on the file the prompt
/// names; the reply after the call carries the file's text.
#[test]
fn the_demo_model_reads_a_workspace_file_by_a_grammar_constrained_call_and_answers_with_it() {
    let Some(model) = test_model() else { return };
    let dirs = crate::support::cli::Folders::new();
    dirs.write_config(&format!(
        "[service_providers.gemma]\nkind = \"local\"\nmodel = {}\n\n[features.tools]\nmax_steps = 1\n",
        toml_string(&model.display().to_string())
    ));
    let project = tempfile::tempdir().unwrap();
    std::fs::write(
        project.path().join("note.txt"),
        "The secret word is PELICAN.\n",
    )
    .unwrap();
    let mut c = dirs.genai(&[
        "ask",
        "-m",
        "gemma",
        "--tools=workspace.read_file",
        "-p",
        "tool_choice=required",
        "-p",
        "max_tokens=48",
        "-p",
        "temperature=0",
        "--json",
        "Read the file note.txt and tell me the secret word.",
    ]);
    c.current_dir(project.path());
    let o = crate::support::cli::output(c);
    assert!(o.status.success(), "{}", crate::support::cli::stderr(&o));
    let v: Value = serde_json::from_str(crate::support::cli::stdout(&o).trim()).unwrap();
    let details = v["details"].to_string();
    assert!(
        details.contains("permission: workspace.read_file(note.txt) allow"),
        "{details}"
    );
    assert!(details.contains("The secret word is PELICAN."), "{details}");
    // Greedy, the reply is the grammar-first sampler's, word for word.
    assert_eq!(
        v["reply"],
        r#"{"tool_response":{"type":"json","data":{"key":"1","value":"The secret word is PELICAN."}}}"#,
        "{v}"
    );
}
