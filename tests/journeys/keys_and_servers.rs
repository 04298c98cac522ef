//! A key in the environment and a custom server in the config: the OpenAI key goes to OpenAI's
//! endpoint only, never to the company server the README's example configures, and what the
//! user is shown says so.

use crate::home::Home;
use crate::support::fake_openai::{Behavior, FakeOpenAi};

const SECRET: &str = "sk-journey-never-elsewhere";

#[test]
fn an_environment_key_reaches_its_own_service_only() {
    let mut home = Home::new();
    let openai = FakeOpenAi::start(0, Behavior::text("From OpenAI.")).unwrap();
    let corp = FakeOpenAi::start(0, Behavior::text("From corp.")).unwrap();
    home.export("OPENAI_API_KEY", SECRET);
    home.export("OPENAI_BASE_URL", &openai.base_url());
    home.write_config(&format!(
        "[service_providers.corp]\nkind = \"openai\"\nbase_url = \"{}\"\n",
        corp.base_url()
    ));

    let ours = home.run(&["ask", "-m", "openai:gpt-4o-mini", "hi"]).ok();
    assert_eq!(ours.stdout().trim(), "From OpenAI.");
    let auth = openai.last().header("authorization").map(str::to_string);
    assert_eq!(auth.as_deref(), Some(format!("Bearer {SECRET}").as_str()));

    let theirs = home.run(&["ask", "-m", "corp:llama3", "hi"]).ok();
    assert_eq!(theirs.stdout().trim(), "From corp.");
    for r in corp.requests() {
        let auth = r.header("authorization").unwrap_or_default();
        assert!(
            !auth.contains(SECRET),
            "the OpenAI key went to corp: {auth}"
        );
    }

    let keys = home.run(&["keys", "list"]).ok();
    let corp_line = keys
        .stdout()
        .lines()
        .find(|l| l.starts_with("corp"))
        .map(str::to_string)
        .unwrap_or_default();
    assert!(
        !corp_line.contains("OPENAI_API_KEY"),
        "keys list says corp uses the OpenAI key: {corp_line}"
    );
    for out in [
        keys.stdout(),
        keys.stderr(),
        home.run(&["config", "show"]).ok().stdout(),
    ] {
        assert!(!out.contains(SECRET), "the key is shown: {out}");
    }
    // No keyring answers here: said in one short line, not a paragraph.
    let said = keys.stderr();
    let notes: Vec<&str> = said.lines().collect();
    assert!(
        notes.len() <= 1 && notes.iter().all(|l| l.len() < 200),
        "{notes:?}"
    );

    // A key written in the config is listed as the config's.
    home.write_config(&format!(
        "[service_providers.corp]\nkind = \"openai\"\nbase_url = \"{}\"\napi_key = \"corp-key-in-config\"\n",
        corp.base_url()
    ));
    let keys = home.run(&["keys", "list"]).ok().stdout();
    let corp_line = keys
        .lines()
        .find(|l| l.starts_with("corp"))
        .unwrap_or_default();
    assert!(corp_line.contains("config"), "{keys}");

    // A server whose base URL lacks /v1 answers 404: the error names the URL that was tried.
    home.write_config(&format!(
        "[service_providers.corp]\nkind = \"openai\"\nbase_url = \"{}\"\n",
        corp.base_url().trim_end_matches("/v1")
    ));
    let lost = home.run(&["ask", "-m", "corp:llama3", "hi"]);
    assert_eq!(lost.code(), Some(1), "{}", lost.stderr());
    assert!(
        lost.stderr().contains("HTTP 404")
            && lost.stderr().contains("/chat/completions")
            && lost.stderr().contains("/v1"),
        "{}",
        lost.stderr()
    );
}
