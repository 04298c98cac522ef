//! A long command cancelled: the user stops `genai ask` with Ctrl-C while a tool's command
//! runs. Nothing of the turn is kept but the calls that ran, and the listing says so (a
//! cancelled turn and its calls) instead of an empty conversation; `sessions show` tells the
//! same. The next turn, with tools and `--json`, has the details a turn without tools has.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::home::Home;
use crate::support::fake_openai::{Behavior, FakeOpenAi};

#[test]
fn a_turn_cancelled_while_a_command_runs_is_listed_as_what_it_is() {
    let mut home = Home::new();
    let fake = FakeOpenAi::start(0, Behavior::text("done")).unwrap();
    home.export("OPENAI_BASE_URL", &fake.base_url());
    home.export("OPENAI_API_KEY", "sk-journey");
    let project = home.path().join("proj");
    std::fs::create_dir_all(&project).unwrap();
    let long = serde_json::json!({"command": "touch started && sleep 60"});
    fake.push(Behavior::calls(
        "",
        &[("workspace__run_command", &long.to_string())],
    ));
    let mut ask = home.genai(&[
        "ask",
        "-m",
        "openai:gpt-journey",
        "--tools=workspace",
        "--mode",
        "full",
        "long cmd",
    ]);
    let mut child = ask
        .current_dir(&project)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The command runs once its marker is there; then Ctrl-C.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !project.join("started").exists() {
        if Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            panic!(
                "the command never started: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill(2) on the child this test started.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let listed = home.run(&["sessions", "list"]).ok().stdout();
    let line = listed
        .lines()
        .find(|l| l.contains("long cmd"))
        .unwrap_or_else(|| panic!("not listed: {listed}"));
    assert!(line.contains("cancelled turn, 1 call ran"), "{line}");
    assert!(!line.contains("0 msgs"), "{line}");
    let id = line.split_whitespace().next().unwrap();
    let shown = home.run(&["sessions", "show", id]).ok().stdout();
    assert!(shown.contains("Its only turn was cancelled"), "{shown}");
    assert!(shown.contains("touch started && sleep 60"), "{shown}");

    // The next turn, with tools and --json: its details say what a turn without tools says.
    let list = serde_json::json!({"path": "."});
    fake.push(Behavior::calls(
        "",
        &[("workspace__list", &list.to_string())],
    ));
    let json = home
        .sh("cd proj && genai ask -m openai:gpt-journey --tools=workspace --json 'what is here?'")
        .ok()
        .stdout();
    let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    let details: Vec<&str> = v["details"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d.as_str())
        .collect();
    for line in [
        "provider: openai (openai)",
        "model: ",
        "latency: ",
        "finish reason: ",
    ] {
        assert!(
            details.iter().any(|d| d.starts_with(line)),
            "{line}: {details:?}"
        );
    }
    assert_eq!(v["provider"], "openai", "{v}");
}
