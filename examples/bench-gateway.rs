//! Benchmarks genai's gateway (`POST /v1/chat/completions` on `genai serve`) against the same
//! requests sent directly to the upstream and, given `--litellm PATH`, through LiteLLM's proxy,
//! in the same run:
//!
//! ```text
//! cargo build --release --example bench-gateway --bin genai
//! cargo run --release --example bench-gateway [-- --clients 1,32,256 --requests 4000
//!     --seconds S --memory N --long --litellm /path/to/litellm --nginx /usr/sbin/nginx --quick
//!     --postgres postgres://USER:PASSWORD@HOST/DB [--haproxy /usr/sbin/haproxy] --otlp]
//! ```
//!
//! The upstream (`support/fast_upstream.rs`) is an in-process hyper server answering at once.
//! genai serve gets a config whose provider points at it; LiteLLM gets a `config.yaml` whose
//! `openai/gpt-bench` has the upstream as `api_base`, a master key and `--num_workers` = the
//! cores. Beside them runs the floor (`support/null_proxy.rs`): a proxy on genai's HTTP parts
//! that only forwards bytes, so that what any proxy hop costs on these cores shows apart from
//! what genai's own work adds; given `--nginx PATH`, nginx as a reverse proxy is another floor,
//! from outside this project (`support/gateway_targets.rs` starts them all). Each cell
//! (target × whole/streamed × clients) opens that many keep-alive HTTP/1.1 connections, then
//! sends `--requests` requests over them (or for `--seconds`), each client
//! one after the other. Per cell it prints p50/p99 latency (request sent → last byte), what
//! each gateway adds at p50/p99 over the direct cell, requests/s and errors; per gateway its
//! peak memory (VmHWM; for LiteLLM the sum over its processes) and its resident memory after
//! `--memory`/10 and after `--memory` whole requests at 32 clients (`--long`: 10,000 and
//! 100,000). Given `--postgres URL`, genai runs twice side by side, each asked with a virtual
//! key: `genai-sq` keeps its keys and ledger in SQLite, `genai-pg` in that Postgres database
//! (`[store] url`). Given `--haproxy PATH` too, a second replica on that database starts and
//! haproxy fronts first the one replica (`ha-1`), then both (`ha-2`, round robin), asked with
//! the same key. Given `--otlp`, `genai-ot` is genai again with traces on, exporting every
//! span over OTLP/HTTP to a sink in this process (`OTEL_EXPORTER_OTLP_ENDPOINT`). It only measures and prints; every phase has a deadline. `--upstream` serves
//! only the upstream, printing its address, to profile a gateway against it by hand.

#[path = "support/bench.rs"]
mod bench;
#[path = "support/fast_upstream.rs"]
mod fast_upstream;
#[path = "support/gateway_targets.rs"]
mod gateway_targets;
#[path = "support/null_proxy.rs"]
mod null_proxy;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;

use gateway_targets::{Target, UPSTREAM_KEY};

type Res<T> = Result<T, String>;

/// The longest any phase may take.
const DEADLINE: Duration = Duration::from_secs(600);
/// Requests per client before a target is measured (connections, pools and caches warm).
const WARM_UP: usize = 20;

struct Options {
    clients: Vec<usize>,
    requests: usize,
    seconds: Option<f64>,
    memory: usize,
    litellm: Option<String>,
    nginx: Option<String>,
    /// A Postgres URL: genai is then measured twice, each with a virtual key, its keys and
    /// ledger in SQLite and in this database.
    postgres: Option<String>,
    /// haproxy's executable: one and two replicas on `postgres` behind it.
    haproxy: Option<String>,
    /// Whether genai is also measured sending its traces to a collector (a sink in process).
    otlp: bool,
}

impl Options {
    fn parse() -> Res<Options> {
        let mut o = Options {
            clients: vec![1, 32, 256],
            requests: 4000,
            seconds: None,
            memory: 10_000,
            litellm: std::env::var("GENAI_BENCH_LITELLM").ok(),
            nginx: None,
            postgres: None,
            haproxy: None,
            otlp: false,
        };
        let mut args = std::env::args().skip(1);
        let number = |v: Option<String>, flag: &str| -> Res<usize> {
            v.and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{flag} takes a number"))
        };
        while let Some(a) = args.next() {
            match a.as_str() {
                "--clients" => {
                    let v = args.next().ok_or("--clients takes N[,N...]")?;
                    o.clients = v
                        .split(',')
                        .map(|n| n.trim().parse().map_err(|_| format!("bad --clients {v}")))
                        .collect::<Res<_>>()?;
                }
                "--requests" => o.requests = number(args.next(), "--requests")?,
                "--seconds" => {
                    let v = args.next().and_then(|v| v.parse().ok());
                    o.seconds = Some(v.ok_or("--seconds takes a number")?);
                }
                "--memory" => o.memory = number(args.next(), "--memory")?,
                "--long" => o.memory = 100_000,
                "--quick" => {
                    (o.clients, o.requests, o.memory) = (vec![1, 8], 64, 200);
                }
                "--litellm" => o.litellm = Some(args.next().ok_or("--litellm takes a path")?),
                "--nginx" => o.nginx = Some(args.next().ok_or("--nginx takes a path")?),
                "--postgres" => o.postgres = Some(args.next().ok_or("--postgres takes a URL")?),
                "--haproxy" => o.haproxy = Some(args.next().ok_or("--haproxy takes a path")?),
                "--otlp" => o.otlp = true,
                other => return Err(format!("unknown argument {other}")),
            }
        }
        if o.haproxy.is_some() && o.postgres.is_none() {
            return Err("--haproxy fronts replicas sharing a database: give --postgres too".into());
        }
        if o.clients.contains(&0) || o.requests == 0 {
            return Err("--clients and --requests must be at least 1".into());
        }
        Ok(o)
    }
}

/// What one cell measured.
struct Cell {
    p50: Duration,
    p99: Duration,
    per_s: f64,
    errors: usize,
}

/// A keep-alive HTTP/1.1 connection to a target.
struct Client {
    send: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
}

impl Client {
    async fn connect(addr: SocketAddr) -> Res<Client> {
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect {addr}: {e}"))?;
        tcp.set_nodelay(true).map_err(|e| e.to_string())?;
        let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| format!("handshake {addr}: {e}"))?;
        tokio::spawn(conn);
        Ok(Client { send })
    }

    /// One request; the latency when it was answered 200 with the whole reply.
    async fn request(&mut self, t: &Target, body: &Bytes, stream: bool) -> Res<Duration> {
        let mut req = hyper::Request::post("/v1/chat/completions")
            .header("host", t.addr.to_string())
            .header("content-type", "application/json");
        if let Some(k) = &t.key {
            req = req.header("authorization", format!("Bearer {k}"));
        }
        let req = req
            .body(Full::new(body.clone()))
            .map_err(|e| e.to_string())?;
        let started = Instant::now();
        self.send.ready().await.map_err(|e| e.to_string())?;
        let resp = self
            .send
            .send_request(req)
            .await
            .map_err(|e| e.to_string())?;
        let status = resp.status();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        let took = started.elapsed();
        let complete = match stream {
            true => {
                bytes.ends_with(b"data: [DONE]\n\n") || bytes.ends_with(b"data: [DONE]\r\n\r\n")
            }
            false => bytes.windows(8).any(|w| w == b"\"choices"),
        };
        if !status.is_success() || !complete {
            return Err(format!(
                "{}: HTTP {status}: {}",
                t.name,
                String::from_utf8_lossy(&bytes[..bytes.len().min(300)])
            ));
        }
        Ok(took)
    }
}

fn body(model: &str, stream: bool) -> Bytes {
    let mut b = serde_json::json!({
        "model": model,
        "messages": [{"role": "system", "content": "You are terse."},
                     {"role": "user", "content": "Say hello in five words."}],
        "max_tokens": 32,
        "stream": stream,
    });
    if stream {
        b["stream_options"] = serde_json::json!({"include_usage": true});
    }
    Bytes::from(b.to_string())
}

/// `clients` connections, each sending its share of `requests` (or for `seconds`) in turn.
async fn cell(
    t: &Target,
    clients: usize,
    stream: bool,
    requests: usize,
    seconds: Option<f64>,
) -> Res<Cell> {
    let body = body(&t.model, stream);
    let mut conns = Vec::with_capacity(clients);
    for _ in 0..clients {
        conns.push(Client::connect(t.addr).await?);
    }
    let warm = futures::future::join_all(conns.iter_mut().map(|c| async {
        for _ in 0..WARM_UP.min(requests.div_ceil(clients)) {
            c.request(t, &body, stream).await?;
        }
        Ok::<_, String>(())
    }))
    .await;
    warm.into_iter().collect::<Res<Vec<_>>>()?;
    let started = Instant::now();
    let until = seconds.map(|s| started + Duration::from_secs_f64(s));
    let share = |i: usize| requests / clients + usize::from(i < requests % clients);
    let runs = futures::future::join_all(conns.into_iter().enumerate().map(|(i, mut c)| {
        let body = body.clone();
        async move {
            let (mut took, mut errors) = (Vec::new(), 0);
            let mut n = 0;
            while until.map_or(n < share(i), |u| Instant::now() < u) {
                n += 1;
                match c.request(t, &body, stream).await {
                    Ok(d) => took.push(d),
                    Err(e) => {
                        errors += 1;
                        if errors == 1 {
                            eprintln!("bench-gateway: {e}");
                        }
                        // The connection may be gone: a new one for the next request.
                        match Client::connect(t.addr).await {
                            Ok(fresh) => c = fresh,
                            Err(_) => break,
                        }
                    }
                }
            }
            (took, errors)
        }
    }))
    .await;
    let wall = started.elapsed();
    let (mut took, mut errors) = (Vec::new(), 0);
    for (t, e) in runs {
        took.extend(t);
        errors += e;
    }
    if took.is_empty() {
        return Err(format!("{}: every request failed", t.name));
    }
    took.sort();
    let at = |p: f64| took[(((took.len() - 1) as f64) * p).round() as usize];
    Ok(Cell {
        p50: at(0.5),
        p99: at(0.99),
        per_s: took.len() as f64 / wall.as_secs_f64(),
        errors,
    })
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1000.0)
}

fn added(a: Duration, b: Duration) -> String {
    format!("{:+.2}", (a.as_secs_f64() - b.as_secs_f64()) * 1000.0)
}

/// Resident memory of the target after `memory`/10 and after `memory` whole requests at 32
/// clients, in KiB.
async fn memory_check(t: &Target, memory: usize) -> Res<(u64, u64)> {
    let pid = t.pid.ok_or("no process")?;
    let first = memory / 10;
    cell(t, 32, false, first.max(1), None).await?;
    let after_first = gateway_targets::tree_memory_kib(pid)?.0;
    cell(t, 32, false, (memory - first).max(1), None).await?;
    Ok((after_first, gateway_targets::tree_memory_kib(pid)?.0))
}

async fn run(o: Options) -> Res<()> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let upstream = fast_upstream::start(1)?;
    let direct = Target {
        name: "direct",
        addr: upstream,
        key: Some(UPSTREAM_KEY.into()),
        model: fast_upstream::MODEL.into(),
        pid: None,
    };
    let (_floor, floor) = gateway_targets::null_proxy_process(upstream)?;
    let (_genai, genai) = match &o.postgres {
        None => gateway_targets::genai_serve(upstream)?,
        Some(_) => gateway_targets::genai_serve_keyed("genai-sq", upstream, None)?,
    };
    let on_postgres = match &o.postgres {
        Some(url) => Some(gateway_targets::genai_serve_keyed(
            "genai-pg",
            upstream,
            Some(url),
        )?),
        None => None,
    };
    // Replicas share keys through Postgres only: a second one with the first's key, and
    // haproxy in front of one, then of both.
    let balanced = match (&o.haproxy, &o.postgres, &on_postgres) {
        (Some(exe), Some(url), Some((_, first))) => {
            let key = first
                .key
                .as_deref()
                .ok_or("the Postgres replica has no key")?;
            let (second, other) = gateway_targets::genai_replica("genai-pg2", upstream, url, key)?;
            let (one, ha1) = gateway_targets::haproxy(exe, "ha-1", &[first.addr], first).await?;
            let both = [first.addr, other.addr];
            let (two, ha2) = gateway_targets::haproxy(exe, "ha-2", &both, first).await?;
            Some(((second, one, two), [ha1, ha2]))
        }
        _ => None,
    };
    // Traces on: another genai, exporting every span to an OTLP/HTTP sink of its own.
    let traced = match o.otlp {
        true => Some(gateway_targets::genai_serve_traced(
            "genai-ot",
            upstream,
            fast_upstream::start(1)?,
        )?),
        false => None,
    };
    let nginx = match &o.nginx {
        Some(exe) => Some(gateway_targets::nginx(exe, upstream).await?),
        None => None,
    };
    let lite = match &o.litellm {
        Some(exe) => Some(gateway_targets::litellm(exe, upstream).await?),
        None => None,
    };
    let mut targets = vec![&direct, &floor];
    targets.extend(nginx.as_ref().map(|(_, t)| t));
    targets.push(&genai);
    targets.extend(on_postgres.as_ref().map(|(_, t)| t));
    targets.extend(balanced.iter().flat_map(|(_, ts)| ts));
    targets.extend(traced.as_ref().map(|(_, t)| t));
    targets.extend(lite.as_ref().map(|(_, t)| t));
    let plan = match o.seconds {
        Some(s) => format!("{s} s per cell"),
        None => format!("{} requests per cell", o.requests),
    };
    println!(
        "bench-gateway: {plan}, {workers} cores, upstream in process (1 thread), keep-alive HTTP/1.1 clients"
    );
    println!(
        "{:<9}{:<10}{:>8}{:>11}{:>11}{:>12}{:>12}{:>11}{:>8}",
        "target", "mode", "clients", "p50 ms", "p99 ms", "+p50 ms", "+p99 ms", "req/s", "errors"
    );
    for stream in [false, true] {
        for &clients in &o.clients {
            let mut base: Option<Cell> = None;
            for t in &targets {
                let c = cell(t, clients, stream, o.requests, o.seconds).await?;
                let (a50, a99) = match &base {
                    Some(b) => (added(c.p50, b.p50), added(c.p99, b.p99)),
                    None => (String::new(), String::new()),
                };
                println!(
                    "{:<9}{:<10}{:>8}{:>11}{:>11}{:>12}{:>12}{:>11.0}{:>8}",
                    t.name,
                    if stream { "streamed" } else { "whole" },
                    clients,
                    ms(c.p50),
                    ms(c.p99),
                    a50,
                    a99,
                    c.per_s,
                    c.errors
                );
                if base.is_none() {
                    base = Some(c);
                }
            }
        }
    }
    println!(
        "{:<9}{:>12}{:>22}{:>22}",
        "server",
        "peak MiB",
        format!("RSS after {} MiB", o.memory / 10),
        format!("RSS after {} MiB", o.memory)
    );
    for t in targets.iter().filter(|t| t.pid.is_some()) {
        let (first, last) = memory_check(t, o.memory).await?;
        let peak = gateway_targets::tree_memory_kib(t.pid.unwrap_or_default())?.1;
        println!(
            "{:<9}{:>12.1}{:>22.1}{:>22.1}",
            t.name,
            peak as f64 / 1024.0,
            first as f64 / 1024.0,
            last as f64 / 1024.0
        );
    }
    Ok(())
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let first = args.next();
    if first.as_deref() == Some("--upstream") {
        // Only the upstream, for profiling a gateway by hand: its address, then serve forever.
        match fast_upstream::start(1) {
            Ok(addr) => println!("upstream listening on {addr}"),
            Err(e) => {
                eprintln!("bench-gateway: {e}");
                std::process::exit(1);
            }
        }
        std::future::pending::<()>().await;
    }
    if first.as_deref() == Some("--null-proxy") {
        let served = match args.next().map(|a| a.parse()) {
            Some(Ok(upstream)) => null_proxy::serve(upstream).await,
            _ => Err("--null-proxy takes the upstream's ADDRESS:PORT".into()),
        };
        if let Err(e) = served {
            eprintln!("bench-gateway: {e}");
            std::process::exit(1);
        }
        return;
    }
    let result = match Options::parse() {
        Ok(o) => tokio::time::timeout(DEADLINE * 4, run(o))
            .await
            .unwrap_or_else(|_| Err("the bench missed its deadline".into())),
        Err(e) => Err(e),
    };
    if let Err(e) = result {
        eprintln!("bench-gateway: {e}");
        std::process::exit(1);
    }
}
