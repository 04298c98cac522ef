//! A small JSON-RPC 2.0 client for `genai daemon`, for integration tests only.
//!
//! It spawns the daemon binary with its stdio piped, writes requests in the
//! framing the test picks ([`Framing`]), and runs a reader thread that splits
//! the daemon's stdout into frames (either framing, detected per frame), parses
//! each into a [`Value`] and hands it over through a channel. Every raw stdout
//! byte is kept too ([`Daemon::raw_stdout`]), so a test can check the framing
//! byte for byte. The daemon's stderr goes to a file ([`Daemon::stderr_text`]).
//!
//! Waiting is deadline-based: every wait takes a timeout and blocks on the
//! channel with `recv_timeout`, never in a sleep loop. Messages that arrive
//! while the test waits for something else are buffered in arrival order, and
//! every message ever received is also kept in [`Daemon::log`].

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The default wait of [`Daemon::request`].
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// How the client frames what it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// One JSON text per line.
    Lines,
    /// `Content-Length: N\r\n\r\n{json}` (LSP).
    ContentLength,
}

impl Framing {
    /// `body` framed this way.
    pub fn frame(self, body: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(body.len() + 32);
        match self {
            Framing::Lines => {
                out.extend_from_slice(body);
                out.push(b'\n');
            }
            Framing::ContentLength => {
                out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
                out.extend_from_slice(body);
            }
        }
        out
    }
}

/// What the reader thread hands over.
enum Incoming {
    Message(Value),
    /// Bytes that could not be framed or parsed; tests fail on it.
    Garbage(String),
}

/// How to start a daemon.
#[derive(Debug, Clone)]
pub struct DaemonConfig {
    pub framing: Framing,
    pub data_dir: PathBuf,
    pub config_dir: PathBuf,
    /// Where stderr is written.
    pub stderr_path: PathBuf,
    /// Extra environment (set after the defaults, so they can override them).
    pub env: Vec<(OsString, OsString)>,
}

impl DaemonConfig {
    /// Data, config and the stderr file inside `root` (a test's own temp dir);
    /// `stderr_name` tells the stderr files of several daemons in one test apart.
    pub fn in_dir(root: &Path, framing: Framing, stderr_name: &str) -> DaemonConfig {
        DaemonConfig {
            framing,
            data_dir: root.join("data"),
            config_dir: root.join("config"),
            stderr_path: root.join(format!("{stderr_name}.stderr")),
            env: Vec::new(),
        }
    }

    pub fn env(mut self, name: &str, value: &str) -> DaemonConfig {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Writes `toml` as the daemon's `config.toml`.
    pub fn write_config(&self, toml: &str) {
        std::fs::create_dir_all(&self.config_dir).unwrap();
        std::fs::write(self.config_dir.join("config.toml"), toml).unwrap();
    }
}

/// A running `genai daemon` and the client end of its stdio.
pub struct Daemon {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: Receiver<Incoming>,
    reader: Option<JoinHandle<()>>,
    /// Received but not yet taken by a wait, in arrival order.
    pending: VecDeque<Value>,
    /// Every message received, in arrival order.
    log: Vec<Value>,
    raw: Arc<Mutex<Vec<u8>>>,
    next_id: i64,
    framing: Framing,
    stderr_path: PathBuf,
    /// True once stdout reached its end (the daemon closed it or exited).
    stdout_closed: bool,
    status: Option<ExitStatus>,
}

impl Daemon {
    /// Spawns `genai daemon` with the test environment: its own data and config
    /// folders, `GENAI_LOG=debug`, no proxies, then `cfg.env`.
    pub fn spawn(cfg: &DaemonConfig) -> Daemon {
        Daemon::spawn_command(cfg, &["daemon"])
    }

    /// Spawns `genai ARGS` (another stdio server, such as `lsp`) like [`Daemon::spawn`].
    pub fn spawn_command(cfg: &DaemonConfig, args: &[&str]) -> Daemon {
        std::fs::create_dir_all(&cfg.data_dir).expect("create the data dir");
        std::fs::create_dir_all(&cfg.config_dir).expect("create the config dir");
        let stderr = File::create(&cfg.stderr_path).expect("create the stderr file");
        let mut cmd = super::cli::genai_in(&cfg.data_dir, &cfg.config_dir, args);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .env("GENAI_LOG", "debug");
        for (k, v) in &cfg.env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn genai daemon");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped stdout");
        let raw = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let raw_in_thread = Arc::clone(&raw);
        let reader = std::thread::Builder::new()
            .name("daemon-stdout".into())
            .spawn(move || read_frames(stdout, raw_in_thread, tx))
            .expect("spawn the reader thread");
        Daemon {
            child,
            stdin,
            rx,
            reader: Some(reader),
            pending: VecDeque::new(),
            log: Vec::new(),
            raw,
            next_id: 1,
            framing: cfg.framing,
            stderr_path: cfg.stderr_path.clone(),
            stdout_closed: false,
            status: None,
        }
    }

    /// Writes bytes as they are, then flushes; panics when the daemon is gone.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        if let Err(e) = self.try_send_raw(bytes) {
            panic!(
                "cannot write to the daemon: {e}\n--- daemon stderr (tail) ---\n{}",
                tail(&self.stderr_text(), 4000)
            );
        }
    }

    /// Writes bytes as they are, then flushes.
    pub fn try_send_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| std::io::Error::other("stdin is already closed"))?;
        stdin.write_all(bytes)?;
        stdin.flush()
    }

    /// Writes one message in this client's framing.
    pub fn send_value(&mut self, msg: &Value) {
        let framed = self.framing.frame(msg.to_string().as_bytes());
        self.send_raw(&framed);
    }

    /// Sends a request and returns its id without waiting.
    pub fn send_request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send_value(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Sends a notification (no id, no answer).
    pub fn notify(&mut self, method: &str, params: Value) {
        self.send_value(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and returns the whole response object (`result` or `error`);
    /// notifications that arrive meanwhile are kept for later waits.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.wait_response(&json!(id), REQUEST_TIMEOUT)
    }

    /// Like [`Daemon::request`], but returns `result` and panics on an error response.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let response = self.request(method, params);
        match response.get("result") {
            Some(result) if response.get("error").is_none() => result.clone(),
            _ => panic!("{method} failed: {response}"),
        }
    }

    /// Like [`Daemon::request`], but returns `error` and panics on a success.
    pub fn call_err(&mut self, method: &str, params: Value) -> Value {
        let response = self.request(method, params);
        match response.get("error") {
            Some(error) => error.clone(),
            None => panic!("{method} should have failed: {response}"),
        }
    }

    /// Waits for the response with this id.
    pub fn wait_response(&mut self, id: &Value, timeout: Duration) -> Value {
        let what = format!("the response to request {id}");
        self.wait_for(
            |m| is_response(m) && m.get("id") == Some(id),
            timeout,
            &what,
        )
    }

    /// Waits for a notification (a message with `method` and no `id`) that
    /// matches `pred`; earlier non-matching messages stay buffered.
    pub fn wait_notification(&mut self, pred: impl Fn(&Value) -> bool, timeout: Duration) -> Value {
        self.wait_for(
            |m| m.get("method").is_some() && m.get("id").is_none() && pred(m),
            timeout,
            "a matching notification",
        )
    }

    /// Waits for the final `OnFeatureResponse` of a turn.
    pub fn wait_final(&mut self, turn_id: &str, timeout: Duration) -> Value {
        self.wait_notification(
            |m| {
                m["method"] == "OnFeatureResponse"
                    && m["params"]["turnId"] == turn_id
                    && m["params"]["final"] == true
            },
            timeout,
        )
    }

    /// Waits for any message matching `pred` and takes it out of the buffer.
    pub fn wait_for(
        &mut self,
        pred: impl Fn(&Value) -> bool,
        timeout: Duration,
        what: &str,
    ) -> Value {
        match self.try_wait_for(&pred, timeout) {
            Some(m) => m,
            None => panic!(
                "timed out after {timeout:?} waiting for {what}; unclaimed messages: {}\n--- daemon stderr (tail) ---\n{}",
                serde_json::to_string_pretty(&Vec::from(self.pending.clone())).unwrap_or_default(),
                tail(&self.stderr_text(), 4000)
            ),
        }
    }

    /// Waits for a message matching `pred`; `None` at the deadline or when
    /// stdout ended first.
    pub fn try_wait_for(
        &mut self,
        pred: impl Fn(&Value) -> bool,
        timeout: Duration,
    ) -> Option<Value> {
        if let Some(pos) = self.pending.iter().position(&pred) {
            return self.pending.remove(pos);
        }
        let deadline = Instant::now() + timeout;
        loop {
            let m = self.recv_until(deadline)?;
            if pred(&m) {
                return Some(m);
            }
            self.pending.push_back(m);
        }
    }

    /// The next message from the reader, recorded in the log; `None` at the
    /// deadline or at the end of stdout.
    fn recv_until(&mut self, deadline: Instant) -> Option<Value> {
        if self.stdout_closed {
            return None;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match self.rx.recv_timeout(left) {
            Ok(Incoming::Message(m)) => {
                self.log.push(m.clone());
                Some(m)
            }
            Ok(Incoming::Garbage(why)) => panic!("the daemon wrote unparsable output: {why}"),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => {
                self.stdout_closed = true;
                None
            }
        }
    }

    /// Takes every message received until now, without waiting.
    pub fn drain_now(&mut self) -> Vec<Value> {
        while let Ok(incoming) = self.rx.try_recv() {
            match incoming {
                Incoming::Message(m) => {
                    self.log.push(m.clone());
                    self.pending.push_back(m);
                }
                Incoming::Garbage(why) => panic!("the daemon wrote unparsable output: {why}"),
            }
        }
        self.pending.drain(..).collect()
    }

    /// Every message received so far, in arrival order (taken or not).
    pub fn log(&self) -> &[Value] {
        &self.log
    }

    /// Everything the daemon wrote on stdout so far.
    pub fn raw_stdout(&self) -> Vec<u8> {
        self.raw.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// What the daemon wrote on stderr so far.
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&std::fs::read(&self.stderr_path).unwrap_or_default()).into_owned()
    }

    /// The daemon's process id (to signal it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Closes the daemon's stdin (end of input).
    pub fn close_stdin(&mut self) {
        self.stdin.take();
    }

    /// Waits until the daemon closes stdout (it exits), then reaps it. Every
    /// message still on the way is kept for later waits. Panics at the deadline.
    pub fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        if let Some(status) = self.status {
            return status;
        }
        let deadline = Instant::now() + timeout;
        while !self.stdout_closed {
            match self.recv_until(deadline) {
                Some(m) => self.pending.push_back(m),
                None if self.stdout_closed => break,
                None => panic!(
                    "the daemon did not exit within {timeout:?}\n--- daemon stderr (tail) ---\n{}",
                    tail(&self.stderr_text(), 4000)
                ),
            }
        }
        // stdout is closed only when the process ends, so this returns promptly.
        let status = self.child.wait().expect("wait for the daemon");
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        self.status = Some(status);
        status
    }

    /// Sends `Shutdown`, checks its `{}` answer, and waits for the exit.
    pub fn shutdown(&mut self, timeout: Duration) -> ExitStatus {
        let response = self.request("Shutdown", json!({}));
        assert_eq!(response["result"], json!({}), "Shutdown answer: {response}");
        self.wait_exit(timeout)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if self.status.is_none() {
            self.stdin.take();
            // Our own child, by its pid; it may already have exited.
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A response (has an `id`, and `result` or `error`, and no `method`).
pub fn is_response(m: &Value) -> bool {
    m.get("method").is_none() && (m.get("result").is_some() || m.get("error").is_some())
}

fn tail(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// The reader thread: frames stdout, parses each frame, sends it on.
fn read_frames(
    mut stdout: impl Read,
    raw: Arc<Mutex<Vec<u8>>>,
    tx: std::sync::mpsc::Sender<Incoming>,
) {
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 64 * 1024];
    loop {
        let n = match stdout.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        raw.lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(&chunk[..n]);
        buf.extend_from_slice(&chunk[..n]);
        loop {
            match split_frame(&mut buf) {
                Ok(Some(body)) => {
                    let incoming = match serde_json::from_slice::<Value>(&body) {
                        Ok(v) => Incoming::Message(v),
                        Err(e) => {
                            Incoming::Garbage(format!("{e}: {:?}", String::from_utf8_lossy(&body)))
                        }
                    };
                    if tx.send(incoming).is_err() {
                        return;
                    }
                }
                Ok(None) => break,
                Err(why) => {
                    let _ = tx.send(Incoming::Garbage(why));
                    return;
                }
            }
        }
    }
    let rest = String::from_utf8_lossy(&buf).trim().to_string();
    if !rest.is_empty() {
        let _ = tx.send(Incoming::Garbage(format!(
            "stdout ended inside a frame: {rest:?}"
        )));
    }
}

/// Takes one frame's body off the front of `buf`: a line when it starts with
/// `{` or `[`, else a `Content-Length` header block and its body.
fn split_frame(buf: &mut Vec<u8>) -> Result<Option<Vec<u8>>, String> {
    let skip = buf.iter().take_while(|b| b.is_ascii_whitespace()).count();
    buf.drain(..skip);
    let Some(&first) = buf.first() else {
        return Ok(None);
    };
    if first == b'{' || first == b'[' {
        let Some(pos) = buf.iter().position(|b| *b == b'\n') else {
            return Ok(None);
        };
        let line: Vec<u8> = buf.drain(..=pos).collect();
        return Ok(Some(line[..line.len() - 1].to_vec()));
    }
    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        if buf.len() > 8192 {
            return Err(format!(
                "a header block without an end: {:?}",
                String::from_utf8_lossy(&buf[..200])
            ));
        }
        return Ok(None);
    };
    let header = String::from_utf8_lossy(&buf[..end]).into_owned();
    let length = header
        .split("\r\n")
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse::<usize>().ok())
        .ok_or_else(|| format!("a header block without Content-Length: {header:?}"))?;
    if buf.len() < end + 4 + length {
        return Ok(None);
    }
    buf.drain(..end + 4);
    Ok(Some(buf.drain(..length).collect()))
}

/// Splits bytes written in the Content-Length framing, strictly: every frame
/// must be exactly `Content-Length: N\r\n\r\n` and N bytes, with nothing
/// between frames. Returns the bodies, or what broke the framing.
pub fn strict_content_length_frames(mut bytes: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    const PREFIX: &[u8] = b"Content-Length: ";
    let mut frames = Vec::new();
    while !bytes.is_empty() {
        if !bytes.starts_with(PREFIX) {
            return Err(format!(
                "frame {} does not start with `Content-Length: `: {:?}",
                frames.len(),
                String::from_utf8_lossy(&bytes[..bytes.len().min(120)])
            ));
        }
        let rest = &bytes[PREFIX.len()..];
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        let length: usize = std::str::from_utf8(&rest[..digits])
            .ok()
            .and_then(|d| d.parse().ok())
            .ok_or_else(|| format!("frame {}: no length", frames.len()))?;
        let rest = &rest[digits..];
        if !rest.starts_with(b"\r\n\r\n") {
            return Err(format!(
                "frame {}: the header does not end with CRLF CRLF",
                frames.len()
            ));
        }
        let rest = &rest[4..];
        if rest.len() < length {
            return Err(format!(
                "frame {}: {length} bytes announced, {} left",
                frames.len(),
                rest.len()
            ));
        }
        frames.push(rest[..length].to_vec());
        bytes = &rest[length..];
    }
    Ok(frames)
}
