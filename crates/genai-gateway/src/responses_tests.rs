//! Tests of the Responses API's request handling ([`super`]).

use super::*;

fn parse(body: Value) -> Result<ResponsesRequest, ApiError> {
    ResponsesRequest::parse(body.to_string().as_bytes())
}

#[test]
fn a_codex_request_becomes_the_cores_messages_tools_and_parameters() {
    let r = parse(json!({
        "model": "openai:gpt-x",
        "instructions": "Be brief.",
        "input": [
            {"type": "message", "id": "msg_1", "role": "developer", "content": [{"type": "input_text", "text": "You are Codex."}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "List files."}]},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "I should run ls."}], "encrypted_content": "sig"},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "exec_command", "arguments": "{\"cmd\":\"ls\"}"},
            {"type": "function_call", "call_id": "call_2", "name": "exec_command", "arguments": "{\"cmd\":\"pwd\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "a.txt"},
            {"type": "function_call_output", "call_id": "call_2", "output": [{"type": "input_text", "text": "/w"}]},
            {"role": "assistant", "content": [{"type": "output_text", "text": "Done.", "annotations": []}]},
            {"role": "user", "content": "Thanks"}
        ],
        "tools": [{"type": "function", "name": "exec_command", "description": "Run.", "strict": false,
                   "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}],
        "tool_choice": "auto",
        "parallel_tool_calls": true,
        "reasoning": {"summary": "auto"},
        "store": false,
        "stream": true,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "k",
        "client_metadata": {"session_id": "s"},
        "max_output_tokens": 100,
        "temperature": 0.5
    }))
    .unwrap();
    assert!(r.stream && !r.no_parallel_calls);
    let roles: Vec<Role> = r.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::System,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::User
        ]
    );
    assert_eq!(r.messages[0].text(), "Be brief.\n\nYou are Codex.");
    let calls = r.messages[2].tool_calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].0, "call_1");
    assert_eq!(calls[0].2, json!({"cmd": "ls"}));
    assert_eq!(r.messages[2].reasoning(), "I should run ls.");
    assert_eq!(r.messages[3].content.len(), 2);
    assert_eq!(r.tools[0].name, "exec_command");
    let names: Vec<&str> = r.parameters.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["tool_choice", "max_output_tokens", "temperature"]);
}

use super::super::responses_wire::split_namespaced;

#[test]
fn a_namespaces_functions_are_offered_by_a_joined_name_and_web_search_is_named_not_offered() {
    let r = parse(json!({"model": "m", "input": [
            {"type": "function_call", "call_id": "c1", "namespace": "agents", "name": "spawn", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "ok"}],
        "tools": [
            {"type": "namespace", "name": "agents", "description": "Sub-agents.", "tools": [
                {"type": "function", "name": "spawn", "description": "Spawn.", "strict": false,
                 "parameters": {"type": "object"}}]},
            {"type": "web_search", "external_web_access": false},
            {"type": "function", "name": "ls", "parameters": {"type": "object"}}]}))
    .unwrap();
    let names: Vec<&str> = r.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["agents__spawn", "ls"]);
    assert_eq!(r.namespaces, ["agents"]);
    assert_eq!(r.not_offered, ["web_search"]);
    let calls: Vec<_> = r.messages.iter().flat_map(|m| m.tool_calls()).collect();
    assert_eq!(calls[0].1, "agents__spawn");
    let ns = r.namespaces.clone();
    assert_eq!(
        split_namespaced("agents__spawn", &ns),
        Some(("agents", "spawn"))
    );
    assert_eq!(split_namespaced("ls", &ns), None);
    assert_eq!(split_namespaced("agentsX__spawn", &ns), None);
}

#[test]
fn what_cannot_be_carried_is_refused_naming_the_field() {
    let with = |k: &str, v: Value| {
        let mut body = json!({"model": "m", "input": "hi"});
        body[k] = v;
        parse(body).unwrap_err().param.unwrap()
    };
    assert_eq!(
        with("previous_response_id", json!("resp_1")),
        "previous_response_id"
    );
    assert_eq!(with("store", json!(true)), "store");
    assert_eq!(with("no_such", json!(1)), "no_such");
    assert_eq!(
        with("tools", json!([{"type": "file_search"}])),
        "tools[0].type"
    );
    assert_eq!(
        with("input", json!([{"type": "item_reference", "id": "x"}])),
        "input[0].type"
    );
    assert_eq!(
        with(
            "input",
            json!([{"role": "user", "content": [{"type": "input_file"}]}])
        ),
        "input[0].content[0].type"
    );
    assert_eq!(
        with(
            "text",
            json!({"format": {"type": "json_schema", "name": "x"}})
        ),
        "text.format.schema"
    );
    let user = |part: Value| json!([{"role": "user", "content": [part]}]);
    assert_eq!(
        with(
            "input",
            user(json!({"type": "input_text", "text": "a", "id": "x"}))
        ),
        "input[0].content[0].id"
    );
    assert_eq!(
        with(
            "input",
            json!([{"role": "user", "content": "a", "audio": {}}])
        ),
        "input[0].audio"
    );
    assert_eq!(
        with(
            "input",
            json!([{"type": "function_call_output", "call_id": "c", "output": "o", "name": "f"}])
        ),
        "input[0].name"
    );
    assert_eq!(
        with(
            "input",
            json!([{"type": "reasoning", "summary": [{"type": "summary_text", "text": "t", "x": 1}]}])
        ),
        "input[0].summary[0].x"
    );
    assert_eq!(with("input", json!(7)), "input");
    // What a client keeps of genai's own items is taken back as it was given.
    let r = parse(json!({"model": "m", "input": [
        {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
         "content": [{"type": "output_text", "text": "Hi", "annotations": [], "logprobs": []}]},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "sig"},
        {"role": "user", "content": "again"}]}))
    .unwrap();
    assert_eq!(r.messages[0].text(), "Hi");
    assert!(matches!(
        &r.messages[0].content[1],
        Part::Reasoning { redacted: true, .. }
    ));
    assert_eq!(
        parse(json!({"model": "m"})).unwrap_err().param.unwrap(),
        "input"
    );
    assert_eq!(
        parse(json!({"input": "hi"})).unwrap_err().param.unwrap(),
        "model"
    );
    let r = parse(json!({"model": "m", "input": "hi", "parallel_tool_calls": false,
        "text": {"format": {"type": "json_schema", "name": "w", "schema": {"type": "object"}, "strict": true}}}))
    .unwrap();
    assert!(r.no_parallel_calls && r.schema.is_some());
    assert_eq!(r.messages[0].text(), "hi");
}
