//! Files as context: `genai ask -f` with a folder (walked honouring .gitignore, binary and
//! large files skipped and listed), a URL served on loopback (HTML turned into text, a 404 and
//! a wrong type refused), stdin, and the protocol's `file` message part, each checked in the
//! request body the fake OpenAI server received.

use std::time::Duration;

use fake_openai::{Behavior, FakeOpenAi};
use fake_scripted::{FakeHttp, Reply};
use rpc_client::{Daemon, DaemonConfig, Framing};
use serde_json::{json, Value};

use crate::support::cli::{self, stderr, OpenAiCli as Env};
use crate::support::{fake_openai, fake_scripted, rpc_client};

/// The text of the last message the fake received (a string, or its text parts joined).
fn last_prompt(env: &Env) -> String {
    text_of(
        env.last_body()["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap(),
    )
}

fn text_of(message: &Value) -> String {
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        other => panic!("unexpected content {other}"),
    }
}

#[test]
fn a_folder_goes_without_its_ignored_hidden_binary_and_large_files_and_says_what_it_skipped() {
    let env = Env::new();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proj");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
    std::fs::create_dir_all(root.join("target")).unwrap();
    std::fs::write(root.join("target/out.txt"), "ignored build output").unwrap();
    std::fs::write(root.join("run.log"), "ignored log line").unwrap();
    std::fs::write(root.join(".env"), "HIDDEN_SECRET=1").unwrap();
    std::fs::write(root.join("src/lib.rs"), "pub fn one() -> u8 { 1 }\n").unwrap();
    std::fs::write(root.join("README.md"), "# Proj\n").unwrap();
    std::fs::write(root.join("icon.bin"), [0x89u8, b'P', 0, 0, 7]).unwrap();
    std::fs::write(root.join("data.txt"), vec![b'x'; (1 << 20) + 1]).unwrap();
    let r = root.display().to_string();
    let o = env.run(&["ask", "-m", "openai:m", "-f", &r, "Review:"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        last_prompt(&env),
        format!(
            "Review:\n\n{r}/README.md:\n```markdown\n# Proj\n```\n\n{r}/src/lib.rs:\n```rust\npub fn one() -> u8 {{ 1 }}\n```"
        )
    );
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "skipped {r}/data.txt: file {r}/data.txt is larger than genai's limit of 1024 KiB"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "skipped {r}/icon.bin: {r}/icon.bin is a binary file"
        )),
        "{err}"
    );
    assert!(
        !err.contains("out.txt") && !err.contains("run.log"),
        "{err}"
    );
}

#[test]
fn a_url_is_fetched_html_as_text_and_other_types_and_errors_are_refused() {
    let env = Env::new();
    let site = FakeHttp::start(|req| {
        match req.target.as_str() {
        "/page" => Reply::raw(
            200,
            "text/html; charset=utf-8",
            "<html><head><title>T</title><script>var hidden = 1;</script></head><body><h1>Tides</h1><p>The sea <b>rises</b> twice a day.</p></body></html>",
        ),
        "/notes.md" => Reply::raw(200, "text/markdown", "# Notes\n\n- one\n"),
        "/moved" => Reply {
            status: 302,
            headers: vec![("Location".into(), "/notes.md".into())],
            body: fake_scripted::Body::Full(Vec::new()),
        },
        "/report.pdf" => Reply::raw(200, "application/pdf", "%PDF-1.7"),
        _ => Reply::raw(404, "text/plain", "no such page"),
    }
    });
    let page = site.url("/page");
    let o = env.run(&["ask", "-m", "openai:m", "-f", &page, "Sum up"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let sent = last_prompt(&env);
    assert!(
        sent.starts_with(&format!("Sum up\n\n{page}:\n```\n")),
        "{sent}"
    );
    // Headings and emphasis come out as Markdown-like text.
    assert!(
        sent.contains("# Tides\n") && sent.contains("The sea **rises** twice a day."),
        "{sent}"
    );
    assert!(
        !sent.contains("<p>") && !sent.contains("var hidden"),
        "{sent}"
    );

    // Markdown goes as it is, after a redirect.
    let o = env.run(
        &["ask", "-m", "openai:m", "-f", &site.url("/moved"), "Read"],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        last_prompt(&env),
        format!(
            "Read\n\n{}:\n```markdown\n# Notes\n\n- one\n```",
            site.url("/moved")
        )
    );

    let before = env.fake.requests().len();
    let o = env.run(
        &["ask", "-m", "openai:m", "-f", &site.url("/gone"), "x"],
        None,
    );
    cli::assert_fails_with(&o, 2, "HTTP 404");
    let o = env.run(
        &["ask", "-m", "openai:m", "-f", &site.url("/report.pdf"), "x"],
        None,
    );
    cli::assert_fails_with(
        &o,
        2,
        "is application/pdf: genai reads HTML, plain text and Markdown",
    );
    assert_eq!(
        env.fake.requests().len(),
        before,
        "a refused URL sent nothing"
    );
}

#[test]
fn dash_reads_the_file_from_stdin_and_binary_stdin_is_refused() {
    let env = Env::new();
    let o = env.run(
        &["ask", "-m", "openai:m", "-f", "-", "What does this say?"],
        Some("line one\nline two\n"),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        last_prompt(&env),
        "What does this say?\n\nstdin:\n```\nline one\nline two\n```"
    );
    let before = env.fake.requests().len();
    let o = env.run(&["ask", "-m", "openai:m", "-f", "-", "x"], Some("a\0b"));
    cli::assert_fails_with(&o, 2, "stdin is a binary file");
    assert_eq!(env.fake.requests().len(), before);
}

#[test]
fn a_file_part_on_the_protocol_reaches_the_model_as_ask_sends_it() {
    let fake = FakeOpenAi::start(0, Behavior::reply("Looks fine.", 2)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cfg = DaemonConfig::in_dir(dir.path(), Framing::Lines, "daemon")
        .env("OPENAI_BASE_URL", &fake.base_url())
        .env("OPENAI_API_KEY", "sk-test-dummy");
    let mut d = Daemon::spawn(&cfg);
    d.initialize("files-test", false);
    let conv = d.call(
        "CreateConversation",
        json!({"serviceProvider": "openai", "model": "m"}),
    );
    let cid = conv["conversationId"].as_str().unwrap().to_string();
    let wait = Duration::from_secs(15);
    let (_, fin) = d.turn(
        &cid,
        json!({"role": "user", "content": [
            "Review this:",
            {"type": "file", "name": "src/lib.rs", "text": "pub fn one() -> u8 { 1 }\n"},
            {"type": "file", "name": "notes", "mimeType": "text/markdown", "text": "# N\n"}
        ]}),
        wait,
    );
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let body = fake.requests().last().unwrap().body.clone();
    let sent = text_of(body["messages"].as_array().unwrap().last().unwrap());
    assert_eq!(
        sent,
        "Review this:\nsrc/lib.rs:\n```rust\npub fn one() -> u8 { 1 }\n```\nnotes:\n```markdown\n# N\n```"
    );
    // SendPrompt takes the same part; one without its text is refused as invalid params.
    let agent = d.call(
        "CreateAIAgent",
        json!({"serviceProvider": "openai", "model": "m"}),
    );
    let e = d.call_err(
        "SendPrompt",
        json!({"agentId": agent["agentId"], "prompt": [{"role": "user", "content": [{"type": "file", "name": "a.rs"}]}]}),
    );
    assert_eq!(e["code"], -32602, "{e}");
    let sent = d.call(
        "SendPrompt",
        json!({"agentId": agent["agentId"], "prompt": [{"role": "user", "content": [{"type": "file", "name": "a.py", "text": "print(1)"}]}]}),
    );
    let rid = sent["requestId"].as_str().unwrap().to_string();
    let resp = d.wait_notification(
        |m| m["method"] == "OnPromptResponse" && m["params"]["requestId"] == rid.as_str(),
        wait,
    );
    assert_eq!(resp["params"]["isSuccess"], true, "{resp}");
    let body = fake.requests().last().unwrap().body.clone();
    assert_eq!(
        text_of(body["messages"].as_array().unwrap().last().unwrap()),
        "a.py:\n```python\nprint(1)\n```"
    );
    assert!(d.shutdown(Duration::from_secs(10)).success());
}
