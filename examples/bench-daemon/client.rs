//! The bench's client of `genai daemon`: a phase's deadline, the folders and variables each
//! daemon runs with, and ndjson requests and turns with the moment each answer arrived. It owns
//! no measurement; the phases in `bench-daemon.rs` time what they need with it.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::{bench, support, Res, MODEL, PHASE_DEADLINE};

/// A phase's time limit.
pub struct Deadline {
    pub phase: &'static str,
    pub at: Instant,
}

impl Deadline {
    pub fn new(phase: &'static str) -> Deadline {
        Deadline {
            phase,
            at: Instant::now() + PHASE_DEADLINE,
        }
    }

    pub fn remaining(&self) -> Res<Duration> {
        let left = self.at.saturating_duration_since(Instant::now());
        if left.is_zero() {
            Err(self.expired())
        } else {
            Ok(left)
        }
    }

    pub fn expired(&self) -> String {
        format!(
            "{}: not done within the {} s deadline",
            self.phase,
            PHASE_DEADLINE.as_secs()
        )
    }
}

/// Where the bench runs: the genai binary, the fake provider, a scratch folder.
pub struct Env {
    pub genai: PathBuf,
    pub base_url: String,
    pub root: PathBuf,
}

impl Env {
    /// A command for `genai` with its own data and config folders under `root/name`, the fake
    /// provider as `openai`, no proxies and no key from the caller's environment.
    pub fn command(&self, name: &str) -> Res<(Command, PathBuf)> {
        let dir = self.root.join(name);
        let (data, config) = (dir.join("data"), dir.join("config"));
        for d in [&data, &config] {
            std::fs::create_dir_all(d)
                .map_err(|e| format!("cannot create {}: {e}", d.display()))?;
        }
        let mut cmd = Command::new(&self.genai);
        support::loopback::loopback_only(&mut cmd);
        cmd.env("GENAI_DATA_DIR", &data)
            .env("GENAI_CONFIG_DIR", &config)
            .env("OPENAI_BASE_URL", &self.base_url);
        Ok((cmd, dir))
    }
}

/// A running `genai daemon` spoken to in ndjson.
pub struct Daemon {
    child: Child,
    pub stdin: Option<ChildStdin>,
    /// Lines of stdout with the moment the reader thread got them.
    rx: Receiver<(Instant, String)>,
    pub next_id: u64,
    stderr_path: PathBuf,
    exited: bool,
}

impl Daemon {
    pub fn spawn(env: &Env, name: &str) -> Res<Daemon> {
        let (mut cmd, dir) = env.command(name)?;
        let stderr_path = dir.join("daemon.stderr");
        let stderr = File::create(&stderr_path)
            .map_err(|e| format!("cannot create {}: {e}", stderr_path.display()))?;
        let mut child = cmd
            .arg("daemon")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .spawn()
            .map_err(|e| format!("cannot start {} daemon: {e}", env.genai.display()))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or("the daemon has no stdout pipe")?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("daemon-stdout".into())
            .spawn(move || {
                let mut lines = BufReader::with_capacity(256 * 1024, stdout);
                loop {
                    let mut line = String::new();
                    match lines.read_line(&mut line) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {
                            if tx.send((Instant::now(), line)).is_err() {
                                break;
                            }
                        }
                    }
                }
            })
            .map_err(|e| format!("cannot start the reader thread: {e}"))?;
        Ok(Daemon {
            child,
            stdin,
            rx,
            next_id: 1,
            stderr_path,
            exited: false,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    pub fn stderr_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.stderr_path).unwrap_or_default();
        let start = text.len().saturating_sub(2000);
        let start = (start..text.len())
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(text.len());
        text[start..].to_string()
    }

    pub fn fail(&self, what: String) -> String {
        let tail = self.stderr_tail();
        if tail.trim().is_empty() {
            what
        } else {
            format!("{what}\n--- daemon stderr (tail) ---\n{tail}")
        }
    }

    pub fn write(&mut self, bytes: &[u8]) -> Res<()> {
        let stdin = self.stdin.as_mut().ok_or("the daemon's stdin is closed")?;
        stdin
            .write_all(bytes)
            .and_then(|_| stdin.flush())
            .map_err(|e| format!("cannot write to the daemon: {e}"))
    }

    /// Writes one request; returns its id.
    pub fn send(&mut self, method: &str, params: Value) -> Res<u64> {
        let id = self.id();
        let mut line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
            .to_string()
            .into_bytes();
        line.push(b'\n');
        self.write(&line)?;
        Ok(id)
    }

    /// The next message and when it arrived.
    pub fn recv(&mut self, dl: &Deadline) -> Res<(Instant, Value)> {
        let left = dl.remaining().map_err(|e| self.fail(e))?;
        match self.rx.recv_timeout(left) {
            Ok((at, line)) => serde_json::from_str(&line).map(|v| (at, v)).map_err(|e| {
                self.fail(format!(
                    "the daemon wrote a line that is not JSON ({e}): {line}"
                ))
            }),
            Err(RecvTimeoutError::Timeout) => Err(self.fail(dl.expired())),
            Err(RecvTimeoutError::Disconnected) => {
                Err(self.fail(format!("{}: the daemon closed its stdout", dl.phase)))
            }
        }
    }

    /// Sends a request and waits for its answer (notifications in between are dropped).
    pub fn request(&mut self, method: &str, params: Value, dl: &Deadline) -> Res<Value> {
        let id = self.send(method, params)?;
        loop {
            let (_, msg) = self.recv(dl)?;
            if msg.get("id").and_then(Value::as_u64) == Some(id) {
                return result_of(method, msg).map_err(|e| self.fail(e));
            }
        }
    }

    /// Creates a conversation on the fake provider; returns (conversationId, agentId).
    pub fn create_conversation(&mut self, dl: &Deadline) -> Res<(String, String)> {
        let r = self.request(
            "CreateConversation",
            json!({"serviceProvider": "openai", "model": MODEL}),
            dl,
        )?;
        Ok((str_of(&r, "conversationId")?, str_of(&r, "agentId")?))
    }

    /// One turn: from writing OnNewMessage to reading its final OnFeatureResponse (only this
    /// turn may be running). Returns the time and when the final answer arrived.
    pub fn turn(&mut self, conversation: &str, text: &str, dl: &Deadline) -> Res<Duration> {
        let started = Instant::now();
        let id = self.send(
            "OnNewMessage",
            json!({"conversationId": conversation, "message": text}),
        )?;
        let (mut answered, mut ended) = (false, None);
        while !(answered && ended.is_some()) {
            let (at, msg) = self.recv(dl)?;
            if msg.get("id").and_then(Value::as_u64) == Some(id) {
                result_of("OnNewMessage", msg).map_err(|e| self.fail(e))?;
                answered = true;
            } else if let Some(p) = final_response(&msg) {
                if p.get("conversationId").and_then(Value::as_str) == Some(conversation) {
                    check_success(p).map_err(|e| self.fail(e))?;
                    ended = Some(at);
                }
            }
        }
        Ok(ended.map_or(Duration::ZERO, |at| at - started))
    }

    /// VmRSS and VmHWM in KiB.
    pub fn memory_kib(&self) -> Res<(u64, u64)> {
        bench::memory_kib(self.pid())
    }

    /// Sends Shutdown and waits for the process to end.
    pub fn shutdown(mut self, phase: &'static str) -> Res<()> {
        let dl = Deadline {
            phase,
            at: Instant::now() + Duration::from_secs(10),
        };
        self.request("Shutdown", json!({}), &dl)?;
        drop(self.stdin.take());
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    self.exited = true;
                    return if status.success() {
                        Ok(())
                    } else {
                        Err(self.fail(format!("{phase}: the daemon exited with {status}")))
                    };
                }
                Ok(None) if dl.remaining().is_ok() => std::thread::sleep(Duration::from_millis(2)),
                Ok(None) => {
                    return Err(
                        self.fail(format!("{phase}: the daemon did not exit after Shutdown"))
                    )
                }
                Err(e) => return Err(format!("cannot wait for the daemon: {e}")),
            }
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if !self.exited {
            // Only reached on an error path: this process started the child, end it.
            drop(self.stdin.take());
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The `result` of an answer, or its error as text.
pub fn result_of(method: &str, msg: Value) -> Res<Value> {
    match msg {
        Value::Object(mut o) => match (o.remove("result"), o.remove("error")) {
            (Some(r), None) => Ok(r),
            (_, Some(e)) => Err(format!("{method} failed: {e}")),
            _ => Err(format!(
                "{method}: an answer without result: {}",
                Value::Object(o)
            )),
        },
        other => Err(format!(
            "{method}: an answer that is not an object: {other}"
        )),
    }
}

pub fn str_of(v: &Value, key: &str) -> Res<String> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| format!("no `{key}` in {v}"))
}

/// The params of a final OnFeatureResponse notification.
pub fn final_response(msg: &Value) -> Option<&Value> {
    if msg.get("method").and_then(Value::as_str) != Some("OnFeatureResponse") {
        return None;
    }
    let p = msg.get("params")?;
    (p.get("final").and_then(Value::as_bool) == Some(true)).then_some(p)
}

pub fn check_success(p: &Value) -> Res<()> {
    if p.get("isSuccess").and_then(Value::as_bool) == Some(true) {
        Ok(())
    } else {
        Err(format!("a turn failed: {p}"))
    }
}
