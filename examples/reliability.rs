//! The reliability suite: a misbehaving provider, hostile input and hard kills replayed against
//! the built `genai`, each case printing its figures (peak memory, times, turns lost):
//!
//! ```text
//! cargo build --release --bin genai --example reliability
//! cargo run --release --example reliability [-- --quick]
//! ```
//!
//! Cases: keys echoed by a provider (401 and an SSE error event) in `genai ask`, `--json` and
//! the daemon; an endless stream; a 100 MiB error body; an 8 MiB and a 50 MiB event; Cancel
//! during a large event; Content-Length frames with wrong lengths; a batch of 400,000 requests;
//! a client that stops reading; 1,000 concurrent turns; `kill -9` during turns with an integrity
//! check; two daemons and ten `genai ask` on one database. `--quick` makes the counts smaller
//! (CI). Everything stays on 127.0.0.1; a case that misses its deadline or its promise fails
//! the run (exit 1) after the figures.

#[path = "support/bench.rs"]
mod bench;
#[allow(dead_code)]
#[path = "../tests/it/support"]
mod support {
    pub mod behavior;
    pub mod fake_embeddings;
    pub mod fake_openai;
    pub mod hostile;
    pub mod http1;
    pub mod server;
}
#[path = "reliability/daemon.rs"]
mod daemon;

use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use daemon::Daemon;
use support::hostile::{
    one_large_event, openai_chunk, openai_error, respond, start_stream, Hostile,
};

const KEY: &str = "sk-proj-ReliabilityKey0123456789abcdef";

type Res<T> = Result<T, String>;

struct Env {
    genai: PathBuf,
    root: tempfile::TempDir,
    quick: bool,
    failures: Vec<String>,
}

impl Env {
    /// Fresh data and config folders under the run's root.
    fn folders(&self, name: &str) -> (PathBuf, PathBuf) {
        let (data, config) = (
            self.root.path().join(name).join("data"),
            self.root.path().join(name).join("config"),
        );
        std::fs::create_dir_all(&data).unwrap();
        std::fs::create_dir_all(&config).unwrap();
        (data, config)
    }

    fn genai(&self, data: &Path, config: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(&self.genai);
        c.args(args)
            .env("GENAI_DATA_DIR", data)
            .env("GENAI_CONFIG_DIR", config)
            .env("OPENAI_API_KEY", KEY)
            .env("NO_PROXY", "*")
            .env_remove("HTTP_PROXY")
            .env_remove("HTTPS_PROXY")
            .env_remove("ALL_PROXY");
        c
    }

    fn check(&mut self, case: &str, ok: bool, why: impl Into<String>) {
        if !ok {
            self.failures.push(format!("{case}: {}", why.into()));
        }
    }
}

fn figure(case: &str, text: impl std::fmt::Display) {
    println!("{case:<34} {text}");
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Runs `c` to its end; its stdout, stderr, peak memory (KiB) and time.
fn run_measured(mut c: Command) -> (String, String, u64, Duration) {
    let started = Instant::now();
    let mut child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out = std::thread::spawn(move || {
        let mut s = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut s).ok();
        String::from_utf8_lossy(&s).into_owned()
    });
    let err = std::thread::spawn(move || {
        let mut s = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut s).ok();
        String::from_utf8_lossy(&s).into_owned()
    });
    let peak = watch_peak(child.id(), || child.try_wait().ok().flatten().is_some());
    (
        out.join().unwrap(),
        err.join().unwrap(),
        peak,
        started.elapsed(),
    )
}

/// Polls the process's high-water mark until `done`; the last one read, in KiB.
fn watch_peak(pid: u32, mut done: impl FnMut() -> bool) -> u64 {
    let mut peak = 0;
    while !done() {
        if let Ok((_, hwm)) = bench::memory_kib(pid) {
            peak = peak.max(hwm);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    peak
}

fn echoing(status: u16) -> Hostile {
    Hostile::start(move |conn: &mut TcpStream, request: &str| {
        let message = format!("Incorrect API key provided: {KEY}.");
        if status == 200
            && request.contains("\"stream\":true")
            && start_stream(conn, "text/event-stream")
        {
            let event = json!({"error": {"message": message}});
            let _ = conn.write_all(format!("data: {event}\n\n").as_bytes());
        } else {
            respond(
                conn,
                status.max(401),
                "application/json",
                &openai_error(&message),
            );
        }
    })
}

fn keys(env: &mut Env) -> Res<()> {
    let mut outputs = 0;
    let mut leaks = 0;
    for status in [401, 200] {
        let h = echoing(status);
        let (data, config) = env.folders(&format!("keys{status}"));
        for json in [false, true] {
            let mut args = vec!["ask", "-m", "openai:m"];
            if json {
                args.push("--json");
            }
            args.push("hello");
            let mut c = env.genai(&data, &config, &args);
            c.env("OPENAI_BASE_URL", h.base_url())
                .env("GENAI_LOG", "debug");
            let (out, err, _, _) = run_measured(c);
            outputs += 2;
            leaks += [out, err].iter().filter(|t| t.contains(KEY)).count();
        }
        let mut d = Daemon::against(env, &data, &config, &h.base_url())?;
        let cid = d.conversation()?;
        let turn = d.message(&cid, "hello")?;
        d.final_of(&turn, Duration::from_secs(30))?;
        let (stdout, log) = d.shutdown()?;
        outputs += 2;
        leaks += [stdout, log].iter().filter(|t| t.contains(KEY)).count();
    }
    figure(
        "key echoed by the provider",
        format!("{leaks} of {outputs} outputs show it"),
    );
    env.check("keys", leaks == 0, "a key was printed");
    Ok(())
}

fn endless(env: &mut Env) -> Res<()> {
    let h = Hostile::start(|conn: &mut TcpStream, _: &str| {
        if start_stream(conn, "text/event-stream") {
            let piece = openai_chunk(&"x".repeat(4000)).repeat(16);
            for _ in 0..1_000_000 {
                if conn.write_all(piece.as_bytes()).is_err() {
                    return;
                }
            }
        }
    });
    let (data, config) = env.folders("endless");
    let mut c = env.genai(&data, &config, &["ask", "-m", "openai:m", "hello"]);
    c.env("OPENAI_BASE_URL", h.base_url());
    let (_, err, peak, took) = run_measured(c);
    let ok = err.contains("max_reply_tokens") || err.contains("max_reply_bytes");
    figure(
        "endless stream (genai ask)",
        format!(
            "ended in {:.2} s, peak {:.0} MiB: {}",
            took.as_secs_f64(),
            mib(peak),
            err.trim()
        ),
    );
    env.check(
        "endless stream",
        ok && mib(peak) < 300.0,
        "not ended at a limit, or over 300 MiB",
    );
    Ok(())
}

fn error_body(env: &mut Env) -> Res<()> {
    let body = std::sync::Arc::new(openai_error(&"y".repeat(100 << 20)));
    let h = Hostile::start(move |conn: &mut TcpStream, _: &str| {
        respond(conn, 500, "application/json", &body);
    });
    let (data, config) = env.folders("errorbody");
    let mut c = env.genai(&data, &config, &["ask", "-m", "openai:m", "hello"]);
    c.env("OPENAI_BASE_URL", h.base_url());
    let (_, err, peak, took) = run_measured(c);
    figure(
        "100 MiB error body",
        format!(
            "{} bytes of stderr, peak {:.0} MiB, {:.2} s",
            err.len(),
            mib(peak),
            took.as_secs_f64()
        ),
    );
    env.check(
        "error body",
        err.len() < 4096 && mib(peak) < 300.0,
        "long stderr or high memory",
    );
    Ok(())
}

fn large_event(env: &mut Env, mib_size: usize) -> Res<()> {
    let h = one_large_event(mib_size << 20, 16 << 10, Duration::ZERO);
    let (data, config) = env.folders(&format!("event{mib_size}"));
    let mut c = env.genai(&data, &config, &["ask", "-m", "openai:m", "hello"]);
    c.env("OPENAI_BASE_URL", h.base_url());
    let (out, err, peak, took) = run_measured(c);
    let what = if err.trim().is_empty() {
        format!("{} bytes printed", out.len())
    } else {
        err.trim().to_string()
    };
    figure(
        &format!("one {mib_size} MiB SSE event"),
        format!(
            "{:.2} s, peak {:.0} MiB: {what}",
            took.as_secs_f64(),
            mib(peak)
        ),
    );
    env.check("large event", took < Duration::from_secs(10), "slow parse");
    Ok(())
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let genai = match bench::genai_binary("cargo build --release --bin genai --example reliability")
    {
        Ok(g) => g,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let mut env = Env {
        genai,
        root: tempfile::tempdir().unwrap(),
        quick,
        failures: Vec::new(),
    };
    type Case = fn(&mut Env) -> Res<()>;
    let cases: &[(&str, Case)] = &[
        ("keys", keys),
        ("endless", endless),
        ("error body", error_body),
        ("8 MiB event", |e| large_event(e, 8)),
        ("50 MiB event", |e| large_event(e, 50)),
        ("cancel", daemon::cancel_mid_event),
        ("framing", daemon::framing),
        ("batch", daemon::batch),
        ("not reading", daemon::not_reading),
        ("concurrent", daemon::concurrent),
        ("kill -9", daemon::kill_nine),
        ("two daemons", daemon::two_daemons),
    ];
    for (name, case) in cases {
        if let Err(e) = case(&mut env) {
            env.failures.push(format!("{name}: {e}"));
            figure(name, format!("FAILED: {e}"));
        }
    }
    if !env.failures.is_empty() {
        eprintln!("\n{} case(s) failed:", env.failures.len());
        for f in &env.failures {
            eprintln!("  {f}");
        }
        std::process::exit(1);
    }
    println!("\nevery case held");
}

/// What the daemon cases share with the ones above.
mod shared {
    pub(crate) use super::support::fake_openai::{Behavior, FakeOpenAi};
    pub(crate) use super::support::hostile::{
        one_large_event, openai_chunk, start_stream, Hostile,
    };
    pub(crate) use super::{figure, mib, watch_peak, Env, Res, KEY};
}
