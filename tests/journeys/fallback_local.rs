//! The company server goes down: a user whose agent runs on their company's server has the
//! local model as its fallback (`fallback = ["local"]`, the name `-m` takes, with no agent of
//! its own). While the server answers, it answers; once it is down, the local model answers
//! the same `genai ask`, which says so and names the local provider, and `genai usage` shows
//! both models' turns. A fallback that names nothing is said when the agent is used.

use crate::home::Home;
use crate::support::fake_openai::{Behavior, FakeOpenAi};

const DEMO: &str = "smollm2-135m-instruct-q4_1";

#[test]
fn the_local_model_answers_when_the_company_server_is_down() {
    let home = Home::new();
    let Some(()) = home.install_demo_model() else {
        return;
    };
    let corp = FakeOpenAi::start(0, Behavior::text("From corp.")).unwrap();
    let config = |base: &str, fallback: &str| {
        format!(
            "[defaults]\nmodel = \"work\"\n\n\
             [service_providers.corp]\nkind = \"openai\"\nbase_url = \"{base}\"\n\
             api_key = \"sk-journey-corp\"\nmax_retries = 0\n\n\
             [agents.work]\nprovider = \"corp\"\nmodel = \"corp-model\"\nfallback = [\"{fallback}\"]\n"
        )
    };
    home.write_config(&config(&corp.base_url(), "local"));
    let up = home.run(&["ask", "hello"]).ok();
    assert_eq!(up.stdout().trim(), "From corp.");

    // The server is gone: nothing listens on its port any more.
    let base = corp.base_url();
    drop(corp);
    let down = home
        .run(&["ask", "--json", "-p", "max_tokens=8", "Say hi"])
        .ok()
        .stdout();
    let v: serde_json::Value = serde_json::from_str(down.trim()).unwrap();
    assert_eq!(v["provider"], "local", "{down}");
    assert_eq!(v["model"], DEMO, "{down}");
    assert!(!v["reply"].as_str().unwrap().trim().is_empty(), "{down}");
    let details = v["details"].to_string();
    assert!(
        details.contains("served by fallback local") && details.contains("corp failed"),
        "{details}"
    );
    // The details, --json and the listing name the same provider and model: the fallback's.
    assert!(details.contains("provider: local (local)"), "{details}");
    assert!(!details.contains("provider: corp"), "{details}");
    assert!(details.contains(&format!("model: {DEMO}")), "{details}");
    let id = v["conversationId"].as_str().unwrap();
    let listed = home.run(&["sessions", "list"]).ok().stdout();
    let line = listed
        .lines()
        .find(|l| l.starts_with(id))
        .unwrap_or_else(|| panic!("{id} not listed: {listed}"));
    assert!(line.contains(&format!("local:{DEMO}")), "{line}");

    let usage = home.run(&["usage"]).ok().stdout();
    assert!(
        usage.contains(DEMO) && usage.contains("corp-model"),
        "{usage}"
    );

    // A fallback naming nothing: the ask fails and says which.
    home.write_config(&config(&base, "lcoal"));
    home.run(&["ask", "hello"]).fails(3, "fallback `lcoal`");
}
