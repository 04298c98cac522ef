//! The bench's phases of `genai ask` as a process: its cold start (spawn → first stdout byte,
//! spawn → exit), and the same one-turn request made by `genai ask --no-log`, by `genai ask`
//! keeping its history, and by `curl`, in turn, so that genai's own cost per call is read as a
//! ratio to a program that only makes the request. It owns no daemon; `client.rs` gives it the
//! folders and the deadline.

use std::fs::File;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::client::{Deadline, Env};
use crate::support::loopback::loopback_only;
use crate::{Res, MODEL};

/// Spawn → first stdout byte and spawn → exit of each run, sorted.
pub struct ColdStart {
    pub runs: usize,
    pub first_byte: Vec<Duration>,
    pub exit: Vec<Duration>,
}

/// Spawn → exit of each run of the three programs making the same request, sorted.
pub struct AskVsCurl {
    pub runs: usize,
    pub curl: Vec<Duration>,
    pub no_log: Vec<Duration>,
    pub with_history: Vec<Duration>,
}

enum AskEvent {
    FirstByte(Instant),
    Eof(Vec<u8>),
}

/// One `genai ask [extra...] -m openai:MODEL hello` in the folders of `name`: (first byte, exit).
fn ask_once(env: &Env, dl: &Deadline, name: &str, extra: &[&str]) -> Res<(Duration, Duration)> {
    let (mut cmd, dir) = env.command(name)?;
    let stderr_path = dir.join("ask.stderr");
    let stderr = File::create(&stderr_path)
        .map_err(|e| format!("cannot create {}: {e}", stderr_path.display()))?;
    cmd.arg("ask")
        .args(extra)
        .args(["-m", &format!("openai:{MODEL}"), "hello"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr));
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {} ask: {e}", env.genai.display()))?;
    let mut stdout = child.stdout.take().ok_or("genai ask has no stdout pipe")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match stdout.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if out.is_empty() {
                        let _ = tx.send(AskEvent::FirstByte(Instant::now()));
                    }
                    out.extend_from_slice(&buf[..n]);
                }
            }
        }
        let _ = tx.send(AskEvent::Eof(out));
    });
    let stderr_of = || std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let mut first = None;
    let outcome = loop {
        let left = match dl.remaining() {
            Ok(left) => left,
            Err(e) => break Err(e),
        };
        match rx.recv_timeout(left) {
            Ok(AskEvent::FirstByte(at)) => first = Some(at),
            Ok(AskEvent::Eof(out)) => break Ok(out),
            Err(_) => break Err(dl.expired()),
        }
    };
    let out = match outcome {
        Ok(out) => out,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("genai ask: {e}\n{}", stderr_of()));
        }
    };
    let (status, exited) = wait_exit(&mut child, dl, "genai ask")?;
    let text = String::from_utf8_lossy(&out);
    if !status.success() || !text.contains("Hello from the fake provider") {
        return Err(format!(
            "genai ask failed ({status}); stdout: {text:?}; stderr: {}",
            stderr_of()
        ));
    }
    let first = first.ok_or("genai ask printed nothing")?;
    Ok((first - started, exited - started))
}

/// Waits for a child whose stdout is closed, within the phase's deadline.
fn wait_exit(
    child: &mut std::process::Child,
    dl: &Deadline,
    what: &str,
) -> Res<(std::process::ExitStatus, Instant)> {
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok((status, Instant::now())),
            Ok(None) if dl.remaining().is_ok() => std::thread::sleep(Duration::from_micros(100)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{what}: {}", dl.expired()));
            }
            Err(e) => return Err(format!("cannot wait for {what}: {e}")),
        }
    }
}

/// `genai ask` keeping its history, `runs` times after one uncounted run that creates it.
pub fn bench_cold_start(env: &Env, runs: usize) -> Res<ColdStart> {
    let dl = Deadline::new("cold start");
    ask_once(env, &dl, "ask", &[])?;
    let mut first_byte = Vec::with_capacity(runs);
    let mut exit = Vec::with_capacity(runs);
    for _ in 0..runs {
        let (f, e) = ask_once(env, &dl, "ask", &[])?;
        first_byte.push(f);
        exit.push(e);
    }
    first_byte.sort();
    exit.sort();
    Ok(ColdStart {
        runs,
        first_byte,
        exit,
    })
}

/// The streaming request `genai ask` sends, made by curl: spawn → exit.
fn curl_once(env: &Env, dl: &Deadline) -> Res<Duration> {
    let body = format!(
        r#"{{"model":"{MODEL}","stream":true,"stream_options":{{"include_usage":true}},"messages":[{{"role":"user","content":"hello"}}]}}"#
    );
    let mut cmd = Command::new("curl");
    loopback_only(&mut cmd)
        .args([
            "-sS",
            "-N",
            "--fail",
            "-H",
            "content-type: application/json",
            "-d",
        ])
        .arg(&body)
        .arg(format!(
            "{}/chat/completions",
            env.base_url.trim_end_matches('/')
        ))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = cmd.spawn().map_err(|e| format!("cannot start curl: {e}"))?;
    let mut out = Vec::new();
    if let Some(mut stdout) = child.stdout.take() {
        stdout
            .read_to_end(&mut out)
            .map_err(|e| format!("cannot read curl's output: {e}"))?;
    }
    let (status, exited) = wait_exit(&mut child, dl, "curl")?;
    let text = String::from_utf8_lossy(&out);
    if !status.success() || !text.contains("[DONE]") {
        return Err(format!("curl failed ({status}): {text:?}"));
    }
    Ok(exited - started)
}

/// curl, `genai ask --no-log` and `genai ask` (with its history), one run of each in turn,
/// `runs` times after one uncounted round. `None` when curl is not installed.
pub fn bench_ask_vs_curl(env: &Env, runs: usize) -> Res<Option<AskVsCurl>> {
    if Command::new("curl").arg("--version").output().is_err() {
        return Ok(None);
    }
    let dl = Deadline::new("ask vs curl");
    curl_once(env, &dl)?;
    ask_once(env, &dl, "ask-no-log", &["--no-log"])?;
    ask_once(env, &dl, "ask-history", &[])?;
    let mut result = AskVsCurl {
        runs,
        curl: Vec::with_capacity(runs),
        no_log: Vec::with_capacity(runs),
        with_history: Vec::with_capacity(runs),
    };
    for _ in 0..runs {
        result.curl.push(curl_once(env, &dl)?);
        result
            .no_log
            .push(ask_once(env, &dl, "ask-no-log", &["--no-log"])?.1);
        result
            .with_history
            .push(ask_once(env, &dl, "ask-history", &[])?.1);
    }
    result.curl.sort();
    result.no_log.sort();
    result.with_history.sort();
    Ok(Some(result))
}
