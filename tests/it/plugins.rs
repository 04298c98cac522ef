//! `genai plugins add|list|remove|call` against a fake plugin module, run as a user would.

use std::process::Output;

use fake_plugin::{Answer, FakePlugin};
use serde_json::{json, Value};

use crate::support::cli::{self, stderr as err, stdout as out, Folders};
use crate::support::{fake_openai, fake_plugin};

struct Env {
    dirs: Folders,
}

impl Env {
    fn new() -> Env {
        Env {
            dirs: Folders::new(),
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        cli::output(self.dirs.genai(args))
    }

    fn config_text(&self) -> String {
        std::fs::read_to_string(self.dirs.config.path().join("config.toml")).unwrap_or_default()
    }

    fn write_config(&self, text: &str) {
        self.dirs.write_config(text);
    }
}

#[test]
fn add_list_call_and_remove_a_module() {
    let module = FakePlugin::start(None);
    let env = Env::new();
    env.write_config("# my settings\n[defaults]\nfeature = \"assistant\" # keep me\n");

    let o = env.run(&["plugins", "add", &module.base_url()]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        out(&o).contains("added plugin `actintech` with 2 tools"),
        "{}",
        out(&o)
    );
    assert!(
        out(&o).contains("actintech.eventParticipation"),
        "{}",
        out(&o)
    );
    let config = env.config_text();
    assert!(
        config.starts_with("# my settings\n"),
        "comments kept: {config}"
    );
    assert!(config.contains("# keep me"), "{config}");
    assert!(config.contains("[plugins.actintech]"), "{config}");
    assert!(
        config.contains(&format!("{}/.well-known/ai-plugin.json", module.base_url())),
        "{config}"
    );

    // Adding the same name again is refused and changes nothing.
    let o = env.run(&["plugins", "add", &module.base_url()]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert_eq!(env.config_text(), config);

    let o = env.run(&["plugins", "list", "--tools", "--json"]);
    assert!(o.status.success(), "{}", err(&o));
    let list: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(list[0]["name"], "actintech");
    assert_eq!(list[0]["enabled"], false);
    assert_eq!(
        list[0]["tools"][1]["inputSchema"]["required"],
        json!(["eventId", "participation"])
    );
    assert_eq!(list[0]["tools"][1]["source"], "plugin:actintech");

    // A call sends the arguments as a JSON string, as modules expect.
    module.push(
        "eventParticipation",
        Answer::json(json!({
            "text": "Confirm participation?",
            "askConfirmation": true,
            "confirmationLink": format!("{}/confirmations/873YDBAI", module.base_url()),
            "actions": [{"code": "[[ACTION.WAVE]]", "type": "PLAY_ANIMATION"}]
        })),
    );
    let o = env.run(&[
        "plugins",
        "call",
        "actintech",
        "eventParticipation",
        r#"{"eventId":"INEBD763D","participation":"YES"}"#,
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let answer: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(answer["text"], "Confirm participation?");
    assert_eq!(answer["actions"][0]["code"], "[[ACTION.WAVE]]");
    assert!(answer["confirmationLink"]
        .as_str()
        .unwrap()
        .ends_with("/confirmations/873YDBAI"));
    let call = module
        .requests()
        .into_iter()
        .rfind(|r| r.path == "/ai-functions")
        .unwrap();
    assert_eq!(
        call.body,
        json!({"method": "eventParticipation", "params": "{\"eventId\":\"INEBD763D\",\"participation\":\"YES\"}"})
    );
    assert_eq!(call.header("x-api-key"), None);

    // A module error is a failure with the module's words; an unknown function names the others.
    module.push(
        "getEvents",
        Answer::json(json!({"error": "Unknown method"})),
    );
    let o = env.run(&["plugins", "call", "actintech", "getEvents"]);
    assert_eq!(o.status.code(), Some(1));
    cli::assert_stderr_says(&o, "Unknown method");
    let o = env.run(&["plugins", "call", "actintech", "dance"]);
    assert_eq!(o.status.code(), Some(1));
    cli::assert_stderr_says(&o, "getEvents, eventParticipation");
    let o = env.run(&["plugins", "call", "actintech", "getEvents", "[1]"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));

    let o = env.run(&["plugins", "remove", "actintech"]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(!env.config_text().contains("actintech"));
    assert!(env.config_text().contains("# keep me"));
    let o = env.run(&["plugins", "remove", "actintech"]);
    assert_ne!(o.status.code(), Some(0));
}

#[test]
fn a_broken_manifest_is_refused_with_every_problem_and_nothing_written() {
    let module = FakePlugin::start(None);
    let mut manifest = fake_plugin::documented_manifest(module.port, "oauth");
    manifest["api"]["functions"][1]["method"] = json!("eventParticipation({ eventId })");
    manifest.as_object_mut().unwrap().remove("name_for_model");
    module.set_manifest(manifest);
    let env = Env::new();
    let o = env.run(&["plugins", "add", &module.base_url(), "--name", "events"]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let e = err(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    for want in ["/auth/type", "/api/functions/1/method", "name_for_model"] {
        assert!(e.contains(want), "{want} missing in: {e}");
    }
    assert_eq!(env.config_text(), "");

    // Not JSON at all, and a module that is not there.
    module.set_manifest(json!("<html>"));
    let o = env.run(&["plugins", "add", &module.base_url()]);
    cli::assert_stderr_says(&o, "invalid");
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let o = env.run(&["plugins", "add", &format!("http://127.0.0.1:{closed}")]);
    assert_eq!(o.status.code(), Some(1));
    cli::assert_stderr_says(&o, "cannot fetch");
}

#[test]
fn a_service_api_key_goes_to_the_module_and_nowhere_else() {
    let module = FakePlugin::start(Some("module-secret-123"));
    let env = Env::new();
    let o = env.run(&["plugins", "add", &module.base_url(), "--enable"]);
    assert!(o.status.success(), "{}", err(&o));
    cli::assert_stderr_says(&o, "genai keys set plugin:actintech");

    // No key: the call is refused before anything is sent.
    let before = module.requests().len();
    let o = env.run(&["plugins", "call", "actintech", "getEvents"]);
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    cli::assert_stderr_says(&o, "service API key");
    assert_eq!(
        module.requests().len(),
        before + 1,
        "only the manifest was fetched"
    );

    // With the key from a command, it reaches the module's endpoint in X-API-KEY.
    let key_file = env.dirs.data.path().join("key");
    std::fs::write(&key_file, "module-secret-123\n").unwrap();
    let config = env.config_text().replace(
        "enabled = true",
        &format!(
            "enabled = true\napi_key_cmd = \"cat {}\"",
            key_file.display()
        ),
    );
    env.write_config(&config);
    let o = env.run(&["plugins", "call", "actintech", "getEvents"]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(out(&o).contains("getEvents done"), "{}", out(&o));
    let requests = module.requests();
    let call = requests
        .iter()
        .rfind(|r| r.path == "/ai-functions")
        .unwrap();
    assert_eq!(call.header("x-api-key"), Some("module-secret-123"));
    for r in requests
        .iter()
        .filter(|r| r.path.ends_with("ai-plugin.json"))
    {
        assert_eq!(
            r.header("x-api-key"),
            None,
            "the manifest fetch carries no key"
        );
    }
    // `config show` shows no key.
    let o = env.run(&["config", "show"]);
    assert!(!out(&o).contains("module-secret-123"));
}

#[test]
fn ask_with_tools_calls_a_module_and_yes_confirms() {
    use fake_openai::{Behavior, FakeOpenAi};
    let module = FakePlugin::start(None);
    module.push(
        "eventParticipation",
        Answer::json(json!({
            "text": "Confirm E9?",
            "askConfirmation": true,
            "confirmationLink": format!("{}/confirmations/E9", module.base_url()),
        })),
    );
    let fake = FakeOpenAi::start(0, Behavior::default()).unwrap();
    fake.push(Behavior {
        reply: String::new(),
        tool_calls: vec![(
            "c1".into(),
            "events__eventParticipation".into(),
            r#"{"eventId":"E9","participation":"YES"}"#.into(),
        )],
        ..Behavior::default()
    });
    fake.push(Behavior::text("Registered for E9."));
    let env = Env::new();
    env.write_config(&module.enabled_as("events"));
    let mut c = env.dirs.genai(&[
        "ask",
        "--tools",
        "--yes",
        "-m",
        "openai:gpt-test",
        "Register me to E9",
    ]);
    c.env("OPENAI_BASE_URL", fake.base_url());
    let o = cli::output(c);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(out(&o).trim(), "Registered for E9.");
    cli::assert_stderr_says(&o, "confirmed by --yes");
    assert!(module
        .requests()
        .iter()
        .any(|r| r.path == "/confirmations/E9"));
}

#[test]
fn ask_with_named_tools_offers_only_those() {
    use fake_openai::{Behavior, FakeOpenAi};
    let module = FakePlugin::start(None);
    let fake = FakeOpenAi::start(0, Behavior::default()).unwrap();
    fake.push(Behavior::text("No events today."));
    let env = Env::new();
    // Not enabled: only named tools reach the model.
    env.write_config(&format!(
        "[plugins.events]\nurl = \"{}\"\n",
        module.base_url()
    ));
    let ask = |tools: &str| {
        let mut c = env
            .dirs
            .genai(&["ask", tools, "-m", "openai:gpt-test", "Any events?"]);
        c.env("OPENAI_BASE_URL", fake.base_url());
        cli::output(c)
    };
    let o = ask("--tools=events.getEvents");
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(out(&o).trim(), "No events today.");
    let offered: Vec<String> = fake.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(offered, ["events__getEvents"]);

    let o = ask("--tools=calendar");
    assert!(!o.status.success());
    assert!(
        err(&o)
            .contains("no tool source `calendar`; built in: workspace; configured plugins: events; MCP servers: none"),
        "{}",
        err(&o)
    );
    assert_eq!(fake.requests().len(), 1, "nothing sent for a bad selection");
}
