//! Tests of one command: exit status, output in order and capped, its environment, time-outs,
//! and the whole process group killed.

use super::*;
#[cfg(target_os = "linux")]
use std::time::Instant;

/// The environment the tests give: PATH (to find `sleep`, `env`...) and one marker.
fn env() -> Vec<(OsString, OsString)> {
    vec![
        (
            "PATH".into(),
            std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
        ),
        ("GENAI_TEST_MARK".into(), "given".into()),
    ]
}

fn request(command: &str, cwd: &std::path::Path, timeout: Duration) -> CommandRequest {
    CommandRequest {
        command: command.to_string(),
        cwd: cwd.to_path_buf(),
        timeout,
        env: env(),
        sandbox: None,
    }
}

async fn run_in(command: &str, cwd: &std::path::Path) -> CommandOutput {
    run(request(command, cwd, Duration::from_secs(60)))
        .await
        .unwrap()
}

/// Whether process `pid` still runs (a zombie waiting for its reaper does not).
#[cfg(target_os = "linux")]
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

/// Waits (at most 10 s) for process `pid` to be gone.
#[cfg(target_os = "linux")]
async fn gone(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[cfg(target_os = "linux")]
fn pid_in(text: &str) -> u32 {
    text.lines()
        .find_map(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("no pid in {text:?}"))
}

#[tokio::test]
async fn exit_status_and_signal_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let ok = run_in("true", dir.path()).await;
    assert_eq!((ok.exit, ok.signal, ok.timed_out), (Some(0), None, false));
    assert_eq!(ok.for_model(), "exit status 0");

    let three = run_in("echo out; exit 3", dir.path()).await;
    assert_eq!(three.exit, Some(3));
    assert_eq!(three.for_model(), "out\nexit status 3");

    let killed = run_in("kill -9 $$", dir.path()).await;
    assert_eq!((killed.exit, killed.signal), (None, Some(9)));
    assert_eq!(killed.for_model(), "killed by signal 9");
}

#[tokio::test]
async fn stdout_and_stderr_interleave_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_in("echo a; echo b >&2; echo c; echo d >&2", dir.path()).await;
    assert_eq!(out.text, "a\nb\nc\nd\n");
}

#[tokio::test]
async fn runs_in_cwd_with_stdin_empty() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    // `cat` would wait forever on a terminal or an open pipe.
    let out = run_in("cat; pwd -P", &cwd).await;
    assert_eq!(out.text.trim_end(), cwd.to_str().unwrap());
    assert_eq!(out.exit, Some(0));
}

#[tokio::test]
async fn env_is_exactly_what_was_given() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_in("env", dir.path()).await;
    let mut names: Vec<&str> = out
        .text
        .lines()
        .filter_map(|l| l.split_once('=').map(|(n, _)| n))
        // What the shell itself sets for its children.
        .filter(|n| !["PWD", "OLDPWD", "SHLVL", "_"].contains(n))
        .collect();
    names.sort();
    assert_eq!(names, ["GENAI_TEST_MARK", "PATH"], "{}", out.text);
    assert!(out.text.contains("GENAI_TEST_MARK=given\n"), "{}", out.text);
}

#[tokio::test]
async fn a_missing_folder_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let e = run(request("true", &dir.path().join("nope"), DEFAULT_TIMEOUT))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidParams);
    assert!(e.message.contains("not a folder"), "{}", e.message);
}

#[tokio::test]
async fn the_timeout_is_clamped() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(request("true", dir.path(), Duration::from_secs(10_000)))
        .await
        .unwrap();
    assert_eq!(out.timeout, MAX_TIMEOUT);
    assert!(out.notes[0].contains("600 s"), "{:?}", out.notes);
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_timeout_kills_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = run(request(
        "sleep 100 & echo $!; sleep 100",
        dir.path(),
        Duration::from_secs(1),
    ))
    .await
    .unwrap();
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(out.timed_out);
    assert_eq!(out.signal, Some(libc::SIGKILL));
    assert!(out.for_model().ends_with("\ntimed out after 1 s (killed)"));
    assert!(
        gone(pid_in(&out.text)).await,
        "the background sleep survived"
    );
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn what_the_shell_leaves_behind_dies_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    // The background sleep holds the output pipe: without the group kill this would
    // wait for it (here: time out).
    let out = run_in("sleep 100 & echo $!", dir.path()).await;
    // Not even the grace given to a process that left the group.
    assert!(started.elapsed() < Duration::from_millis(2500));
    assert!(!out.timed_out);
    assert_eq!(out.exit, Some(0));
    assert!(
        gone(pid_in(&out.text)).await,
        "the background sleep survived"
    );
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn dropping_the_call_kills_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let call = run(request(
        "sleep 100 & echo $! > pid.tmp && mv pid.tmp pid; wait",
        dir.path(),
        Duration::from_secs(60),
    ));
    let waited = async {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !pid_file.exists() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::select! {
        out = call => panic!("the command ended: {out:?}"),
        () = waited => {}
    }
    // `call` is dropped here: the turn was cancelled.
    let pid = pid_in(&std::fs::read_to_string(&pid_file).unwrap());
    assert!(
        gone(pid).await,
        "the background sleep survived the dropped call"
    );
}

#[tokio::test]
async fn long_output_keeps_both_ends() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_in(
        "echo START; head -c 100000 /dev/zero | tr '\\0' a; echo; echo END",
        dir.path(),
    )
    .await;
    assert!(out.text.starts_with("START\naaa"), "{}", &out.text[..20]);
    assert!(out.text.ends_with("aaa\nEND\n"));
    // 6 + 100000 + 1 + 4 bytes, 30000 kept.
    assert!(out.text.contains("\n… 70011 bytes cut …\n"));
    assert_eq!(out.text.len(), 30_000 + "\n… 70011 bytes cut …\n".len());
}

#[tokio::test]
async fn invalid_utf8_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_in("printf 'a\\377b'", dir.path()).await;
    assert_eq!(out.text, "a\u{FFFD}b");
}

#[test]
fn the_cut_falls_between_characters() {
    // 'é' is two bytes; one ASCII byte at each end puts both cuts inside an 'é'.
    let mut capture = Capture::default();
    let text = format!("x{}y", "é".repeat(30_000));
    for chunk in text.as_bytes().chunks(999) {
        capture.push(chunk);
    }
    let out = capture.into_text();
    assert!(!out.contains('\u{FFFD}'), "a character was split");
    let (head, rest) = out.split_once("\n… ").unwrap();
    let (cut, tail) = rest.split_once(" bytes cut …\n").unwrap();
    assert_eq!(head.len(), 14_999);
    assert_eq!(tail.len(), 14_999);
    assert_eq!(
        cut.parse::<usize>().unwrap(),
        text.len() - head.len() - tail.len()
    );
}

#[test]
fn short_output_is_whole() {
    let mut capture = Capture::default();
    let text = "é".repeat(MAX_OUTPUT / 2);
    capture.push(text.as_bytes());
    assert_eq!(capture.into_text(), text);
}

#[test]
fn for_model_names_the_timeout() {
    let out = CommandOutput {
        text: "partial".into(),
        exit: None,
        signal: Some(9),
        timed_out: true,
        timeout: Duration::from_secs(5),
        notes: vec![],
    };
    assert_eq!(out.for_model(), "partial\ntimed out after 5 s (killed)");
}
