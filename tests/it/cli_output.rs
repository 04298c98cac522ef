//! What the commands print, seen as a user sees it: a closed stdout (`genai ... | head -1`)
//! ends every command quietly and stops `genai ask` generating; listings keep one hit per line;
//! a mistyped name gets "did you mean"; a bad config value is reported where it is.

use std::io::Read;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::cli::{self, stderr, stdout, OpenAiCli as Env};
use crate::support::fake_openai::Behavior;
use crate::support::poll::wait_until;

const DEADLINE: Duration = Duration::from_secs(30);

/// Waits for `child` to exit, at most [`DEADLINE`]; its exit code and stderr.
fn finish(mut child: Child, what: &str) -> (Option<i32>, String) {
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            panic!("`{what}` did not end after its stdout closed");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (status.code(), err)
}

/// Runs `c` with stdout a pipe whose read end is closed before it writes anything.
fn with_stdout_closed(mut c: Command) -> (Option<i32>, String) {
    let what = cli::shell_line(&c);
    let mut child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    finish(child, &what)
}

/// Two stored conversations, the second's prompt of several lines; its id.
fn two_conversations(env: &Env) -> String {
    for prompt in [
        "What is the capital of France?",
        "fn main() {\n    let zebra = 1;\n}\n",
    ] {
        let o = env.run(&["ask", "-m", "openai:gpt-4o-mini", prompt], None);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let list = env.run(&["sessions", "list", "--json"], None);
    let list: Value = serde_json::from_slice(&list.stdout).unwrap();
    list[0]["id"].as_str().unwrap().to_string()
}

#[test]
fn every_listing_command_ends_quietly_when_its_reader_is_gone() {
    let env = Env::new();
    let id = two_conversations(&env);
    // The key file is the store: `keys list` then says nothing of the OS keyring, whose
    // answer (the kernel's keyring, under many tests at once) is not what this test is about.
    env.dirs.write_config(
        "[keys]\nstore = 'file'\n\n[service_providers.work]\nkind = 'openai'\ntimeout_secs = 600\n",
    );
    let models = env.dirs.data.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    std::fs::write(models.join("tiny.gguf"), b"GGUF\x03\0\0\0").unwrap();
    let commands: &[&[&str]] = &[
        &["params"],
        &["params", "--json"],
        &["sessions", "list"],
        &["sessions", "list", "--json"],
        &["sessions", "show", &id],
        &["sessions", "show", &id, "--json"],
        &["sessions", "search", "zebra"],
        &["sessions", "export", &id],
        &["usage"],
        &["components"],
        &["keys", "list"],
        &["config", "show"],
        &["config", "path"],
        &["schema"],
        &["schema", "config"],
        &["models", "list"],
        &["models", "list", "--json"],
        &["completions", "bash"],
        &["--help"],
    ];
    for args in commands {
        let command = || {
            let mut c = env.cmd(args);
            c.env("OPENAI_API_KEY", "sk-test-key")
                .env_remove("DBUS_SESSION_BUS_ADDRESS");
            c
        };
        // Each prints something when read, so the closed pipe is really written to.
        let read = cli::output(command());
        assert!(!read.stdout.is_empty(), "{args:?} printed nothing");
        let (code, err) = with_stdout_closed(command());
        assert_eq!((code, err.as_str()), (Some(0), ""), "genai {args:?}");
    }
}

#[test]
fn ask_into_a_closed_pipe_stops_the_reply_and_ends_quietly() {
    let env = Env::new();
    // 200 pieces, 50 ms apart: ten seconds of reply unless genai stops it.
    env.fake.set_default(Behavior {
        reply: "word ".repeat(200),
        chunks: 200,
        delay: Duration::from_millis(50),
        ..Default::default()
    });
    let mut c = env.cmd(&["ask", "-m", "openai:gpt-4o-mini", "Tell me a long story"]);
    let what = cli::shell_line(&c);
    let started = Instant::now();
    let mut child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // `| head -c 5`: the first five bytes, then the reader is gone.
    let mut first = [0u8; 5];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut first)
        .unwrap();
    assert_eq!(&first, b"word ");
    drop(child.stdout.take());
    let (code, err) = finish(child, &what);
    assert_eq!((code, err.as_str()), (Some(0), ""));
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "the reply ran on for {:?}",
        started.elapsed()
    );
    wait_until("the provider sees the request dropped", DEADLINE, || {
        env.fake.disconnects() >= 1
    });
    // The cancelled turn is not stored.
    let list = env.run(&["sessions", "list", "--json"], None);
    assert_eq!(cli::message_counts(&list).iter().sum::<i64>(), 0);
}

#[test]
fn search_shows_one_hit_per_line_whatever_the_message_holds() {
    let env = Env::new();
    two_conversations(&env);
    let o = env.run(&["sessions", "search", "zebra"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let shown = stdout(&o);
    let lines: Vec<&str> = shown.lines().collect();
    // The conversation's line, then the hit's.
    assert_eq!(lines.len(), 2, "{shown}");
    assert!(
        lines[1].contains("[user #") && lines[1].contains("fn main() { ⏎ let [zebra] = 1; ⏎ }"),
        "{shown}"
    );
    let list = env.run(&["sessions", "list"], None);
    assert_eq!(stdout(&list).lines().count(), 2, "{}", stdout(&list));
}

#[test]
fn config_show_writes_whole_seconds_and_leaves_out_empty_tables() {
    let env = Env::new();
    env.dirs.write_config(
        "[service_providers.work]\nkind = 'openai'\ntimeout_secs = 600\napi_key = 'sk-secret-1'\n",
    );
    let o = env.run(&["config", "show"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let shown = stdout(&o);
    assert!(shown.contains("\ntimeout_secs = 600\n"), "{shown}");
    assert!(!shown.contains("sk-secret-1"), "{shown}");
    for empty in ["[defaults]", "[lsp]", "[keys]\n\n"] {
        assert!(!shown.contains(empty), "{shown}");
    }
}

/// Runs `genai args` with `config` as its config file.
fn with_config(config: &str, args: &[&str]) -> Output {
    let env = Env::new();
    env.dirs.write_config(config);
    env.run(args, None)
}

#[test]
fn a_value_of_the_wrong_type_is_reported_at_its_line_and_column() {
    let config = "[service_providers.work]\nkind = 'openai'\nbase_url = 'http://127.0.0.1:9/v1'\n\
                  timeout_secs = \"ten\"\n";
    let o = with_config(config, &["config", "show"]);
    cli::assert_fails_with(
        &o,
        3,
        "line 4, column 16: service_providers.work.timeout_secs: invalid type: string \"ten\", \
         expected a number of seconds",
    );
}

#[test]
fn a_mistyped_parameter_is_told_the_one_it_meant() {
    let env = Env::new();
    let o = env.run(
        &[
            "ask",
            "-m",
            "openai:gpt-4o-mini",
            "-p",
            "tempreature=0.5",
            "hi",
        ],
        None,
    );
    cli::assert_fails_with(&o, 2, "(did you mean `temperature`?)");
    cli::assert_stderr_says(&o, "accepted: ");
    assert!(env.fake.requests().is_empty());
}
