//! A newcomer's mistakes, one after another in one home: a download that is not a model, a
//! misspelt parameter, a config value of the wrong type, a malformed rule, a mode without
//! tools, writing the config where `genai config path` says, the daemon's method in the wrong
//! case. Each is told in one line that says what to do, nothing is installed or lost, and the
//! next right command works.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use crate::home::Home;
use crate::support::fake_openai::{Behavior, FakeOpenAi};
use crate::support::file_server::FileServer;

#[test]
fn each_mistake_is_told_and_the_next_command_works() {
    let mut home = Home::new();
    let fake = FakeOpenAi::start(0, Behavior::text("Fine.")).unwrap();
    home.export("OPENAI_BASE_URL", &fake.base_url());
    home.export("OPENAI_API_KEY", "sk-journey");

    // A URL that answers JSON, not a model: refused, nothing installed.
    let files = FileServer::start();
    files.add(
        "/model.gguf",
        br#"{"error":"not found","detail":"no such model"}"#,
    );
    let pulled = home.run(&["models", "pull", &files.url("/model.gguf")]);
    assert_ne!(
        pulled.code(),
        Some(0),
        "a JSON body was installed as a model"
    );
    assert!(
        pulled.stderr().to_lowercase().contains("gguf"),
        "the refusal does not say why: {}",
        pulled.stderr()
    );
    let pulled = pulled.no_panic();
    assert!(!pulled.stderr().contains('\x1b'), "{}", pulled.stderr());
    let listed = home.run(&["models", "list"]).stdout();
    assert!(!listed.contains("model"), "models list: {listed}");

    // A misspelt parameter: the right name is suggested.
    home.run(&["ask", "-m", "openai:fast", "-p", "tempreature=0.5", "hi"])
        .fails(2, "did you mean `temperature`");

    // The question piped in works once the parameter is right.
    let asked = home
        .run_with_stdin(
            &["ask", "-m", "openai:fast", "-p", "temperature=0.5", "-"],
            "hi",
        )
        .ok();
    assert_eq!(asked.stdout().trim(), "Fine.");

    // A config value of the wrong type: its own line, and what is expected.
    home.write_config("[service_providers.corp]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\ntimeout_secs = \"ten\"\n");
    let bad = home.run(&["ask", "-m", "corp:x", "hi"]);
    assert_ne!(bad.code(), Some(0));
    let said = bad.stderr();
    assert!(said.contains("line 4"), "not at the value's line: {said}");
    assert!(
        said.contains("seconds"),
        "does not say what is expected: {said}"
    );
    home.write_config("");

    // A malformed rule and a mode without tools are usage errors (2), each saying why.
    home.run(&["ask", "--allow", "run_command(cargo test", "hi"])
        .fails(2, "--allow");
    home.run(&["ask", "--mode", "edit", "hi"])
        .fails(2, "--tools=workspace");
    assert_eq!(fake.requests().len(), 1, "a refused ask reached the model");

    // The config's path alone, so a shell can write it; the list under its own name.
    let path = home.run(&["config", "path"]).ok().stdout();
    assert_eq!(path.lines().count(), 1, "{path}");
    assert!(path.trim().ends_with(".config/genai/config.toml"), "{path}");
    home.sh("mkdir -p \"$(dirname \"$(genai config path)\")\" && printf '[defaults]\\nmodel = \"openai:fast\"\\n' > \"$(genai config path)\"")
        .ok();
    let shown = home.run(&["config", "show"]).ok().stdout();
    assert!(shown.contains("openai:fast"), "{shown}");
    let paths = home.run(&["config", "paths"]).ok().stdout();
    assert!(
        paths.contains("history ") && paths.contains("models "),
        "{paths}"
    );
    home.write_config("");
    let help = home.run(&["--help"]).ok().stdout();
    assert!(help.contains("gateway key"), "{help}");

    // The daemon: `initialize` in the wrong case is answered with the right name, and the
    // daemon goes on serving.
    let mut daemon = home
        .genai(&["daemon"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut input = daemon.stdin.take().unwrap();
    let mut output = BufReader::new(daemon.stdout.take().unwrap());
    let mut answer = |line: &str| {
        writeln!(input, "{line}").unwrap();
        let mut reply = String::new();
        output.read_line(&mut reply).unwrap();
        serde_json::from_str::<serde_json::Value>(&reply).unwrap()
    };
    let wrong = answer(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#);
    let message = wrong["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("Initialize"), "{wrong}");
    let right = answer(r#"{"jsonrpc":"2.0","id":2,"method":"Initialize","params":{}}"#);
    assert!(right["result"].is_object(), "{right}");
    let _ = daemon.kill();
    let _ = daemon.wait();
}
