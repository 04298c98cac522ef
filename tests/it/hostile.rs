//! A misbehaving provider against `genai ask` and the daemon: keys echoed back in every kind of
//! error, endless and enormous answers, a huge error body, one giant event and Cancel during
//! it. What must hold: no key in any output, a clear error at the configured limits, and a
//! cancelled turn that ends at once and is never stored.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::cli::{self, stderr, stdout, Folders};
use crate::support::fake_openai::{Behavior, FakeOpenAi};
use crate::support::hostile::{
    one_large_event, openai_chunk, openai_error, respond, start_stream, Hostile,
};
use crate::support::poll::wait_until;
use crate::support::rpc_client::{Daemon, DaemonConfig, Framing};

const TURN: Duration = Duration::from_secs(30);
const EXIT: Duration = Duration::from_secs(10);
/// The user's own key, which the provider echoes back.
const KEY: &str = "sk-proj-OwnKey1234567890abcdefXYZ";
/// A key genai never saw (the provider echoes one it got from elsewhere).
const FOREIGN_KEY: &str = "sk-proj-Foreign0987654321zyxwvu";

fn ask(h: &Hostile, dirs: &Folders, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["ask", "-m", "openai:m"];
    args.extend_from_slice(extra);
    args.push("hello");
    let mut c = dirs.genai(&args);
    c.env("OPENAI_BASE_URL", h.base_url())
        .env("OPENAI_API_KEY", KEY)
        .env("GENAI_LOG", "debug");
    cli::output(c)
}

/// A daemon whose built-in `openai` provider is `h`, with the user's key; its config folder
/// holds `config` when given.
fn daemon_for(h: &Hostile, dir: &std::path::Path, config: Option<&str>) -> Daemon {
    let cfg = DaemonConfig::in_dir(dir, Framing::Lines, "daemon")
        .env("OPENAI_BASE_URL", &h.base_url())
        .env("OPENAI_API_KEY", KEY);
    if let Some(text) = config {
        cfg.write_config(text);
    }
    let mut d = Daemon::spawn(&cfg);
    d.initialize("hostile", true);
    d
}

fn assert_no_key(what: &str, text: &str) {
    for key in [KEY, FOREIGN_KEY] {
        assert!(!text.contains(key), "{what} shows {key}: {text}");
        assert!(
            !text.contains(&key[12..]),
            "{what} shows part of {key}: {text}"
        );
    }
}

/// Every way a provider can echo a key: error bodies of each status, and an SSE error event.
fn echoing_provider(status: u16) -> Hostile {
    Hostile::start(move |conn: &mut TcpStream, request: &str| {
        let message = format!(
            "Incorrect API key provided: {KEY}. Also seen: {FOREIGN_KEY}. You can find your API key at https://platform.openai.com/account/api-keys."
        );
        if status == 200 && !request.contains("\"stream\":true") {
            respond(conn, 200, "application/json", &openai_error(&message));
        } else if status == 200 {
            if start_stream(conn, "text/event-stream") {
                let event = json!({"error": {"message": message, "type": "server_error"}});
                let _ = conn.write_all(format!("data: {event}\n\n").as_bytes());
            }
        } else {
            respond(conn, status, "application/json", &openai_error(&message));
        }
    })
}

#[test]
fn a_key_echoed_by_the_provider_reaches_no_output_of_genai_ask() {
    for status in [400, 401, 403, 404, 500, 200] {
        let h = echoing_provider(status);
        let dirs = Folders::new();
        let o = ask(&h, &dirs, &[]);
        assert!(!o.status.success(), "{status}");
        let err = stderr(&o);
        assert!(
            err.contains("Incorrect API key provided: ********"),
            "{status}: {err}"
        );
        assert_no_key(&format!("stderr after {status}"), &err);
        let o = ask(&h, &dirs, &["--json"]);
        assert_no_key(&format!("--json after {status}"), &stdout(&o));
        assert_no_key(&format!("stderr of --json after {status}"), &stderr(&o));
        let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        assert!(
            v["error"]["message"].as_str().unwrap().contains("********"),
            "{v}"
        );
    }
}

#[test]
fn a_key_echoed_by_the_provider_reaches_no_daemon_message_nor_its_log() {
    for status in [401, 500, 200] {
        let h = echoing_provider(status);
        let dir = tempfile::tempdir().unwrap();
        let mut d = daemon_for(&h, dir.path(), None);
        let (cid, conv) = d.create_conversation(json!({"serviceProvider": "openai", "model": "m"}));
        let (_, fin) = d.turn(&cid, "hello", TURN);
        assert_eq!(fin["isSuccess"], false, "{fin}");
        let sent = d.call(
            "SendPrompt",
            json!({"agentId": conv["agentId"], "prompt": "hi"}),
        );
        let rid = sent["requestId"].as_str().unwrap().to_string();
        let prompt = d.wait_notification(
            |m| m["method"] == "OnPromptResponse" && m["params"]["requestId"] == rid.as_str(),
            TURN,
        );
        assert!(prompt.to_string().contains("********"), "{prompt}");
        assert!(d.shutdown(EXIT).success());
        assert_no_key(
            "the daemon's stdout",
            &String::from_utf8_lossy(&d.raw_stdout()),
        );
        let log = d.stderr_text();
        assert!(log.contains("turn failed"), "{log}");
        assert_no_key("the daemon's log", &log);
    }
}

#[test]
fn an_endless_stream_ends_the_turn_at_max_reply_bytes_or_tokens() {
    let h = Hostile::start(|conn: &mut TcpStream, _: &str| {
        if !start_stream(conn, "text/event-stream") {
            return;
        }
        let piece = openai_chunk(&"x".repeat(4000)).repeat(16);
        // Until genai hangs up; bounded so a broken limit cannot run forever.
        for _ in 0..100_000 {
            if conn.write_all(piece.as_bytes()).is_err() {
                return;
            }
        }
    });
    let dirs = Folders::new();
    dirs.write_config("[service_providers.openai]\nkind = \"openai\"\nmax_reply_bytes = 2000000\n");
    let o = ask(&h, &dirs, &[]);
    assert!(!o.status.success());
    cli::assert_stderr_says(&o, "over 2000000 bytes (max_reply_bytes)");
    dirs.write_config("[service_providers.openai]\nkind = \"openai\"\nmax_reply_tokens = 100\n");
    let o = ask(&h, &dirs, &[]);
    assert!(!o.status.success());
    cli::assert_stderr_says(&o, "over 100 tokens (max_reply_tokens)");
    assert!(
        stdout(&o).len() <= 102 * 4000,
        "{} bytes printed",
        stdout(&o).len()
    );
}

#[test]
fn a_huge_error_body_becomes_one_short_line() {
    let h = Hostile::start(|conn: &mut TcpStream, _: &str| {
        let message = "y".repeat(30 << 20);
        respond(conn, 500, "application/json", &openai_error(&message));
    });
    let dirs = Folders::new();
    let o = ask(&h, &dirs, &[]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("HTTP 500"), "{}", &err[..err.len().min(2000)]);
    assert!(err.len() < 8 << 10, "{} bytes of stderr", err.len());
}

#[test]
fn a_large_event_is_read_whole_and_one_over_max_event_bytes_is_refused() {
    let h = one_large_event(8 << 20, 64 << 10, Duration::ZERO);
    let dirs = Folders::new();
    let o = ask(&h, &dirs, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim_end().len(), 8 << 20);

    dirs.write_config("[service_providers.openai]\nkind = \"openai\"\nmax_event_bytes = 1000000\n");
    let o = ask(&h, &dirs, &[]);
    assert!(!o.status.success());
    cli::assert_stderr_says(&o, "event over 1000000 bytes (max_event_bytes)");
}

#[test]
fn cancel_during_a_large_event_ends_the_turn_at_once_and_stores_nothing() {
    // 12 MiB in 64 KiB pieces every 50 ms: about 10 s to send whole.
    let h = one_large_event(12 << 20, 64 << 10, Duration::from_millis(50));
    let dir = tempfile::tempdir().unwrap();
    let mut d = daemon_for(&h, dir.path(), None);
    let (cid, _) = d.create_conversation(json!({"serviceProvider": "openai", "model": "m"}));
    let turn = d.send_message(&cid, "hello");
    wait_until("the provider gets the request", TURN, || {
        h.requests.load(std::sync::atomic::Ordering::SeqCst) > 0
    });
    let (fin, took) = d.cancel_turn(&cid, &turn, Duration::from_secs(3));
    assert_eq!(fin["isSuccess"], false, "{fin}");
    assert_eq!(fin["error"]["kind"], "cancelled", "{fin}");
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert!(d.history(&cid).is_empty(), "a cancelled turn was stored");
    assert!(d.shutdown(EXIT).success());
}

#[test]
fn an_api_key_cmd_gets_a_minimal_environment() {
    let fake = FakeOpenAi::start(0, Behavior::text("ok")).unwrap();
    let dirs = Folders::new();
    let seen = dirs.data.path().join("seen-env");
    dirs.write_config(&format!(
        "[service_providers.w]\nkind = 'openai'\nbase_url = '{}'\napi_key_env = 'GENAI_TEST_NO_SUCH_VAR'\n\
         api_key_cmd = 'env > {}; echo sk-from-the-command-0123456789'\n",
        fake.base_url(),
        seen.display()
    ));
    let mut c = dirs.genai(&["ask", "-m", "w:m", "hello"]);
    c.env("ANTHROPIC_API_KEY", "sk-ant-other-provider-key-42")
        .env("OPENAI_API_KEY", KEY);
    let o = cli::output(c);
    assert!(o.status.success(), "{}", stderr(&o));
    let env = std::fs::read_to_string(&seen).unwrap();
    assert!(env.lines().any(|l| l.starts_with("PATH=")), "{env}");
    assert!(!env.contains("sk-ant-other-provider-key-42"), "{env}");
    assert!(!env.contains(KEY), "{env}");
    assert!(!env.contains("GENAI_DATA_DIR"), "{env}");
}

#[test]
fn a_daemon_whose_client_stops_reading_disconnects_it_and_exits() {
    use std::process::Stdio;
    let dirs = Folders::new();
    let mut c = dirs.genai(&["daemon"]);
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // stdout is kept open and never read.
    let _stdout = child.stdout.take().unwrap();
    let writer = std::thread::spawn(move || {
        let request = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ListComponents\"}\n";
        for _ in 0..2_000_000 {
            if stdin.write_all(request).is_err() {
                return;
            }
        }
    });
    let mut status = None;
    wait_until(
        "the daemon disconnects its client",
        Duration::from_secs(60),
        || {
            status = child.try_wait().unwrap();
            status.is_some()
        },
    );
    let status = status.unwrap();
    assert_eq!(status.code(), Some(1));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(err.contains("stopped reading"), "{err}");
    writer.join().unwrap();
}

#[test]
fn requests_in_flight_to_one_provider_are_limited_and_the_rest_wait() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let (now, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (now2, most2) = (now.clone(), most.clone());
    let h = Hostile::start(move |conn: &mut TcpStream, _: &str| {
        let n = now2.fetch_add(1, Ordering::SeqCst) + 1;
        most2.fetch_max(n, Ordering::SeqCst);
        if start_stream(conn, "text/event-stream") {
            // The answer takes a while, so requests pile up if nothing holds them back.
            for piece in ["one ", "two"] {
                std::thread::sleep(Duration::from_millis(100));
                let _ = conn.write_all(openai_chunk(piece).as_bytes());
            }
            now2.fetch_sub(1, Ordering::SeqCst);
            let _ = conn.write_all(b"data: [DONE]\n\n");
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let config = "[service_providers.openai]\nkind = 'openai'\nmax_concurrent_requests = 3\n";
    let mut d = daemon_for(&h, dir.path(), Some(config));
    let turns: Vec<String> = (0..12)
        .map(|_| {
            let (cid, _) =
                d.create_conversation(json!({"serviceProvider": "openai", "model": "m"}));
            d.send_message(&cid, "hello")
        })
        .collect();
    for turn in turns {
        let fin = d.wait_final(&turn, TURN)["params"].clone();
        assert_eq!(fin["isSuccess"], true, "{fin}");
        assert_eq!(fin["summary"], "one two", "{fin}");
    }
    assert_eq!(h.requests.load(Ordering::SeqCst), 12);
    let most = most.load(Ordering::SeqCst);
    assert!((1..=3).contains(&most), "{most} requests in flight at once");
    assert!(d.shutdown(EXIT).success());
}

#[test]
fn without_home_genai_asks_for_one_instead_of_guessing() {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_genai"));
    c.args(["sessions", "list"])
        .env_remove("HOME")
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("GENAI_DATA_DIR")
        .env_remove("GENAI_CONFIG_DIR");
    let o = cli::output(c);
    assert!(!o.status.success());
    cli::assert_stderr_says(&o, "HOME is not set");
}
