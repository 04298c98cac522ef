//! Subagents on the local engine: the parent runs on the fake OpenAI server, which hands two
//! tasks at once, and both subagents' definitions name the local model (`model: gemma`, a
//! `kind = "local"` provider on the test model). Where a subagent is defined, `genai ask`
//! keeps the engine's slots (not the one of a lone conversation), so the two run in its one
//! continuous batch: the context is made with a sequence for each, and neither waits for a
//! slot. Each one's answer is its task call's result; nothing of theirs reaches the fake. A
//! plain question there (no tools, so no task) keeps the one slot of a lone conversation.
//!
//! Built only with the `local` cargo feature (the default); the model as in `local_model`.

use serde_json::json;

use crate::local_model::{test_model, toml_string};
use crate::plan_mode::{events, of_type};
use crate::subagents::{calls, Repo};
use crate::support::cli;
use crate::support::fake_openai::Behavior;

const DEFINITION: &str =
    "---\ndescription: Answers in a word\nmodel: gemma\ntools: []\n---\nAnswer in one word.\n";

#[test]
fn two_subagents_on_the_local_model_run_in_its_one_batch() {
    let Some(model) = test_model() else {
        return;
    };
    let r = Repo::new();
    for name in ["north", "south"] {
        std::fs::write(r.agents().join(format!("{name}.md")), DEFINITION).unwrap();
    }
    r.env.dirs.write_config(&format!(
        "[service_providers.gemma]\nkind = \"local\"\nmodel = {}\n",
        toml_string(&model.display().to_string())
    ));
    r.env.fake.wire().route(|req| {
        let behavior = match req.body["messages"]
            .to_string()
            .contains("\"role\":\"tool\"")
        {
            true => Behavior::text("Both answered."),
            false => calls(&[
                (
                    "task_n",
                    "workspace__task",
                    json!({"agent": "north", "prompt": "What is the capital of France?"}),
                ),
                (
                    "task_s",
                    "workspace__task",
                    json!({"agent": "south", "prompt": "Name a colour."}),
                ),
            ]),
        };
        Some((behavior, None))
    });
    let mut c = r.command(&[
        "ask",
        "--tools=workspace",
        "-m",
        "openai:gpt-test",
        "--output-format",
        "stream-json",
        "Ask both",
    ]);
    c.env("GENAI_LOG", "genai_local=debug");
    let o = cli::output(c);
    let seen = events(&o);
    let stderr = cli::stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert_eq!(of_type(&seen, "result")[0]["reply"], "Both answered.");

    // One context, a sequence for each conversation at once; nobody waited for a slot.
    let made: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("local context made"))
        .collect();
    assert_eq!(made.len(), 1, "{stderr}");
    assert!(made[0].contains("sequences=4"), "{}", made[0]);
    assert!(!stderr.contains("waits for a slot"), "{stderr}");
    assert!(
        !String::from_utf8_lossy(&o.stdout).contains("waiting for a slot"),
        "{seen:?}"
    );

    // Each subagent's answer is its task's result; the fake saw the parent's requests only.
    let results = of_type(&seen, "tool_result");
    for id in ["task_n", "task_s"] {
        let result = results
            .iter()
            .find(|e| e["id"] == id && e.get("parent_tool_use_id").is_none())
            .unwrap_or_else(|| panic!("no result of {id}: {seen:?}"));
        assert_eq!(result["isError"], false, "{result}");
        assert!(
            !result["output"].as_str().unwrap().trim().is_empty(),
            "{result}"
        );
    }
    assert_eq!(r.env.fake.requests().len(), 2);
}

#[test]
fn a_plain_question_where_subagents_are_defined_keeps_one_slot() {
    let Some(model) = test_model() else {
        return;
    };
    let r = Repo::new();
    r.env.dirs.write_config(&format!(
        "[service_providers.gemma]\nkind = \"local\"\nmodel = {}\n",
        toml_string(&model.display().to_string())
    ));
    let mut c = r.command(&["ask", "-m", "gemma", "-p", "max_tokens=4", "Hi"]);
    c.env("GENAI_LOG", "genai_local=debug");
    let o = cli::output(c);
    let stderr = cli::stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let made: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("local context made"))
        .collect();
    assert_eq!(made.len(), 1, "{stderr}");
    assert!(made[0].contains("sequences=1"), "{}", made[0]);
}
