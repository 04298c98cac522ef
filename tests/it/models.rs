//! `genai models` run as a user would, downloading from a loopback file server that drops,
//! stalls and redirects on purpose.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use file_server::{Entry, FileServer, Plan};
use genai_core::models::gguf;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::support::cli::{self, stderr, stdout, Folders};
use crate::support::file_server;
use crate::support::poll::wait_until;

const DEADLINE: Duration = Duration::from_secs(60);

struct Env {
    dirs: Folders,
    server: FileServer,
}

impl Env {
    fn new() -> Env {
        Env {
            dirs: Folders::new(),
            server: FileServer::start(),
        }
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = self.dirs.genai(args);
        c.env("GENAI_HF_ENDPOINT", self.server.base_url())
            .env_remove("HF_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        wait(self.cmd(args).spawn().unwrap())
    }

    fn models(&self) -> PathBuf {
        self.dirs.data.path().join("models")
    }

    fn list(&self) -> Value {
        let o = self.run(&["models", "list", "--json"]);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    }
}

/// Waits for the child to exit, killing it and failing past the deadline.
pub(crate) fn wait(mut child: Child) -> Output {
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            panic!("genai did not finish within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn sha(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A GGUF header, then bytes that differ at every offset, so a misplaced range shows.
fn model_bytes(n: usize) -> Vec<u8> {
    let mut v = gguf::minimal(1, 1, 64);
    v.extend((0..n as u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    v
}

fn len(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

#[test]
fn a_dropped_download_resumes_with_a_range_from_where_it_stopped() {
    let env = Env::new();
    let body = model_bytes(300_000);
    env.server.add("/m/tiny.gguf", &body);
    env.server.plan(Plan::DropAfter(100_000));
    let url = env.server.url("/m/tiny.gguf");
    let o = env.run(&["models", "pull", &url, "--attempts", "3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let dest = env.models().join("tiny.gguf");
    assert_eq!(stdout(&o).trim(), dest.to_str().unwrap());
    assert_eq!(std::fs::read(&dest).unwrap(), body);
    let gets = env.server.gets("/m/tiny.gguf");
    assert_eq!(gets.len(), 2, "{gets:?}");
    assert_eq!(gets[0].range, None);
    assert_eq!(gets[1].range.as_deref(), Some("bytes=100000-"));
    assert!(!env.models().join("tiny.gguf.part").exists());
    assert!(
        stderr(&o).contains("unchecked"),
        "no sha256 anywhere must be said: {}",
        stderr(&o)
    );
}

#[test]
fn an_interrupted_pull_says_how_to_resume_and_the_next_pull_resumes() {
    let env = Env::new();
    let body = model_bytes(200_000);
    env.server.add("/m/a.gguf", &body);
    env.server.plan(Plan::DropAfter(50_000));
    let url = env.server.url("/m/a.gguf");
    let o = env.run(&["models", "pull", &url, "--attempts", "1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.contains("run the same `genai models pull` again to resume"),
        "{err}"
    );
    assert!(
        !env.models().join("a.gguf").exists(),
        "nothing under the final name"
    );
    assert_eq!(len(&env.models().join("a.gguf.part")), 50_000);
    assert_eq!(env.list(), serde_json::json!([]), "a part is not a model");

    let o = env.run(&["models", "pull", &url, "--sha256", &sha(&body)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        env.server
            .gets("/m/a.gguf")
            .last()
            .unwrap()
            .range
            .as_deref(),
        Some("bytes=50000-")
    );
    assert_eq!(std::fs::read(env.models().join("a.gguf")).unwrap(), body);
    cli::assert_stderr_says(&o, "checked against --sha256");
}

#[test]
fn a_part_from_another_url_is_not_resumed() {
    let env = Env::new();
    let (a, mut b) = (model_bytes(50_000), model_bytes(70_000));
    // Past the header, other bytes than `a`'s.
    b[64..].iter_mut().for_each(|x| *x ^= 0x5a);
    env.server.add("/one/m.gguf", &a);
    env.server.add("/two/m.gguf", &b);
    env.server.plan(Plan::DropAfter(10_000));
    let o = env.run(&[
        "models",
        "pull",
        &env.server.url("/one/m.gguf"),
        "--attempts",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(len(&env.models().join("m.gguf.part")), 10_000);
    let o = env.run(&["models", "pull", &env.server.url("/two/m.gguf")]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(env.server.gets("/two/m.gguf")[0].range, None);
    assert_eq!(std::fs::read(env.models().join("m.gguf")).unwrap(), b);
}

#[test]
fn a_server_that_ignores_the_range_restarts_the_file() {
    let env = Env::new();
    let body = model_bytes(120_000);
    env.server.add("/m/r.gguf", &body);
    env.server.set_ignore_range(true);
    env.server.plan(Plan::DropAfter(40_000));
    let url = env.server.url("/m/r.gguf");
    let o = env.run(&["models", "pull", &url, "--sha256", &sha(&body)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let gets = env.server.gets("/m/r.gguf");
    assert_eq!(gets[1].range.as_deref(), Some("bytes=40000-"));
    assert_eq!(std::fs::read(env.models().join("r.gguf")).unwrap(), body);
}

#[test]
fn a_checksum_mismatch_names_both_hashes_and_installs_nothing() {
    let env = Env::new();
    let body = model_bytes(10_000);
    env.server.add("/m/bad.gguf", &body);
    let wrong = "0".repeat(64);
    let o = env.run(&[
        "models",
        "pull",
        &env.server.url("/m/bad.gguf"),
        "--sha256",
        &wrong,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains(&wrong) && err.contains(&sha(&body)), "{err}");
    assert!(err.contains("nothing was installed"), "{err}");
    let left: Vec<_> = std::fs::read_dir(env.models())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn the_final_name_never_shows_a_partial_file() {
    let env = Env::new();
    let body = model_bytes(80_000);
    env.server.add("/m/slow.gguf", &body);
    let (release, rx) = std::sync::mpsc::channel();
    env.server.plan(Plan::StallAfter(30_000, rx));
    let child = env
        .cmd(&["models", "pull", &env.server.url("/m/slow.gguf")])
        .spawn()
        .unwrap();
    let part = env.models().join("slow.gguf.part");
    wait_until("30000 bytes are in the part file", DEADLINE, || {
        len(&part) == 30_000
    });
    assert!(!env.models().join("slow.gguf").exists());
    assert_eq!(env.list(), serde_json::json!([]));
    release.send(()).unwrap();
    let o = wait(child);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(env.models().join("slow.gguf")).unwrap(), body);
    assert!(!part.exists());
}

#[cfg(unix)]
#[test]
fn ctrl_c_keeps_the_part_and_says_how_to_resume() {
    let env = Env::new();
    let body = model_bytes(60_000);
    env.server.add("/m/int.gguf", &body);
    let (release, rx) = std::sync::mpsc::channel();
    env.server.plan(Plan::StallAfter(20_000, rx));
    let url = env.server.url("/m/int.gguf");
    let child = env.cmd(&["models", "pull", &url]).spawn().unwrap();
    let part = env.models().join("int.gguf.part");
    wait_until("20000 bytes are in the part file", DEADLINE, || {
        len(&part) == 20_000
    });
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let o = wait(child);
    drop(release);
    cli::assert_fails_with(&o, 130, "again to resume");
    assert_eq!(len(&part), 20_000);
    let o = env.run(&["models", "pull", &url]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        env.server
            .gets("/m/int.gguf")
            .last()
            .unwrap()
            .range
            .as_deref(),
        Some("bytes=20000-")
    );
    assert_eq!(std::fs::read(env.models().join("int.gguf")).unwrap(), body);
}

#[test]
fn hf_sources_resolve_on_the_endpoint_and_the_published_sha256_is_checked() {
    let env = Env::new();
    let body = model_bytes(5_000);
    let etag = |s: &str| vec![("X-Linked-Etag".to_string(), format!("\"{s}\""))];
    env.server.add_entry(
        "/org/repo/resolve/main/good.gguf",
        Entry {
            redirect: Some("/cdn/good".into()),
            headers: etag(&sha(&body)),
            ..Default::default()
        },
    );
    env.server.add("/cdn/good", &body);
    env.server.plan(Plan::DropAfter(2_000));
    let o = env.run(&["models", "pull", "hf:org/repo/good.gguf", "--default"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let resumed = env.server.gets("/cdn/good");
    assert_eq!(
        resumed.last().unwrap().range.as_deref(),
        Some("bytes=2000-"),
        "the range survives the redirect: {resumed:?}"
    );
    cli::assert_stderr_says(&o, "X-Linked-Etag");
    let heads: Vec<_> = env
        .server
        .seen()
        .into_iter()
        .filter(|s| s.method == "HEAD")
        .collect();
    assert_eq!(
        heads.len(),
        1,
        "the HEAD does not follow the redirect: {heads:?}"
    );
    assert_eq!(heads[0].path, "/org/repo/resolve/main/good.gguf");
    assert_eq!(std::fs::read(env.models().join("good.gguf")).unwrap(), body);

    // A revision, and a published hash the bytes do not match.
    env.server.add_entry(
        "/org/repo/resolve/v2/bad.gguf",
        Entry {
            redirect: Some("/cdn/bad".into()),
            headers: etag(&"f".repeat(64)),
            ..Default::default()
        },
    );
    env.server.add("/cdn/bad", &body);
    let o = env.run(&["models", "pull", "hf:org/repo/bad.gguf@v2"]);
    cli::assert_fails_with(&o, 1, &"f".repeat(64));
    assert!(!env.models().join("bad.gguf").exists());
}

#[test]
fn a_sha256_sidecar_is_used_and_a_404_is_clear() {
    let env = Env::new();
    let body = model_bytes(3_000);
    env.server.add("/m/s.gguf", &body);
    env.server.add(
        "/m/s.gguf.sha256",
        format!("{}  s.gguf\n", sha(b"other")).as_bytes(),
    );
    let o = env.run(&["models", "pull", &env.server.url("/m/s.gguf")]);
    assert_eq!(o.status.code(), Some(1), "the sidecar must be checked");
    cli::assert_stderr_says(&o, &sha(b"other"));

    let o = env.run(&["models", "pull", &env.server.url("/m/missing.gguf")]);
    cli::assert_fails_with(&o, 1, "not found (HTTP 404)");
}

#[test]
fn list_default_and_rm_through_the_cli() {
    let env = Env::new();
    let o = env.run(&["models", "default"]);
    cli::assert_fails_with(&o, 3, "no local model is installed");

    let src = tempfile::tempdir().unwrap();
    for (n, len) in [("a", 64), ("b", 70)] {
        let p = src.path().join(format!("{n}.gguf"));
        std::fs::write(&p, gguf::minimal(1, 1, len)).unwrap();
        let o = env.run(&["models", "pull", &format!("file://{}", p.display())]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let list = env.list();
    assert_eq!(list[0]["name"], "a");
    assert_eq!(list[1]["size"], 70);
    assert_eq!(list[0]["isDefault"], false, "two models and no choice");
    let o = env.run(&["models", "default"]);
    cli::assert_fails_with(&o, 3, "genai models default NAME");

    assert!(env.run(&["models", "default", "b"]).status.success());
    assert_eq!(stdout(&env.run(&["models", "default"])).trim(), "b");
    assert_eq!(env.list()[1]["isDefault"], true);
    let table = stdout(&env.run(&["models", "list"]));
    assert!(table.lines().any(|l| l.starts_with("* b")), "{table}");

    let o = env.run(&[
        "models",
        "pull",
        &format!("file://{}/a.gguf", src.path().display()),
    ]);
    assert_eq!(o.status.code(), Some(2), "a second `a` is refused");
    cli::assert_stderr_says(&o, "genai models rm a");

    assert!(env.run(&["models", "rm", "b"]).status.success());
    assert_eq!(stdout(&env.run(&["models", "default"])).trim(), "a");
    let o = env.run(&["models", "rm", "zzz"]);
    cli::assert_fails_with(&o, 2, "installed: a");
    assert_eq!(
        stdout(&env.run(&["models", "path"])).trim(),
        env.models().to_str().unwrap()
    );
}

/// What is left in the models folder (file names).
fn left_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_download_that_is_not_a_gguf_model_is_refused_and_nothing_is_installed() {
    let env = Env::new();
    // What a wrong URL returned in the walk: a 67-byte JSON answer.
    let json = br#"{"error":"model not found","detail":"no such file","code":40400000}"#;
    assert_eq!(json.len(), 67);
    env.server.add("/m/json.gguf", json);
    // A GGUF cut after its header: it announces more than its bytes can hold.
    let full = model_bytes(200_000);
    let mut cut = gguf::minimal(291, 26, 64);
    cut.extend_from_slice(&full[64..1_000]);
    env.server.add("/m/cut.gguf", &cut);
    env.server.add(
        "/m/html.gguf",
        b"<!DOCTYPE html><html><body>Sign in</body></html>",
    );

    for (path, says) in [
        ("/m/json.gguf", "it looks like JSON"),
        ("/m/cut.gguf", "announces 291 tensors"),
        ("/m/html.gguf", "it looks like HTML"),
    ] {
        let url = env.server.url(path);
        let o = env.run(&["models", "pull", &url, "--default"]);
        assert_eq!(o.status.code(), Some(1), "{path}: {}", stderr(&o));
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(
            err.starts_with(&format!("genai: {url}: it is not a GGUF model file: ")),
            "{err}"
        );
        assert!(err.contains(says), "{path}: {err}");
        assert!(
            err.contains("the download was deleted and nothing was installed"),
            "{err}"
        );
        assert!(stdout(&o).is_empty(), "no path printed: {}", stdout(&o));
    }
    assert_eq!(env.list(), serde_json::json!([]), "nothing listed");
    assert_eq!(left_in(&env.models()), Vec::<String>::new(), "no part left");
    let o = env.run(&["models", "default"]);
    cli::assert_fails_with(&o, 3, "no local model is installed");

    // The same refusal for a copy from a file.
    let src = tempfile::tempdir().unwrap();
    let p = src.path().join("notes.gguf");
    std::fs::write(&p, b"just some notes\n").unwrap();
    let o = env.run(&["models", "pull", &format!("file://{}", p.display())]);
    cli::assert_fails_with(&o, 1, "it is not a GGUF model file");
    assert_eq!(left_in(&env.models()), Vec::<String>::new());
}
