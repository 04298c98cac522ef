//! Benchmarks `genai daemon` and `genai ask` against the in-process fake OpenAI server:
//!
//! ```text
//! cargo build --release --example bench-daemon --example fake-provider --bin genai
//! cargo run --release --example bench-daemon [-- --quick]
//! ```
//!
//! It measures, each phase with its own daemon, data and config folders:
//!
//! 1. GetHistory throughput: N pipelined requests (ndjson) written by one thread while another
//!    reads the answers; req/s over the wall time from the first write to the last answer.
//! 2. Added latency per turn: K sequential turns through the daemon (OnNewMessage written → final
//!    OnFeatureResponse read), each followed by the same streaming request sent straight to the
//!    fake server with reqwest; the added latency is daemon minus direct, at p50 and at p99.
//! 3. Memory: VmRSS and VmHWM of a daemon holding 1,000 open conversations of one turn each.
//! 4. Cold start: `genai ask -m openai:gpt-4o-mini hello`, spawn → first stdout byte, and → exit.
//! 5. `genai ask` against curl: the same streaming request made by `curl`, `genai ask --no-log`
//!    and `genai ask` keeping its history, in turn; medians and their ratios to curl's.
//!
//! `--quick` divides every count by 10 (CI smoke runs). Everything talks to 127.0.0.1 only;
//! each phase has a deadline and the bench exits non-zero with a message when one is missed.

#[path = "bench-daemon/ask.rs"]
mod ask;
#[path = "support/bench.rs"]
mod bench;
#[path = "bench-daemon/client.rs"]
mod client;
// The fake and the server under it, from the integration tests' support (the other wire
// formats are not needed here, and parts of these go unused).
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
use std::io::Write;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use client::{check_success, final_response, result_of, str_of, Daemon, Deadline, Env};
use support::fake_openai::{Behavior, FakeOpenAi};

type Res<T> = Result<T, String>;

/// How long one phase may take before the bench gives up.
const PHASE_DEADLINE: Duration = Duration::from_secs(60);
/// Most turns in flight at once while filling the daemon with conversations.
const FILL_WINDOW: usize = 32;
const MODEL: &str = "gpt-4o-mini";

/// The counts of one run.
struct Counts {
    history_requests: usize,
    turns: usize,
    conversations: usize,
    cold_runs: usize,
}

impl Counts {
    fn new(quick: bool) -> Counts {
        let d = if quick { 10 } else { 1 };
        Counts {
            history_requests: 20_000 / d,
            turns: 500 / d,
            conversations: 1_000 / d,
            cold_runs: 30 / d,
        }
    }
}

/// Nearest-rank percentile of sorted durations.
fn percentile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// One figure line: the label in a column, then the value.
fn figure(label: &str, value: String) {
    println!("{label:<36}{value}");
}

// ---------------------------------------------------------------------------
// 1. GetHistory throughput

struct Throughput {
    requests: usize,
    messages: usize,
    elapsed: Duration,
}

impl Throughput {
    fn per_sec(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64()
    }
}

fn bench_history(env: &Env, n: usize) -> Res<Throughput> {
    let dl = Deadline::new("GetHistory throughput");
    let mut d = Daemon::spawn(env, "history")?;
    d.request(
        "Initialize",
        json!({"clientInfo": {"name": "bench-daemon"}}),
        &dl,
    )?;
    let (conversation, agent) = d.create_conversation(&dl)?;
    for text in ["hi", "and again"] {
        d.turn(&conversation, text, &dl)?;
    }
    let history = d.request("GetHistory", json!({"agentId": agent}), &dl)?;
    let messages = history.as_array().map_or(0, Vec::len);
    if messages != 4 {
        return Err(format!("GetHistory: expected 4 messages, got {history}"));
    }

    // A short warm-up, then the measured run; both pipelined from a writer thread.
    let warmup = (n / 20).max(10);
    let mut elapsed = Duration::ZERO;
    for (count, measured) in [(warmup, false), (n, true)] {
        let first = d.next_id;
        let mut buf = Vec::with_capacity(count * 96);
        for i in 0..count as u64 {
            let line = json!({"jsonrpc": "2.0", "id": first + i, "method": "GetHistory", "params": {"agentId": agent}});
            buf.extend_from_slice(line.to_string().as_bytes());
            buf.push(b'\n');
        }
        d.next_id += count as u64;
        let mut stdin = d.stdin.take().ok_or("the daemon's stdin is closed")?;
        let started = Instant::now();
        let writer = std::thread::Builder::new()
            .name("history-writer".into())
            .spawn(move || {
                let r = stdin.write_all(&buf).and_then(|_| stdin.flush());
                (stdin, r)
            })
            .map_err(|e| format!("cannot start the writer thread: {e}"))?;
        let (mut answers, mut last) = (0, started);
        while answers < count {
            let (at, msg) = d.recv(&dl)?;
            let Some(id) = msg.get("id").and_then(Value::as_u64) else {
                continue;
            };
            if !(first..first + count as u64).contains(&id) {
                continue;
            }
            let r = result_of("GetHistory", msg).map_err(|e| d.fail(e))?;
            if r.as_array().map_or(0, Vec::len) != messages {
                return Err(format!("GetHistory: a different history: {r}"));
            }
            answers += 1;
            last = at;
        }
        let (stdin, written) = writer
            .join()
            .map_err(|_| "the writer thread panicked".to_string())?;
        written.map_err(|e| d.fail(format!("cannot write to the daemon: {e}")))?;
        d.stdin = Some(stdin);
        if measured {
            elapsed = last - started;
        }
    }
    d.shutdown("GetHistory throughput")?;
    Ok(Throughput {
        requests: n,
        messages,
        elapsed,
    })
}

// ---------------------------------------------------------------------------
// 2. Added latency per turn

struct Latency {
    turns: usize,
    conversations: usize,
    daemon: Vec<Duration>,
    direct: Vec<Duration>,
}

/// One streaming chat request straight to the fake server, read to the end of the body.
async fn direct_request(client: &reqwest::Client, url: &str, body: &[u8]) -> Res<Duration> {
    let started = Instant::now();
    let mut resp = client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(reqwest::header::ACCEPT, "text/event-stream")
        .body(body.to_vec())
        .send()
        .await
        .map_err(|e| format!("direct request to {url}: {e}"))?;
    if !resp.status().is_success() {
        return Err(format!("direct request to {url}: HTTP {}", resp.status()));
    }
    let mut tail = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| format!("direct request to {url}: {e}"))?
    {
        tail.extend_from_slice(&chunk);
        let keep = tail.len().saturating_sub(64);
        tail.drain(..keep);
    }
    let took = started.elapsed();
    if !String::from_utf8_lossy(&tail).contains("[DONE]") {
        return Err(format!(
            "direct request to {url}: the stream did not end with [DONE]"
        ));
    }
    Ok(took)
}

fn bench_latency(env: &Env, fake: &FakeOpenAi, k: usize) -> Res<Latency> {
    let dl = Deadline::new("turn latency");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a tokio runtime: {e}"))?;
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .map_err(|e| format!("cannot build an HTTP client: {e}"))?;
    let url = format!("{}/chat/completions", fake.base_url());

    let mut d = Daemon::spawn(env, "latency")?;
    d.request(
        "Initialize",
        json!({"clientInfo": {"name": "bench-daemon"}}),
        &dl,
    )?;
    // Turns rotate over k/10 conversations (10 turns each), so no history grows long.
    let conversations = (k / 10).max(1);
    let mut convs = Vec::with_capacity(conversations);
    for _ in 0..conversations {
        convs.push(d.create_conversation(&dl)?.0);
    }

    // The direct request replays the body the daemon sent for a first turn ("hi", streaming).
    let before = fake.requests().len();
    let warm_conv = d.create_conversation(&dl)?.0;
    d.turn(&warm_conv, "hi", &dl)?;
    let body = fake
        .requests()
        .into_iter()
        .skip(before)
        .find(|r| r.path.ends_with("/chat/completions"))
        .map(|r| r.body)
        .ok_or("the daemon's request never reached the fake provider")?;
    if body.get("stream").and_then(Value::as_bool) != Some(true) {
        return Err(format!(
            "the daemon's request is not a streaming one: {body}"
        ));
    }
    let body = serde_json::to_vec(&body).map_err(|e| e.to_string())?;

    let direct_once = |dl: &Deadline| -> Res<Duration> {
        let left = dl.remaining()?;
        rt.block_on(async {
            tokio::time::timeout(left, direct_request(&client, &url, &body))
                .await
                .map_err(|_| dl.expired())?
        })
    };

    // Warm-up, not counted: a few turns each way.
    for _ in 0..(k / 25).max(2) {
        d.turn(&warm_conv, "hi", &dl)?;
        direct_once(&dl)?;
    }
    let mut daemon = Vec::with_capacity(k);
    let mut direct = Vec::with_capacity(k);
    for i in 0..k {
        daemon.push(d.turn(&convs[i % conversations], "hi", &dl)?);
        direct.push(direct_once(&dl)?);
    }
    d.shutdown("turn latency")?;
    daemon.sort();
    direct.sort();
    Ok(Latency {
        turns: k,
        conversations,
        daemon,
        direct,
    })
}

// ---------------------------------------------------------------------------
// 3. Memory with many open conversations

struct Memory {
    conversations: usize,
    idle_rss: u64,
    rss: u64,
    hwm: u64,
}

fn bench_memory(env: &Env, n: usize) -> Res<Memory> {
    let dl = Deadline::new("memory");
    let mut d = Daemon::spawn(env, "memory")?;
    d.request(
        "Initialize",
        json!({"clientInfo": {"name": "bench-daemon"}}),
        &dl,
    )?;
    let (idle_rss, _) = d.memory_kib()?;

    // Create every conversation (pipelined), then give each one turn, FILL_WINDOW at a time.
    let mut create_ids = HashMap::with_capacity(n);
    for i in 0..n {
        let id = d.send(
            "CreateConversation",
            json!({"serviceProvider": "openai", "model": MODEL}),
        )?;
        create_ids.insert(id, i);
    }
    let mut convs = vec![String::new(); n];
    let mut created = 0;
    while created < n {
        let (_, msg) = d.recv(&dl)?;
        let Some(&i) = msg
            .get("id")
            .and_then(Value::as_u64)
            .and_then(|id| create_ids.get(&id))
        else {
            continue;
        };
        let r = result_of("CreateConversation", msg).map_err(|e| d.fail(e))?;
        convs[i] = str_of(&r, "conversationId")?;
        created += 1;
    }

    let (mut sent, mut done, mut in_flight) = (0, 0, 0);
    let mut turn_ids = std::collections::HashSet::with_capacity(n);
    while done < n {
        while in_flight < FILL_WINDOW && sent < n {
            let id = d.send(
                "OnNewMessage",
                json!({"conversationId": convs[sent], "message": "hi"}),
            )?;
            turn_ids.insert(id);
            sent += 1;
            in_flight += 1;
        }
        let (_, msg) = d.recv(&dl)?;
        if let Some(id) = msg.get("id").and_then(Value::as_u64) {
            if turn_ids.remove(&id) {
                result_of("OnNewMessage", msg).map_err(|e| d.fail(e))?;
            }
        } else if let Some(p) = final_response(&msg) {
            check_success(p).map_err(|e| d.fail(e))?;
            done += 1;
            in_flight -= 1;
        }
    }
    // Every conversation is open and holds one turn.
    let (rss, hwm) = d.memory_kib()?;
    d.shutdown("memory")?;
    Ok(Memory {
        conversations: n,
        idle_rss,
        rss,
        hwm,
    })
}

// ---------------------------------------------------------------------------

fn run(quick: bool) -> Res<()> {
    let counts = Counts::new(quick);
    let genai = bench::genai_binary(
        "`cargo build --release --bin genai` (or `cargo build --release --example bench-daemon \
         --example fake-provider --bin genai`)",
    )?;
    let fake = FakeOpenAi::start(
        0,
        Behavior {
            delay: Duration::ZERO,
            ..Default::default()
        },
    )
    .map_err(|e| format!("cannot start the fake provider: {e}"))?;
    let scratch = tempfile::Builder::new()
        .prefix("bench-daemon")
        .tempdir()
        .map_err(|e| format!("cannot create a temporary folder: {e}"))?;
    let env = Env {
        genai,
        base_url: fake.base_url(),
        root: scratch.path().to_path_buf(),
    };
    println!(
        "bench-daemon{}: {} against the fake provider at {}",
        if quick { " --quick" } else { "" },
        env.genai.display(),
        env.base_url
    );

    let history = bench_history(&env, counts.history_requests)?;
    figure(
        "GetHistory throughput",
        format!(
            "{:.0} req/s  ({} pipelined requests, {} messages each, {:.3} s)",
            history.per_sec(),
            history.requests,
            history.messages,
            history.elapsed.as_secs_f64()
        ),
    );

    let lat = bench_latency(&env, &fake, counts.turns)?;
    let (dp50, dp99) = (percentile(&lat.daemon, 0.50), percentile(&lat.daemon, 0.99));
    let (hp50, hp99) = (percentile(&lat.direct, 0.50), percentile(&lat.direct, 0.99));
    let (added50, added99) = (ms(dp50) - ms(hp50), ms(dp99) - ms(hp99));
    figure(
        "Turn latency via daemon",
        format!(
            "p50 {:.3} ms  p99 {:.3} ms  max {:.3} ms  ({} turns over {} conversations)",
            ms(dp50),
            ms(dp99),
            ms(lat.daemon.last().copied().unwrap_or_default()),
            lat.turns,
            lat.conversations
        ),
    );
    figure(
        "Turn latency direct to provider",
        format!(
            "p50 {:.3} ms  p99 {:.3} ms  max {:.3} ms",
            ms(hp50),
            ms(hp99),
            ms(lat.direct.last().copied().unwrap_or_default())
        ),
    );
    figure(
        "Added latency per turn",
        format!("p50 {added50:+.3} ms  p99 {added99:+.3} ms"),
    );

    let mem = bench_memory(&env, counts.conversations)?;
    figure(
        &format!("Daemon memory, {} conversations", mem.conversations),
        format!(
            "VmRSS {:.1} MiB  VmHWM {:.1} MiB  (idle daemon {:.1} MiB, {:.1} KiB per conversation)",
            mib(mem.rss),
            mib(mem.hwm),
            mib(mem.idle_rss),
            mem.rss.saturating_sub(mem.idle_rss) as f64 / mem.conversations as f64
        ),
    );

    let cold = ask::bench_cold_start(&env, counts.cold_runs)?;
    figure(
        "genai ask cold start, first byte",
        format!(
            "p50 {:.2} ms  min {:.2} ms  ({} runs)",
            ms(percentile(&cold.first_byte, 0.5)),
            ms(cold.first_byte.first().copied().unwrap_or_default()),
            cold.runs
        ),
    );
    figure(
        "genai ask total time to exit",
        format!("p50 {:.2} ms", ms(percentile(&cold.exit, 0.5))),
    );

    let vs_curl = ask::bench_ask_vs_curl(&env, counts.cold_runs)?;
    match &vs_curl {
        Some(v) => {
            let curl = ms(percentile(&v.curl, 0.5));
            for (label, runs) in [
                ("curl, the same request", &v.curl),
                ("genai ask --no-log", &v.no_log),
                ("genai ask, with history", &v.with_history),
            ] {
                let p50 = ms(percentile(runs, 0.5));
                figure(
                    label,
                    format!(
                        "p50 {p50:.2} ms  min {:.2} ms  {:.2}x curl  ({} runs)",
                        ms(runs.first().copied().unwrap_or_default()),
                        p50 / curl,
                        v.runs
                    ),
                );
            }
        }
        None => figure(
            "genai ask against curl",
            "skipped: curl is not installed".into(),
        ),
    }

    println!();
    println!("| metric | measured | aim |");
    println!("|---|---|---|");
    println!(
        "| Added latency per turn (p50 / p99) | {added50:+.3} ms / {added99:+.3} ms | < 1 ms |"
    );
    println!(
        "| GetHistory throughput | {:.0} req/s | > 20,000 req/s |",
        history.per_sec()
    );
    println!(
        "| Daemon RSS with {} conversations | {:.1} MiB (peak {:.1} MiB) | < 150 MB for 1,000 |",
        mem.conversations,
        mib(mem.rss),
        mib(mem.hwm)
    );
    println!(
        "| Cold start of `genai ask` to first byte (p50) | {:.2} ms | < 20 ms |",
        ms(percentile(&cold.first_byte, 0.5))
    );
    if let Some(v) = &vs_curl {
        let curl = ms(percentile(&v.curl, 0.5));
        println!(
            "| `genai ask --no-log` / `genai ask` with history, time to exit over curl's (p50) | {:.2}x / {:.2}x | near 1x |",
            ms(percentile(&v.no_log, 0.5)) / curl,
            ms(percentile(&v.with_history, 0.5)) / curl
        );
    }
    drop(fake);
    Ok(())
}

fn main() {
    let mut quick = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--quick" => quick = true,
            "-h" | "--help" => {
                println!("usage: bench-daemon [--quick]\n  --quick  divide every count by 10");
                return;
            }
            other => {
                eprintln!(
                    "bench-daemon: unknown argument `{other}` (usage: bench-daemon [--quick])"
                );
                std::process::exit(2);
            }
        }
    }
    if let Err(e) = run(quick) {
        eprintln!("bench-daemon: {e}");
        std::process::exit(1);
    }
}
