//! The fixtures of the hooks' tests: a context in a folder, hooks and their configs, the
//! outcomes they are checked against, and running one event.

use super::*;
use serde_json::json;
use std::path::Path;

pub(super) fn ctx(dir: &Path) -> HookContext {
    HookContext {
        session_id: "01KCONV".into(),
        cwd: dir.to_path_buf(),
        transcript_path: None,
    }
}

pub(super) fn hook(command: &str) -> HookConfig {
    HookConfig {
        command: command.into(),
        matcher: None,
        timeout_s: None,
    }
}

pub(super) fn matching(command: &str, matcher: &str) -> HookConfig {
    HookConfig {
        matcher: Some(matcher.into()),
        ..hook(command)
    }
}

pub(super) fn pre(hooks: Vec<HookConfig>) -> HooksConfig {
    HooksConfig {
        pre_tool_use: hooks,
        ..HooksConfig::default()
    }
}

pub(super) fn bash_call() -> Value {
    json!({"command": "rm -rf build", "timeout_s": 5})
}

pub(super) async fn run_pre(
    hooks: &HooksConfig,
    dir: &Path,
    tool: &str,
    source: &str,
    input: &Value,
) -> Outcome {
    run(
        hooks,
        Event::PreToolUse {
            tool,
            source,
            input,
        },
        &ctx(dir),
    )
    .await
}

pub(super) fn block(reason: &str, by: &str) -> Outcome {
    Outcome::Block {
        reason: reason.into(),
        by: by.into(),
    }
}

pub(super) fn go(notes: &[&str]) -> Outcome {
    Outcome::Continue {
        notes: notes.iter().map(|n| n.to_string()).collect(),
    }
}

/// Runs `event` with one hook that saves its stdin, and answers what it read.
pub(super) async fn stdin_of(event: Event<'_>, dir: &Path) -> Value {
    let saved = dir.join("stdin.json");
    let command = format!("cat > '{}'", saved.display());
    let one = vec![hook(&command)];
    let hooks = HooksConfig {
        pre_tool_use: one.clone(),
        post_tool_use: one.clone(),
        user_prompt_submit: one.clone(),
        stop: one,
    };
    let context = HookContext {
        transcript_path: Some(dir.join("t.jsonl")),
        ..ctx(dir)
    };
    assert_eq!(run(&hooks, event, &context).await, go(&[]));
    serde_json::from_slice(&std::fs::read(&saved).unwrap()).unwrap()
}
