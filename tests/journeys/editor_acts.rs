//! The editor acts: a user whose config already names another provider, after a `genai ask`
//! that failed, opens their project in an ACP editor that holds the files and the terminal
//! (as Zed does). The model reads the editor's unsaved buffer, its edit goes to the editor
//! after the user allows it, its command runs in the editor's terminal; back in the shell,
//! `genai checkpoints | head -1` shows the turn, `/undo` from the editor puts the buffer back,
//! and `genai undo` then finds nothing left to undo.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::home::Home;
use crate::support::fake_openai::{Behavior, FakeOpenAi, Mode};

const WAIT: Duration = Duration::from_secs(30);

/// A scripted ACP editor: it answers the agent's requests from its buffers (writing what it
/// is sent to the disk too, as an editor saving), runs terminal commands itself, allows once
/// whatever it is asked, and records everything.
struct Editor {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    next_id: u64,
    buffers: HashMap<String, String>,
    /// (path, content) of every fs/write_text_file.
    written: Vec<(String, String)>,
    /// The command lines of every terminal/create, and their output and exit code.
    terminals: Vec<(Vec<String>, String, i32)>,
    asked: Vec<Value>,
    updates: Vec<Value>,
}

impl Editor {
    fn start(home: &Home, cwd: &Path) -> Editor {
        let mut child = home
            .genai(&["acp"])
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout: ChildStdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Editor {
            child,
            stdin,
            lines,
            next_id: 0,
            buffers: HashMap::new(),
            written: Vec::new(),
            terminals: Vec::new(),
            asked: Vec::new(),
            updates: Vec::new(),
        }
    }

    fn send(&mut self, v: &Value) {
        writeln!(self.stdin, "{v}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and serves the agent until its answer comes.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let line = self
                .lines
                .recv_timeout(WAIT)
                .unwrap_or_else(|_| panic!("no answer to {method} within {WAIT:?}"));
            let m: Value = serde_json::from_str(&line).expect("stdout carries JSON only");
            match (m.get("method").and_then(Value::as_str), m.get("id")) {
                (Some(asked), Some(rid)) => {
                    let answer = self.answer(asked, &m["params"]);
                    self.send(&json!({"jsonrpc": "2.0", "id": rid, "result": answer}));
                }
                (Some(_), None) => self.updates.push(m["params"]["update"].clone()),
                (None, Some(rid)) if *rid == json!(id) => return m,
                _ => {}
            }
        }
    }

    fn answer(&mut self, method: &str, p: &Value) -> Value {
        let path = p["path"].as_str().unwrap_or_default().to_string();
        match method {
            "fs/read_text_file" => json!({"content": self.buffers[&path]}),
            "fs/write_text_file" => {
                let content = p["content"].as_str().unwrap().to_string();
                std::fs::write(&path, &content).unwrap();
                self.buffers.insert(path.clone(), content.clone());
                self.written.push((path, content));
                json!({})
            }
            "terminal/create" => {
                let mut line = vec![p["command"].as_str().unwrap().to_string()];
                line.extend(
                    p["args"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|a| a.as_str().unwrap().to_string()),
                );
                let out = std::process::Command::new(&line[0])
                    .args(&line[1..])
                    .current_dir(p["cwd"].as_str().unwrap())
                    .output()
                    .unwrap();
                let text = String::from_utf8_lossy(&out.stdout).into_owned();
                self.terminals
                    .push((line, text, out.status.code().unwrap_or(-1)));
                json!({"terminalId": format!("t{}", self.terminals.len())})
            }
            "terminal/wait_for_exit" => json!({"exitCode": self.terminals.last().unwrap().2}),
            "terminal/output" => {
                let (_, text, code) = self.terminals.last().unwrap().clone();
                json!({"exitStatus": {"exitCode": code}, "output": text, "truncated": false})
            }
            "terminal/release" | "terminal/kill" => json!({}),
            "session/request_permission" => {
                self.asked.push(p.clone());
                json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}})
            }
            other => panic!("the editor was asked {other}"),
        }
    }

    fn said(&self) -> String {
        self.updates
            .iter()
            .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
            .filter_map(|u| u["content"]["text"].as_str())
            .collect()
    }

    fn close(mut self) {
        drop(self.stdin);
        let status = self.child.wait().unwrap();
        assert!(
            status.success(),
            "genai acp exits cleanly at the end of its input"
        );
    }
}

#[test]
fn an_acp_editor_holds_the_files_and_the_terminal_and_undo_goes_back_through_it() {
    let mut home = Home::new();
    let fake = FakeOpenAi::start(0, Behavior::text("ok")).unwrap();
    home.export("OPENAI_BASE_URL", &fake.base_url());
    home.export("OPENAI_API_KEY", "sk-journey");
    home.write_config(
        "[service_providers.claude]\nkind = \"anthropic\"\napi_key = \"sk-ant-never-used\"\n\n[defaults]\nmodel = \"openai:gpt-journey\"\n",
    );
    let project = home.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let project = project.canonicalize().unwrap();
    let notes = project.join("notes.md");
    std::fs::write(&notes, "a draft, as saved\n").unwrap();

    // A failed ask first: the server is down.
    fake.set_default(Behavior::mode(Mode::Error {
        status: 503,
        message: "overloaded".into(),
        code: String::new(),
    }));
    let failed = home.sh("cd project && genai ask 'hello'");
    assert_ne!(failed.code(), Some(0));
    assert!(
        failed.stderr().contains("overloaded"),
        "{}",
        failed.stderr()
    );
    fake.set_default(Behavior::text("ok"));

    // The editor holds an unsaved buffer of notes.md.
    let mut ed = Editor::start(&home, &project);
    let path = notes.to_string_lossy().into_owned();
    ed.buffers
        .insert(path.clone(), "an unsaved draft\n".to_string());
    let init = ed.request(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {
            "fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true}}),
    );
    assert_eq!(
        init["result"]["authMethods"][0]["id"], "genai-keys",
        "{init}"
    );
    let s = ed.request(
        "session/new",
        json!({"cwd": project.to_str().unwrap(), "mcpServers": []}),
    );
    let session = s["result"]["sessionId"].as_str().unwrap().to_string();

    let read = json!({"path": "notes.md"}).to_string();
    let edit =
        json!({"path": "notes.md", "old_text": "draft", "new_text": "final text"}).to_string();
    let run = json!({"command": "grep -c final notes.md"}).to_string();
    fake.push(Behavior::calls("", &[("workspace__read_file", &read)]));
    fake.push(Behavior::calls("", &[("workspace__edit_file", &edit)]));
    fake.push(Behavior::calls("", &[("workspace__run_command", &run)]));
    fake.push(Behavior::text("Finished the note and checked it."));
    let done = ed.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "Finish my note"}]}),
    );
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert!(ed.said().contains("Finished the note"), "{}", ed.said());
    // What the model read was the buffer; the edit and the command were asked about.
    let sent: String = fake
        .requests()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.raw).into_owned())
        .collect();
    assert!(
        sent.contains("an unsaved draft"),
        "the buffer did not reach the model"
    );
    assert!(
        !sent.contains("as saved"),
        "the disk reached the model, not the buffer"
    );
    assert_eq!(ed.asked.len(), 2, "{:?}", ed.asked);
    assert_eq!(
        ed.written,
        [(path.clone(), "an unsaved final text\n".to_string())]
    );
    assert_eq!(ed.terminals.len(), 1);
    assert_eq!(ed.terminals[0].0[..2], ["sh".to_string(), "-c".to_string()]);
    assert!(
        sent.contains("1\\nexit status 0"),
        "the command's output and status"
    );

    // From the shell: the turn is listed, also when piped into head.
    let listed = home.sh("genai checkpoints | head -1").ok();
    assert!(!listed.stderr().contains("panicked"), "{}", listed.stderr());
    assert!(!listed.stdout().is_empty(), "{}", listed.stderr());

    // /undo from the editor: the buffer goes back through it, and the model was not asked.
    let before = fake.requests().len();
    ed.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "/undo"}]}),
    );
    assert_eq!(fake.requests().len(), before);
    assert_eq!(
        ed.written.last().unwrap(),
        &(path.clone(), "an unsaved draft\n".to_string())
    );
    assert!(ed.said().contains("notes.md (restored)"), "{}", ed.said());
    ed.close();

    // Nothing is left to undo from the shell.
    let again = home.run(&["undo"]);
    assert_ne!(again.code(), Some(0));
    assert!(
        again.stderr().contains("nothing to undo"),
        "{}",
        again.stderr()
    );
}
