//! A conversation whose agent hides a project's name goes over to another model of the same
//! server with a parameter, and back through `-c`: the name never reaches the server, each
//! turn's `--json` says the middleware ran and who answered, and the listing keeps the
//! parameter and the model that answered last.

use crate::home::Home;
use crate::support::fake_openai::{Behavior, FakeOpenAi};

#[test]
fn a_hidden_name_stays_hidden_when_the_conversation_changes_model() {
    let home = Home::new();
    let corp = FakeOpenAi::start(0, Behavior::text("Understood.")).unwrap();
    home.write_config(&format!(
        r#"[service_providers.corp]
kind = "openai"
base_url = "{}"
api_key = "corp-key"

[service_providers.spare]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
api_key = "spare-key"

[agents.reader]
provider = "corp"
model = "small"
middleware = ["hide"]

[middleware.hide]
kind = "redact"
patterns = ['(?i)project\s+zeus']
"#,
        corp.base_url()
    ));
    let details = |args: &[&str]| {
        let run = home.run(args).ok();
        let v: serde_json::Value = serde_json::from_str(&run.stdout()).expect("--json");
        v
    };

    let first = details(&[
        "ask",
        "--json",
        "-m",
        "reader",
        "Tell me about Project Zeus",
    ]);
    assert_eq!(first["model"], "small", "{first}");
    let switched = details(&[
        "ask",
        "--json",
        "-c",
        "-m",
        "corp:large",
        "-p",
        "temperature=0.3",
        "And project zeus again?",
    ]);
    assert_eq!(switched["model"], "large", "{switched}");
    let said = switched["details"].to_string();
    assert!(
        said.contains("middleware hide (redact): 2 replaced"),
        "{said}"
    );
    let after = details(&["ask", "--json", "-c", "Once more: PROJECT ZEUS."]);
    assert_eq!(after["model"], "large", "{after}");
    assert!(
        after["details"].to_string().contains("3 replaced"),
        "{after}"
    );

    let sent = corp.requests();
    assert_eq!(sent.len(), 3);
    for r in &sent {
        let body = r.body.to_string().to_lowercase();
        assert!(
            !body.contains("zeus"),
            "the name reached the server: {body}"
        );
    }
    assert_eq!(sent[1].body["model"], "large");
    assert_eq!(sent[2].body["temperature"], 0.3, "{}", sent[2].body);

    // One conversation, with the parameter and the model that answered last.
    let list: serde_json::Value =
        serde_json::from_str(&home.run(&["sessions", "list", "--json"]).ok().stdout()).unwrap();
    let rows = list.as_array().unwrap();
    assert_eq!(rows.len(), 1, "{list}");
    assert_eq!(rows[0]["answeredBy"], "corp:large", "{list}");
    assert_eq!(rows[0]["parameters"]["temperature"], 0.3, "{list}");
    // The history keeps what the user wrote.
    let id = rows[0]["id"].as_str().unwrap();
    let shown = home.run(&["sessions", "show", id]).ok().stdout();
    assert!(shown.contains("Project Zeus"), "{shown}");
}
