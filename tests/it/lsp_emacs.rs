//! `genai lsp` driven by Emacs's eglot (Debian 12's emacs-nox 28 and elpa-eglot 1.9), headless
//! (`emacs --batch`, `tests/it/editors/emacs_eglot.el`), against the fake OpenAI server: eglot
//! attaches the server to a Python file, the code action "genai: Improve" picked from eglot's
//! menu rewrites a selection of the unsaved buffer, and the file's text is checked after Emacs
//! saves it. Needs `emacs` with eglot (scripts/test.sh installs both): without it the test
//! fails when `CI` is set and is skipped, saying why, otherwise.

use crate::support::cli;
use crate::support::editor::{self, EditorRun, IMPROVED};

#[test]
fn eglot_applies_a_code_action_through_genai_lsp() {
    let Some(emacs) = editor::program("GENAI_TEST_EMACS", "emacs", "emacs-nox and elpa-eglot")
    else {
        return;
    };
    let run = EditorRun::new();
    let args = [
        "--batch".to_string(),
        "-l".into(),
        editor::script("emacs_eglot.el"),
    ];
    let (report, o) = run.run(&emacs, &args);
    assert!(o.status.success(), "{report:#}");
    assert_eq!(report["server"], "genai", "{report:#}");

    // The file on disk: the unsaved first line kept, lines 2-3 replaced by the code block.
    assert_eq!(std::fs::read_to_string(&run.file).unwrap(), IMPROVED);
    assert_eq!(report["text"], IMPROVED, "{report:#}");
    let menu = editor::menu(&report);
    assert!(menu.contains(&"genai: Improve"), "{menu:?}");
    assert!(menu.contains(&"genai: Explain"), "{menu:?}");

    // The action's prompt had the unsaved selection, and it is a conversation in the history.
    let prompt = run.first_prompt();
    assert!(prompt.contains("def add(x,y):\\n  return x+y"), "{prompt}");
    assert!(prompt.contains("# sums two numbers"), "{prompt}");
    let o = cli::output(run.dirs.genai(&["sessions", "list", "--json"]));
    let listed = String::from_utf8_lossy(&o.stdout);
    assert!(listed.contains("Improve: sample.py"), "{listed}");
}
