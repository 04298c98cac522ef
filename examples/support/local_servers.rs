//! The two servers `bench-local --concurrency` drives over HTTP, each with the openai-chat body
//! of `chat_body`: `genai serve` on its warm local route (when replies are constrained), and
//! llama.cpp's `llama-server -np N`, given `--llama-server PATH` (with `--tools`, on
//! `/completion` with genai's own prompts and grammars). A module of `local_concurrency.rs`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{at_once, chat_body, threads_in, Run, PROMPTS};
use crate::http_stream::{free_port, http_status, stream_request};
use crate::same_grammar::Constrained;
use crate::{Options, Res, DEADLINE};

/// A `genai serve` of the bench on a free loopback port, its token read; killed when dropped.
pub struct Serve {
    child: Child,
    pub port: u16,
    pub token: String,
    /// The folder of its config and data (removed when dropped).
    dir: tempfile::TempDir,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serve {
    /// Started with `slots` slots and its stderr to `stderr`; `log` is its `GENAI_LOG`.
    pub fn start(
        genai: &Path,
        env: &dyn Fn(&mut Command, &Path),
        opts: &Options,
        slots: usize,
        stderr: Stdio,
        log: Option<&str>,
    ) -> Res<Serve> {
        let dir = tempfile::tempdir().map_err(|e| format!("cannot make a temp folder: {e}"))?;
        crate::write_config(dir.path(), opts, Some(slots))?;
        let port = free_port()?;
        let mut cmd = Command::new(genai);
        cmd.args([
            "serve",
            "--no-preload",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ]);
        env(&mut cmd, dir.path());
        if let Some(log) = log {
            cmd.env("GENAI_LOG", log);
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("cannot start genai serve: {e}"))?;
        let stdout = child.stdout.take();
        let mut serve = Serve {
            child,
            port,
            token: String::new(),
            dir,
        };
        let mut line = String::new();
        BufReader::new(stdout.ok_or("no stdout")?)
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        if !line.starts_with("listening on") {
            return Err(format!("genai serve did not start: {line:?}"));
        }
        let token = std::fs::read_to_string(serve.dir.path().join("config/serve-token"))
            .map_err(|e| format!("no serve token: {e}"))?;
        serve.token = token.trim().to_string();
        Ok(serve)
    }

    /// One request to the warm local route (`POST /genai/local`): the openai-chat body
    /// llama-server gets, streamed.
    pub fn request(opts: &Options, prompt: &str, tokens: u32) -> Value {
        json!({"provider": "bench", "modelFile": opts.model, "model": "", "stream": true,
               "body": chat_body(prompt, tokens, opts)})
    }
}

/// `genai serve` with one slot per prompt: a warm-up request loads the model, then one
/// streaming request per prompt to its warm local route (`POST /genai/local`), all at once,
/// each with the body llama-server gets.
pub(crate) fn serve_run(
    genai: &Path,
    env: &dyn Fn(&mut Command, &Path),
    opts: &Options,
    prompts: &[usize],
) -> Res<Run> {
    let log = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
    let stderr = Stdio::from(log.reopen().map_err(|e| e.to_string())?);
    let serve = Serve::start(genai, env, opts, prompts.len(), stderr, None)?;
    let (port, token) = (serve.port, serve.token.as_str());
    let warm = Serve::request(opts, "Hi", 2);
    stream_request(port, "/genai/local", Some(token), &warm, Instant::now())?;
    let started = Instant::now();
    let bodies = prompts
        .iter()
        .map(|&i| Serve::request(opts, PROMPTS[i % PROMPTS.len()], opts.tokens));
    let mut run = at_once(
        port,
        "/genai/local",
        Some(token),
        bodies,
        started,
        serve.child.id(),
    )?;
    run.threads = threads_in(&std::fs::read_to_string(log.path()).unwrap_or_default());
    Ok(run)
}

/// `llama-server -np n -c n×context` on the model, n the number of prompts (indices into
/// [`PROMPTS`]); a warm-up request, then one streaming chat request per prompt at once, one
/// thread each.
pub(crate) fn llama_server_run(
    path: &Path,
    opts: &Options,
    prompts: &[usize],
    same: Option<&[Constrained]>,
) -> Res<Run> {
    let n = prompts.len();
    let port = free_port()?;
    let log = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
    let mut server = Command::new(path);
    server
        .arg("-m")
        .arg(&opts.model)
        .args(["-np", &n.to_string()])
        .args(["-c", &(n as u32 * opts.context).to_string()]);
    // Without --threads, llama-server's own default (the physical cores).
    if let Some(t) = opts.threads {
        server.args(["-t", &t.to_string(), "-tb", &t.to_string()]);
    }
    let mut child = server
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log.reopen().map_err(|e| e.to_string())?)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", path.display()))?;
    let result = drive_llama_server(&mut child, port, opts, prompts, same);
    let _ = child.kill();
    let _ = child.wait();
    let said = std::fs::read_to_string(log.path()).unwrap_or_default();
    result
        .map(|mut run| {
            run.threads = threads_in(&said);
            run
        })
        .map_err(|e| {
            let tail = std::fs::read_to_string(log.path()).unwrap_or_default();
            let tail: Vec<&str> = tail.lines().rev().take(5).collect();
            format!("llama-server: {e} (its log ends: {})", tail.join(" / "))
        })
}

fn drive_llama_server(
    child: &mut Child,
    port: u16,
    opts: &Options,
    prompts: &[usize],
    same: Option<&[Constrained]>,
) -> Res<Run> {
    let ready_by = Instant::now() + DEADLINE;
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            return Err(format!("exited before it was ready ({status})"));
        }
        if http_status(port, "/health").is_ok_and(|s| s == 200) {
            break;
        }
        if Instant::now() > ready_by {
            return Err(format!("not ready after {DEADLINE:?}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let (path, warm, bodies): (_, _, Vec<Value>) = match same {
        Some(same) => (
            "/completion",
            json!({"prompt": "Hi", "n_predict": 2, "stream": true}),
            prompts
                .iter()
                .map(|&i| same[i % same.len()].body(opts.tokens))
                .collect(),
        ),
        None => (
            "/v1/chat/completions",
            chat_body("Hi", 2, opts),
            prompts
                .iter()
                .map(|&i| chat_body(PROMPTS[i % PROMPTS.len()], opts.tokens, opts))
                .collect(),
        ),
    };
    stream_request(port, path, None, &warm, Instant::now())?;
    let started = Instant::now();
    at_once(port, path, None, bodies.into_iter(), started, child.id())
}
