//! `genai ask` and the other subcommands, run as a user would, against the fake OpenAI server.

use std::process::{Command, Stdio};
use std::time::Duration;

use fake_openai::{Behavior, Mode};
use serde_json::{json, Value};

use crate::support::cli::{self, stderr, stdout, OpenAiCli as Env};
use crate::support::fake_openai;

#[test]
fn ask_streams_the_reply_and_stores_the_turn() {
    let env = Env::new();
    env.fake.set_default(Behavior {
        reply: "Paris is the capital.".into(),
        chunks: 5,
        ..Default::default()
    });
    let o = env.run(
        &[
            "ask",
            "-m",
            "openai:gpt-4o-mini",
            "What",
            "is",
            "the",
            "capital?",
        ],
        None,
    );
    cli::assert_prints(&o, "Paris is the capital.\n");
    let body = env.last_body();
    assert_eq!(body["stream"], true);
    assert_eq!(body["model"], "gpt-4o-mini");
    assert_eq!(body["messages"][0]["content"], "What is the capital?");
    let list = env.run(&["sessions", "list", "--json"], None);
    let list: Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(list[0]["title"], "What is the capital?");
    assert_eq!(list[0]["messageCount"], 2);
}

#[test]
fn piped_stdin_follows_the_prompt_after_a_blank_line_and_dash_reads_it_alone() {
    let env = Env::new();
    let o = env.run(
        &["ask", "-m", "openai:m", "Summarize:"],
        Some("line one\nline two\n"),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        env.last_body()["messages"][0]["content"],
        "Summarize:\n\nline one\nline two\n"
    );
    let o = env.run(&["ask", "-m", "openai:m", "-"], Some("only stdin"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(env.last_body()["messages"][0]["content"], "only stdin");
}

#[test]
fn json_output_has_ids_reply_model_usage_and_finish_reason() {
    let env = Env::new();
    let o = env.run(
        &["ask", "-m", "openai:gpt-4o-mini", "--json", "hello there"],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).expect("one JSON object");
    assert_eq!(v["reply"], "Hello from the fake provider.");
    assert_eq!(v["model"], "gpt-4o-mini");
    assert_eq!(v["finishReason"], "stop");
    assert_eq!(
        (&v["status"], &v["exitCode"]),
        (&json!("success"), &json!(0)),
        "{v}"
    );
    assert_eq!(v["usage"]["inputTokens"], 2);
    assert_eq!(v["conversationId"].as_str().unwrap().len(), 26);
}

#[test]
fn continue_and_cid_send_the_history_and_system_and_params_reach_the_request() {
    let env = Env::new();
    let o = env.run(
        &[
            "ask",
            "-m",
            "openai:m",
            "-s",
            "Be terse.",
            "-p",
            "temperature=0.25",
            "-p",
            "MAX_TOKENS=50",
            "first question",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let body = env.last_body();
    assert_eq!(
        body["messages"][0],
        serde_json::json!({"role": "system", "content": "Be terse."})
    );
    assert_eq!(body["temperature"], 0.25);
    assert_eq!(body["max_tokens"], 50);

    let o = env.run(&["ask", "-c", "second question"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let body = env.last_body();
    let msgs = body["messages"].as_array().unwrap();
    let texts: Vec<&str> = msgs
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        [
            "Be terse.",
            "first question",
            "Hello from the fake provider.",
            "second question"
        ]
    );
    assert_eq!(body["temperature"], 0.25, "parameters survive a resume");

    let list: Value =
        serde_json::from_slice(&env.run(&["sessions", "list", "--json"], None).stdout).unwrap();
    let id = list[0]["id"].as_str().unwrap().to_string();
    let o = env.run(&["ask", "--cid", &id[..10].to_lowercase(), "third"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(env.last_body()["messages"].as_array().unwrap().len(), 6);
    let shown = stdout(&env.run(&["sessions", "show", &id[..8]], None));
    assert!(shown.contains("[user] third"), "{shown}");
}

#[test]
fn no_log_keeps_the_conversation_out_of_the_history() {
    let env = Env::new();
    let o = env.run(&["ask", "-m", "openai:m", "--no-log", "secret plans"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let list: Value =
        serde_json::from_slice(&env.run(&["sessions", "list", "--json"], None).stdout).unwrap();
    assert_eq!(list, serde_json::json!([]));
    let db = std::fs::read(env.dirs.data.path().join("history.db")).unwrap_or_default();
    assert!(!String::from_utf8_lossy(&db).contains("secret plans"));
}

#[test]
fn exit_codes_and_one_line_errors() {
    let env = Env::new();
    // 2: usage errors.
    let o = env.run(&["ask", "-m", "openai:m"], None);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("nothing to ask"));
    let o = env.run(&["ask", "-m", "openai:m", "-p", "temp=1", "hi"], None);
    cli::assert_fails_with(&o, 2, "temperature");
    let o = env.run(&["ask", "--bogus-flag", "hi"], None);
    assert_eq!(o.status.code(), Some(2));
    // 1: the provider fails, every try (the first and three retries).
    let before = env.fake.requests().len();
    for _ in 0..4 {
        env.fake.push(Behavior {
            mode: Mode::Error {
                status: 500,
                message: "upstream exploded".into(),
                code: "server_error".into(),
            },
            ..Default::default()
        });
    }
    let o = env.run(&["ask", "-m", "openai:m", "hi"], None);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("500") && err.contains("upstream exploded") && err.contains("after 4 tries"),
        "{err}"
    );
    assert_eq!(env.fake.requests().len() - before, 4);
    // 3: no model configured, and no key for OpenAI's own endpoint.
    let mut c = env.cmd(&["ask", "hi"]);
    c.env_remove("OPENAI_BASE_URL");
    let o = c.stdin(Stdio::null()).output().unwrap();
    cli::assert_fails_with(&o, 3, "configure a provider");
    let mut c = env.cmd(&["ask", "-m", "openai:gpt-4o-mini", "hi"]);
    c.env_remove("OPENAI_BASE_URL");
    let o = c.stdin(Stdio::null()).output().unwrap();
    cli::assert_fails_with(&o, 3, "OPENAI_API_KEY");
}

/// Whether this binary registers provider kind `local` (cargo feature `local`).
fn has_local_kind(env: &Env) -> bool {
    let o = env.run(&["components", "--json"], None);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["kinds"]["serviceProviders"]
        .as_array()
        .unwrap()
        .iter()
        .any(|k| k["name"] == "local")
}

#[test]
fn zero_config_without_a_provider_or_a_local_model_says_how_to_add_either() {
    let env = Env::new();
    // The kind is registered either way; without the cargo feature it cannot run.
    let local = has_local_kind(&env) && cfg!(feature = "local");
    let ask = |env: &Env| {
        let mut c = env.cmd(&["ask", "hi"]);
        c.env_remove("OPENAI_BASE_URL").stdin(Stdio::null());
        c.output().unwrap()
    };
    let o = ask(&env);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("configure a provider (see `genai config path`)"),
        "{err}"
    );
    if local {
        assert!(
            err.contains("no local model is installed")
                && err.contains("genai models pull demo")
                && err.contains("genai models pull URL"),
            "{err}"
        );
    } else {
        assert!(err.contains("built without the `local` feature"), "{err}");
    }
    // Two models and no default: say how to choose one.
    let models = env.dirs.data.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    std::fs::write(models.join("a.gguf"), b"GGUF").unwrap();
    std::fs::write(models.join("b.gguf"), b"GGUF").unwrap();
    let o = ask(&env);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    if local {
        cli::assert_stderr_says(&o, "genai models default NAME");
    }
    // A configured provider is never overridden by the local model.
    env.dirs
        .write_config("[service_providers.work]\nkind = \"openai\"\n");
    let o = ask(&env);
    cli::assert_fails_with(&o, 3, "no model chosen");
}

#[test]
fn timeout_and_cut_streams_fail_cleanly_and_store_nothing() {
    let env = Env::new();
    env.fake.push(Behavior {
        mode: Mode::Stall,
        ..Default::default()
    });
    let started = std::time::Instant::now();
    let o = env.run(&["ask", "-m", "openai:m", "--timeout", "1", "hi"], None);
    cli::assert_fails_with(&o, 1, "no complete answer within");
    assert!(started.elapsed() < Duration::from_secs(20));
    env.fake.push(Behavior {
        mode: Mode::CutAfter { after: 2 },
        chunks: 6,
        ..Default::default()
    });
    let o = env.run(&["ask", "-m", "openai:m", "hi"], None);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("ended before the reply was complete") || stderr(&o).contains("broke"),
        "{}",
        stderr(&o)
    );
    let list: Value =
        serde_json::from_slice(&env.run(&["sessions", "list", "--json"], None).stdout).unwrap();
    for c in list.as_array().unwrap() {
        assert_eq!(c["messageCount"], 0, "a failed turn left messages: {c}");
    }
}

#[test]
fn config_agents_defaults_and_masked_show() {
    let env = Env::new();
    env.dirs.write_config(&format!(
        r#"
        [defaults]
        model = "work"
        [service_providers.corp]
        kind = "openai"
        base_url = "{}"
        api_key = "sk-config-secret-999"
        [model_configurations.tiny]
        format = "openai-chat"
        model = "tiny-1"
        parameters = {{ temperature = 0.1 }}
        [agents.work]
        provider = "corp"
        model_configuration = "tiny"
        system_prompt = "You work here."
        "#,
        env.fake.base_url()
    ));
    let o = env.run(&["ask", "hello"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let req = env.fake.requests().last().unwrap().clone();
    assert_eq!(req.body["model"], "tiny-1");
    assert_eq!(req.body["temperature"], 0.1);
    assert_eq!(req.body["messages"][0]["content"], "You work here.");
    assert_eq!(
        req.header("authorization"),
        Some("Bearer sk-config-secret-999")
    );
    let shown = stdout(&env.run(&["config", "show"], None));
    assert!(
        shown.contains("corp") && !shown.contains("sk-config-secret-999"),
        "{shown}"
    );
    let comps: Value =
        serde_json::from_slice(&env.run(&["components", "--json"], None).stdout).unwrap();
    let names: Vec<&str> = comps["serviceProviders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    // `corp` from the config; the built-in instances made from the environment, and the
    // built-in local engine.
    let mut expected = vec!["anthropic", "bedrock", "corp", "gemini", "ollama", "openai"];
    if cfg!(feature = "local") {
        expected.insert(4, "local");
    }
    assert_eq!(names, expected);
    let db = std::fs::read(env.dirs.data.path().join("history.db")).unwrap();
    assert!(!String::from_utf8_lossy(&db).contains("sk-config-secret-999"));
}

#[test]
fn bad_config_is_a_clear_configuration_error() {
    let env = Env::new();
    env.dirs
        .write_config("[service_providers.x]\nkind = \"nope\"\n");
    let o = env.run(&["ask", "-m", "x:m", "hi"], None);
    cli::assert_fails_with(&o, 3, "unknown provider kind `nope`");
}

#[test]
fn sessions_delete_schema_completions_and_paths() {
    let env = Env::new();
    assert!(env
        .run(&["ask", "-m", "openai:m", "to delete"], None)
        .status
        .success());
    let list: Value =
        serde_json::from_slice(&env.run(&["sessions", "list", "--json"], None).stdout).unwrap();
    let id = list[0]["id"].as_str().unwrap();
    assert!(env
        .run(&["sessions", "delete", &id[..12]], None)
        .status
        .success());
    let o = env.run(&["sessions", "show", id], None);
    assert_eq!(o.status.code(), Some(2));
    let schema: Value =
        serde_json::from_slice(&env.run(&["schema", "OnNewMessage.params"], None).stdout).unwrap();
    assert!(
        schema["properties"]["conversationId"].is_object(),
        "{schema}"
    );
    let o = env.run(&["completions", "bash"], None);
    assert!(stdout(&o).contains("genai"), "completions printed nothing");
    let paths = stdout(&env.run(&["config", "paths"], None));
    assert!(
        paths.contains(
            &env.dirs
                .data
                .path()
                .join("history.db")
                .display()
                .to_string()
        ),
        "{paths}"
    );
    assert!(
        paths.contains(&env.dirs.data.path().join("models").display().to_string()),
        "{paths}"
    );
}

#[test]
fn keys_are_read_from_stdin_never_argv() {
    let env = Env::new();
    let name = format!("genai-test-{}", std::process::id());
    let o = env.run(&["keys", "set", &name], Some("sk-from-stdin-123\n"));
    if o.status.success() {
        // A keyring service exists here: the key is used by a provider of that name.
        env.dirs.write_config(&format!(
            "[service_providers.{name}]\nkind = \"openai\"\nbase_url = \"{}\"\n",
            env.fake.base_url()
        ));
        let o2 = env.run(&["ask", "-m", &format!("{name}:m"), "hi"], None);
        assert!(o2.status.success(), "{}", stderr(&o2));
        assert_eq!(
            env.fake.requests().last().unwrap().header("authorization"),
            Some("Bearer sk-from-stdin-123")
        );
        assert!(env.run(&["keys", "delete", &name], None).status.success());
    } else {
        assert_eq!(o.status.code(), Some(3));
        assert!(
            stderr(&o).contains("keyring") && stderr(&o).contains("OPENAI_API_KEY"),
            "{}",
            stderr(&o)
        );
    }
    assert!(!stderr(&o).contains("sk-from-stdin-123"));
    let o = env.run(&["keys", "set", &name, "sk-on-argv"], None);
    assert_eq!(o.status.code(), Some(2), "a key on argv must be refused");
}

/// Runs `genai ask` on a real terminal (a pseudo-terminal made by util-linux's `script`), with
/// the extra environment `env`; returns what the terminal showed.
fn ask_on_a_terminal(env: &Env, args: &str, extra: &[(&str, &str)]) -> String {
    let bin = env!("CARGO_BIN_EXE_genai");
    let mut c = env.cmd(&[]);
    c.env_remove("NO_COLOR");
    for (k, v) in extra {
        c.env(k, v);
    }
    let c = c
        .get_envs()
        .fold(Command::new("script"), |mut s, (k, v)| {
            match v {
                Some(v) => s.env(k, v),
                None => s.env_remove(k),
            };
            s
        })
        .args(["-qec", &format!("{bin} ask {args}"), "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .expect("run script(1)");
    assert!(c.status.success(), "{}", stderr(&c));
    String::from_utf8_lossy(&c.stdout).into_owned()
}

#[test]
fn ask_renders_markdown_on_a_terminal_only() {
    if Command::new("script").arg("--version").output().is_err() {
        panic!("script(1) from util-linux is needed (apt-get install bsdutils)");
    }
    let env = Env::new();
    let reply = "Use **this**:\n```rust\nfn main() {}\n```\n";
    env.fake.set_default(Behavior::reply(reply, 4));
    let shown = ask_on_a_terminal(&env, "-m openai:m hi", &[]);
    assert!(shown.contains("Use \x1b[1mthis\x1b[22m:"), "{shown:?}");
    assert!(
        shown.contains("\x1b[38;2;"),
        "the code is highlighted: {shown:?}"
    );
    // The unfinished line shows as written while it streams, then is drawn over.
    assert!(!cli::settled(&shown).contains("**"), "{shown:?}");
    // --raw, NO_COLOR and a pipe show the text as the model wrote it.
    for (args, extra) in [
        ("--raw -m openai:m hi", vec![]),
        ("-m openai:m hi", vec![("NO_COLOR", "1")]),
    ] {
        let shown = ask_on_a_terminal(&env, args, &extra);
        assert!(!shown.contains('\x1b'), "{args} {extra:?}: {shown:?}");
        assert!(shown.replace("\r\n", "\n").contains(reply), "{shown:?}");
    }
    let o = env.run(&["ask", "-m", "openai:m", "hi"], None);
    assert_eq!(stdout(&o), reply);
}

#[test]
fn files_go_after_the_prompt_as_fenced_blocks_and_binary_is_refused() {
    let env = Env::new();
    let dir = tempfile::tempdir().unwrap();
    let code = dir.path().join("lib.rs");
    std::fs::write(&code, "pub fn one() -> u8 { 1 }\n").unwrap();
    let path = code.display().to_string();
    let o = env.run(
        &["ask", "-m", "openai:m", "-f", &path, "Review this:"],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let body = env.last_body();
    let sent = body["messages"].as_array().unwrap().last().unwrap()["content"].clone();
    assert_eq!(
        sent.as_str().unwrap(),
        format!("Review this:\n\n{path}:\n```rust\npub fn one() -> u8 {{ 1 }}\n```")
    );

    let bin = dir.path().join("blob");
    std::fs::write(&bin, [1u8, 0, 2]).unwrap();
    let before = env.fake.requests().len();
    let o = env.run(
        &[
            "ask",
            "-m",
            "openai:m",
            "-f",
            &bin.display().to_string(),
            "hi",
        ],
        None,
    );
    cli::assert_fails_with(&o, 2, "is a binary file");
    assert_eq!(env.fake.requests().len(), before, "nothing was sent");
}
