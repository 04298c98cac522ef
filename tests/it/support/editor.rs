//! Running a real editor against `genai lsp`: the editor found (or the test skipped, or failed
//! under `CI`), a fake OpenAI server whose reply holds a code block, a Python file to edit, and
//! the editor's script run headless with a deadline; the script writes what it saw as JSON.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::cli::Folders;
use super::fake_openai::{Behavior, FakeOpenAi};
use super::loopback::loopback_only;

/// The fake model's reply: a code block replacing lines 2-3 of [`SAMPLE`].
pub const REPLY: &str =
    "A clearer version:\n```python\ndef add(a, b):\n    return a + b\n```\nIt is the same.";
/// The file the editor opens.
pub const SAMPLE: &str = "# adds\ndef add(x,y):\n  return x+y\nprint(add(1, 2))\n";
/// The file after the script's unsaved change of line 1 and the action on lines 2-3.
pub const IMPROVED: &str =
    "# sums two numbers\ndef add(a, b):\n    return a + b\nprint(add(1, 2))\n";

/// The editor `$var` names (else `default`), when it runs; without it the test fails when `CI`
/// is set and is skipped, saying why, otherwise. `package` is what Debian calls it.
pub fn program(var: &str, default: &str, package: &str) -> Option<String> {
    let program = std::env::var(var).unwrap_or_else(|_| default.into());
    let found = Command::new(&program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    match found {
        true => Some(program),
        false if std::env::var_os("CI").is_some() => {
            panic!("{default} is not installed (scripts/test.sh installs Debian's {package})")
        }
        false => {
            eprintln!("skipped: install {package} (or set {var}) to run this editor's LSP test");
            None
        }
    }
}

/// One editor session: the fake, genai's folders, and the file.
pub struct EditorRun {
    pub fake: FakeOpenAi,
    pub dirs: Folders,
    pub file: PathBuf,
    out: PathBuf,
    _work: tempfile::TempDir,
}

impl EditorRun {
    pub fn new() -> EditorRun {
        let fake = FakeOpenAi::start(0, Behavior::reply(REPLY, 3)).unwrap();
        let dirs = Folders::new();
        dirs.write_config("[defaults]\nmodel = \"openai:gpt-lsp\"\n");
        let work = tempfile::tempdir().unwrap();
        let file = work.path().join("sample.py");
        std::fs::write(&file, SAMPLE).unwrap();
        let out = work.path().join("report.json");
        EditorRun {
            fake,
            dirs,
            file,
            out,
            _work: work,
        }
    }

    /// Runs `editor` with `args` (its script among them) to its end, at most 90 s, and returns
    /// the script's report. The editor starts `genai lsp` itself: the variables reach it
    /// through the editor's environment.
    pub fn run(&self, editor: &str, args: &[String]) -> (Value, Output) {
        let mut c = Command::new(editor);
        loopback_only(&mut c);
        c.args(args)
            .env("GENAI_BIN", env!("CARGO_BIN_EXE_genai"))
            .env("GENAI_TEST_FILE", &self.file)
            .env("GENAI_TEST_OUT", &self.out)
            .env("GENAI_DATA_DIR", self.dirs.data.path())
            .env("GENAI_CONFIG_DIR", self.dirs.config.path())
            .env("OPENAI_BASE_URL", self.fake.base_url())
            .env("OPENAI_API_KEY", "sk-test-editor");
        let o = run_with_deadline(c, Duration::from_secs(90));
        let report = std::fs::read_to_string(&self.out).unwrap_or_else(|e| {
            panic!(
                "{editor} wrote no report ({e}); stderr: {}",
                String::from_utf8_lossy(&o.stderr)
            )
        });
        let report: Value = serde_json::from_str(&report).unwrap();
        assert_eq!(report["errors"], serde_json::json!([]), "{report:#}");
        (report, o)
    }

    /// The user message of the provider's first request, as JSON text.
    pub fn first_prompt(&self) -> String {
        self.fake.requests()[0].body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .map(|m| m["content"].to_string())
            .unwrap()
    }
}

/// The code-action titles the script saw in the editor's menu (`report.menu`).
pub fn menu(report: &Value) -> Vec<&str> {
    report["menu"]
        .as_array()
        .unwrap_or_else(|| panic!("no menu in {report:#}"))
        .iter()
        .filter_map(Value::as_str)
        .collect()
}

/// A script's path in `tests/it/editors/`.
pub fn script(name: &str) -> String {
    format!("{}/tests/it/editors/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Runs a child to its end, killing it after `deadline`.
fn run_with_deadline(mut c: Command, deadline: Duration) -> Output {
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}
