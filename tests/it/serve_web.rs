//! `genai serve` and its chat page: what it tells a user at start (the page's address with the
//! token), the page being a `--web-root`'s or the one in the binary, a `--web-root` that cannot
//! be the page refused as a usage error, and the components listed to the page (the default
//! and which providers lack their key).

use std::process::Stdio;

use serde_json::json;

use crate::serve::{call, Served, WAIT};
use crate::support::cli::Folders;
use crate::support::fake_openai::{Behavior, FakeOpenAi};

/// A folder holding a stand-in for the chat page's `index.html`.
fn web_root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("index.html"),
        "<title>the chat page</title>",
    )
    .unwrap();
    dir
}

/// The body of a plain HTTP GET of `path` from `addr`.
fn http_get(addr: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    answer
}

#[test]
fn with_a_web_root_it_prints_the_page_address_with_the_token_and_it_opens() {
    let fake = FakeOpenAi::start(0, Behavior::reply("hi", 1)).unwrap();
    let root = web_root();
    let served = Served::start(&fake, &["--web-root", root.path().to_str().unwrap()]);
    let addr = served.url.trim_start_matches("ws://");
    let address = format!("http://{addr}/#token={}", served.token);
    served.stderr_with(&address);
    // What the browser asks for when that address is opened: the web root's page.
    let answer = http_get(addr, "/");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("<title>the chat page</title>"), "{answer}");
}

#[test]
fn without_a_web_root_it_serves_the_page_in_the_binary() {
    let fake = FakeOpenAi::start(0, Behavior::reply("hi", 1)).unwrap();
    let served = Served::start(&fake, &[]);
    let addr = served.url.trim_start_matches("ws://");
    served.stderr_with(&format!("http://{addr}/#token={}", served.token));
    let page = http_get(addr, "/");
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(page.contains("<title>genai chat</title>"), "{page}");
    assert!(page.contains("<script nonce=\""), "{page}");
    let script = http_get(addr, "/web.js");
    assert!(script.starts_with("HTTP/1.1 200"), "{}", &script[..200]);
    assert!(
        script
            .to_ascii_lowercase()
            .contains("content-type: text/javascript"),
        "{}",
        &script[..200]
    );
    assert!(http_get(addr, "/chat.css").starts_with("HTTP/1.1 200"));
    assert!(http_get(addr, "/missing.js").starts_with("HTTP/1.1 404"));
}

#[test]
fn a_web_root_that_is_not_a_folder_with_index_html_is_refused_as_a_usage_error() {
    let dirs = Folders::new();
    let empty = tempfile::tempdir().unwrap();
    let file = empty.path().join("index.html.txt");
    std::fs::write(&file, "not a folder").unwrap();
    let missing = empty.path().join("dist/web");
    for (root, says) in [
        (missing.as_path(), "no such folder"),
        (file.as_path(), "not a folder"),
        (empty.path(), "no index.html"),
    ] {
        let mut child = dirs
            .genai(&[
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--web-root",
                root.to_str().unwrap(),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut status = None;
        crate::support::poll::wait_until("genai serve refuses the web root", WAIT, || {
            status = child.try_wait().unwrap();
            status.is_some()
        });
        let o = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(status.unwrap().code(), Some(2), "{stderr}");
        assert!(stderr.contains(says), "{root:?}: {stderr}");
        assert!(stderr.contains("npm run build"), "{stderr}");
        assert!(o.stdout.is_empty(), "it listened: {:?}", o.stdout);
    }
}

#[tokio::test]
async fn the_listing_names_the_default_and_which_providers_lack_their_key() {
    let fake = FakeOpenAi::start(0, Behavior::reply("hi", 1)).unwrap();
    let config = format!(
        "[defaults]\nmodel = \"corp:corp-model\"\n\n[service_providers.corp]\nkind = \"openai\"\nbase_url = \"{}\"\n",
        fake.base_url()
    );
    let served = Served::start_with(&config, &[("ANTHROPIC_API_KEY", "sk-ant-listed")], &[]);
    let c = served.client().await;
    let comps = call(&c, "ListComponents", json!({})).await;
    assert_eq!(
        comps["default"],
        json!({"serviceProvider": "corp", "model": "corp-model"}),
        "{comps}"
    );
    let key = |name: &str| {
        comps["serviceProviders"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("{name} is not listed: {comps}"))["key"]
            .clone()
    };
    // Another server speaking OpenAI's API and Ollama need none; a key in the environment is
    // found; the vendors without one are missing theirs.
    assert_eq!(key("corp"), "notNeeded");
    assert_eq!(key("ollama"), "notNeeded");
    assert_eq!(key("anthropic"), "found");
    assert_eq!(key("openai"), "missing");
    assert_eq!(key("gemini"), "missing");
    assert!(!comps.to_string().contains("sk-ant-listed"), "{comps}");
}
