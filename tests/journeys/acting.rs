//! genai acts on a project: a user with a config that already names another provider, after a
//! failed turn, lets the model work on a project with `--tools=workspace` from a script (no
//! terminal): the edit it was not allowed is refused and stderr says how to allow it, the
//! retry with `--allow` edits and ends with what changed, the reply piped into `head` ends
//! quietly, `genai undo` in another folder leaves the project alone and in the project puts the
//! file back, a command never shows the project's `.env`, and the history keeps who decided
//! and the calls with their results.

use crate::home::Home;
use crate::support::fake_openai::{Behavior, FakeOpenAi, Mode};

const LIB: &str = "pub fn answer() -> u32 {\n    41\n}\n";
const SECRET: &str = "sk-journey-project-secret-42";

fn edit() -> String {
    serde_json::json!({"path": "src/lib.rs", "old_text": "41", "new_text": "42"}).to_string()
}

#[test]
fn a_script_lets_the_model_edit_then_undoes_it_and_the_secret_stays_home() {
    let mut home = Home::new();
    let fake = FakeOpenAi::start(0, Behavior::text("ok")).unwrap();
    home.export("OPENAI_BASE_URL", &fake.base_url());
    home.export("OPENAI_API_KEY", "sk-journey");
    home.write_config(
        "[service_providers.claude]\nkind = \"anthropic\"\napi_key = \"sk-ant-never-used\"\n\n[defaults]\nmodel = \"openai:gpt-journey\"\n",
    );
    let project = home.path().join("project");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(project.join("src/lib.rs"), LIB).unwrap();
    std::fs::write(project.join(".env"), format!("TOKEN={SECRET}\n")).unwrap();
    // In the project, with no terminal (a script's own session).
    let in_project = |line: &str| home.sh(&format!("cd project && setsid -w {line}"));

    // A failed turn first: the server is down.
    fake.set_default(Behavior::mode(Mode::Error {
        status: 503,
        message: "overloaded".into(),
        code: String::new(),
    }));
    let failed = in_project("genai ask --tools=workspace 'Bump the answer'");
    assert_ne!(failed.code(), Some(0));
    assert!(
        failed.stderr().contains("overloaded"),
        "{}",
        failed.stderr()
    );
    fake.set_default(Behavior::text("ok"));

    // The model edits; nobody can be asked, so it is refused, and the user is told how.
    fake.push(Behavior::calls("", &[("workspace__edit_file", &edit())]));
    fake.push(Behavior::text("I was not allowed to edit src/lib.rs."));
    // It ends with exit code 5: the run ended, but a call was refused.
    let refused = in_project("genai ask --tools=workspace 'Bump the answer'")
        .fails(5, "no terminal to ask on");
    assert!(
        refused.stderr().contains("no terminal to ask on"),
        "{}",
        refused.stderr()
    );
    assert!(refused.stderr().contains("--allow"), "{}", refused.stderr());
    assert_eq!(
        std::fs::read_to_string(project.join("src/lib.rs")).unwrap(),
        LIB
    );

    // Allowed by a rule: edited; the long reply piped into head ends quietly.
    fake.push(Behavior::calls("", &[("workspace__edit_file", &edit())]));
    let long: String = (1..=400)
        .map(|i| format!("line {i} of the report\n"))
        .collect();
    fake.push(Behavior::reply(&long, 40));
    let piped = in_project(
        "genai ask --tools=workspace --allow 'edit_file(src/**)' 'Bump the answer' | head -1",
    )
    .ok();
    assert_eq!(piped.stdout(), "line 1 of the report\n");
    assert!(!piped.stderr().contains("panicked"), "{}", piped.stderr());
    assert_eq!(
        std::fs::read_to_string(project.join("src/lib.rs")).unwrap(),
        LIB.replace("41", "42")
    );
    // The turn ends saying what changed and how to put it back.
    assert!(
        piped.stderr().contains("genai: changed src/lib.rs: +1 -1")
            && piped.stderr().contains("genai undo --turn "),
        "{}",
        piped.stderr()
    );

    // Undo from another folder: this project's turn is not that folder's to undo.
    let elsewhere = home.run(&["undo"]);
    assert_eq!(elsewhere.code(), Some(2), "{}", elsewhere.stderr());
    assert!(
        elsewhere.stderr().contains("nothing to undo in")
            && elsewhere.stderr().contains("project")
            && elsewhere.stderr().contains("genai undo --cid"),
        "{}",
        elsewhere.stderr()
    );
    assert_eq!(
        std::fs::read_to_string(project.join("src/lib.rs")).unwrap(),
        LIB.replace("41", "42")
    );
    // In the project: the file is back byte for byte, and undo says where; a second undo says
    // there is none.
    let undone = in_project("genai undo").ok();
    assert!(
        undone.stdout().contains("src/lib.rs: restored") && undone.stdout().contains("/project:"),
        "{}",
        undone.stdout()
    );
    assert_eq!(
        std::fs::read_to_string(project.join("src/lib.rs")).unwrap(),
        LIB
    );
    let again = in_project("genai undo");
    assert_ne!(again.code(), Some(0));
    assert!(again.stderr().contains("undo"), "{}", again.stderr());

    // A command in full mode reads .env as empty, and the model never sees the secret.
    fake.push(Behavior::calls(
        "",
        &[(
            "workspace__run_command",
            &serde_json::json!({"command": "cat .env; echo listed"}).to_string(),
        )],
    ));
    fake.push(Behavior::text("The file is empty."));
    in_project("genai ask --tools=workspace --mode full 'Show me .env'").ok();
    let sent: String = fake
        .requests()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.raw).into_owned())
        .collect();
    // Where the kernel has no Landlock, the command asks, and with no terminal it is refused.
    let sandboxed = matches!(
        genai_core::workspace::sandbox::support(),
        genai_core::workspace::sandbox::Support::Landlock { .. }
    );
    assert_eq!(
        sent.contains("listed"),
        sandboxed,
        "the command's output and the sandbox"
    );
    assert!(!sent.contains(SECRET), "the .env secret reached the model");

    // The history keeps who decided: the refusal (no one to ask) and the rule that allowed.
    let list = home.run(&["sessions", "list", "--json"]).ok().stdout();
    let ids: Vec<String> = serde_json::from_str::<serde_json::Value>(&list)
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["id"].as_str().map(str::to_string))
        .collect();
    let shown: String = ids
        .iter()
        .map(|id| home.run(&["sessions", "show", id]).ok().stdout())
        .collect();
    assert!(shown.contains("deny by no one to ask"), "{shown}");
    // The turns with tools show their calls and what the tools answered.
    assert!(
        shown.contains("→ workspace__edit_file {\"path\":\"src/lib.rs\"")
            && shown.contains("← workspace__edit_file"),
        "{shown}"
    );
    assert!(shown.contains("allow by rule allow"), "{shown}");
    assert!(!shown.contains(SECRET), "{shown}");
}
