//! Tests of the Messages API's request handling ([`super`]).

use super::*;

fn parse(body: Value) -> Result<MessagesRequest, ApiError> {
    MessagesRequest::parse(body.to_string().as_bytes(), false)
}

#[test]
fn a_claude_code_request_becomes_the_cores_messages_tools_and_parameters() {
    let r = parse(json!({
        "model": "sonnet",
        "max_tokens": 32000,
        "stream": true,
        "temperature": 1,
        "metadata": {"user_id": "u"},
        "context_management": {"edits": []},
        "system": [
            {"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "Be brief."}
        ],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Read a."}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "I should read.", "signature": "sig"},
                {"type": "redacted_thinking", "data": "enc"},
                {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "a"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "hello"}], "is_error": true},
                {"type": "text", "text": "Now summarise.", "cache_control": {"type": "ephemeral"}}
            ]}
        ],
        "tools": [{"name": "Read", "description": "Reads.", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}],
        "tool_choice": {"type": "any"},
        "thinking": {"type": "enabled", "budget_tokens": 2048}
    }))
    .unwrap();
    assert!(r.stream);
    let roles: Vec<Role> = r.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::System,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::User
        ]
    );
    assert_eq!(r.messages[0].text(), "You are Claude Code.\n\nBe brief.");
    assert_eq!(
        r.messages[2].content[1],
        Part::Reasoning {
            text: String::new(),
            signature: Some("enc".into()),
            redacted: true
        }
    );
    assert!(matches!(
        &r.messages[3].content[0],
        Part::ToolResult { tool_call_id, is_error: true, content } if tool_call_id == "toolu_1" && content.len() == 1
    ));
    assert_eq!(r.tools[0].name, "Read");
    let params: Vec<&str> = r.parameters.iter().map(|(k, _)| k.as_str()).collect();
    // The named fields first, then the sampling settings in the body's order.
    assert_eq!(params, ["max_tokens", "tool_choice", "temperature"]);
    assert_eq!(r.parameters[1].1, "required");
    assert_eq!(r.thinking.unwrap()["budget_tokens"], 2048);
}

#[test]
fn deferred_tools_wait_for_their_tool_reference_and_thinking_display_is_taken() {
    // As Claude Code 2.1 sends them: a deferred placeholder, its tool search, and thinking
    // with its thoughts omitted.
    let tool = |name: &str, deferred: bool| json!({"name": name, "description": "d", "input_schema": {"type": "object"}, "defer_loading": deferred});
    let mut body = json!({
        "model": "sonnet",
        "max_tokens": 32000,
        "thinking": {"type": "enabled", "budget_tokens": 31999, "display": "omitted"},
        "tools": [tool("ToolSearch", false), tool("DeferredToolPlaceholder", true), tool("NotebookEdit", true)],
        "messages": [{"role": "user", "content": "Edit the notebook."}]
    });
    let r = parse(body.clone()).unwrap();
    let names: Vec<&str> = r.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["ToolSearch"]);
    assert_eq!(r.thinking.unwrap()["display"], "omitted");

    body["messages"] = json!([
        {"role": "user", "content": "Edit the notebook."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "ToolSearch", "input": {"query": "select:NotebookEdit"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [
            {"type": "tool_reference", "tool_name": "NotebookEdit"}
        ]}]}
    ]);
    let r = parse(body.clone()).unwrap();
    let names: Vec<&str> = r.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["ToolSearch", "NotebookEdit"]);
    let Part::ToolResult { content, .. } = &r.messages[2].content[0] else {
        panic!("{:?}", r.messages[2]);
    };
    assert!(text_of(content).contains("NotebookEdit"), "{content:?}");

    body["thinking"]["display"] = json!("verbose");
    let e = parse(body.clone()).unwrap_err();
    assert_eq!(e.param.as_deref(), Some("thinking.display"));
    body["thinking"] = json!({"type": "adaptive", "display": "summarized"});
    body["tools"][1]["defer_loading"] = json!("yes");
    let e = parse(body).unwrap_err();
    assert_eq!(e.param.as_deref(), Some("tools[1].defer_loading"));
}

/// Claude Code 2.1.332's request for a model name it does not know (`--model
/// openai:gpt-4o-mini`), cut short: its environment note is a `system` message after the
/// first user message, as text blocks on the first call and as a string on the next.
fn unknown_model_request(note: Value) -> Value {
    json!({
        "model": "openai:gpt-4o-mini",
        "max_tokens": 32000,
        "stream": true,
        "thinking": {"type": "adaptive", "display": "omitted"},
        "output_config": {"effort": "high"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "system": [
            {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332;"},
            {"type": "text", "text": "You are a Claude agent.", "cache_control": {"type": "ephemeral"}}
        ],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "<system-reminder>r</system-reminder>"}, {"type": "text", "text": "Say hi."}]},
            {"role": "system", "content": note}
        ]
    })
}

#[test]
fn a_system_message_joins_the_system_prompt_in_order_as_blocks_or_a_string() {
    let blocks = json!([{"type": "text", "text": "# Environment", "cache_control": {"type": "ephemeral"}}, {"type": "text", "text": "Platform: linux"}]);
    let r = parse(unknown_model_request(blocks)).unwrap();
    let roles: Vec<Role> = r.messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::System, Role::User]);
    assert_eq!(
        r.messages[0].text(),
        "x-anthropic-billing-header: cc_version=2.1.332;\n\nYou are a Claude agent.\n\n# Environment\n\nPlatform: linux"
    );
    assert_eq!(r.messages[1].content.len(), 2);
    assert_eq!(r.thinking.unwrap()["type"], "adaptive");
    let params: Vec<&str> = r.parameters.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(params, ["max_tokens"], "effort is not a parameter");

    // The next call: the note as a string, then the model's call and its result.
    let mut body = unknown_model_request(json!("# Environment"));
    let history = body["messages"].as_array_mut().unwrap();
    history.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Write", "input": {}}]}));
    history.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]}));
    let r = parse(body).unwrap();
    let roles: Vec<Role> = r.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::System, Role::User, Role::Assistant, Role::Tool]
    );
    assert!(r.messages[0].text().ends_with("agent.\n\n# Environment"));
}

#[test]
fn system_messages_first_and_later_keep_their_order_without_a_system_field() {
    let r = parse(json!({
        "model": "m", "max_tokens": 10,
        "messages": [
            {"role": "system", "content": "First."},
            {"role": "user", "content": "Hi."},
            {"role": "system", "content": [{"type": "text", "text": "Second."}]},
            {"role": "assistant", "content": "Hello."},
            {"role": "system", "content": ""},
            {"role": "user", "content": "Bye."}
        ]
    }))
    .unwrap();
    let roles: Vec<Role> = r.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::System, Role::User, Role::Assistant, Role::User]
    );
    assert_eq!(r.messages[0].text(), "First.\n\nSecond.");
    // Two user messages a system message stood between are one user message.
    let r = parse(json!({
        "model": "m", "max_tokens": 10,
        "messages": [
            {"role": "user", "content": "A."},
            {"role": "system", "content": "Note."},
            {"role": "user", "content": "B."}
        ]
    }))
    .unwrap();
    let roles: Vec<Role> = r.messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::System, Role::User]);
    assert_eq!(r.messages[1].text(), "A.B.");
}

#[test]
fn a_system_message_takes_only_text_and_other_roles_are_refused() {
    let with = |messages: Value| {
        parse(json!({"model": "m", "max_tokens": 10, "messages": messages})).unwrap_err()
    };
    let e = with(json!([
        {"role": "user", "content": "Hi."},
        {"role": "system", "content": [{"type": "image", "source": {"type": "url", "url": "u"}}]}
    ]));
    assert_eq!(e.param.as_deref(), Some("messages[1].content[0].type"));
    let e = with(json!([{"role": "user", "content": "Hi."}, {"role": "system", "content": 3}]));
    assert_eq!(e.param.as_deref(), Some("messages[1].content"));
    let e = with(json!([{"role": "developer", "content": "Hi."}]));
    assert_eq!(e.param.as_deref(), Some("messages[0].role"));
    assert!(
        e.message.contains("user, assistant or system"),
        "{}",
        e.message
    );
    let e = with(json!([{"role": "system", "content": "Only a note."}]));
    assert_eq!(e.param.as_deref(), Some("messages"));
    let e = with(json!([{"role": "user", "content": "Hi.", "name": "me"}]));
    assert_eq!(e.param.as_deref(), Some("messages[0].name"));
}

#[test]
fn adaptive_thinking_and_effort_are_taken_and_their_unknown_shapes_refused() {
    let mut body = unknown_model_request(json!("# Environment"));
    for thinking in [
        json!({"type": "adaptive"}),
        json!({"type": "adaptive", "display": "summarized"}),
    ] {
        body["thinking"] = thinking.clone();
        assert_eq!(parse(body.clone()).unwrap().thinking, Some(thinking));
    }
    body["thinking"] = json!({"type": "adaptive", "budget_tokens": 2048});
    let e = parse(body.clone()).unwrap_err();
    assert_eq!(e.param.as_deref(), Some("thinking.budget_tokens"));
    body["thinking"] = json!({"type": "adaptive"});
    for effort in ["low", "medium", "high", "max"] {
        body["output_config"] = json!({"effort": effort});
        let r = parse(body.clone()).unwrap();
        assert!(r.schema.is_none());
        assert!(r.parameters.iter().all(|(k, _)| k == "max_tokens"));
    }
    body["output_config"] = json!({"effort": 3});
    let e = parse(body.clone()).unwrap_err();
    assert_eq!(e.param.as_deref(), Some("output_config.effort"));
    body["output_config"] = json!({"effort": "high", "task_budget": 100});
    let e = parse(body.clone()).unwrap_err();
    assert_eq!(e.param.as_deref(), Some("output_config.task_budget"));
    // With a format beside it, the format is still the answer's schema.
    body["output_config"] =
        json!({"effort": "low", "format": {"type": "json_schema", "schema": {"type": "object"}}});
    assert!(parse(body.clone()).unwrap().schema.is_some());
    // count_tokens takes the same shapes.
    body.as_object_mut().unwrap().remove("max_tokens");
    body.as_object_mut().unwrap().remove("stream");
    let r = MessagesRequest::parse(body.to_string().as_bytes(), true).unwrap();
    assert_eq!(r.messages[0].role, Role::System);
}

#[test]
fn what_cannot_be_carried_is_refused_naming_it() {
    let ok =
        json!({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]});
    assert!(parse(ok.clone()).is_ok());
    let with = |key: &str, value: Value| {
        let mut b = ok.clone();
        b[key] = value;
        parse(b).unwrap_err()
    };
    let e = with(
        "tools",
        json!([{"type": "web_search_20250305", "name": "web_search"}]),
    );
    assert_eq!(e.param.as_deref(), Some("tools[0].type"));
    assert!(e.message.contains("server tools"), "{}", e.message);
    assert_eq!(
        with("container", json!("c")).param.as_deref(),
        Some("container")
    );
    assert_eq!(
        with("mcp_servers", json!([])).param.as_deref(),
        Some("mcp_servers")
    );
    let e = with(
        "messages",
        json!([{"role": "user", "content": [{"type": "document", "source": {}}]}]),
    );
    assert_eq!(e.param.as_deref(), Some("messages[0].content[0].type"));
    let e = with(
        "messages",
        json!([{"role": "user", "content": [{"type": "text", "text": "hi", "id": "x"}]}]),
    );
    assert_eq!(e.param.as_deref(), Some("messages[0].content[0].id"));
    let e = with(
        "messages",
        json!([{"role": "user", "content": "hi", "name": "x"}]),
    );
    assert_eq!(e.param.as_deref(), Some("messages[0].name"));
    let tool = json!({"name": "Read", "input_schema": {"type": "object"}, "strict": true});
    assert_eq!(
        with("tools", json!([tool])).param.as_deref(),
        Some("tools[0].strict")
    );
    assert_eq!(with("model", json!(5)).param.as_deref(), Some("model"));
    let e = with("messages", json!([{"role": "user", "content": 3}]));
    assert_eq!(e.param.as_deref(), Some("messages[0].content"));
    // What every block and tool may carry and genai places itself is taken, not refused.
    let cached = json!({"cache_control": {"type": "ephemeral"}});
    let mut b = ok.clone();
    b["messages"][0]["content"] =
        json!([{"type": "text", "text": "hi", "cache_control": cached["cache_control"]}]);
    b["tools"] = json!([{"name": "Read", "input_schema": {"type": "object"}, "strict": false,
                         "cache_control": cached["cache_control"], "defer_loading": false}]);
    b["system"] =
        json!([{"type": "text", "text": "Be brief.", "cache_control": cached["cache_control"]}]);
    let r = parse(b).unwrap();
    assert_eq!(
        (r.tools.len(), r.messages[0].text()),
        (1, "Be brief.".into())
    );
    let e = with("thinking", json!({"type": "enabled", "budget_tokens": 10}));
    assert_eq!(e.param.as_deref(), Some("thinking.budget_tokens"));
    let mut missing = ok.clone();
    missing.as_object_mut().unwrap().remove("max_tokens");
    assert_eq!(
        parse(missing.clone()).unwrap_err().param.as_deref(),
        Some("max_tokens")
    );
    // count_tokens takes no max_tokens.
    assert!(MessagesRequest::parse(missing.to_string().as_bytes(), true).is_ok());
    assert!(MessagesRequest::parse(ok.to_string().as_bytes(), true).is_err());
}
