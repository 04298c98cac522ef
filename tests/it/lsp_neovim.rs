//! `genai lsp` driven by an LSP client no one here wrote: Neovim's built-in one, headless
//! (`tests/it/editors/neovim_lsp.lua`), against the fake OpenAI server. A code action rewrites
//! a selection of an unsaved buffer and the file's text is checked after Neovim writes it;
//! `genai.ask` answers with progress; a bad request gets an error and the server goes on; both
//! are conversations in the history. Needs `nvim` (Debian's `neovim`; scripts/test.sh installs
//! it): without it the test fails when `CI` is set and is skipped, saying why, otherwise.

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::support::cli::{self, Folders};
use crate::support::fake_openai::{Behavior, FakeOpenAi};
use crate::support::loopback::loopback_only;

const REPLY: &str =
    "A clearer version:\n```python\ndef add(a, b):\n    return a + b\n```\nIt is the same.";

fn neovim() -> Option<String> {
    editor_program("GENAI_TEST_NVIM", "nvim", "neovim")
}

/// The editor `$VAR` names (else `default`), when it runs; without it the test fails when
/// `CI` is set and is skipped, saying why, otherwise. `package` is Debian's package.
pub(crate) fn editor_program(var: &str, default: &str, package: &str) -> Option<String> {
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

#[test]
fn neovim_applies_a_code_action_and_asks_through_genai_lsp() {
    let Some(nvim) = neovim() else { return };
    let fake = FakeOpenAi::start(0, Behavior::reply(REPLY, 3)).unwrap();
    let dirs = Folders::new();
    dirs.write_config("[defaults]\nmodel = \"openai:gpt-lsp\"\n");
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("sample.py");
    std::fs::write(
        &file,
        "# adds\ndef add(x,y):\n  return x+y\nprint(add(1, 2))\n",
    )
    .unwrap();
    let out = work.path().join("report.json");

    // Neovim starts `genai lsp` itself: the variables reach it through Neovim's environment.
    let mut c = Command::new(nvim);
    loopback_only(&mut c);
    c.args(["--headless", "--clean", "-n", "-c"])
        .arg(format!(
            "luafile {}",
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/it/editors/neovim_lsp.lua"
            )
        ))
        .env("GENAI_BIN", env!("CARGO_BIN_EXE_genai"))
        .env("GENAI_TEST_FILE", &file)
        .env("GENAI_TEST_OUT", &out)
        .env("GENAI_DATA_DIR", dirs.data.path())
        .env("GENAI_CONFIG_DIR", dirs.config.path())
        .env("OPENAI_BASE_URL", fake.base_url())
        .env("OPENAI_API_KEY", "sk-test-neovim");
    let o = run_with_deadline(c, Duration::from_secs(90));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap_or_else(|e| {
        panic!(
            "Neovim wrote no report ({e}); stderr: {}",
            String::from_utf8_lossy(&o.stderr)
        )
    }))
    .unwrap();
    assert_eq!(report["errors"], serde_json::json!([]), "{report:#}");

    // The file on disk: the unsaved first line kept, lines 2-3 replaced by the code block.
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "# sums two numbers\ndef add(a, b):\n    return a + b\nprint(add(1, 2))\n"
    );
    let menu: Vec<&str> = report["menu"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for title in [
        "genai: Explain",
        "genai: Fix",
        "genai: Improve",
        "genai: Document",
        "genai: Write tests",
    ] {
        assert!(menu.contains(&title), "{menu:?}");
    }

    // The action's prompt: instruction, file, language, the (unsaved) selection and context.
    let requests = fake.requests();
    let prompt = requests[0].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .unwrap();
    assert!(
        prompt.contains("File: sample.py (language: python)"),
        "{prompt}"
    );
    assert!(prompt.contains("def add(x,y):\\n  return x+y"), "{prompt}");
    assert!(prompt.contains("# sums two numbers"), "{prompt}");

    // genai.ask: the answer, work-done progress begun, reported and ended, the reply shown.
    assert_eq!(report["ask"]["reply"], REPLY, "{report:#}");
    let kinds: Vec<&str> = report["progress"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["kind"].as_str())
        .collect();
    assert!(
        kinds.contains(&"begin") && kinds.contains(&"end"),
        "{kinds:?}"
    );
    assert!(
        report["progress"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["kind"] == "report"
                && p["message"]
                    .as_str()
                    .is_some_and(|m| m.ends_with(" characters"))),
        "{report:#}"
    );
    assert!(
        report["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m == REPLY),
        "{report:#}"
    );

    // A bad request: an error, and the server answers the next one.
    assert_eq!(report["bad_request"]["code"], -32602, "{report:#}");
    assert_eq!(report["actions_after_bad_request"], 5, "{report:#}");

    // Both are conversations in the history, titled by action and file.
    let o = cli::output(dirs.genai(&["sessions", "list", "--json"]));
    let listed = String::from_utf8_lossy(&o.stdout);
    assert!(listed.contains("Improve: sample.py"), "{listed}");
    assert!(listed.contains("Ask: sample.py"), "{listed}");
}

/// Runs a child to its end, killing it after `deadline`.
pub(crate) fn run_with_deadline(mut c: Command, deadline: Duration) -> std::process::Output {
    c.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}
