//! `genai lsp` over stdio, driven by the tests' own JSON-RPC client (Content-Length framing):
//! the cancels (the progress's cancel button and `$/cancelRequest`) reach the provider,
//! completion is debounced and capped and sees unsaved incremental changes, and bad requests
//! get LSP errors while the server goes on. Neovim drives the happy path in `lsp_neovim.rs`.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::fake_openai::{Behavior, FakeOpenAi, Mode};
use crate::support::poll::wait_until;
use crate::support::rpc_client::{Daemon, DaemonConfig, Framing};

const WAIT: Duration = Duration::from_secs(20);
const URI: &str = "file:///work/project/src/calc.py";

fn start(fake: &FakeOpenAi, extra_config: &str) -> (tempfile::TempDir, Daemon) {
    let root = tempfile::tempdir().unwrap();
    let cfg = DaemonConfig::in_dir(root.path(), Framing::ContentLength, "lsp")
        .env("OPENAI_BASE_URL", &fake.base_url())
        .env("OPENAI_API_KEY", "sk-test-lsp");
    cfg.write_config(&format!(
        "[defaults]\nmodel = \"openai:gpt-lsp\"\n{extra_config}"
    ));
    let mut lsp = Daemon::spawn_command(&cfg, &["lsp"]);
    let init = lsp.call(
        "initialize",
        json!({"processId": null, "rootUri": "file:///work/project",
               "capabilities": {"window": {"workDoneProgress": false}}}),
    );
    assert_eq!(init["serverInfo"]["name"], "genai", "{init}");
    lsp.notify("initialized", json!({}));
    lsp.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": URI, "languageId": "python", "version": 1,
               "text": "def add(a, b):\n    return a\n"}}),
    );
    (root, lsp)
}

fn error_code(response: &Value) -> i64 {
    response["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {response}"))
}

#[test]
fn the_progress_cancel_button_and_cancel_request_stop_the_turn_at_the_provider() {
    let fake = FakeOpenAi::start(0, Behavior::reply("fine", 1)).unwrap();
    let (_root, mut lsp) = start(&fake, "");

    // The cancel button of the progress the client asked for.
    fake.push(Behavior::mode(Mode::Stall));
    let ask = lsp.send_request(
        "workspace/executeCommand",
        json!({"command": "genai.ask", "arguments": [{"prompt": "slow one"}], "workDoneToken": "t1"}),
    );
    let begin = lsp.wait_notification(
        |m| m["method"] == "$/progress" && m["params"]["value"]["kind"] == "begin",
        WAIT,
    );
    assert_eq!(begin["params"]["token"], "t1");
    assert_eq!(begin["params"]["value"]["cancellable"], true, "{begin}");
    wait_until("the provider gets the request", WAIT, || {
        fake.requests().len() == 1
    });
    lsp.notify("window/workDoneProgress/cancel", json!({"token": "t1"}));
    let response = lsp.wait_response(&json!(ask), WAIT);
    assert_eq!(error_code(&response), -32800, "{response}");
    let end = lsp.wait_notification(
        |m| m["method"] == "$/progress" && m["params"]["value"]["kind"] == "end",
        WAIT,
    );
    assert_eq!(end["params"]["value"]["message"], "cancelled", "{end}");
    wait_until("the provider sees the cancel", WAIT, || {
        fake.disconnects() >= 1
    });

    // `$/cancelRequest` drops the request, and the turn with it.
    fake.push(Behavior::mode(Mode::Stall));
    let ask = lsp.send_request(
        "workspace/executeCommand",
        json!({"command": "genai.ask", "arguments": ["another slow one"]}),
    );
    wait_until("the provider gets the request", WAIT, || {
        fake.requests().len() == 2
    });
    lsp.notify("$/cancelRequest", json!({"id": ask}));
    let response = lsp.wait_response(&json!(ask), WAIT);
    assert_eq!(error_code(&response), -32800, "{response}");
    wait_until("the provider sees the cancel", WAIT, || {
        fake.disconnects() >= 2
    });

    // The server goes on: the next ask is answered.
    let answer = lsp.call(
        "workspace/executeCommand",
        json!({"command": "genai.ask", "arguments": ["and now?"]}),
    );
    assert_eq!(answer["reply"], "fine", "{answer}");
    // Without showDocument the reply is shown as a message.
    let shown = lsp.wait_notification(|m| m["method"] == "window/showMessage", WAIT);
    assert_eq!(shown["params"]["message"], "fine");
}

#[test]
fn completion_is_debounced_capped_and_sees_unsaved_changes() {
    let fake = FakeOpenAi::start(0, Behavior::reply("a + b", 2)).unwrap();
    let (_root, mut lsp) = start(
        &fake,
        "[lsp.completion]\nenabled = true\ndebounce_ms = 500\nmax_tokens = 16\n",
    );
    // An incremental change: `return a` becomes `return `.
    lsp.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": URI, "version": 2},
               "contentChanges": [{"range": {"start": {"line": 1, "character": 11}, "end": {"line": 1, "character": 12}}, "text": ""}]}),
    );
    let at = json!({"textDocument": {"uri": URI}, "position": {"line": 1, "character": 11}});
    let first = lsp.send_request("textDocument/completion", at.clone());
    let second = lsp.send_request("textDocument/completion", at.clone());
    let first = lsp.wait_response(&json!(first), WAIT);
    let second = lsp.wait_response(&json!(second), WAIT);
    assert_eq!(
        first["result"],
        Value::Null,
        "superseded within the debounce: {first}"
    );
    let item = &second["result"][0];
    assert_eq!(item["textEdit"]["newText"], "a + b", "{second}");
    assert_eq!(
        item["textEdit"]["range"]["start"],
        json!({"line": 1, "character": 11})
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 1, "one model call for two requests");
    assert_eq!(requests[0].body["max_tokens"], 16, "{}", requests[0].body);
    let prompt = requests[0].body["messages"].to_string();
    assert!(prompt.contains("    return <CURSOR>"), "{prompt}");

    let inline = lsp.call(
        "textDocument/inlineCompletion",
        json!({"textDocument": {"uri": URI}, "position": {"line": 1, "character": 11},
               "context": {"triggerKind": 1}}),
    );
    assert_eq!(inline["items"][0]["insertText"], "a + b", "{inline}");
}

#[test]
fn bad_requests_get_lsp_errors_and_the_server_goes_on() {
    let fake = FakeOpenAi::start(0, Behavior::reply("x", 1)).unwrap();
    let (_root, mut lsp) = start(&fake, "");
    let bad = [
        (
            "workspace/executeCommand",
            json!({"command": "genai.nothing"}),
        ),
        (
            "workspace/executeCommand",
            json!({"command": "genai.action", "arguments": [{"action": "fix"}]}),
        ),
        (
            "workspace/executeCommand",
            json!({"command": "genai.action", "arguments": [{"action": "nope", "uri": URI, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}}]}),
        ),
        (
            "workspace/executeCommand",
            json!({"command": "genai.ask", "arguments": [{"prompt": " "}]}),
        ),
        (
            "textDocument/codeAction",
            json!({"textDocument": {"uri": "file:///no/such/file.py"}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "context": {"diagnostics": []}}),
        ),
        (
            "textDocument/codeAction",
            json!({"textDocument": {"uri": URI}, "range": {"start": {"line": 9, "character": 0}, "end": {"line": 9, "character": 0}}, "context": {"diagnostics": []}}),
        ),
        ("textDocument/inlineCompletion", json!({"nonsense": true})),
        ("textDocument/codeAction", json!("not an object")),
    ];
    for (method, params) in bad {
        let response = lsp.request(method, params.clone());
        assert_eq!(
            error_code(&response),
            -32602,
            "{method} {params}: {response}"
        );
    }
    // A change to a document never opened is ignored, said in the log.
    lsp.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": "file:///nope.py", "version": 2}, "contentChanges": [{"text": "x"}]}),
    );
    let logged = lsp.wait_notification(|m| m["method"] == "window/logMessage", WAIT);
    assert!(
        logged["params"]["message"]
            .as_str()
            .unwrap()
            .contains("never opened"),
        "{logged}"
    );
    assert!(
        fake.requests().is_empty(),
        "no bad request reached the model"
    );
    let actions = lsp.call(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": URI}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}}, "context": {"diagnostics": []}}),
    );
    assert_eq!(actions.as_array().unwrap().len(), 5, "{actions}");
    assert_eq!(actions[0]["command"]["command"], "genai.action");
}
