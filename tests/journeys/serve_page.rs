//! Serve and open the page: `genai serve` alone (the page is in the binary) prints the address
//! to open (the token in it), the user opens exactly that in Chromium, types a question before
//! choosing anything, and the local model answers; the provider list offers `local` first.
//!
//! Needs playwright-core from editor-integrations/vscode's node_modules (`npm ci` there:
//! scripts/test.sh does it first), named by GENAI_JOURNEY_NODE_MODULES.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use crate::home::Home;

fn node_modules() -> Option<PathBuf> {
    match std::env::var_os("GENAI_JOURNEY_NODE_MODULES").map(PathBuf::from) {
        Some(modules) if modules.join("playwright-core").is_dir() => Some(modules),
        _ => {
            let why = "GENAI_JOURNEY_NODE_MODULES (a node_modules with playwright-core) is not set";
            assert!(std::env::var_os("CI").is_none(), "{why}");
            eprintln!("skipping: {why}");
            None
        }
    }
}

#[test]
fn serve_prints_the_address_and_the_page_chats_with_the_local_model() {
    let Some(modules) = node_modules() else {
        return;
    };
    let home = Home::new();
    let Some(()) = home.install_demo_model() else {
        return;
    };
    let mut serve = home
        .genai(&["serve", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // What genai serve prints, from both streams, line by line.
    let (tx, rx) = mpsc::channel::<String>();
    for out in [
        Box::new(serve.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
        Box::new(serve.stderr.take().unwrap()),
    ] {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
    }
    let mut printed = Vec::new();
    let url = loop {
        let line = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(line) => line,
            Err(_) => {
                let _ = serve.kill();
                panic!(
                    "genai serve printed no address to open:\n{}",
                    printed.join("\n")
                );
            }
        };
        printed.push(line.clone());
        if let Some(at) = line.find("http://") {
            let url = line[at..].split_whitespace().next().unwrap().to_string();
            if url.contains("#token=") {
                break url;
            }
        }
    };

    let out = Command::new("node")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/journeys/page.mjs"
        ))
        .args([&url, "What is the capital of France?"])
        .env("GENAI_JOURNEY_NODE_MODULES", &modules)
        .env(
            "GENAI_JOURNEY_SCREENSHOT",
            concat!(env!("CARGO_TARGET_TMPDIR"), "/journey-page.png"),
        )
        .env("NO_PROXY", "127.0.0.1,localhost")
        .output()
        .unwrap();
    let _ = serve.kill();
    let _ = serve.wait();
    let text = String::from_utf8_lossy(&out.stdout);
    let seen: Value = serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!(
            "the page script said no JSON ({e}): {text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(seen["error"].is_null(), "in the page: {seen:#}");
    assert_eq!(seen["problems"], serde_json::json!([]), "{seen:#}");
    assert_eq!(
        seen["question"], "What is the capital of France?",
        "{seen:#}"
    );
    assert!(
        !seen["reply"].as_str().unwrap_or_default().is_empty(),
        "no reply: {seen:#}"
    );
    let title = seen["title"].as_str().unwrap_or_default();
    assert!(
        !title.is_empty() && title != "New chat" && title != "No conversation",
        "the header still says {title:?}"
    );
    assert_eq!(seen["providers"][0], "local", "{seen:#}");
}
