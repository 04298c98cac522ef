//! Serve and open the page: `genai serve` alone (the page is in the binary) prints the address
//! to open (the token in it), the user opens exactly that in Chromium, types a question before
//! choosing anything, and the local model answers; the provider list offers `local` first.
//! Then where the page's chats work: with `[serve] roots = ["~/projects"]` and the serve started
//! in `~/projects`, the new-chat form offers that folder, the user's home is refused there with
//! the serve's words, `~/projects/site` is taken and shown in the header and the history, and
//! the model's edit (allowed in the page's dialog) lands in it.
//!
//! Needs playwright-core from editor-integrations/vscode's node_modules (`npm ci` there:
//! scripts/test.sh does it first), named by GENAI_JOURNEY_NODE_MODULES.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use crate::home::Home;
use crate::support::fake_openai::{Behavior, FakeOpenAi};

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

/// `genai serve` on a free port, run from `dir`, and the address it printed to open.
fn serve_page(home: &Home, dir: &Path) -> (Child, String) {
    let mut serve = home
        .genai(&["serve", "--listen", "127.0.0.1:0"])
        .current_dir(dir)
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
    (serve, url)
}

/// page.mjs on `url` with `question` and these variables: what the user saw.
fn open_page(
    modules: &Path,
    url: &str,
    question: &str,
    vars: &[(&str, &str)],
    shot: &str,
) -> Value {
    let out = Command::new("node")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/journeys/page.mjs"
        ))
        .args([url, question])
        .env("GENAI_JOURNEY_NODE_MODULES", modules)
        .env(
            "GENAI_JOURNEY_SCREENSHOT",
            format!("{}/{shot}", env!("CARGO_TARGET_TMPDIR")),
        )
        .env("NO_PROXY", "127.0.0.1,localhost")
        .envs(vars.iter().copied())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let seen: Value = serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!(
            "the page script said no JSON ({e}): {text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(seen["error"].is_null(), "in the page: {seen:#}");
    assert_eq!(seen["problems"], serde_json::json!([]), "{seen:#}");
    seen
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
    let (mut serve, url) = serve_page(&home, home.path());
    let seen = open_page(
        &modules,
        &url,
        "What is the capital of France?",
        &[],
        "journey-page.png",
    );
    let _ = serve.kill();
    let _ = serve.wait();
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

#[test]
fn the_page_chooses_the_folder_of_a_chat_and_its_tools_write_there() {
    let Some(modules) = node_modules() else {
        return;
    };
    let mut home = Home::new();
    let fake = FakeOpenAi::start(0, Behavior::text("unused")).unwrap();
    home.export("OPENAI_BASE_URL", &fake.base_url());
    home.export("OPENAI_API_KEY", "sk-journey");
    home.write_config(
        "[defaults]\nmodel = \"openai:gpt-journey\"\n\n[serve]\nroots = [\"~/projects\"]\n",
    );
    let projects = home.path().join("projects");
    std::fs::create_dir_all(projects.join("site")).unwrap();
    let projects = projects.canonicalize().unwrap();
    let site = projects.join("site");
    let write =
        serde_json::json!({"path": "hello.txt", "content": "hi from the page\n"}).to_string();
    fake.push(Behavior::calls("", &[("workspace__write_file", &write)]));
    fake.push(Behavior::text("Wrote hello.txt."));

    let (mut serve, url) = serve_page(&home, &projects);
    let outside = home.path().canonicalize().unwrap();
    let seen = open_page(
        &modules,
        &url,
        "Write hello.txt",
        &[
            ("GENAI_JOURNEY_ROOT", site.to_str().unwrap()),
            ("GENAI_JOURNEY_OUTSIDE", outside.to_str().unwrap()),
        ],
        "journey-page-root.png",
    );
    let _ = serve.kill();
    let _ = serve.wait();
    let projects = projects.display().to_string();
    let site = site.display().to_string();
    assert_eq!(seen["rootPrefilled"], projects.as_str(), "{seen:#}");
    assert_eq!(
        seen["rootsOffered"],
        serde_json::json!([projects]),
        "{seen:#}"
    );
    let refused = seen["refused"].as_str().unwrap_or_default();
    assert!(
        refused.contains("outside") && refused.contains(&projects),
        "the form said {refused:?}"
    );
    assert_eq!(seen["formOpenAfterRefusal"], true, "{seen:#}");
    assert_eq!(seen["rootShown"], format!("in {site}"), "{seen:#}");
    assert!(
        seen["description"]
            .as_str()
            .unwrap_or_default()
            .starts_with("tools"),
        "{seen:#}"
    );
    assert!(
        seen["asked"]
            .as_str()
            .unwrap_or_default()
            .contains("hello.txt"),
        "{seen:#}"
    );
    assert_eq!(seen["reply"], "Wrote hello.txt.", "{seen:#}");
    assert_eq!(
        std::fs::read_to_string(format!("{site}/hello.txt")).unwrap(),
        "hi from the page\n"
    );
    assert!(!outside.join("hello.txt").exists());
    assert_eq!(seen["historyRoots"][0], site.as_str(), "{seen:#}");
}
