//! The reliability cases that drive `genai daemon` over its stdio (newline-delimited JSON), and
//! the small client they share: requests with deadlines, notifications kept for later waits.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::shared::*;

pub struct Daemon {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: Receiver<Value>,
    kept: Vec<Value>,
    next: u64,
    stdout: Arc<std::sync::Mutex<String>>,
    stderr_path: std::path::PathBuf,
}

impl Daemon {
    pub fn spawn(genai: &Path, data: &Path, config: &Path, env: &[(&str, &str)]) -> Res<Daemon> {
        let stderr_path = data.join(format!("daemon-{}.log", fastrand::u32(..)));
        let mut c = Command::new(genai);
        c.arg("daemon")
            .env("GENAI_DATA_DIR", data)
            .env("GENAI_CONFIG_DIR", config)
            .env("GENAI_LOG", "debug")
            .env("NO_PROXY", "*")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr_path).map_err(|e| e.to_string())?);
        for (k, v) in env {
            c.env(k, v);
        }
        let mut child = c.spawn().map_err(|e| e.to_string())?;
        let out = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let stdout = Arc::new(std::sync::Mutex::new(String::new()));
        let copy = stdout.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                copy.lock().unwrap().push_str(&line);
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    if tx.send(v).is_err() {
                        break;
                    }
                }
            }
        });
        let stdin = child.stdin.take();
        Ok(Daemon {
            child,
            stdin,
            rx,
            kept: Vec::new(),
            next: 1,
            stdout,
            stderr_path,
        })
    }

    /// A daemon whose built-in `openai` provider is at `base_url`, with the run's key.
    pub fn against(env: &Env, data: &Path, config: &Path, base_url: &str) -> Res<Daemon> {
        let vars = [("OPENAI_BASE_URL", base_url), ("OPENAI_API_KEY", KEY)];
        Daemon::spawn(&env.genai, data, config, &vars)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn send_raw(&mut self, bytes: &[u8]) -> Res<()> {
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        stdin
            .write_all(bytes)
            .and_then(|_| stdin.flush())
            .map_err(|e| e.to_string())
    }

    /// Sends a request; its id.
    pub fn send(&mut self, method: &str, params: Value) -> Res<u64> {
        let id = self.next;
        self.next += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_raw(format!("{msg}\n").as_bytes())?;
        Ok(id)
    }

    /// The first message `pick` accepts, kept ones first, within `timeout`.
    pub fn wait(&mut self, timeout: Duration, pick: impl Fn(&Value) -> bool) -> Res<Value> {
        if let Some(i) = self.kept.iter().position(&pick) {
            return Ok(self.kept.remove(i));
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(v) if pick(&v) => return Ok(v),
                Ok(v) => self.kept.push(v),
                Err(RecvTimeoutError::Timeout) => return Err("no answer in time".into()),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err("the daemon closed stdout".into())
                }
            }
        }
    }

    pub fn call(&mut self, method: &str, params: Value) -> Res<Value> {
        let id = self.send(method, params)?;
        let v = self.wait(Duration::from_secs(60), |m| m["id"] == id)?;
        match v.get("result") {
            Some(r) => Ok(r.clone()),
            None => Err(format!("{method}: {v}")),
        }
    }

    pub fn conversation(&mut self) -> Res<String> {
        let r = self.call(
            "CreateConversation",
            json!({"serviceProvider": "openai", "model": "m"}),
        )?;
        Ok(r["conversationId"].as_str().unwrap_or_default().to_string())
    }

    pub fn message(&mut self, conversation: &str, text: &str) -> Res<String> {
        let r = self.call(
            "OnNewMessage",
            json!({"conversationId": conversation, "message": text}),
        )?;
        Ok(r["turnId"].as_str().unwrap_or_default().to_string())
    }

    pub fn final_of(&mut self, turn: &str, timeout: Duration) -> Res<Value> {
        let v = self.wait(timeout, |m| {
            m["method"] == "OnFeatureResponse" && m["params"]["turnId"] == turn
        })?;
        Ok(v["params"].clone())
    }

    /// Shuts down; what it wrote on stdout and its log.
    pub fn shutdown(mut self) -> Res<(String, String)> {
        let _ = self.send("Shutdown", json!({}));
        self.stdin.take();
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.child.try_wait().map_err(|e| e.to_string())?.is_none() {
            if Instant::now() > deadline {
                let _ = self.child.kill();
                return Err("the daemon did not exit".into());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let log = std::fs::read_to_string(&self.stderr_path).unwrap_or_default();
        let out = self.stdout.lock().unwrap().clone();
        Ok((out, log))
    }

    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn cancel_mid_event(env: &mut Env) -> Res<()> {
    let h = one_large_event(50 << 20, 64 << 10, Duration::from_millis(20));
    let (data, config) = env.folders("cancel");
    let mut d = Daemon::against(env, &data, &config, &h.base_url())?;
    let cid = d.conversation()?;
    let turn = d.message(&cid, "hello")?;
    let started = Instant::now();
    while h.requests.load(Ordering::SeqCst) == 0 && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_secs(2));
    let asked = Instant::now();
    d.call("Cancel", json!({"conversationId": cid}))?;
    let fin = d.final_of(&turn, Duration::from_secs(30))?;
    let took = asked.elapsed();
    let stored = d.call("GetConversationHistory", json!({"conversationId": cid}))?["messages"]
        .as_array()
        .map_or(0, Vec::len);
    d.shutdown()?;
    figure(
        "Cancel 2 s into a 50 MiB event",
        format!(
            "final in {:.0} ms, kind {}, {stored} messages stored",
            took.as_secs_f64() * 1000.0,
            fin["error"]["kind"]
        ),
    );
    env.check(
        "cancel",
        fin["isSuccess"] == false && stored == 0 && took < Duration::from_secs(2),
        "not cancelled at once, or stored",
    );
    Ok(())
}

pub fn framing(env: &mut Env) -> Res<()> {
    let (data, config) = env.folders("framing");
    let mut d = Daemon::spawn(&env.genai, &data, &config, &[])?;
    // Content-Length framing: the daemon answers in it; read answers by their ids in the log.
    let good =
        |id: usize| json!({"jsonrpc": "2.0", "id": id, "method": "ListProviders"}).to_string();
    let mut input = Vec::new();
    let mut expected = 0;
    for i in 1..=100 {
        let body = if i % 10 == 0 {
            format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"X","params":{{"t":"café ünïcödé"}}}}"#)
        } else {
            good(i)
        };
        let len = match i % 10 {
            0 => body.chars().count(),
            5 => body.len() + 7,
            _ => {
                expected += 1;
                body.len()
            }
        };
        input.extend_from_slice(format!("Content-Length: {len}\r\n\r\n{body}").as_bytes());
    }
    d.send_raw(&input)?;
    let (stdout, _) = d.shutdown()?;
    let answered = (1..=100)
        .filter(|i| i % 10 != 0 && i % 10 != 5 && stdout.contains(&format!("\"id\":{i},")))
        .count();
    figure(
        "Content-Length with wrong lengths",
        format!("{answered} of {expected} good frames answered after 20 bad ones"),
    );
    env.check(
        "framing",
        answered == expected,
        "frames lost after a wrong length",
    );
    Ok(())
}

pub fn batch(env: &mut Env) -> Res<()> {
    let n = if env.quick { 40_000 } else { 400_000 };
    let (data, config) = env.folders("batch");
    let mut d = Daemon::spawn(&env.genai, &data, &config, &[])?;
    let mut line = String::with_capacity(n * 80);
    line.push('[');
    for i in 0..n {
        if i > 0 {
            line.push(',');
        }
        line.push_str(&format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"Cancel","params":{{"turnId":"x"}}}}"#
        ));
    }
    line.push_str("]\n");
    let started = Instant::now();
    d.send_raw(line.as_bytes())?;
    let pid = d.pid();
    let mut peak = 0;
    let answer = loop {
        if let Ok((_, hwm)) = bench_memory(pid) {
            peak = peak.max(hwm);
        }
        match d.wait(Duration::from_millis(20), |v| v.is_array()) {
            Ok(v) => break v,
            Err(e) if e == "no answer in time" && started.elapsed() < Duration::from_secs(120) => {}
            Err(e) => return Err(e),
        }
    };
    let took = started.elapsed();
    d.shutdown()?;
    let size = line.len() as f64 / (1 << 20) as f64;
    figure(
        &format!("batch of {n} requests ({size:.0} MiB)"),
        format!(
            "{} answers in {:.2} s, daemon peak {:.0} MiB",
            answer.as_array().map_or(0, Vec::len),
            took.as_secs_f64(),
            mib(peak)
        ),
    );
    env.check(
        "batch",
        answer.as_array().map_or(0, Vec::len) == n,
        "answers missing",
    );
    Ok(())
}

fn bench_memory(pid: u32) -> Res<(u64, u64)> {
    crate::bench::memory_kib(pid)
}

pub fn not_reading(env: &mut Env) -> Res<()> {
    let (data, config) = env.folders("notreading");
    let mut child = Command::new(&env.genai)
        .arg("daemon")
        .env("GENAI_DATA_DIR", &data)
        .env("GENAI_CONFIG_DIR", &config)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut stdin = child.stdin.take().unwrap();
    let _unread = child.stdout.take();
    let writer = std::thread::spawn(move || {
        let request = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ListComponents\"}\n";
        for _ in 0..5_000_000 {
            if stdin.write_all(request).is_err() {
                return;
            }
        }
    });
    let started = Instant::now();
    let pid = child.id();
    let peak = watch_peak(pid, || {
        child.try_wait().ok().flatten().is_some() || started.elapsed() > Duration::from_secs(120)
    });
    let code = child.try_wait().ok().flatten().and_then(|s| s.code());
    let _ = child.kill();
    let _ = writer.join();
    figure(
        "a client that stops reading",
        format!(
            "disconnected after {:.1} s (exit {code:?}), peak {:.0} MiB",
            started.elapsed().as_secs_f64(),
            mib(peak)
        ),
    );
    env.check(
        "not reading",
        code == Some(1) && mib(peak) < 400.0,
        "not disconnected, or over 400 MiB",
    );
    Ok(())
}

pub fn concurrent(env: &mut Env) -> Res<()> {
    let n = if env.quick { 100 } else { 1000 };
    let (now, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (now2, most2) = (now.clone(), most.clone());
    let h = Hostile::start(move |conn: &mut TcpStream, _: &str| {
        let k = now2.fetch_add(1, Ordering::SeqCst) + 1;
        most2.fetch_max(k, Ordering::SeqCst);
        if start_stream(conn, "text/event-stream") {
            let _ = conn.write_all(
                format!(
                    "{}{}data: [DONE]\n\n",
                    openai_chunk("Hello "),
                    openai_chunk("there.")
                )
                .as_bytes(),
            );
        }
        now2.fetch_sub(1, Ordering::SeqCst);
    });
    let (data, config) = env.folders("concurrent");
    let mut d = Daemon::against(env, &data, &config, &h.base_url())?;
    let conversations: Vec<String> = (0..n).map(|_| d.conversation()).collect::<Res<_>>()?;
    let started = Instant::now();
    let mut turns = Vec::new();
    for c in &conversations {
        turns.push(d.send(
            "OnNewMessage",
            json!({"conversationId": c, "message": "hi"}),
        )?);
    }
    let mut ids = Vec::new();
    for id in turns {
        let r = d.wait(Duration::from_secs(60), |m| m["id"] == id)?;
        ids.push(
            r["result"]["turnId"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        );
    }
    let mut ok = 0;
    for t in &ids {
        if d.final_of(t, Duration::from_secs(120))?["isSuccess"] == true {
            ok += 1;
        }
    }
    let took = started.elapsed();
    let (_, hwm) = bench_memory(d.pid())?;
    d.shutdown()?;
    figure(&format!("{n} concurrent turns"), format!("{ok} succeeded in {:.2} s, daemon peak {:.0} MiB, at most {} requests at the provider at once", took.as_secs_f64(), mib(hwm), most.load(Ordering::SeqCst)));
    env.check("concurrent", ok == n, "turns failed");
    Ok(())
}

/// Stored messages per conversation, and whether SQLite finds the file whole.
fn inspect(db: &Path) -> Res<(HashMap<String, Vec<String>>, String)> {
    let conn = rusqlite::Connection::open(db).map_err(|e| e.to_string())?;
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .map_err(|e| e.to_string())?;
    let mut roles: HashMap<String, Vec<String>> = HashMap::new();
    let mut q = conn
        .prepare("SELECT conversation_id, role FROM messages ORDER BY conversation_id, seq")
        .map_err(|e| e.to_string())?;
    let rows = q
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .map_err(|e| e.to_string())?;
    for row in rows {
        let (c, role) = row.map_err(|e| e.to_string())?;
        roles.entry(c).or_default().push(role);
    }
    Ok((roles, integrity))
}

pub fn kill_nine(env: &mut Env) -> Res<()> {
    let rounds = if env.quick { 5 } else { 40 };
    let fake = FakeOpenAi::start(
        0,
        Behavior {
            chunks: 8,
            delay: Duration::from_millis(3),
            ..Behavior::text("one two three four five six seven eight")
        },
    )
    .map_err(|e| e.to_string())?;
    let (data, config) = env.folders("kill9");
    let mut confirmed: HashMap<String, usize> = HashMap::new();
    let (mut lost, mut half, mut bad) = (0, 0, 0);
    for _ in 0..rounds {
        let mut d = Daemon::against(env, &data, &config, &fake.base_url())?;
        let convs: Vec<String> = (0..4).map(|_| d.conversation()).collect::<Res<_>>()?;
        let until = Instant::now() + Duration::from_millis(50 + fastrand::u64(..400));
        let mut pending: Vec<(String, String)> = Vec::new();
        while Instant::now() < until {
            for c in &convs {
                let turn = d.message(c, "count")?;
                pending.push((c.clone(), turn));
            }
            pending.retain(|(c, t)| {
                match d.wait(Duration::from_millis(1), |m| {
                    m["method"] == "OnFeatureResponse" && m["params"]["turnId"] == t.as_str()
                }) {
                    Ok(f) if f["params"]["isSuccess"] == true => {
                        *confirmed.entry(c.clone()).or_default() += 1;
                        false
                    }
                    Ok(_) => false,
                    Err(_) => true,
                }
            });
        }
        d.kill();
        let (roles, integrity) = inspect(&data.join("history.db"))?;
        if integrity != "ok" {
            bad += 1;
        }
        for (c, n) in &confirmed {
            let stored = roles
                .get(c)
                .map_or(0, |r| r.iter().filter(|r| *r == "assistant").count());
            lost += n.saturating_sub(stored);
        }
        for r in roles.values() {
            // Turns are user then assistant: a user message left alone is half a turn.
            if r.chunks(2).any(|p| p != ["user", "assistant"]) {
                half += 1;
            }
        }
    }
    let total: usize = confirmed.values().sum();
    figure(
        &format!("kill -9 during turns ({rounds} kills)"),
        format!("{total} confirmed turns, {lost} lost, {half} half turns, {bad} damaged files"),
    );
    env.check(
        "kill -9",
        lost == 0 && half == 0 && bad == 0,
        "a turn lost or half stored",
    );
    Ok(())
}

pub fn two_daemons(env: &mut Env) -> Res<()> {
    let fake = FakeOpenAi::start(0, Behavior::text("shared")).map_err(|e| e.to_string())?;
    let (data, config) = env.folders("two");
    let url = fake.base_url();
    let spawn = |_| Daemon::against(env, &data, &config, &url);
    let mut daemons: Vec<Daemon> = (0..2).map(spawn).collect::<Res<_>>()?;
    let asks: Vec<_> = (0..10)
        .map(|i| {
            let mut c = env.genai(
                &data,
                &config,
                &["ask", "-m", "openai:m", &format!("question {i}")],
            );
            c.env("OPENAI_BASE_URL", &url)
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            c.spawn()
        })
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let mut ok = 0;
    let mut expected = 10;
    for d in daemons.iter_mut() {
        for _ in 0..5 {
            let c = d.conversation()?;
            for _ in 0..4 {
                expected += 1;
                let t = d.message(&c, "hi")?;
                if d.final_of(&t, Duration::from_secs(60))?["isSuccess"] == true {
                    ok += 1;
                }
            }
        }
    }
    let mut lock_errors = 0;
    for mut a in asks {
        let mut err = String::new();
        a.stderr.take().unwrap().read_to_string(&mut err).ok();
        let status = a.wait().map_err(|e| e.to_string())?;
        if status.success() {
            ok += 1;
        }
        if err.contains("locked") || err.contains("busy") {
            lock_errors += 1;
        }
    }
    for d in daemons {
        d.shutdown()?;
    }
    let (roles, integrity) = inspect(&data.join("history.db"))?;
    let stored: usize = roles
        .values()
        .map(|r| r.iter().filter(|r| *r == "assistant").count())
        .sum();
    figure("two daemons + ten genai ask, one db", format!("{ok} of {expected} turns succeeded, {stored} stored, {lock_errors} lock errors, integrity {integrity}"));
    env.check(
        "two daemons",
        ok == expected && stored == expected && lock_errors == 0,
        "a turn failed or was not stored",
    );
    Ok(())
}
