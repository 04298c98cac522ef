//! `bench-local --concurrency N[,N...]`: N conversations at once through `genai daemon` (one
//! engine with N slots), and, given `--llama-server PATH`, N concurrent streaming chat requests
//! to llama.cpp's `llama-server -np N` on the same GGUF, threads and per-slot context. For each N
//! (greedy, every stream run to `--tokens` with `ignore_eos` on both sides, so that both do the
//! same work) it prints aggregate tokens/s, each stream's time to first token, the wall time and the server
//! process's peak memory (VmHWM), and the genai / llama-server ratio. It also runs each prompt
//! alone in a fresh server process and counts, for every N, the streams whose greedy text is the
//! one they give alone. It only measures: it never tunes either side beyond slots, context size
//! and threads. Without `--threads` each side keeps its own default, and the table says the
//! threads each used (genai's engine log, llama-server's `system_info` line); `--beside busy`
//! runs every level again beside a busy loop that takes a core. The servers driven over HTTP
//! (`genai serve`'s warm route, llama-server) are in `local_servers.rs`.

#[path = "local_servers.rs"]
mod servers;

use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::http_stream::{stream_request, Stream};
use crate::same_grammar::genai_constrained;
use crate::{bench, ms, Beside, Daemon, Options, Res, DEADLINE};

pub use servers::Serve;
use servers::{llama_server_run, serve_run};

/// One prompt per stream (the streams differ, as real conversations would); each asks for a
/// long answer so that both servers usually run to `--tokens`.
pub const PROMPTS: [&str; 8] = [
    "Write a long story about a lighthouse keeper.",
    "Write a long story about a dragon who learns to bake bread.",
    "Write a long essay about the history of bicycles.",
    "Write a long story about two friends crossing a desert.",
    "Write a long essay about why people keep gardens.",
    "Write a long story about a robot that paints pictures.",
    "Write a long essay about life in a medieval village.",
    "Write a long story about a cat who sails around the world.",
];

/// N streams run at once against one server process.
pub struct Run {
    streams: Vec<Stream>,
    wall: Duration,
    peak_kib: u64,
    /// The threads the server ran with, generation/prompts, as its log says.
    threads: Option<String>,
}

/// A loop that keeps one core busy until dropped (`--beside busy`).
struct BusyLoop(Child);

impl BusyLoop {
    fn start() -> Res<BusyLoop> {
        let child = Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .stdin(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start the busy loop: {e}"))?;
        // Let the scheduler see it before a server measures the load.
        std::thread::sleep(Duration::from_millis(300));
        Ok(BusyLoop(child))
    }
}

impl Drop for BusyLoop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The threads a log says: genai's `local context made ... threads=N threads_batch=M`, or
/// llama-server's `n_threads = N` (`system_info: n_threads = N (n_threads_batch = M)` in some
/// versions, `llama threadpool init, n_threads = N` in others).
fn threads_in(log: &str) -> Option<String> {
    let log = crate::strip_ansi(log);
    if let Some(line) = log.lines().rev().find(|l| l.contains("local context made")) {
        let field = |k: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(k))
                .map(str::to_string)
        };
        return Some(format!(
            "{}/{}",
            field("threads=")?,
            field("threads_batch=")?
        ));
    }
    let line = log.lines().find(|l| l.contains("n_threads = "))?;
    let number = |after: &str| -> Option<String> {
        let rest = &line[line.find(after)? + after.len()..];
        Some(rest.chars().take_while(char::is_ascii_digit).collect())
    };
    let threads = number("n_threads = ")?;
    let batch = number("n_threads_batch = ").unwrap_or_else(|| threads.clone());
    Some(format!("{threads}/{batch}"))
}

impl Run {
    fn tokens(&self) -> u64 {
        self.streams.iter().map(|s| s.tokens).sum()
    }

    /// Completion tokens of all streams over the wall time (first request → last token).
    fn aggregate(&self) -> f64 {
        self.tokens() as f64 / self.wall.as_secs_f64().max(1e-9)
    }

    /// Tokens after each stream's first, over the span from the earliest first token to the
    /// last token: the decode rate once every prompt is in.
    fn decode(&self) -> f64 {
        let first = self
            .streams
            .iter()
            .map(|s| s.first)
            .min()
            .unwrap_or_default();
        let span = self.wall.saturating_sub(first).as_secs_f64();
        let after: u64 = self
            .streams
            .iter()
            .map(|s| s.tokens.saturating_sub(1))
            .sum();
        // A reply that comes whole (genai's tool calls) has no decode span to speak of.
        if span > 0.05 {
            after as f64 / span
        } else {
            0.0
        }
    }

    fn mean_first(&self) -> Duration {
        let n = self.streams.len().max(1) as u32;
        self.streams.iter().map(|s| s.first).sum::<Duration>() / n
    }

    fn print(&self, title: &str) {
        let firsts: Vec<String> = self
            .streams
            .iter()
            .map(|s| format!("{:.0} ({} tok)", ms(s.first), s.tokens))
            .collect();
        println!("  {title}");
        println!(
            "    aggregate {:>6.1} tokens/s ({} tokens)   decode {:>6.1} tokens/s   wall {:>7.0} ms   peak {:>4.0} MB",
            self.aggregate(),
            self.tokens(),
            self.decode(),
            ms(self.wall),
            self.peak_kib as f64 / 1024.0
        );
        println!(
            "    time to first token per stream, ms (tokens): {}   mean {:.0}",
            firsts.join(" "),
            ms(self.mean_first())
        );
    }

    /// How many streams gave the text their prompt gives alone (`alone[i]` for prompt i).
    fn same_as_alone(&self, alone: &[String]) -> usize {
        self.streams
            .iter()
            .zip(alone)
            .filter(|(s, a)| s.text == **a)
            .count()
    }

    /// Where each stream's text first parts from its text alone.
    fn print_differences(&self, alone: &[String]) {
        for (i, (s, a)) in self.streams.iter().zip(alone).enumerate() {
            if let Some(at) = s.text.chars().zip(a.chars()).position(|(x, y)| x != y) {
                let from = |t: &str| t.chars().skip(at).take(24).collect::<String>();
                println!(
                    "    stream {i} parts from its text alone at character {at}: {:?} / alone {:?}",
                    from(&s.text),
                    from(a)
                );
            } else if s.text != *a {
                println!("    stream {i}: one text is the other's start");
            }
        }
    }
}

/// Each of the first `n` prompts alone, each in a fresh server process (so that no cache of
/// another prompt is reused): the greedy texts the concurrent streams are compared with.
fn alone_texts(n: usize, run: &dyn Fn(&[usize]) -> Res<Run>) -> Res<Vec<String>> {
    (0..n)
        .map(|i| Ok(run(&[i])?.streams.remove(0).text))
        .collect()
}

/// Runs every N of `--concurrency` for genai and, when given, llama-server; prints the table.
pub fn run(
    genai: &Path,
    env: &dyn Fn(&mut Command, &Path),
    opts: &Options,
    levels: &[usize],
) -> Res<()> {
    let most = levels.iter().copied().max().unwrap_or(1);
    if let Some(choice) = &opts.tool_choice {
        println!("every request offers the tool {TOOL_NAME}, tool_choice {choice}");
    }
    println!("each of the first {most} prompts alone, for the texts");
    let alone = alone_texts(most, &|p| genai_run(genai, env, opts, p))?;
    // With tools, llama-server decodes genai's own prompts and grammars (`same_grammar.rs`).
    let same = match (&opts.llama_server, &opts.tool_choice) {
        (Some(_), Some(_)) => {
            println!("llama-server gets genai's rendered prompts and tool grammars (/completion)");
            Some(genai_constrained(genai, env, opts, most)?)
        }
        _ => None,
    };
    let same = same.as_deref();
    let their_alone = match &opts.llama_server {
        Some(path) => Some(alone_texts(most, &|p| {
            llama_server_run(path, opts, p, same)
        })?),
        None => None,
    };
    let mut rows = Vec::new();
    for &beside in &opts.beside {
        let _busy = match beside {
            Beside::Busy => Some(BusyLoop::start()?),
            Beside::Idle => None,
        };
        for &n in levels {
            println!("{n} stream(s), {} tokens each, {beside:?}", opts.tokens);
            let prompts: Vec<usize> = (0..n).collect();
            let ours = genai_run(genai, env, opts, &prompts)?;
            ours.print(genai_side(opts));
            ours.print_differences(&alone);
            let theirs = match (&opts.llama_server, &their_alone) {
                (Some(path), Some(their_alone)) => {
                    let r = llama_server_run(path, opts, &prompts, same)?;
                    r.print("llama-server");
                    r.print_differences(their_alone);
                    Some(r)
                }
                _ => None,
            };
            rows.push((beside, n, ours, theirs));
        }
    }
    println!();
    println!("| beside | N | threads, genai / llama-server | genai tok/s | llama-server tok/s | ratio | genai TTFT mean | llama-server TTFT mean | genai wall | llama-server wall | genai peak | llama-server peak | same text as alone, genai / llama-server |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (beside, n, ours, theirs) in &rows {
        let dash = || "—".to_string();
        let t = theirs.as_ref();
        let same = format!(
            "{}/{n} / {}",
            ours.same_as_alone(&alone),
            t.zip(their_alone.as_ref())
                .map_or_else(dash, |(t, a)| format!("{}/{n}", t.same_as_alone(a)))
        );
        let threads = format!(
            "{} / {}",
            ours.threads.as_deref().unwrap_or("?"),
            t.map_or_else(dash, |t| t.threads.clone().unwrap_or_else(|| "?".into()))
        );
        println!(
            "| {} | {n} | {threads} | {:.1} | {} | {} | {:.0} ms | {} | {:.0} ms | {} | {:.0} MB | {} | {same} |",
            format!("{beside:?}").to_lowercase(),
            ours.aggregate(),
            t.map_or_else(dash, |t| format!("{:.1}", t.aggregate())),
            t.map_or_else(dash, |t| format!(
                "{:.2}",
                ours.aggregate() / t.aggregate().max(1e-9)
            )),
            ms(ours.mean_first()),
            t.map_or_else(dash, |t| format!("{:.0} ms", ms(t.mean_first()))),
            ms(ours.wall),
            t.map_or_else(dash, |t| format!("{:.0} ms", ms(t.wall))),
            ours.peak_kib as f64 / 1024.0,
            t.map_or_else(dash, |t| format!("{:.0} MB", t.peak_kib as f64 / 1024.0)),
        );
    }
    Ok(())
}

/// Which genai front-end a run drives: the daemon for free text, the serve's warm route (the
/// body llama-server gets) when replies are constrained.
fn genai_side(opts: &Options) -> &'static str {
    match constrained(opts) {
        true => "genai serve (warm route, the same body)",
        false => "genai daemon",
    }
}

fn constrained(opts: &Options) -> bool {
    opts.schema.is_some() || opts.tool_choice.is_some()
}

/// The tool `--tools` offers.
const TOOL_NAME: &str = "save_story";

/// The openai-chat body of one greedy request, the same for llama-server and genai's warm
/// route: the prompt, `tokens` at most, run to the end unless constrained, and the schema or
/// the tool.
fn chat_body(prompt: &str, tokens: u32, opts: &Options) -> Value {
    let mut body = json!({
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": tokens,
        "temperature": 0,
        "ignore_eos": !constrained(opts),
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if let Some(schema) = &opts.schema {
        body["response_format"] =
            json!({"type": "json_schema", "json_schema": {"name": "response", "schema": schema}});
    }
    if let Some(choice) = &opts.tool_choice {
        body["tools"] = json!([{"type": "function", "function": {
            "name": TOOL_NAME,
            "description": "Save a story with its title and its first paragraph.",
            "parameters": {"type": "object", "properties": {
                "title": {"type": "string"},
                "paragraph": {"type": "string"},
                "words": {"type": "integer"}
            }, "required": ["title", "paragraph", "words"]}
        }}]);
        body["tool_choice"] = json!(choice);
    }
    body
}

/// genai's side of one run: the daemon, or the serve's warm route when constrained.
fn genai_run(
    genai: &Path,
    env: &dyn Fn(&mut Command, &Path),
    opts: &Options,
    prompts: &[usize],
) -> Res<Run> {
    match constrained(opts) {
        true => serve_run(genai, env, opts, prompts),
        false => daemon_run(genai, env, opts, prompts),
    }
}

/// `genai daemon` with one slot per prompt: a warm-up turn loads the model, then one
/// conversation per prompt (indices into [`PROMPTS`]) sends its message, all at once.
fn daemon_run(
    genai: &Path,
    env: &dyn Fn(&mut Command, &Path),
    opts: &Options,
    prompts: &[usize],
) -> Res<Run> {
    let n = prompts.len();
    let dir = tempfile::tempdir().map_err(|e| format!("cannot make a temp folder: {e}"))?;
    crate::write_config(dir.path(), opts, Some(n))?;
    let mut cmd = Command::new(genai);
    cmd.arg("daemon");
    env(&mut cmd, dir.path());
    let log = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
    let stderr = Stdio::from(log.reopen().map_err(|e| e.to_string())?);
    let mut daemon = Daemon::spawn_logging(cmd, stderr)?;
    daemon.call(
        "Initialize",
        json!({"clientInfo": {"name": "bench-local", "version": "0"}, "capabilities": {"streaming": true}}),
    )?;
    let create = |daemon: &mut Daemon, tokens: u32| -> Res<String> {
        let conv = daemon.call(
            "CreateConversation",
            json!({"serviceProvider": "bench", "parameters": {"max_tokens": tokens, "temperature": 0, "ignore_eos": true}}),
        )?;
        Ok(conv["conversationId"]
            .as_str()
            .unwrap_or_default()
            .to_string())
    };
    let warm = create(&mut daemon, 2)?;
    daemon.turn(&warm, "Hi")?;
    let mut index = HashMap::new();
    for i in 0..n {
        index.insert(create(&mut daemon, opts.tokens)?, i);
    }
    let started = Instant::now();
    for (cid, &i) in &index {
        daemon.send(
            "OnNewMessage",
            json!({"conversationId": cid, "message": PROMPTS[prompts[i] % PROMPTS.len()]}),
        )?;
    }
    let deadline = started + DEADLINE;
    let mut first: Vec<Option<Duration>> = vec![None; n];
    let mut streams: Vec<Option<Stream>> = (0..n).map(|_| None).collect();
    while streams.iter().any(Option::is_none) {
        let m = daemon.recv(deadline)?;
        let p = &m["params"];
        let Some(&i) = p["conversationId"].as_str().and_then(|c| index.get(c)) else {
            continue;
        };
        match m["method"].as_str() {
            Some("OnFeatureResponseChunk") => {
                first[i].get_or_insert_with(|| started.elapsed());
            }
            Some("OnFeatureResponse") if p["final"] == true => {
                let done = started.elapsed();
                if p["isSuccess"] != true {
                    return Err(format!("a turn failed: {}", p["error"]));
                }
                streams[i] = Some(Stream {
                    first: first[i].unwrap_or(done),
                    done,
                    tokens: p["usage"]["outputTokens"].as_u64().unwrap_or(0),
                    text: p["summary"].as_str().unwrap_or_default().to_string(),
                });
            }
            _ => {}
        }
    }
    let streams: Vec<Stream> = streams.into_iter().flatten().collect();
    let wall = streams.iter().map(|s| s.done).max().unwrap_or_default();
    let (_, peak_kib) = daemon.memory_kib()?;
    daemon.shutdown()?;
    Ok(Run {
        streams,
        wall,
        peak_kib,
        threads: threads_in(&std::fs::read_to_string(log.path()).unwrap_or_default()),
    })
}

/// Each body as one streaming request to `path`, all at once (a thread each), timed from
/// `started`; the server process `pid`'s peak memory at the end.
fn at_once(
    port: u16,
    path: &'static str,
    token: Option<&str>,
    bodies: impl Iterator<Item = Value>,
    started: Instant,
    pid: u32,
) -> Res<Run> {
    let workers: Vec<_> = bodies
        .map(|body| {
            let token = token.map(str::to_string);
            std::thread::spawn(move || stream_request(port, path, token.as_deref(), &body, started))
        })
        .collect();
    let mut streams = Vec::new();
    for w in workers {
        streams.push(w.join().map_err(|_| "a request thread panicked")??);
    }
    let wall = streams.iter().map(|s| s.done).max().unwrap_or_default();
    let (_, peak_kib) = bench::memory_kib(pid)?;
    Ok(Run {
        streams,
        wall,
        peak_kib,
        threads: None,
    })
}
