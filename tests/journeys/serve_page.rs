//! Serve and open the page: `genai serve` with the chat page prints the address to open (the
//! token in it), the user opens exactly that in Chromium, types a question before choosing
//! anything, and the local model answers; the provider list offers `local` first.
//!
//! Needs the page built (`npm run build` in editor-integrations/vscode: scripts/test.sh does
//! it first) and playwright-core from that folder's node_modules, named by
//! GENAI_JOURNEY_WEB_ROOT and GENAI_JOURNEY_NODE_MODULES.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use crate::home::Home;

fn page_setup() -> Option<(PathBuf, PathBuf)> {
    let var = |name: &str| std::env::var_os(name).map(PathBuf::from);
    match (
        var("GENAI_JOURNEY_WEB_ROOT"),
        var("GENAI_JOURNEY_NODE_MODULES"),
    ) {
        (Some(web), Some(modules)) if web.join("index.html").is_file() => Some((web, modules)),
        _ => {
            let why =
                "GENAI_JOURNEY_WEB_ROOT (a built page) and GENAI_JOURNEY_NODE_MODULES are not set";
            assert!(std::env::var_os("CI").is_none(), "{why}");
            eprintln!("skipping: {why}");
            None
        }
    }
}

#[test]
fn serve_prints_the_address_and_the_page_chats_with_the_local_model() {
    let Some((web_root, modules)) = page_setup() else {
        return;
    };
    let home = Home::new();
    let Some(()) = home.install_demo_model() else {
        return;
    };
    let web = web_root.to_string_lossy().into_owned();
    let mut serve = home
        .genai(&["serve", "--listen", "127.0.0.1:0", "--web-root", &web])
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
