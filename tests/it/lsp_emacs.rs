//! `genai lsp` driven by Emacs's eglot (Debian 12's emacs-nox 28 and elpa-eglot 1.9), headless
//! (`emacs --batch`, `tests/it/editors/emacs_eglot.el`), against the fake OpenAI server: eglot
//! attaches the server to a Python file, the code action "genai: Improve" picked from eglot's
//! menu rewrites a selection of the unsaved buffer, and the file's text is checked after Emacs
//! saves it. Needs `emacs` with eglot (scripts/test.sh installs both): without it the test
//! fails when `CI` is set and is skipped, saying why, otherwise.

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::lsp_neovim::{editor_program, run_with_deadline};
use crate::support::cli::{self, Folders};
use crate::support::fake_openai::{Behavior, FakeOpenAi};
use crate::support::loopback::loopback_only;

const REPLY: &str =
    "A clearer version:\n```python\ndef add(a, b):\n    return a + b\n```\nIt is the same.";

#[test]
fn eglot_applies_a_code_action_through_genai_lsp() {
    let Some(emacs) = editor_program("GENAI_TEST_EMACS", "emacs", "emacs-nox and elpa-eglot")
    else {
        return;
    };
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

    // Emacs starts `genai lsp` itself: the variables reach it through Emacs's environment.
    let mut c = Command::new(emacs);
    loopback_only(&mut c);
    c.args(["--batch", "-l"])
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/it/editors/emacs_eglot.el"
        ))
        .env("GENAI_BIN", env!("CARGO_BIN_EXE_genai"))
        .env("GENAI_TEST_FILE", &file)
        .env("GENAI_TEST_OUT", &out)
        .env("GENAI_DATA_DIR", dirs.data.path())
        .env("GENAI_CONFIG_DIR", dirs.config.path())
        .env("OPENAI_BASE_URL", fake.base_url())
        .env("OPENAI_API_KEY", "sk-test-emacs");
    let o = run_with_deadline(c, Duration::from_secs(90));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap_or_else(|e| {
        panic!(
            "Emacs wrote no report ({e}); stderr: {}",
            String::from_utf8_lossy(&o.stderr)
        )
    }))
    .unwrap();
    assert_eq!(report["errors"], serde_json::json!([]), "{report:#}");
    assert!(o.status.success(), "{report:#}");
    assert_eq!(report["server"], "genai", "{report:#}");

    // The file on disk: the unsaved first line kept, lines 2-3 replaced by the code block.
    let expected = "# sums two numbers\ndef add(a, b):\n    return a + b\nprint(add(1, 2))\n";
    assert_eq!(std::fs::read_to_string(&file).unwrap(), expected);
    assert_eq!(report["text"], expected, "{report:#}");
    let menu: Vec<&str> = report["menu"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(menu.contains(&"genai: Improve"), "{menu:?}");
    assert!(menu.contains(&"genai: Explain"), "{menu:?}");

    // The action's prompt had the unsaved selection, and it is a conversation in the history.
    let prompt = fake.requests()[0].body["messages"].to_string();
    assert!(prompt.contains("def add(x,y):\\n  return x+y"), "{prompt}");
    assert!(prompt.contains("# sums two numbers"), "{prompt}");
    let o = cli::output(dirs.genai(&["sessions", "list", "--json"]));
    let listed = String::from_utf8_lossy(&o.stdout);
    assert!(listed.contains("Improve: sample.py"), "{listed}");
}
