//! Claude Code's side of the hooks: the JSON a hook reads (tool names and inputs in Claude
//! Code's shape) and what its answer means. It must never run anything: [`super`] runs the
//! hooks and hands their output here.

use std::path::{Component, Path, PathBuf};

use serde_json::{json, Map, Value};

use super::{capped, Event, HookContext, Verdict};

/// `tool_response` of a PostToolUse hook: `{"content": the tool's answer text, "is_error":
/// bool, "success": !is_error}` (Claude Code's responses differ per tool; scripts read
/// `success` from its Write/Edit responses, and the text is under `content`).
pub fn tool_response(answer: &str, is_error: bool) -> Value {
    json!({"content": answer, "is_error": is_error, "success": !is_error})
}

/// Claude Code's name and input of a genai tool call, for the hooks: the workspace tools
/// become `Bash` {command, timeout (ms)}, `Read` {file_path, offset, limit}, `Edit`
/// {file_path, old_string, new_string}, `Write` {file_path, content}, `Glob` {pattern, path},
/// `Grep` {pattern, path, glob}, `WebFetch` {url}, with paths made absolute under `root`; an
/// MCP tool `server.tool` (source `mcp:server`) becomes `mcp__server__tool`, its input
/// unchanged; any other tool keeps genai's name and input.
pub(crate) fn claude_tool(tool: &str, source: &str, input: &Value, root: &Path) -> (String, Value) {
    if let Some(server) = source.strip_prefix("mcp:") {
        let name = tool
            .strip_prefix(server)
            .and_then(|t| t.strip_prefix('.'))
            .unwrap_or(tool);
        return (format!("mcp__{server}__{name}"), input.clone());
    }
    let function = match (source, tool.strip_prefix("workspace.")) {
        ("workspace", Some(function)) => function,
        _ => return (tool.to_string(), input.clone()),
    };
    let Some(args) = input.as_object() else {
        return (tool.to_string(), input.clone());
    };
    let mut out = Map::new();
    let mut copy = |from: &str, to: &str| {
        if let Some(v) = args.get(from) {
            out.insert(to.to_string(), v.clone());
        }
    };
    let name = match function {
        "run_command" => {
            copy("command", "command");
            "Bash"
        }
        "read_file" => {
            copy("offset", "offset");
            copy("limit", "limit");
            "Read"
        }
        "edit_file" => {
            copy("old_text", "old_string");
            copy("new_text", "new_string");
            "Edit"
        }
        "write_file" => {
            copy("content", "content");
            "Write"
        }
        "list" => "Glob",
        "search" => {
            copy("pattern", "pattern");
            copy("glob", "glob");
            "Grep"
        }
        "fetch" => {
            copy("url", "url");
            "WebFetch"
        }
        _ => return (tool.to_string(), input.clone()),
    };
    let absolute = |key: &str| {
        args.get(key)
            .and_then(Value::as_str)
            .map(|p| Value::String(under(root, p)))
    };
    match name {
        "Bash" => {
            if let Some(s) = args.get("timeout_s").and_then(Value::as_u64) {
                out.insert("timeout".into(), json!(s.saturating_mul(1000)));
            }
        }
        "Read" | "Edit" | "Write" => {
            if let Some(p) = absolute("path") {
                out.insert("file_path".into(), p);
            }
        }
        "Glob" => {
            let glob = args.get("glob").and_then(Value::as_str).unwrap_or("**/*");
            out.insert("pattern".into(), json!(glob));
            if let Some(p) = absolute("path") {
                out.insert("path".into(), p);
            }
        }
        "Grep" => {
            if let Some(p) = absolute("path") {
                out.insert("path".into(), p);
            }
        }
        _ => {}
    }
    (name.to_string(), Value::Object(out))
}

/// `path` made absolute under `root`, `.` parts dropped (`..` is kept: the tool refuses a
/// path that leaves the root, and the hook should see what was asked).
fn under(root: &Path, path: &str) -> String {
    let joined = root.join(path);
    let clean: PathBuf = joined
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect();
    clean.to_string_lossy().into_owned()
}

/// The JSON a hook reads on stdin.
pub(crate) fn hook_input(
    event: &Event<'_>,
    claude: Option<&(&str, (String, Value))>,
    ctx: &HookContext,
) -> Vec<u8> {
    let mut input = json!({
        "session_id": ctx.session_id,
        "transcript_path": ctx.transcript_path.as_ref().map(|p| p.to_string_lossy()),
        "cwd": ctx.cwd.to_string_lossy(),
        "hook_event_name": event.name(),
    });
    let fields = input.as_object_mut();
    let Some(fields) = fields else {
        return Vec::new();
    };
    if let Some((genai_name, (claude_name, claude_input))) = claude {
        fields.insert("tool_name".into(), json!(claude_name));
        fields.insert("tool_input".into(), claude_input.clone());
        fields.insert("genai_tool_name".into(), json!(genai_name));
    }
    match event {
        Event::PostToolUse { response, .. } => {
            fields.insert("tool_response".into(), (*response).clone());
        }
        Event::UserPromptSubmit { prompt } => {
            fields.insert("prompt".into(), json!(prompt));
        }
        Event::Stop { stop_hook_active } => {
            fields.insert("stop_hook_active".into(), json!(stop_hook_active));
        }
        Event::PreToolUse { .. } => {}
    }
    input.to_string().into_bytes()
}

/// What the stdout of a hook that exited 0 says.
pub fn answer(event: &Event<'_>, stdout: &str, name: &str) -> Verdict {
    let text = stdout.trim();
    let json = if text.starts_with('{') {
        serde_json::from_str::<Map<String, Value>>(text).ok()
    } else {
        None
    };
    let Some(out) = json else {
        // Plain text: context for the model from a UserPromptSubmit hook, else only a log.
        return Verdict::Go(match event {
            Event::UserPromptSubmit { .. } if !text.is_empty() => vec![capped(text)],
            _ => Vec::new(),
        });
    };
    let field = |obj: &Map<String, Value>, key: &str| -> Option<String> {
        obj.get(key)
            .and_then(Value::as_str)
            .map(capped)
            .filter(|s| !s.is_empty())
    };
    let blocked = || format!("blocked by hook `{name}`");
    if out.get("continue") == Some(&Value::Bool(false)) {
        return Verdict::Block(field(&out, "stopReason").unwrap_or_else(blocked));
    }
    let specific = out.get("hookSpecificOutput").and_then(Value::as_object);
    let permission = specific
        .filter(|_| matches!(event, Event::PreToolUse { .. }))
        .and_then(|s| s.get("permissionDecision"))
        .and_then(Value::as_str);
    let reason = || specific.and_then(|s| field(s, "permissionDecisionReason"));
    match permission {
        Some("deny") => return Verdict::Block(reason().unwrap_or_else(blocked)),
        // genai has no one to ask in the middle of a tool call: asking is not allowing.
        Some("ask") => {
            return Verdict::Block(reason().unwrap_or_else(|| {
                format!(
                    "hook `{name}` asks for the user's confirmation, which genai cannot ask here"
                )
            }))
        }
        // A permission decision overrides the older `decision` field (Claude Code's rule).
        Some(_) => {}
        None => {
            if out.get("decision").and_then(Value::as_str) == Some("block") {
                return Verdict::Block(field(&out, "reason").unwrap_or_else(blocked));
            }
        }
    }
    let mut notes = Vec::new();
    if let Some(context) = specific.and_then(|s| field(s, "additionalContext")) {
        notes.push(context);
    }
    if let Some(message) = field(&out, "systemMessage") {
        notes.push(message);
    }
    Verdict::Go(notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_tools_take_claude_codes_names_and_shapes() {
        let root = Path::new("/work/proj");
        let t = |tool: &str, input: Value| {
            claude_tool(&format!("workspace.{tool}"), "workspace", &input, root)
        };
        assert_eq!(
            t(
                "read_file",
                json!({"path": "./src/a.rs", "offset": 3, "limit": 10})
            ),
            (
                "Read".into(),
                json!({"file_path": "/work/proj/src/a.rs", "offset": 3, "limit": 10})
            )
        );
        assert_eq!(
            t(
                "edit_file",
                json!({"path": "a", "old_text": "x", "new_text": "y"})
            ),
            (
                "Edit".into(),
                json!({"file_path": "/work/proj/a", "old_string": "x", "new_string": "y"})
            )
        );
        assert_eq!(
            t("write_file", json!({"path": "b", "content": "z"})),
            (
                "Write".into(),
                json!({"file_path": "/work/proj/b", "content": "z"})
            )
        );
        assert_eq!(
            t("run_command", json!({"command": "ls"})),
            ("Bash".into(), json!({"command": "ls"}))
        );
        assert_eq!(
            t("list", json!({"path": "src", "glob": "**/*.rs"})),
            (
                "Glob".into(),
                json!({"pattern": "**/*.rs", "path": "/work/proj/src"})
            )
        );
        assert_eq!(
            t("list", json!({})),
            ("Glob".into(), json!({"pattern": "**/*"}))
        );
        assert_eq!(
            t(
                "search",
                json!({"pattern": "fn main", "path": ".", "glob": "*.rs"})
            ),
            (
                "Grep".into(),
                json!({"pattern": "fn main", "path": "/work/proj", "glob": "*.rs"})
            )
        );
        assert_eq!(
            t("fetch", json!({"url": "https://example.com"})),
            ("WebFetch".into(), json!({"url": "https://example.com"}))
        );
        let input = json!({"q": 1});
        assert_eq!(
            claude_tool("github.search", "mcp:github", &input, root),
            ("mcp__github__search".into(), input.clone())
        );
        assert_eq!(
            claude_tool("calc.add", "plugin:calc", &input, root),
            ("calc.add".into(), input.clone())
        );
    }
}
