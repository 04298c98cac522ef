//! Set up and ask locally, then add a provider and a config, and keep using both: the local
//! model must not be lost once a config exists, and every listing shows it.

use crate::home::Home;
use crate::support::fake_openai::{Behavior, FakeOpenAi};

const DEMO: &str = "smollm2-135m-instruct-q4_1";

#[test]
fn ask_locally_then_add_a_provider_and_keep_both() {
    let home = Home::new();
    let Some(()) = home.install_demo_model() else {
        return;
    };
    // The quick start: no config, no key, the default local model answers.
    let first = home.run(&["ask", "-p", "max_tokens=8", "Say hi"]).ok();
    assert!(!first.stdout().trim().is_empty(), "no answer");

    // The user adds a server of their company and makes it the default.
    let corp = FakeOpenAi::start(0, Behavior::text("From corp.")).unwrap();
    home.write_config(&format!(
        "[defaults]\nmodel = \"corp:corp-model\"\n\n[service_providers.corp]\nkind = \"openai\"\nbase_url = \"{}\"\napi_key = \"corp-key\"\n",
        corp.base_url()
    ));
    let by_default = home.run(&["ask", "hello"]).ok();
    assert_eq!(by_default.stdout().trim(), "From corp.");

    // The local model is still there, by its full name and by the provider alone.
    for m in [format!("local:{DEMO}"), "local".to_string()] {
        let local = home
            .run(&["ask", "-m", &m, "-p", "max_tokens=8", "Say hi"])
            .ok();
        assert!(!local.stdout().trim().is_empty(), "-m {m}: no answer");
        assert!(
            !local.stdout().contains("From corp."),
            "-m {m} went to corp"
        );
    }
    assert_eq!(
        corp.requests().len(),
        1,
        "only the default ask goes to corp"
    );

    // What the user looks at lists both.
    let components = home.run(&["components"]).ok().stdout();
    assert!(components.contains("local"), "components:\n{components}");
    assert!(components.contains("corp"), "components:\n{components}");
    let models = home.run(&["models", "list"]).ok().stdout();
    assert!(models.contains(DEMO), "models list:\n{models}");
}
