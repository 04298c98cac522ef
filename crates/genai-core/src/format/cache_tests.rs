//! Tests of prompt caching: when it is on, and where Claude's breakpoints and Converse's cache
//! points go.

use super::*;

#[test]
fn caching_is_on_unless_turned_off_and_keeps_its_ttl() {
    let mut p = Parameters::new();
    let c = Caching::of("claude-sonnet-4-5", &p).unwrap();
    assert_eq!(c.marker("ephemeral"), json!({"type": "ephemeral"}));
    assert!(!c.worth(4 * 1023) && c.worth(4 * 1024));
    p.insert(CACHE_TTL.into(), json!("1h"));
    let c = Caching::of("us.anthropic.claude-haiku-4-5-20251001-v1:0", &p).unwrap();
    assert_eq!(c.marker("default"), json!({"type": "default", "ttl": "1h"}));
    assert!(
        !c.worth(4 * 4095) && c.worth(4 * 4096),
        "Haiku 4.5 needs 4096"
    );
    assert_eq!(min_tokens("claude-3-5-haiku-latest"), 2048);
    p.insert(CACHE.into(), json!(false));
    assert!(Caching::of("claude-sonnet-4-5", &p).is_none());
    assert!(is_setting("cache_ttl") && !is_setting("temperature"));
}

use crate::format::{
    bedrock_converse::BedrockConverse, claude_messages::ClaudeMessages, ModelConfiguration,
    RequestOptions, ToolSpec,
};
use crate::message::{Message, Part};

/// A tool whose schema alone is long enough to cache (5000 bytes of description).
fn big_tool() -> ToolSpec {
    ToolSpec {
        name: "search".into(),
        description: "x".repeat(5000),
        input_schema: json!({"type": "object"}),
    }
}

fn body(m: &ModelConfiguration, messages: &[Message], tools: &[ToolSpec]) -> Value {
    let options = RequestOptions {
        tools,
        ..RequestOptions::plain(false)
    };
    m.prepare(messages, &options).unwrap().body().clone()
}

/// A conversation: a system prompt, a turn whose reply thinks then calls a tool, its
/// result, and the new message.
fn conversation(system: &str) -> Vec<Message> {
    let mut reply = Message::assistant("");
    reply.content = vec![
        Part::reasoning("think", Some("sig".into())),
        Part::ToolCall {
            id: "c1".into(),
            name: "search".into(),
            arguments: json!({}),
            signature: None,
        },
    ];
    vec![
        Message::system(system),
        Message::user("question"),
        reply,
        Message {
            role: crate::message::Role::Tool,
            content: vec![Part::ToolResult {
                tool_call_id: "c1".into(),
                content: vec![Part::text("found")],
                is_error: false,
            }],
            from: None,
        },
    ]
}

#[test]
fn claude_breakpoints_go_on_the_last_tool_the_system_and_the_prefix_never_on_thinking() {
    let mut m = ModelConfiguration::new(&ClaudeMessages, "claude-sonnet-4-5");
    let b = body(&m, &conversation("Be brief."), &[big_tool()]);
    let marker = json!({"type": "ephemeral"});
    assert_eq!(b["tools"][0]["cache_control"], marker, "{b}");
    // The tools alone are long enough, so everything after them is too.
    assert_eq!(
        b["system"],
        json!([{"type": "text", "text": "Be brief.", "cache_control": marker}])
    );
    let prefix = b["messages"][1]["content"].as_array().unwrap();
    assert_eq!(prefix[0]["type"], "thinking");
    assert!(prefix[0].get("cache_control").is_none());
    assert_eq!(prefix[1]["type"], "tool_use");
    assert_eq!(prefix[1]["cache_control"], marker);
    assert!(!b["messages"][2].to_string().contains("cache_control"));
    assert!(b.get("cache").is_none() && b.get("cache_ttl").is_none());

    // Short: no marker, the system a plain string.
    let short = body(&m, &conversation("Be brief."), &[]);
    assert!(!short.to_string().contains("cache_control"), "{short}");
    assert_eq!(short["system"], "Be brief.");
    // Long system only: the system and the prefix, not the tools; off: none.
    let long = "word ".repeat(1000);
    let b = body(&m, &conversation(&long), &[]);
    assert_eq!(b["system"][0]["cache_control"], marker);
    m.set_parameter("cache", json!("false")).unwrap();
    let off = body(&m, &conversation(&long), &[big_tool()]);
    assert!(!off.to_string().contains("cache_control"), "{off}");
    assert!(off.get("cache").is_none());
}

#[test]
fn converse_cache_points_follow_the_tools_the_system_and_the_prefix_on_claude_and_nova() {
    let mut m = ModelConfiguration::new(
        &BedrockConverse,
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    );
    m.set_parameter("cache_ttl", json!("1h")).unwrap();
    let point = json!({"cachePoint": {"type": "default", "ttl": "1h"}});
    let b = body(&m, &conversation("Be brief."), &[big_tool()]);
    assert_eq!(b["toolConfig"]["tools"][1], point, "{b}");
    assert_eq!(b["system"], json!([{"text": "Be brief."}, point]));
    let prefix = b["messages"][1]["content"].as_array().unwrap();
    assert_eq!(prefix.last().unwrap(), &point);
    assert!(!b["messages"][2].to_string().contains("cachePoint"));
    assert!(b.get("cache_ttl").is_none());
    let short = body(&m, &conversation("Be brief."), &[]);
    assert!(!short.to_string().contains("cachePoint"), "{short}");
    // Models that refuse cache points get none.
    let llama = ModelConfiguration::new(&BedrockConverse, "meta.llama3-70b-instruct-v1:0");
    let b = body(&llama, &conversation("Be brief."), &[big_tool()]);
    assert!(!b.to_string().contains("cachePoint"), "{b}");
}
