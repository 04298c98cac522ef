//! The local model's first use, as a new user meets it: `genai ask` with nothing configured
//! and a model in the models folder. A broken model file gives one clean error line; llama.cpp's
//! own log stays out of stderr, without colour codes and without its per-tensor lines even at
//! `GENAI_LOG=debug`; a one-shot `ask` makes one slot while the daemon keeps four.
//!
//! The broken-file tests need no model; the others use the real test model
//! (`local_model::test_model`) and are skipped, saying why, without it.
//!
//! Built only with the `local` cargo feature (the default).

use std::path::Path;
use std::process::{Command, Output, Stdio};

use genai_core::models::gguf;
use serde_json::json;

use crate::local_model::{self, test_model, TURN};
use crate::support::cli::{stderr, stdout, Folders};
use crate::support::rpc_client::{Daemon, DaemonConfig, Framing};

/// `genai ask` with these folders, stdin closed and output piped (not a terminal).
fn ask(dirs: &Folders, args: &[&str]) -> Command {
    let mut c = dirs.genai(&["ask"]);
    c.args(args)
        .env_remove("GENAI_LOG")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn run(c: &mut Command) -> Output {
    crate::models::wait(c.spawn().unwrap())
}

/// Puts `bytes` in the models folder as `NAME.gguf`, by hand.
fn place(dirs: &Folders, name: &str, bytes: &[u8]) {
    let models = dirs.data.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    std::fs::write(models.join(format!("{name}.gguf")), bytes).unwrap();
}

/// The model linked into the models folder as its only (so default) model.
fn link_model(dirs: &Folders, model: &Path) {
    let models = dirs.data.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    std::os::unix::fs::symlink(model, models.join("smollm2-135m-instruct-q4_1.gguf")).unwrap();
}

#[track_caller]
fn assert_one_clean_line(o: &Output, needle: &str) {
    let err = stderr(o);
    assert!(!o.status.success(), "{err}");
    assert_eq!(err.lines().count(), 1, "one line:\n{err}");
    assert!(err.starts_with("genai: "), "{err}");
    assert!(err.contains(needle), "{err}");
    assert!(!err.contains("\x1b["), "no colour codes: {err:?}");
    assert!(!err.contains("null result"), "{err}");
    assert!(!err.contains("ERROR"), "no raw log line: {err}");
    assert!(stdout(o).is_empty(), "{}", stdout(o));
}

#[test]
fn a_hand_placed_file_that_is_not_a_gguf_gives_one_clean_error_line() {
    let dirs = Folders::new();
    place(
        &dirs,
        "broken",
        br#"{"error":"model not found","detail":"no such file","code":404000}"#,
    );
    let o = run(&mut ask(&dirs, &["hi"]));
    assert_one_clean_line(&o, "broken.gguf: it is not a GGUF model file");
    assert_one_clean_line(&o, "it looks like JSON");
}

#[test]
fn a_gguf_llama_cpp_cannot_read_gives_one_clean_error_line_and_no_raw_log() {
    let dirs = Folders::new();
    // A plausible header over zeros: it passes genai's check and fails in llama.cpp, which logs
    // errors of its own.
    place(&dirs, "zeros", &gguf::minimal(1, 1, 64 * 1024));
    let o = run(&mut ask(&dirs, &["hi"]));
    assert_one_clean_line(&o, "zeros.gguf: llama.cpp cannot read it");

    // Asked for, llama.cpp's reasons show, through the log and without colour codes.
    let o = run(ask(&dirs, &["hi"]).env("GENAI_LOG", "info"));
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(!err.contains("\x1b["), "no colour codes in a pipe: {err:?}");
    assert!(err.lines().any(|l| l.contains("ERROR")), "{err}");
    assert!(err.lines().any(|l| l.starts_with("genai: ")), "{err}");
}

/// The `sequences=N` of the engine's "local context made" line.
fn sequences(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.contains("local context made"))
        .filter_map(|l| l.split_whitespace().find(|w| w.starts_with("sequences=")))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_one_shot_ask_makes_one_slot_and_debug_logs_carry_no_tensor_noise_nor_colour() {
    let Some(model) = test_model() else { return };
    let dirs = Folders::new();
    link_model(&dirs, &model);
    let args = ["-p", "max_tokens=8", "-p", "temperature=0", "Say hi."];
    let o = run(ask(&dirs, &args).env("GENAI_LOG", "debug"));
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(!stdout(&o).trim().is_empty(), "a reply");
    assert_eq!(sequences(&err), ["sequences=1"], "{err}");
    assert!(!err.contains("\x1b["), "no colour codes in a pipe");
    // llama.cpp's debug level (a line per tensor: 2,291 lines in all) stays out.
    let lines = err.lines().count();
    assert!(lines < 300, "{lines} lines of log:\n{err}");
    assert!(
        !err.contains("- tensor") && !err.contains("load_tensors: layer"),
        "per-tensor lines: {err}"
    );

    // Without GENAI_LOG, nothing of llama.cpp at all: at most genai's own note that the
    // 8-token reply was cut at its limit.
    let o = run(&mut ask(&dirs, &args));
    assert!(o.status.success(), "{}", stderr(&o));
    let said = stderr(&o);
    assert!(
        said.lines()
            .all(|l| l == "genai: the reply was cut: it reached its token limit (max_tokens)"),
        "a quiet stderr: {said}"
    );

    // A configured `slots` wins.
    dirs.write_config(&format!(
        "[service_providers.smol]\nkind = \"local\"\nmodel = {}\nslots = 2\n",
        json!(model.display().to_string())
    ));
    let o = run(ask(&dirs, &[&["-m", "smol"][..], &args].concat()).env("GENAI_LOG", "debug"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(sequences(&stderr(&o)), ["sequences=2"], "{}", stderr(&o));
}

#[test]
fn the_daemon_keeps_four_slots() {
    let Some(model) = test_model() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cfg = DaemonConfig::in_dir(dir.path(), Framing::Lines, "daemon").env("GENAI_LOG", "debug");
    cfg.write_config(&format!(
        "[service_providers.gemma]\nkind = \"local\"\nmodel = {}\n",
        json!(model.display().to_string())
    ));
    let mut d = Daemon::spawn(&cfg);
    local_model::initialize(&mut d, true);
    let cid = local_model::conversation(&mut d, json!({"max_tokens": 4, "temperature": 0}));
    let (_, fin) = d.turn(&cid, "Hi", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let err = d.stderr_text();
    assert_eq!(sequences(&err), ["sequences=4"], "{err}");
    assert!(!err.contains("\x1b["), "no colour codes in a file");
    assert!(d.shutdown(local_model::EXIT).success());
}
