//! Benchmarks `genai serve` (WebSocket) against `genai daemon` (stdio) in the same run, both
//! against the in-process fake OpenAI server with no delay:
//!
//! ```text
//! cargo build --release --example bench-serve --bin genai
//! cargo run --release --example bench-serve [-- --quick]
//! ```
//!
//! * `genai serve`: 200 WebSocket clients at once, each with its own conversation and its own
//!   `Subscribe`, each running 10 turns one after the other.
//! * `genai daemon`: the same 200 conversations × 10 turns through one stdio client (ndjson),
//!   200 turns in flight at once.
//!
//! For each: turns per second (all turns over the wall time), the latency of a turn
//! (`OnNewMessage` written → final `OnFeatureResponse` read) at p50 and p99, and the server's
//! peak memory (VmHWM). The WebSocket figures minus the stdio ones are the latency WebSocket
//! adds. `--quick` runs 20 clients × 3 turns (CI smoke runs). Loopback only; every phase has
//! a deadline.

#[path = "support/bench.rs"]
mod bench;
#[allow(dead_code)]
#[path = "../tests/it/support"]
mod support {
    pub mod behavior;
    pub mod fake_embeddings;
    pub mod fake_openai;
    pub mod http1;
    pub mod loopback;
    pub mod server;
}

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jsonrpsee::core::client::{ClientT, SubscriptionClientT};
use jsonrpsee::core::traits::ToRpcParams;
use jsonrpsee::ws_client::{HeaderMap, HeaderValue, WsClientBuilder};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::sync::{oneshot, watch};

use support::fake_openai::{Behavior, FakeOpenAi};

type Res<T> = Result<T, String>;

const DEADLINE: Duration = Duration::from_secs(300);
const MODEL: &str = "gpt-4o-mini";

struct Obj(Value);

impl ToRpcParams for Obj {
    fn to_rpc_params(self) -> Result<Option<Box<serde_json::value::RawValue>>, serde_json::Error> {
        serde_json::value::to_raw_value(&self.0).map(Some)
    }
}

/// What one run measured.
struct Figures {
    turns_per_s: f64,
    p50: Duration,
    p99: Duration,
    peak_kib: u64,
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn figures(mut latencies: Vec<Duration>, wall: Duration, peak_kib: u64) -> Figures {
    latencies.sort();
    Figures {
        turns_per_s: latencies.len() as f64 / wall.as_secs_f64(),
        p50: percentile(&latencies, 0.5),
        p99: percentile(&latencies, 0.99),
        peak_kib,
    }
}

/// Waits for every client's latencies, then takes the figures and stops the server.
async fn measure(
    tasks: Vec<tokio::task::JoinHandle<Res<Vec<Duration>>>>,
    started: Instant,
    pid: u32,
    mut child: tokio::process::Child,
) -> Res<Figures> {
    let mut latencies = Vec::new();
    for t in tasks {
        latencies.extend(t.await.map_err(|e| e.to_string())??);
    }
    let wall = started.elapsed();
    let (_, peak) = bench::memory_kib(pid)?;
    let _ = child.kill().await;
    Ok(figures(latencies, wall, peak))
}

fn command(
    genai: &PathBuf,
    root: &std::path::Path,
    name: &str,
    base_url: &str,
) -> Res<tokio::process::Command> {
    let dir = root.join(name);
    let (data, config) = (dir.join("data"), dir.join("config"));
    for d in [&data, &config] {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    let mut std_cmd = std::process::Command::new(genai);
    support::loopback::loopback_only(&mut std_cmd);
    std_cmd
        .env("GENAI_DATA_DIR", &data)
        .env("GENAI_CONFIG_DIR", &config)
        .env("OPENAI_BASE_URL", base_url)
        .stderr(Stdio::null());
    Ok(tokio::process::Command::from(std_cmd))
}

/// 200 WebSocket clients × 10 turns on one `genai serve`.
async fn websocket(
    genai: &PathBuf,
    root: &std::path::Path,
    base_url: &str,
    clients: usize,
    turns: usize,
) -> Res<Figures> {
    let mut token_cmd = command(genai, root, "serve", base_url)?;
    let out = token_cmd
        .args(["serve", "--print-token"])
        .output()
        .await
        .map_err(|e| format!("genai serve --print-token: {e}"))?;
    let token = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let mut cmd = command(genai, root, "serve", base_url)?;
    let mut child = cmd
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--max-connections",
            "1000",
        ])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start genai serve: {e}"))?;
    let stdout = child.stdout.take().ok_or("genai serve has no stdout")?;
    let mut line = String::new();
    tokio::io::BufReader::new(stdout)
        .read_line(&mut line)
        .await
        .map_err(|e| format!("reading genai serve's address: {e}"))?;
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .ok_or_else(|| format!("unexpected first line of genai serve: {line:?}"))?
        .to_string();
    let pid = child.id().ok_or("genai serve has no pid")?;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (url, token) = (url.clone(), token.clone());
        tasks.push(tokio::spawn(async move {
            let mut h = HeaderMap::new();
            h.insert("Authorization", HeaderValue::from_str(&format!("Bearer {token}")).map_err(|e| e.to_string())?);
            let c = WsClientBuilder::default()
                .set_headers(h)
                .max_buffer_capacity_per_subscription(100_000)
                .build(&url)
                .await
                .map_err(|e| format!("connect: {e}"))?;
            let mut events = c
                .subscribe::<Value, _>("Subscribe", Obj(json!({})), "Unsubscribe")
                .await
                .map_err(|e| format!("Subscribe: {e}"))?;
            let conv: Value = c
                .request("CreateConversation", Obj(json!({"serviceProvider": "openai", "model": MODEL})))
                .await
                .map_err(|e| format!("CreateConversation: {e}"))?;
            let mut latencies = Vec::new();
            for i in 0..turns {
                let t0 = Instant::now();
                let turn: Value = c
                    .request("OnNewMessage", Obj(json!({"conversationId": conv["conversationId"], "message": format!("turn {i}")})))
                    .await
                    .map_err(|e| format!("OnNewMessage: {e}"))?;
                loop {
                    let e = events.next().await.ok_or("the subscription ended")?.map_err(|e| e.to_string())?;
                    if e["method"] == "OnFeatureResponse" && e["params"]["final"] == true && e["params"]["turnId"] == turn["turnId"] {
                        if e["params"]["isSuccess"] != true {
                            return Err(format!("a turn failed: {e}"));
                        }
                        break;
                    }
                }
                latencies.push(t0.elapsed());
            }
            Ok::<_, String>(latencies)
        }));
    }
    measure(tasks, started, pid, child).await
}

/// The same conversations and turns through one stdio client of `genai daemon`.
async fn stdio(
    genai: &PathBuf,
    root: &std::path::Path,
    base_url: &str,
    clients: usize,
    turns: usize,
) -> Res<Figures> {
    let mut cmd = command(genai, root, "daemon", base_url)?;
    let mut child = cmd
        .arg("daemon")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start genai daemon: {e}"))?;
    let pid = child.id().ok_or("genai daemon has no pid")?;
    let stdin = Arc::new(tokio::sync::Mutex::new(
        child.stdin.take().ok_or("no stdin")?,
    ));
    let stdout = child.stdout.take().ok_or("no stdout")?;
    type Waiting = Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>>;
    let responses: Waiting = Arc::default();
    let finals: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let (ended, _) = watch::channel(0u64);
    let ended = Arc::new(ended);
    {
        let (responses, finals, ended) = (responses.clone(), finals.clone(), ended.clone());
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(v) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if let Some(id) = v["id"].as_u64() {
                    if let Some(tx) = responses.lock().unwrap().remove(&id) {
                        let _ = tx.send(v);
                    }
                } else if v["method"] == "OnFeatureResponse" && v["params"]["final"] == true {
                    if let Some(t) = v["params"]["turnId"].as_str() {
                        finals.lock().unwrap().insert(t.to_string(), Instant::now());
                        ended.send_modify(|n| *n += 1);
                    }
                }
            }
        });
    }
    let next_id = Arc::new(std::sync::atomic::AtomicU64::new(1));
    let request = {
        let (stdin, responses, next_id) = (stdin.clone(), responses.clone(), next_id.clone());
        move |method: &'static str, params: Value| {
            let (stdin, responses, next_id) = (stdin.clone(), responses.clone(), next_id.clone());
            async move {
                let id = next_id.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let (tx, rx) = oneshot::channel();
                responses.lock().unwrap().insert(id, tx);
                let line = format!(
                    "{}\n",
                    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
                );
                stdin
                    .lock()
                    .await
                    .write_all(line.as_bytes())
                    .await
                    .map_err(|e| e.to_string())?;
                let v = rx.await.map_err(|_| "the daemon went away".to_string())?;
                if v.get("error").is_some() {
                    return Err(format!("{method}: {v}"));
                }
                Ok::<_, String>(v["result"].clone())
            }
        }
    };
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (request, finals, mut ended) = (request.clone(), finals.clone(), ended.subscribe());
        tasks.push(tokio::spawn(async move {
            let conv = request("CreateConversation", json!({"serviceProvider": "openai", "model": MODEL})).await?;
            let mut latencies = Vec::new();
            for i in 0..turns {
                let t0 = Instant::now();
                let turn = request("OnNewMessage", json!({"conversationId": conv["conversationId"], "message": format!("turn {i}")})).await?;
                let id = turn["turnId"].as_str().unwrap_or_default().to_string();
                let done = loop {
                    if let Some(at) = finals.lock().unwrap().remove(&id) {
                        break at;
                    }
                    ended.changed().await.map_err(|e| e.to_string())?;
                };
                latencies.push(done - t0);
            }
            Ok::<_, String>(latencies)
        }));
    }
    measure(tasks, started, pid, child).await
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

#[tokio::main]
async fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (clients, turns) = if quick { (20, 3) } else { (200, 10) };
    let result = async {
        let genai = bench::genai_binary("cargo build --release --bin genai")?;
        let fake = FakeOpenAi::start(0, Behavior::reply("a reply in four chunks", 4))
            .map_err(|e| e.to_string())?;
        let root = tempfile::tempdir().map_err(|e| e.to_string())?;
        let ws = tokio::time::timeout(
            DEADLINE,
            websocket(&genai, root.path(), &fake.base_url(), clients, turns),
        )
        .await
        .map_err(|_| "the WebSocket phase missed its deadline".to_string())??;
        let sd = tokio::time::timeout(
            DEADLINE,
            stdio(&genai, root.path(), &fake.base_url(), clients, turns),
        )
        .await
        .map_err(|_| "the stdio phase missed its deadline".to_string())??;
        println!("{clients} clients x {turns} turns, fake provider with no delay");
        println!(
            "{:<22}{:>12}{:>12}{:>12}{:>14}",
            "", "turns/s", "p50", "p99", "peak memory"
        );
        for (name, f) in [("genai serve (ws)", &ws), ("genai daemon (stdio)", &sd)] {
            println!(
                "{name:<22}{:>12.0}{:>12}{:>12}{:>11} MiB",
                f.turns_per_s,
                ms(f.p50),
                ms(f.p99),
                f.peak_kib / 1024
            );
        }
        let added = |a: Duration, b: Duration| a.as_secs_f64() * 1000.0 - b.as_secs_f64() * 1000.0;
        println!(
            "added by WebSocket: p50 {:+.2} ms, p99 {:+.2} ms",
            added(ws.p50, sd.p50),
            added(ws.p99, sd.p99)
        );
        Ok::<_, String>(())
    }
    .await;
    if let Err(e) = result {
        eprintln!("bench-serve: {e}");
        std::process::exit(1);
    }
}
