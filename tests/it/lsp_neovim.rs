//! `genai lsp` driven by an LSP client no one here wrote: Neovim's built-in one, headless
//! (`tests/it/editors/neovim_lsp.lua`), against the fake OpenAI server. A code action rewrites
//! a selection of an unsaved buffer and the file's text is checked after Neovim writes it;
//! `genai.ask` answers with progress; a bad request gets an error and the server goes on; both
//! are conversations in the history. A project command file beside the edited file is in the
//! menu, and run (`neovim_command.lua`) its prompt places the selection itself. Needs `nvim`
//! (Debian's `neovim`; scripts/test.sh installs it): without it the test fails when `CI` is
//! set and is skipped, saying why, otherwise.

use crate::support::cli;
use crate::support::editor::{self, EditorRun, IMPROVED, REPLY};

/// A project command whose prompt places the selection (`{{input}}`) and whose reply
/// replaces it.
const SHOUT: &str = "---\ndescription: Shout the code\ntitle: Shout\napply: replace\n---\nShout this code, in capitals:\n\n{{input}}\n\nKeep the line breaks.\n";

/// Puts [`SHOUT`] in `.genai/commands/` of the edited file's folder.
fn add_shout(run: &EditorRun) {
    let dir = run.file.parent().unwrap().join(".genai").join("commands");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("shout.md"), SHOUT).unwrap();
}

#[test]
fn neovim_applies_a_code_action_and_asks_through_genai_lsp() {
    let Some(nvim) = editor::program("GENAI_TEST_NVIM", "nvim", "neovim") else {
        return;
    };
    let run = EditorRun::new();
    add_shout(&run);
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
        "genai: Shout",
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

    // A bad request: an error, and the server answers the next one (the five built-in
    // actions and the project's command).
    assert_eq!(report["bad_request"]["code"], -32602, "{report:#}");
    assert_eq!(report["actions_after_bad_request"], 6, "{report:#}");

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

#[test]
fn neovim_runs_a_project_command_whose_prompt_places_the_selection() {
    use crate::support::fake_openai::Behavior;
    let Some(nvim) = editor::program("GENAI_TEST_NVIM", "nvim", "neovim") else {
        return;
    };
    let run = EditorRun::new();
    add_shout(&run);
    run.fake.push(Behavior::text(
        "Shouted:\n```python\nDEF ADD(X,Y):\n  RETURN X+Y\n```\n",
    ));
    let args = ["--headless", "--clean", "-n", "-c"].map(String::from);
    let luafile = format!("luafile {}", editor::script("neovim_command.lua"));
    let (report, _) = run.run(&nvim, &[&args[..], &[luafile]].concat());

    let menu = editor::menu(&report);
    assert!(menu.contains(&"genai: Shout"), "{menu:?}");
    // `apply: replace`: the code block took lines 2-3's place, through workspace/applyEdit.
    assert_eq!(report["edits"], 1, "{report:#}");
    assert_eq!(
        std::fs::read_to_string(&run.file).unwrap(),
        "# adds\nDEF ADD(X,Y):\n  RETURN X+Y\nprint(add(1, 2))\n"
    );

    // One request; its prompt is the command's, the selection where `{{input}}` was and
    // nowhere else, then the frame (file, language, the lines around) without it.
    assert_eq!(run.fake.requests().len(), 1);
    let prompt: serde_json::Value = serde_json::from_str(&run.first_prompt()).unwrap();
    let prompt = prompt
        .as_str()
        .unwrap_or_else(|| panic!("not one text: {prompt}"));
    let selection = "def add(x,y):\n  return x+y";
    let head = format!("Shout this code, in capitals:\n\n{selection}\n");
    assert!(prompt.starts_with(&head), "{prompt}");
    let after = prompt[head.len()..].trim_start_matches('\n');
    assert!(after.starts_with("Keep the line breaks.\n"), "{prompt}");
    assert_eq!(prompt.matches("return x+y").count(), 1, "{prompt}");
    assert_eq!(prompt.matches("def add(x,y):").count(), 1, "{prompt}");
    assert!(!prompt.contains("The selection:"), "{prompt}");
    assert!(!prompt.contains("{{input}}"), "{prompt}");
    let frame = &prompt[prompt.find("Keep the line breaks.").unwrap()..];
    assert!(
        frame.contains("File: sample.py (language: python)"),
        "{prompt}"
    );
    assert!(frame.contains("lines 2-3"), "{prompt}");
    assert!(
        frame.contains("Before the selection:\n```python\n# adds\n```"),
        "{prompt}"
    );
    let below = frame
        .split_once("After the selection:\n```python\n")
        .and_then(|(_, b)| b.split_once("```"))
        .map(|(b, _)| b);
    assert!(
        below.is_some_and(|b| b.trim() == "print(add(1, 2))"),
        "{prompt}"
    );
    assert!(
        frame.contains("Answer with the code that replaces the selection"),
        "{prompt}"
    );

    // A conversation in the history, titled by the command and file.
    let o = cli::output(run.dirs.genai(&["sessions", "list", "--json"]));
    let listed = String::from_utf8_lossy(&o.stdout);
    assert!(listed.contains("Shout: sample.py"), "{listed}");
}
