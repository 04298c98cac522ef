//! `genai lsp` driven by an LSP client no one here wrote: Neovim's built-in one, headless
//! (`tests/it/editors/neovim_lsp.lua`), against the fake OpenAI server. A code action rewrites
//! a selection of an unsaved buffer and the file's text is checked after Neovim writes it;
//! `genai.ask` answers with progress; a bad request gets an error and the server goes on; both
//! are conversations in the history. Needs `nvim` (Debian's `neovim`; scripts/test.sh installs
//! it): without it the test fails when `CI` is set and is skipped, saying why, otherwise.

use crate::support::cli;
use crate::support::editor::{self, EditorRun, IMPROVED, REPLY};

#[test]
fn neovim_applies_a_code_action_and_asks_through_genai_lsp() {
    let Some(nvim) = editor::program("GENAI_TEST_NVIM", "nvim", "neovim") else {
        return;
    };
    let run = EditorRun::new();
    let args = ["--headless", "--clean", "-n", "-c"].map(String::from);
    let luafile = format!("luafile {}", editor::script("neovim_lsp.lua"));
    let (report, _) = run.run(&nvim, &[&args[..], &[luafile]].concat());

    // The file on disk: the unsaved first line kept, lines 2-3 replaced by the code block.
    assert_eq!(std::fs::read_to_string(&run.file).unwrap(), IMPROVED);
    let menu = editor::menu(&report);
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
    let prompt = run.first_prompt();
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
    let o = cli::output(run.dirs.genai(&["sessions", "list", "--json"]));
    let listed = String::from_utf8_lossy(&o.stdout);
    assert!(listed.contains("Improve: sample.py"), "{listed}");
    assert!(listed.contains("Ask: sample.py"), "{listed}");
}

#[test]
fn neovim_answers_genai_lsps_permission_asks_with_its_message_buttons() {
    use crate::support::fake_openai::Behavior;
    let Some(nvim) = editor::program("GENAI_TEST_NVIM", "nvim", "neovim") else {
        return;
    };
    let run = EditorRun::new();
    run.dirs
        .write_config("[defaults]\nmodel = \"openai:gpt-lsp\"\n\n[lsp]\ntools = [\"workspace\"]\n");
    let edit = |old: &str, new: &str| {
        serde_json::json!({"path": "sample.py", "old_text": old, "new_text": new}).to_string()
    };
    // Round 1: a read, then an edit the user allows once; round 2: one the user rejects.
    let read = serde_json::json!({"path": "sample.py"}).to_string();
    run.fake
        .push(Behavior::calls("", &[("workspace__read_file", &read)]));
    run.fake.push(Behavior::calls(
        "",
        &[("workspace__edit_file", &edit("x+y", "x + y"))],
    ));
    run.fake.push(Behavior::text("Spaced."));
    run.fake.push(Behavior::calls(
        "",
        &[("workspace__edit_file", &edit("# adds", "# sums"))],
    ));
    run.fake.push(Behavior::text("Not renamed."));
    let args = ["--headless", "--clean", "-n", "-c"].map(String::from);
    let luafile = format!("luafile {}", editor::script("neovim_permission.lua"));
    let (report, _) = run.run(&nvim, &[&args[..], &[luafile]].concat());

    let asks = report["asks"].as_array().unwrap();
    assert_eq!(asks.len(), 2, "{report:#}");
    let titles: Vec<&str> = asks[0]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["title"].as_str())
        .collect();
    assert_eq!(
        titles,
        ["Allow once", "Always allow", "Reject", "Always reject"]
    );
    let message = asks[0]["message"].as_str().unwrap();
    assert!(message.contains("Edit sample.py"), "{message}");
    assert!(message.contains("workspace.edit_file("), "{message}");
    assert_eq!(report["answers"][0]["reply"], "Spaced.", "{report:#}");
    assert_eq!(report["answers"][1]["reply"], "Not renamed.", "{report:#}");
    // The model read the buffer, unsaved line included.
    let read = run.fake.requests()[1].body.to_string();
    assert!(read.contains("an unsaved line"), "{read}");
    // Allowed once: spaced in the buffer, through workspace/applyEdit; rejected: the comment
    // stays. The disk is the user's to save: genai wrote nothing.
    assert_eq!(report["edits"], 1, "{report:#}");
    let buffer = format!(
        "{}# an unsaved line\n",
        editor::SAMPLE.replace("x+y", "x + y")
    );
    assert_eq!(report["buffer"], buffer, "{report:#}");
    assert_eq!(report["modified"], true);
    assert_eq!(std::fs::read_to_string(&run.file).unwrap(), editor::SAMPLE);
    let refused = run.fake.requests()[4].body.to_string();
    assert!(refused.contains("Refused"), "{refused}");
}
