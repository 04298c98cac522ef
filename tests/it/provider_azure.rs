//! The `azure-openai` provider kind with the `openai-chat` format, end to end: `genai ask` and
//! the daemon against the fake OpenAI server at Azure's paths (`/openai/deployments/{d}/chat/
//! completions?api-version=...` and `/openai/v1/chat/completions`), with the `api-key` header,
//! faults included, the history checked after each.

use std::process::Output;
use std::time::{Duration, Instant};

use fake_openai::{Behavior, FakeOpenAi, Mode};
use rpc_client::{Daemon, DaemonConfig, Framing};
use serde_json::{json, Value};

use crate::support::cli::{self, stderr, stdout, Folders};
use crate::support::{fake_openai, rpc_client};

const KEY: &str = "azure-test-key-0123456789";
const TURN: Duration = Duration::from_secs(15);
const EXIT: Duration = Duration::from_secs(10);

struct Env {
    dirs: Folders,
    fake: FakeOpenAi,
}

impl Env {
    fn new(reply: &str) -> Env {
        Env {
            dirs: Folders::new(),
            fake: FakeOpenAi::start(0, Behavior::reply(reply, 3)).unwrap(),
        }
    }

    /// The resource root of the fake, as Azure's portal shows an endpoint.
    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}/", self.fake.port())
    }

    fn run_with(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut c = self.dirs.genai(args);
        c.envs(env.iter().copied());
        cli::output(c)
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_with(args, &[("AZURE_OPENAI_API_KEY", KEY)])
    }

    fn write_config(&self, text: &str) {
        self.dirs.write_config(text);
    }

    fn stored_messages(&self) -> i64 {
        cli::message_counts(&self.run(&["sessions", "list", "--json"]))
            .iter()
            .sum()
    }
}

#[test]
fn ask_reaches_the_deployment_with_the_api_key_header_and_api_version() {
    let env = Env::new("Hello from Azure.");
    env.write_config(&format!(
        "[service_providers.az]\nkind = \"azure-openai\"\napi_key_env = \"AZURE_OPENAI_API_KEY\"\nbase_url = \"{}\"\n",
        env.endpoint()
    ));
    let o = env.run(&[
        "ask",
        "-m",
        "az:gpt-4o",
        "-p",
        "temperature=0.1",
        "hi there",
    ]);
    cli::assert_prints(&o, "Hello from Azure.\n");
    let req = env.fake.requests().pop().unwrap();
    assert_eq!(
        req.path,
        "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21"
    );
    assert_eq!(req.header("api-key"), Some(KEY));
    assert!(req.header("authorization").is_none());
    // The openai-chat body, unchanged.
    assert_eq!(
        req.body,
        json!({
            "model": "gpt-4o",
            "messages": [{"role": "user", "content": "hi there"}],
            "temperature": 0.1,
            "stream": true,
            "stream_options": {"include_usage": true}
        })
    );

    // A configured deployment serves every model id; OPENAI_API_VERSION picks the version.
    env.write_config(&format!(
        "[service_providers.az]\nkind = \"azure-openai\"\napi_key_env = \"AZURE_OPENAI_API_KEY\"\nbase_url = \"{}openai\"\ndeployment = \"prod-4o\"\n",
        env.endpoint()
    ));
    let o = env.run_with(
        &["ask", "-m", "az:anything", "hi"],
        &[
            ("AZURE_OPENAI_API_KEY", KEY),
            ("OPENAI_API_VERSION", "2025-04-01-preview"),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        env.fake.requests().pop().unwrap().path,
        "/openai/deployments/prod-4o/chat/completions?api-version=2025-04-01-preview"
    );

    // The v1 API: no version in the URL, the deployment named in the body.
    env.write_config(&format!(
        "[service_providers.az]\nkind = \"azure-openai\"\napi_key_env = \"AZURE_OPENAI_API_KEY\"\nbase_url = \"{}\"\napi_version = \"v1\"\ndeployment = \"prod-4o\"\n",
        env.endpoint()
    ));
    let o = env.run(&["ask", "-m", "az", "--json", "hi"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(out["reply"], "Hello from Azure.");
    let req = env.fake.requests().pop().unwrap();
    assert_eq!(req.path, "/openai/v1/chat/completions");
    assert_eq!(req.body["model"], "prod-4o");
    assert_eq!(req.header("api-key"), Some(KEY));
    assert_eq!(env.stored_messages(), 6);
}

#[test]
fn the_environment_makes_a_builtin_instance_and_a_missing_key_says_what_to_do() {
    let env = Env::new("Built in.");
    let endpoint = env.endpoint();
    let o = env.run_with(
        &["ask", "-m", "azure-openai:gpt-4o-mini", "hi"],
        &[
            ("AZURE_OPENAI_ENDPOINT", &endpoint),
            ("AZURE_OPENAI_API_KEY", KEY),
        ],
    );
    cli::assert_prints(&o, "Built in.\n");
    assert_eq!(env.fake.requests().len(), 1);

    let o = env.run_with(
        &["ask", "-m", "azure-openai:gpt-4o-mini", "hi"],
        &[("AZURE_OPENAI_ENDPOINT", &endpoint)],
    );
    cli::assert_fails_with(&o, 3, "AZURE_OPENAI_API_KEY");
    assert_eq!(env.fake.requests().len(), 1, "nothing sent without a key");

    // Without AZURE_OPENAI_ENDPOINT there is no built-in instance.
    let o = env.run(&["ask", "-m", "azure-openai:gpt-4o-mini", "hi"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    // A format Azure cannot carry is refused before anything is sent.
    env.write_config(&format!(
        "[service_providers.az]\nkind = \"azure-openai\"\napi_key_env = \"AZURE_OPENAI_API_KEY\"\nbase_url = \"{}\"\n\n\
         [model_configurations.g]\nformat = \"gemini\"\nmodel = \"gemini-2.0-flash\"\n\n\
         [agents.bad]\nprovider = \"az\"\nmodel_configuration = \"g\"\n",
        endpoint
    ));
    let o = env.run(&["ask", "-m", "bad", "hi"]);
    cli::assert_fails_with(&o, 3, "azure-openai runs: openai-chat");
    assert_eq!(env.fake.requests().len(), 1);
}

#[test]
fn faults_fail_the_turn_cleanly_and_store_nothing() {
    let env = Env::new("Recovered after the fault.");
    env.write_config(&format!(
        "[service_providers.az]\nkind = \"azure-openai\"\napi_key_env = \"AZURE_OPENAI_API_KEY\"\nbase_url = \"{0}\"\n\n\
         [service_providers.slow]\nkind = \"azure-openai\"\napi_key_env = \"AZURE_OPENAI_API_KEY\"\nbase_url = \"{0}\"\nread_timeout_secs = 1\n",
        env.endpoint()
    ));
    let ask_on = |model: &str| env.run(&["ask", "-m", model, "tell me"]);
    let error = |status: u16, message: &str| Behavior {
        mode: Mode::Error {
            status,
            message: message.into(),
            code: String::new(),
        },
        ..Behavior::default()
    };

    env.fake.push(error(
        429,
        "Requests to the ChatCompletions_Create Operation have exceeded call rate limit.",
    ));
    env.fake.push(error(
        500,
        "The server had an error while processing your request.",
    ));
    let o = ask_on("az:gpt-4o");
    assert!(o.status.success(), "{}", stderr(&o));
    let r = env.fake.requests();
    assert_eq!(r.len(), 3);
    assert!(
        r[1].at - r[0].at >= Duration::from_secs(1),
        "Retry-After was not honoured"
    );
    assert_eq!(env.stored_messages(), 2);

    env.fake.push(error(400, "The response was filtered due to the prompt triggering Azure OpenAI's content management policy."));
    let o = ask_on("az:gpt-4o");
    cli::assert_fails_with(&o, 1, "content management policy");

    env.fake.push(Behavior {
        mode: Mode::CutAfter { after: 1 },
        ..Behavior::reply("one two three", 3)
    });
    let o = ask_on("az:gpt-4o");
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("ended before the reply was complete") || e.contains("broke"),
        "{e}"
    );

    env.fake.push(Behavior {
        mode: Mode::Stall,
        ..Behavior::default()
    });
    let started = Instant::now();
    let o = ask_on("slow:gpt-4o");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(started.elapsed() < Duration::from_secs(8));
    cli::assert_stderr_says(&o, "no answer in time");

    assert_eq!(env.stored_messages(), 2, "a failed turn was stored");
}

#[test]
fn daemon_streams_a_turn_on_azure_and_keeps_history_through_a_cut() {
    let fake = FakeOpenAi::start(0, Behavior::reply("Streamed from Azure.", 3)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cfg = DaemonConfig::in_dir(dir.path(), Framing::Lines, "daemon")
        .env(
            "AZURE_OPENAI_ENDPOINT",
            &format!("http://127.0.0.1:{}", fake.port()),
        )
        .env("AZURE_OPENAI_API_KEY", KEY)
        .env("OPENAI_API_VERSION", "");
    let mut d = Daemon::spawn(&cfg);
    d.initialize("azure-tests", true);
    let conv = d.call(
        "CreateConversation",
        json!({"serviceProvider": "azure-openai", "model": "gpt-4o"}),
    );
    assert_eq!(conv["format"], "openai-chat", "{conv}");
    let cid = conv["conversationId"].as_str().unwrap().to_string();
    let send = |d: &mut Daemon, text: &str| {
        let (turn_id, fin) = d.turn(&cid, text, TURN);
        (turn_id, fin, d.history(&cid).len())
    };
    let (turn_id, fin, stored) = send(&mut d, "hello");
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(fin["summary"], "Streamed from Azure.");
    assert_eq!(stored, 2);
    let chunks = d.streamed(&turn_id).len();
    assert_eq!(chunks, 3);
    let req = fake.requests().pop().unwrap();
    assert_eq!(req.header("api-key"), Some(KEY));
    assert!(
        req.path.ends_with("?api-version=2024-10-21"),
        "{}",
        req.path
    );

    fake.push(Behavior {
        mode: Mode::CutAfter { after: 1 },
        ..Behavior::reply("cut short here", 3)
    });
    let (_, fin, stored) = send(&mut d, "again");
    assert_eq!(fin["isSuccess"], false, "{fin}");
    assert_eq!(stored, 2, "a cut turn was stored");
    let (_, fin, stored) = send(&mut d, "once more");
    assert_eq!(fin["isSuccess"], true, "{fin}");
    assert_eq!(stored, 4);
    assert!(d.shutdown(EXIT).success());
    assert!(
        !d.stderr_text().contains(KEY),
        "the key is in the daemon's log"
    );
}
