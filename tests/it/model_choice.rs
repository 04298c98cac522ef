//! Which provider and model a turn runs on, as a user meets it: the built-in `local` provider
//! whatever the config holds (`-m local`, `-m local:NAME`, the daemon's
//! `serviceProvider: "local"`, and listed among the components), a server at OPENAI_BASE_URL
//! asked for its model and never priced as OpenAI, and `ask --help` saying how a model is
//! chosen without `-m`.

#[cfg(feature = "local")]
use serde_json::json;
use serde_json::Value;

use crate::support::cli::{self, stderr, stdout, OpenAiCli};
use crate::support::fake_openai::Behavior;
#[cfg(feature = "local")]
use crate::support::rpc_client::{Daemon, DaemonConfig, Framing};

#[cfg(feature = "local")]
const LOCAL_MODEL: &str = "smollm2-135m-instruct-q4_1";

/// A config with a provider and a default model, as a user has once they added one.
#[cfg(feature = "local")]
fn configured(fake_url: &str) -> String {
    format!(
        "[defaults]\nmodel = \"corp:m\"\n[service_providers.corp]\nkind = \"openai\"\nbase_url = \"{fake_url}\"\n"
    )
}

#[cfg(feature = "local")]
#[test]
fn the_local_provider_stays_whatever_the_config_holds() {
    let env = OpenAiCli::new();
    env.dirs.write_config(&configured(&env.fake.base_url()));
    let local_name = format!("local:{LOCAL_MODEL}");

    // The models folder is empty: each says which model is missing, none "no model chosen".
    let o = env.run(&["ask", "-m", &local_name, "hi"], None);
    cli::assert_fails_with(&o, 3, &format!("no local model `{LOCAL_MODEL}`"));
    assert!(!stderr(&o).contains("no model chosen"), "{}", stderr(&o));
    let o = env.run(&["ask", "-m", "local", "hi"], None);
    cli::assert_fails_with(&o, 3, "no local model is installed");
    assert!(!stderr(&o).contains("no model chosen"), "{}", stderr(&o));
    assert!(env.fake.requests().is_empty(), "{:?}", env.fake.requests());

    // Listed, as the daemon lists it (the web page reads that listing).
    let o = env.run(&["components", "--json"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let comps: Value = serde_json::from_slice(&o.stdout).unwrap();
    let local = comps["serviceProviders"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "local")
        .unwrap_or_else(|| panic!("no local provider: {comps}"));
    assert_eq!(
        (&local["kind"], &local["origin"]),
        (&json!("local"), &json!("builtin"))
    );
    let o = env.run(&["components"], None);
    assert!(
        stdout(&o).lines().any(|l| l
            .split_whitespace()
            .take(3)
            .eq(["local", "local", "builtin"])),
        "{}",
        stdout(&o)
    );

    let dir = tempfile::tempdir().unwrap();
    let cfg = DaemonConfig::in_dir(dir.path(), Framing::Lines, "daemon");
    cfg.write_config(&configured(&env.fake.base_url()));
    let mut d = Daemon::spawn(&cfg);
    d.initialize("model-choice", true);
    let comps = d.call("ListComponents", json!({}));
    assert!(
        comps["serviceProviders"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "local" && p["kind"] == "local"),
        "{comps}"
    );
    let (id, _) = d.create_conversation(json!({"serviceProvider": "local", "model": LOCAL_MODEL}));
    assert!(!id.is_empty());
}

#[cfg(all(feature = "local", unix))]
#[test]
fn the_local_provider_answers_with_a_config_when_the_test_model_is_installed() {
    let Some(model) = crate::local_model::test_model() else {
        return;
    };
    let env = OpenAiCli::new();
    env.dirs.write_config(&configured(&env.fake.base_url()));
    let models = env.dirs.data.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    std::os::unix::fs::symlink(&model, models.join(format!("{LOCAL_MODEL}.gguf"))).unwrap();
    let o = cli::output(env.cmd(&["models", "default", LOCAL_MODEL]));
    assert!(o.status.success(), "{}", stderr(&o));
    for name in [format!("local:{LOCAL_MODEL}"), "local".to_string()] {
        let o = cli::output(env.cmd(&["ask", "-m", &name, "-p", "max_tokens=4", "hi"]));
        assert!(o.status.success(), "-m {name}: {}", stderr(&o));
        assert!(!stdout(&o).trim().is_empty(), "-m {name}: no reply");
    }
    assert!(env.fake.requests().is_empty());
}

#[test]
fn a_server_at_openai_base_url_runs_the_model_it_lists_at_an_unknown_price() {
    let env = OpenAiCli::new();
    env.fake.set_default(Behavior {
        model: "served-model-7".into(),
        ..Default::default()
    });
    let o = env.run(&["ask", "--json", "hi"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let routes: Vec<String> = env
        .fake
        .requests()
        .iter()
        .map(|r| format!("{} {}", r.method, r.route()))
        .collect();
    assert_eq!(routes, ["GET /v1/models", "POST /v1/chat/completions"]);
    assert_eq!(env.last_body()["model"], "served-model-7");
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert!(v["usage"].is_object(), "{v}");
    assert!(v["cost"].is_null(), "not OpenAI's price: {v}");

    // Named on the command line, an OpenAI model id on another server is not OpenAI's either.
    let o = env.run(&["ask", "--json", "-m", "openai:gpt-4o-mini", "hi"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert!(v["cost"].is_null(), "not OpenAI's price: {v}");
}

#[test]
fn a_server_that_lists_no_model_asks_for_one_by_name() {
    let env = OpenAiCli::new();
    let mut c = env.dirs.genai(&["ask", "hi"]);
    // Its /models answers 404.
    c.env(
        "OPENAI_BASE_URL",
        format!("{}/nothing", env.fake.base_url()),
    );
    let o = cli::output(c);
    cli::assert_fails_with(&o, 2, "provider `openai` has no default model");
    cli::assert_stderr_says(&o, "-m openai:MODEL");
    cli::assert_stderr_says(&o, "default_model");
    cli::assert_stderr_says(&o, "/nothing/models");
    assert!(env.fake.requests().iter().all(|r| r.method == "GET"));
}

#[test]
fn ask_help_says_how_the_model_is_chosen_without_m() {
    let o = cli::output(OpenAiCli::new().dirs.genai(&["ask", "--help"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let help = stdout(&o).split_whitespace().collect::<Vec<_>>().join(" ");
    for says in [
        "Without -m: `model` under [defaults]",
        "openai (OPENAI_API_KEY or OPENAI_BASE_URL)",
        "anthropic (ANTHROPIC_API_KEY)",
        "the default local model",
        "runs the first model it lists",
    ] {
        assert!(help.contains(says), "{says:?} not in: {help}");
    }
}
