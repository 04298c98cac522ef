//! Tests of the hooks: what a hook reads on stdin, how its exit code or JSON decision blocks,
//! matchers, time-outs, notes, and the order hooks run in.

use super::test_support::*;
use super::*;
use serde_json::json;
use std::time::Instant;

#[tokio::test]
async fn hooks_read_claude_codes_fields_on_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let cwd = root.to_string_lossy().to_string();
    let transcript = root.join("t.jsonl").to_string_lossy().to_string();
    let input = bash_call();
    let got = stdin_of(
        Event::PreToolUse {
            tool: "workspace.run_command",
            source: "workspace",
            input: &input,
        },
        root,
    )
    .await;
    assert_eq!(
        got,
        json!({
            "session_id": "01KCONV",
            "transcript_path": transcript,
            "cwd": cwd,
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "rm -rf build", "timeout": 5000},
            "genai_tool_name": "workspace.run_command",
        })
    );

    let input = json!({"path": "src/a.rs", "content": "x"});
    let response = tool_response("wrote src/a.rs", false);
    let got = stdin_of(
        Event::PostToolUse {
            tool: "workspace.write_file",
            source: "workspace",
            input: &input,
            response: &response,
        },
        root,
    )
    .await;
    assert_eq!(got["hook_event_name"], "PostToolUse");
    assert_eq!(got["tool_name"], "Write");
    assert_eq!(
        got["tool_input"],
        json!({"file_path": format!("{cwd}/src/a.rs"), "content": "x"})
    );
    assert_eq!(
        got["tool_response"],
        json!({"content": "wrote src/a.rs", "is_error": false, "success": true})
    );

    let got = stdin_of(
        Event::UserPromptSubmit {
            prompt: "fix the tests",
        },
        root,
    )
    .await;
    assert_eq!(got["hook_event_name"], "UserPromptSubmit");
    assert_eq!(got["prompt"], "fix the tests");
    assert_eq!(got["session_id"], "01KCONV");
    assert_eq!(got["cwd"], cwd);
    assert!(got.get("tool_name").is_none());

    let got = stdin_of(
        Event::Stop {
            stop_hook_active: true,
        },
        root,
    )
    .await;
    assert_eq!(got["hook_event_name"], "Stop");
    assert_eq!(got["stop_hook_active"], true);
}

#[tokio::test]
async fn exit_2_blocks_with_stderr_verbatim() {
    let dir = tempfile::tempdir().unwrap();
    // A typical Claude Code guard script, unchanged (no jq needed).
    let script = dir.path().join("guard.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\ninput=$(cat)\ncase \"$input\" in\n  *'\"command\":\"rm '*) echo '  Blocked: rm is not allowed.\n  Use trash instead.  ' >&2; exit 2;;\nesac\nexit 0\n",
    )
    .unwrap();
    let command = format!("sh '{}'", script.display());
    let hooks = pre(vec![hook(&command)]);
    let out = run_pre(
        &hooks,
        dir.path(),
        "workspace.run_command",
        "workspace",
        &bash_call(),
    )
    .await;
    assert_eq!(
        out,
        block(
            "Blocked: rm is not allowed.\n  Use trash instead.",
            &command
        )
    );
    let ls = json!({"command": "ls"});
    let out = run_pre(
        &hooks,
        dir.path(),
        "workspace.run_command",
        "workspace",
        &ls,
    )
    .await;
    assert_eq!(out, go(&[]));
}

#[tokio::test]
async fn a_json_decision_block_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let command = r#"cat >/dev/null; echo '{"decision":"block","reason":"not on Fridays"}'"#;
    let out = run_pre(
        &pre(vec![hook(command)]),
        dir.path(),
        "workspace.run_command",
        "workspace",
        &bash_call(),
    )
    .await;
    assert_eq!(out, block("not on Fridays", command));
}

#[tokio::test]
async fn a_permission_decision_deny_or_ask_blocks_and_allow_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let deny = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"Destructive command blocked by hook"}}'"#;
    let out = run_pre(
        &pre(vec![hook(deny)]),
        dir.path(),
        "workspace.run_command",
        "workspace",
        &bash_call(),
    )
    .await;
    assert_eq!(out, block("Destructive command blocked by hook", deny));

    let ask = r#"echo '{"hookSpecificOutput":{"permissionDecision":"ask"}}'"#;
    let out = run_pre(
        &pre(vec![hook(ask)]),
        dir.path(),
        "workspace.run_command",
        "workspace",
        &bash_call(),
    )
    .await;
    assert!(
        matches!(&out, Outcome::Block { reason, .. } if reason.contains("confirmation")),
        "{out:?}"
    );

    // allow overrides a legacy decision, and its context is a note.
    let allow = r#"echo '{"decision":"block","hookSpecificOutput":{"permissionDecision":"allow","additionalContext":"ok by policy"}}'"#;
    let out = run_pre(
        &pre(vec![hook(allow)]),
        dir.path(),
        "workspace.run_command",
        "workspace",
        &bash_call(),
    )
    .await;
    assert_eq!(out, go(&["ok by policy"]));
}

#[tokio::test]
async fn continue_false_blocks_with_its_stop_reason() {
    let dir = tempfile::tempdir().unwrap();
    let command = r#"echo '{"continue":false,"stopReason":"build is broken"}'"#;
    let hooks = HooksConfig {
        post_tool_use: vec![hook(command)],
        ..HooksConfig::default()
    };
    let input = json!({"path": "a"});
    let response = tool_response("boom", true);
    let out = run(
        &hooks,
        Event::PostToolUse {
            tool: "workspace.read_file",
            source: "workspace",
            input: &input,
            response: &response,
        },
        &ctx(dir.path()),
    )
    .await;
    assert_eq!(out, block("build is broken", command));
}

#[tokio::test]
async fn the_matcher_sees_both_names_and_filters_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = |m: &str| matching(&format!("echo 'matched {m}' >&2; exit 2"), m);
    let bash = bash_call();
    for m in [
        "Bash",
        "Edit|Bash",
        "workspace.run_command",
        "workspace\\..*",
        "^Ba",
        "*",
        "",
    ] {
        let out = run_pre(
            &pre(vec![blocker(m)]),
            dir.path(),
            "workspace.run_command",
            "workspace",
            &bash,
        )
        .await;
        assert!(matches!(out, Outcome::Block { .. }), "{m}: {out:?}");
    }
    for m in ["Write", "Bas", "Edit|Write", "mcp__.*", "run_command"] {
        let out = run_pre(
            &pre(vec![blocker(m)]),
            dir.path(),
            "workspace.run_command",
            "workspace",
            &bash,
        )
        .await;
        assert_eq!(out, go(&[]), "{m}");
    }
    let input = json!({"repo": "x"});
    let out = run_pre(
        &pre(vec![blocker("mcp__github__.*")]),
        dir.path(),
        "github.create_issue",
        "mcp:github",
        &input,
    )
    .await;
    assert!(matches!(out, Outcome::Block { .. }), "{out:?}");
    let out = run_pre(
        &pre(vec![blocker("mcp__github__.*")]),
        dir.path(),
        "github.create_issue",
        "plugin:github",
        &input,
    )
    .await;
    assert_eq!(out, go(&[]), "a plugin tool keeps genai's name");
    // Prompt and stop hooks have no tool: their matcher is not consulted.
    let hooks = HooksConfig {
        user_prompt_submit: vec![blocker("Write")],
        ..HooksConfig::default()
    };
    let out = run(
        &hooks,
        Event::UserPromptSubmit { prompt: "hi" },
        &ctx(dir.path()),
    )
    .await;
    assert!(matches!(out, Outcome::Block { .. }), "{out:?}");
}

#[tokio::test]
async fn an_invalid_matcher_is_reported_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = pre(vec![matching("exit 2", "Bash(")]);
    let err = hooks.validate().unwrap_err();
    assert!(
        err.message.contains("[[hooks.pre_tool_use]] number 1"),
        "{}",
        err.message
    );
    assert!(err.message.contains("Bash("), "{}", err.message);
    let out = run_pre(
        &hooks,
        dir.path(),
        "workspace.run_command",
        "workspace",
        &bash_call(),
    )
    .await;
    assert!(
        matches!(&out, Outcome::Continue { notes } if notes.len() == 1 && notes[0].contains("skipped")),
        "{out:?}"
    );
    assert!(pre(vec![matching("exit 2", "Edit|Write"), hook("x")])
        .validate()
        .is_ok());
}

#[tokio::test]
async fn a_hook_past_its_time_is_killed_with_what_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let command = format!("sleep 30 & echo $! > '{}'; wait", pid_file.display());
    let hooks = pre(vec![HookConfig {
        timeout_s: Some(1),
        ..hook(&command)
    }]);
    let started = Instant::now();
    let out = run_pre(
        &hooks,
        dir.path(),
        "workspace.run_command",
        "workspace",
        &bash_call(),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let short = short(&command);
    assert_eq!(out, go(&[&format!("hook `{short}` timed out after 1 s")]));
    // The sleep the shell started is gone too (or a zombie waiting for its reaper).
    let pid = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_string();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let alive = !state.is_empty()
            && state
                .rsplit(')')
                .next()
                .is_some_and(|s| !s.trim_start().starts_with('Z'));
        if !alive {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the hook's sleep {pid} still runs"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn other_exits_and_failures_to_start_are_notes() {
    let dir = tempfile::tempdir().unwrap();
    let failing = "echo 'first line' >&2; echo second >&2; exit 1";
    let out = run_pre(
        &pre(vec![hook(failing)]),
        dir.path(),
        "workspace.run_command",
        "workspace",
        &bash_call(),
    )
    .await;
    assert_eq!(
        out,
        go(&[&format!("hook `{failing}` failed (exit 1): first line")])
    );

    let missing = "/no/such/hook-script";
    let out = run_pre(
        &pre(vec![hook(missing)]),
        dir.path(),
        "workspace.run_command",
        "workspace",
        &bash_call(),
    )
    .await;
    assert!(
        matches!(&out, Outcome::Continue { notes } if notes[0].contains("exit 127")),
        "{out:?}"
    );

    let hooks = pre(vec![hook("true")]);
    let out = run_pre(
        &hooks,
        &dir.path().join("gone"),
        "workspace.run_command",
        "workspace",
        &bash_call(),
    )
    .await;
    assert!(
        matches!(&out, Outcome::Continue { notes } if notes[0].contains("could not start")),
        "{out:?}"
    );
}

#[tokio::test]
async fn the_first_block_wins_and_later_hooks_do_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let later = format!("touch '{}'", marker.display());
    let hooks = pre(vec![
        hook("echo '{\"systemMessage\":\"checked\"}'"),
        hook("echo no >&2; exit 2"),
        hook(&later),
    ]);
    let out = run_pre(
        &hooks,
        dir.path(),
        "workspace.run_command",
        "workspace",
        &bash_call(),
    )
    .await;
    assert_eq!(out, block("no", "echo no >&2; exit 2"));
    assert!(!marker.exists());
}

#[tokio::test]
async fn a_prompt_hooks_stdout_is_context_and_a_block_refuses_the_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = HooksConfig {
        user_prompt_submit: vec![
            hook("echo 'Current branch: main'"),
            hook(
                r#"echo '{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"Sprint 12"}}'"#,
            ),
        ],
        ..HooksConfig::default()
    };
    let out = run(
        &hooks,
        Event::UserPromptSubmit { prompt: "hi" },
        &ctx(dir.path()),
    )
    .await;
    assert_eq!(out, go(&["Current branch: main", "Sprint 12"]));
    // Plain stdout of a tool hook is not context.
    let out = run_pre(
        &pre(vec![hook("echo chatter")]),
        dir.path(),
        "workspace.run_command",
        "workspace",
        &bash_call(),
    )
    .await;
    assert_eq!(out, go(&[]));
    let long = "head -c 5000 /dev/zero | tr '\\0' y >&2; exit 2";
    let out = run_pre(
        &pre(vec![hook(long)]),
        dir.path(),
        "workspace.run_command",
        "workspace",
        &bash_call(),
    )
    .await;
    assert!(
        matches!(&out, Outcome::Block { reason, .. } if reason.len() <= MAX_REASON + 3 && reason.ends_with('…')),
        "{out:?}"
    );
}

#[tokio::test]
async fn a_hook_gets_the_minimal_environment_and_the_project_dir() {
    let dir = tempfile::tempdir().unwrap();
    // Values with newlines become spaces: one name a line.
    let hooks = HooksConfig {
        user_prompt_submit: vec![hook(
            "env -0 | tr '\\n\\0' ' \\n' | cut -d= -f1; echo \"DIR=$CLAUDE_PROJECT_DIR\"",
        )],
        ..HooksConfig::default()
    };
    let out = run(
        &hooks,
        Event::UserPromptSubmit { prompt: "hi" },
        &ctx(dir.path()),
    )
    .await;
    let Outcome::Continue { notes } = out else {
        panic!("{out:?}")
    };
    let lines: Vec<&str> = notes[0].lines().collect();
    let cwd = dir.path().to_string_lossy();
    assert_eq!(lines.last().copied(), Some(format!("DIR={cwd}").as_str()));
    let names = &lines[..lines.len() - 1];
    assert!(names.contains(&"GENAI_PROJECT_DIR") && names.contains(&"CLAUDE_PROJECT_DIR"));
    // What the shell sets itself.
    let shells = ["PWD", "OLDPWD", "SHLVL", "_"];
    for name in names {
        assert!(
            genai_base::process::PASSED.contains(name)
                || name.starts_with("LC_")
                || name.ends_with("_PROJECT_DIR")
                || shells.contains(name),
            "{name} reached the hook: {names:?}"
        );
    }
    // cargo test runs with CARGO_* variables (and most machines have more): none passed.
    let other = std::env::vars()
        .map(|(n, _)| n)
        .find(|n| !genai_base::process::PASSED.contains(&n.as_str()) && !n.starts_with("LC_"));
    if let Some(other) = other {
        assert!(!names.contains(&other.as_str()), "{other}");
    }
}

#[test]
fn the_config_refuses_unknown_keys() {
    let c: HooksConfig = serde_json::from_value(json!({
        "pre_tool_use": [{"command": "x", "matcher": "Bash", "timeout_s": 5}]
    }))
    .unwrap();
    assert_eq!(c.pre_tool_use[0].timeout_s, Some(5));
    assert!(c.post_tool_use.is_empty() && !c.is_empty());
    assert!(serde_json::from_value::<HooksConfig>(json!({"PreToolUse": []})).is_err());
    assert!(serde_json::from_value::<HooksConfig>(
        json!({"stop": [{"command": "x", "type": "command"}]})
    )
    .is_err());
}
