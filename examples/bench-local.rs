//! Benchmarks the `local` provider (llama.cpp in-process) on a real GGUF model:
//!
//! ```text
//! cargo build --release --example bench-local --bin genai
//! cargo run --release --example bench-local -- [--model PATH] [--threads N] [--tokens N]
//! cargo run --release --example bench-local -- --concurrency 1,2,4,8 [--context N]
//!     [--llama-server PATH] [--kv-unified] [--schema FILE | --tools [--tool-choice auto]]
//!     [--beside idle,busy] [--model PATH] [--threads N] [--tokens N]
//! ```
//!
//! Without `--threads` each side runs with its own default threads (genai's engine fits them
//! to the load when it starts; llama-server takes the physical cores); the table says which
//! each used. `--beside busy` runs every level again with a busy loop (`sh -c 'while :; do :;
//! done'`) taking a core beside the servers, started before them and stopped after.
//!
//! The model is `--model`, else `GENAI_TEST_MODEL`, else the models folder's default. Replies are
//! greedy (`temperature = 0`) and `--tokens` long at most (default 128). It measures:
//!
//! 1. `genai ask` (a new process: model load, prompt, reply): time to first token (spawn →
//!    first stdout byte), generation tokens/s (the engine's own count over its decode loop),
//!    prompt tokens and evaluation time, wall time, peak RSS (VmHWM, polled).
//! 2. `genai ask --continue`, the second turn of that conversation, again in a new process: the
//!    whole history is evaluated again (the KV cache lives in a process).
//! 3. `genai daemon`, one conversation, two turns: time to first chunk after `OnNewMessage`,
//!    tokens/s between the first chunk and the final response, prompt tokens and how many came
//!    from the slot's KV cache; the daemon's peak RSS at the end.
//!
//! With `--concurrency`, it runs instead N conversations at once through one `genai daemon` with
//! N slots of `--context` tokens (default 4096) for each N given, and with `--llama-server` the
//! same N streams against llama.cpp's `llama-server -np N` (see `support/local_concurrency.rs`,
//! and `support/local_servers.rs` for the two servers it drives over HTTP).
//! With `--schema FILE` every reply must match that JSON Schema, and with `--tools` every request
//! offers a tool (`tool_choice` `required`, the forced grammar, or with `--tool-choice auto` the
//! lazy one): the constrained decoding of both, compared. Then genai is driven through `genai
//! serve`'s warm local route with the openai-chat body llama-server gets (`response_format`,
//! `tools`), streaming; replies end where the JSON or the call ends rather than at `--tokens`.
//! With `--tools`, llama-server gets genai's own rendered prompt and tool grammar on its
//! `/completion` endpoint (see `support/same_grammar.rs` for why).
//!
//! Engine figures come from the engine's debug log line (`GENAI_LOG=genai_local=debug`).
//! Every wait has a deadline; the bench exits non-zero with a message when one is missed.

#[path = "support/bench.rs"]
mod bench;
#[path = "support/http_stream.rs"]
mod http_stream;
#[path = "support/local_concurrency.rs"]
mod local_concurrency;
#[path = "support/same_grammar.rs"]
mod same_grammar;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

type Res<T> = Result<T, String>;

const DEADLINE: Duration = Duration::from_secs(300);
const PROMPT_1: &str = "Explain in a few sentences why the sky is blue.";
const PROMPT_2: &str = "Now explain why sunsets are red.";

/// What runs beside the servers while they are measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Beside {
    /// Nothing: the machine is quiet.
    Idle,
    /// One busy loop that takes a core.
    Busy,
}

struct Options {
    model: PathBuf,
    /// `--threads`: both sides get it; `None`, each its own default.
    threads: Option<u32>,
    /// `--beside`: the conditions every level of `--concurrency` runs under.
    beside: Vec<Beside>,
    tokens: u32,
    /// Tokens per slot (`context_size`; llama-server gets `-c` = this × slots).
    context: u32,
    /// `--concurrency`: the stream counts to run; empty runs the single-conversation bench.
    concurrency: Vec<usize>,
    llama_server: Option<PathBuf>,
    /// `--kv-unified`: genai's slots share one KV cache (`kv_unified = true`).
    kv_unified: bool,
    /// `--schema FILE`: the JSON Schema every reply of `--concurrency` must match.
    schema: Option<Value>,
    /// `--tools`: every request offers a tool, with this `tool_choice` (`required`: the
    /// forced grammar; `auto`: the lazy one).
    tool_choice: Option<String>,
}

fn main() {
    if let Err(e) = run() {
        eprintln!("bench-local: {e}");
        std::process::exit(1);
    }
}

fn run() -> Res<()> {
    let opts = options()?;
    let genai = bench::genai_binary("`cargo build --release --example bench-local --bin genai`")?;
    let env_in = |cmd: &mut Command, dir: &Path| {
        cmd.env("GENAI_CONFIG_DIR", dir.join("config"))
            .env("GENAI_DATA_DIR", dir.join("data"))
            .env("GENAI_LOG", "warn,genai_local=debug")
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL");
    };

    println!(
        "model {} ({:.0} MB), threads {}, max_tokens {}, {} cores",
        opts.model.display(),
        std::fs::metadata(&opts.model).map_or(0.0, |m| m.len() as f64 / 1e6),
        opts.threads
            .map_or("each side's default".to_string(), |t| t.to_string()),
        opts.tokens,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    if !opts.concurrency.is_empty() {
        return local_concurrency::run(&genai, &env_in, &opts, &opts.concurrency);
    }
    let dir = tempfile::tempdir().map_err(|e| format!("cannot make a temp folder: {e}"))?;
    write_config(dir.path(), &opts, None)?;
    let env = |cmd: &mut Command| env_in(cmd, dir.path());
    let max = format!("max_tokens={}", opts.tokens);
    let ask1 = ask(
        &genai,
        &env,
        &[
            "ask",
            "-m",
            "bench",
            "-p",
            &max,
            "-p",
            "temperature=0",
            PROMPT_1,
        ],
        &opts,
    )?;
    print_ask("genai ask, turn 1 (new process)", &ask1);
    let ask2 = ask(&genai, &env, &["ask", "--continue", PROMPT_2], &opts)?;
    print_ask("genai ask --continue, turn 2 (new process)", &ask2);

    let mut cmd = Command::new(&genai);
    cmd.arg("daemon");
    env(&mut cmd);
    let mut daemon = Daemon::spawn(cmd)?;
    daemon.call(
        "Initialize",
        json!({"clientInfo": {"name": "bench-local", "version": "0"}, "capabilities": {"streaming": true}}),
    )?;
    let conv = daemon.call(
        "CreateConversation",
        json!({"serviceProvider": "bench", "parameters": {"max_tokens": opts.tokens, "temperature": 0}}),
    )?;
    let cid = conv["conversationId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    for (i, prompt) in [PROMPT_1, PROMPT_2].into_iter().enumerate() {
        let t = daemon.turn(&cid, prompt)?;
        println!("genai daemon, turn {} (same process, KV cache kept)", i + 1);
        println!(
            "  time to first chunk {:>8.1} ms   turn {:>8.1} ms",
            ms(t.first_chunk),
            ms(t.total)
        );
        let gen = t.total.saturating_sub(t.first_chunk).as_secs_f64();
        println!(
            "  prompt tokens {:>5}   cached {:>5}   evaluated {:>5}   completion tokens {:>4}   {:.1} tokens/s (first chunk → final)",
            t.prompt,
            t.cached,
            t.prompt - t.cached,
            t.completion,
            if gen > 0.0 { (t.completion.saturating_sub(1)) as f64 / gen } else { 0.0 }
        );
    }
    let (rss, hwm) = daemon.memory_kib()?;
    println!(
        "  daemon RSS {:.0} MB, peak {:.0} MB",
        rss as f64 / 1024.0,
        hwm as f64 / 1024.0
    );
    daemon.shutdown()?;
    Ok(())
}

/// `dir/config/config.toml`: one local provider `bench` on the model; with `slots`, that many
/// slots of `--context` tokens each, else the engine's defaults.
fn write_config(dir: &Path, opts: &Options, slots: Option<usize>) -> Res<()> {
    let config_dir = dir.join("config");
    std::fs::create_dir_all(&config_dir).map_err(|e| e.to_string())?;
    std::fs::write(
        config_dir.join("config.toml"),
        format!(
            "[service_providers.bench]\nkind = \"local\"\nmodel = {}\n{}{}",
            Value::String(opts.model.display().to_string()),
            opts.threads
                .map_or(String::new(), |t| format!("threads = {t}\n")),
            slots.map_or(String::new(), |n| format!(
                "context_size = {}\nslots = {n}\nkv_unified = {}\n",
                opts.context, opts.kv_unified
            )),
        ),
    )
    .map_err(|e| e.to_string())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn options() -> Res<Options> {
    let mut model = std::env::var_os("GENAI_TEST_MODEL").map(PathBuf::from);
    let mut threads = None;
    let mut beside = vec![Beside::Idle];
    let mut tokens = 128;
    let mut context = 4096;
    let mut concurrency = Vec::new();
    let mut llama_server = None;
    let mut kv_unified = false;
    let mut schema = None;
    let mut tool_choice = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{a} takes a value"));
        match a.as_str() {
            "--model" => model = Some(PathBuf::from(value()?)),
            "--threads" => threads = Some(value()?.parse().map_err(|e| format!("--threads: {e}"))?),
            "--beside" => {
                beside = value()?
                    .split(',')
                    .map(|b| match b.trim() {
                        "idle" => Ok(Beside::Idle),
                        "busy" => Ok(Beside::Busy),
                        other => Err(format!("--beside takes idle and busy, not {other:?}")),
                    })
                    .collect::<Res<_>>()?
            }
            "--tokens" => tokens = value()?.parse().map_err(|e| format!("--tokens: {e}"))?,
            "--context" => context = value()?.parse().map_err(|e| format!("--context: {e}"))?,
            "--concurrency" => {
                concurrency = value()?
                    .split(',')
                    .map(|n| match n.trim().parse::<usize>() {
                        Ok(n) if n > 0 => Ok(n),
                        _ => Err(format!("--concurrency: {n:?} is not a positive number")),
                    })
                    .collect::<Res<_>>()?
            }
            "--llama-server" => llama_server = Some(PathBuf::from(value()?)),
            "--kv-unified" => kv_unified = true,
            "--schema" => {
                let path = value()?;
                let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
                schema = Some(
                    serde_json::from_str(&text).map_err(|e| format!("{path}: not JSON: {e}"))?,
                );
            }
            "--tools" => tool_choice = tool_choice.or(Some("required".to_string())),
            "--tool-choice" => match value()?.as_str() {
                c @ ("required" | "auto") => tool_choice = Some(c.to_string()),
                c => return Err(format!("--tool-choice takes required or auto, not {c}")),
            },
            other => return Err(format!("unknown argument {other}")),
        }
    }
    let model = match model {
        Some(m) => m,
        None => {
            let paths = genai_core::config::Paths::from_env().map_err(|e| e.message)?;
            genai_core::models::ModelLibrary::open(&paths)
                .default_model()
                .map_err(|e| e.message)?
                .ok_or("no model: pass --model PATH, set GENAI_TEST_MODEL, or run scripts/install-demo-model.sh")?
        }
    };
    let model = model
        .canonicalize()
        .map_err(|e| format!("{}: {e}", model.display()))?;
    if (llama_server.is_some() || schema.is_some() || tool_choice.is_some() || beside.len() > 1)
        && concurrency.is_empty()
    {
        return Err(
            "--llama-server, --schema, --tools and --beside need --concurrency N[,N...]".into(),
        );
    }
    if schema.is_some() && tool_choice.is_some() {
        return Err("--schema and --tools are measured one at a time".into());
    }
    Ok(Options {
        model,
        threads,
        beside,
        tokens,
        context,
        concurrency,
        llama_server,
        kv_unified,
        schema,
        tool_choice,
    })
}

/// `text` without ANSI colour sequences (`ESC [ ... m`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The `key=value` fields of the engine's "local generation done" log line.
fn engine_line(stderr: &str) -> Option<HashMap<String, String>> {
    let stderr = strip_ansi(stderr);
    let line = stderr
        .lines()
        .rev()
        .find(|l| l.contains("local generation done"))?;
    Some(
        line.split_whitespace()
            .filter_map(|w| w.split_once('='))
            .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
            .collect(),
    )
}

struct AskRun {
    first_byte: Duration,
    total: Duration,
    peak_kib: u64,
    fields: HashMap<String, String>,
}

fn ask(genai: &Path, env: &dyn Fn(&mut Command), args: &[&str], opts: &Options) -> Res<AskRun> {
    let mut cmd = Command::new(genai);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    env(&mut cmd);
    let _ = opts;
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start genai: {e}"))?;
    let pid = child.id();
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let mut stderr = child.stderr.take().ok_or("no stderr")?;
    let (tx, rx) = mpsc::channel::<Instant>();
    let out_reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        let mut all = Vec::new();
        let mut first = true;
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 {
                break;
            }
            if first {
                let _ = tx.send(Instant::now());
                first = false;
            }
            all.extend_from_slice(&buf[..n]);
        }
        all
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let mut peak = 0;
    let status = loop {
        if let Ok((_, hwm)) = bench::memory_kib(pid) {
            peak = peak.max(hwm);
        }
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            return Err(format!("genai {} took over {DEADLINE:?}", args.join(" ")));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let total = started.elapsed();
    let out = out_reader.join().unwrap_or_default();
    let err = err_reader.join().unwrap_or_default();
    if !status.success() {
        return Err(format!(
            "genai {} failed ({status}): {}",
            args.join(" "),
            err.trim()
        ));
    }
    let first_byte = rx.try_recv().map_or(total, |at| at.duration_since(started));
    let fields = engine_line(&err)
        .ok_or_else(|| format!("no engine log line in genai's stderr: {}", err.trim()))?;
    let _ = out;
    Ok(AskRun {
        first_byte,
        total,
        peak_kib: peak,
        fields,
    })
}

fn print_ask(title: &str, r: &AskRun) {
    let f = |k: &str| r.fields.get(k).cloned().unwrap_or_else(|| "?".into());
    println!("{title}");
    println!(
        "  time to first token {:>8.1} ms   wall {:>8.1} ms   peak RSS {:.0} MB",
        ms(r.first_byte),
        ms(r.total),
        r.peak_kib as f64 / 1024.0
    );
    let tps: f64 = f("tokens_per_second").parse().unwrap_or(0.0);
    println!(
        "  prompt tokens {:>5}   cached {:>5}   prompt eval {:>6} ms   completion tokens {:>4}   {:.1} tokens/s (engine decode loop)",
        f("prompt_tokens"),
        f("cached_tokens"),
        f("prompt_ms"),
        f("completion_tokens"),
        tps
    );
}

struct TurnRun {
    first_chunk: Duration,
    total: Duration,
    prompt: u64,
    cached: u64,
    completion: u64,
}

/// `genai daemon` over newline-delimited JSON.
struct Daemon {
    child: Child,
    stdin: std::process::ChildStdin,
    rx: Receiver<Value>,
    next_id: i64,
}

impl Daemon {
    fn spawn(cmd: Command) -> Res<Daemon> {
        Self::spawn_logging(cmd, Stdio::null())
    }

    /// [`Daemon::spawn`] with its stderr (its log) to `stderr`.
    fn spawn_logging(mut cmd: Command, stderr: Stdio) -> Res<Daemon> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("cannot start genai daemon: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    if tx.send(v).is_err() {
                        break;
                    }
                }
            }
        });
        Ok(Daemon {
            child,
            stdin,
            rx,
            next_id: 1,
        })
    }

    fn send(&mut self, method: &str, params: Value) -> Res<i64> {
        let id = self.next_id;
        self.next_id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{msg}")
            .and_then(|_| self.stdin.flush())
            .map_err(|e| format!("cannot write to the daemon: {e}"))?;
        Ok(id)
    }

    fn recv(&mut self, deadline: Instant) -> Res<Value> {
        let left = deadline.saturating_duration_since(Instant::now());
        self.rx
            .recv_timeout(left)
            .map_err(|_| "the daemon did not answer in time".to_string())
    }

    fn call(&mut self, method: &str, params: Value) -> Res<Value> {
        let id = self.send(method, params)?;
        let deadline = Instant::now() + DEADLINE;
        loop {
            let m = self.recv(deadline)?;
            if m["id"] == id {
                if let Some(e) = m.get("error") {
                    return Err(format!("{method} failed: {e}"));
                }
                return Ok(m["result"].clone());
            }
        }
    }

    fn turn(&mut self, cid: &str, text: &str) -> Res<TurnRun> {
        let started = Instant::now();
        self.send(
            "OnNewMessage",
            json!({"conversationId": cid, "message": text}),
        )?;
        let deadline = started + DEADLINE;
        let mut first = None;
        loop {
            let m = self.recv(deadline)?;
            match m["method"].as_str() {
                Some("OnFeatureResponseChunk") => {
                    first.get_or_insert_with(|| started.elapsed());
                }
                Some("OnFeatureResponse") if m["params"]["final"] == true => {
                    let total = started.elapsed();
                    let p = &m["params"];
                    if p["isSuccess"] != true {
                        return Err(format!("the turn failed: {}", p["error"]));
                    }
                    let n = |k: &str| p["usage"][k].as_u64().unwrap_or(0);
                    return Ok(TurnRun {
                        first_chunk: first.unwrap_or(total),
                        total,
                        prompt: n("inputTokens"),
                        cached: n("cacheReadTokens"),
                        completion: n("outputTokens"),
                    });
                }
                _ => {}
            }
        }
    }

    fn memory_kib(&self) -> Res<(u64, u64)> {
        bench::memory_kib(self.child.id())
    }

    fn shutdown(mut self) -> Res<()> {
        let _ = self.call("Shutdown", json!({}));
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if self.child.try_wait().map_err(|e| e.to_string())?.is_some() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        Err("the daemon did not exit".into())
    }
}
