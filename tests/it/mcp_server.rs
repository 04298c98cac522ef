//! `genai mcp` driven over stdio by the `rmcp` SDK's client (which declares no elicitation) in a
//! fixture repository: the workspace tools under genai's permission policy (a read, a secret
//! file refused, an edit undone by `genai undo`, a call that would ask refused naming the rule
//! that then allows it), the commands as prompts rendered as `genai ask -t` sends them, `ask`
//! on the loopback fake provider, and `search_history` finding what it asked.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use rmcp::model::{CallToolRequestParams, GetPromptRequestParams};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Map, Value};

use crate::support::cli::{self, OpenAiCli};

const LIB: &str = "pub fn answer() -> u32 {\n    41\n}\n";
/// The tools genai's MCP server offers, over either transport.
pub(crate) const SERVED_TOOLS: [&str; 9] = [
    "read_file",
    "list",
    "search",
    "edit_file",
    "write_file",
    "run_command",
    "fetch",
    "ask",
    "search_history",
];
pub(crate) const SECRET: &str = "sk-mcp-fixture-secret-0123456789";
const GREET: &str = "---\ndescription: Greet someone\narguments:\n  - name: who\n    description: whom to greet\n---\nSay hello to {{who}}.\n";

/// A fixture repository, genai's folders and the fake OpenAI server.
pub(crate) struct Fixture {
    pub(crate) env: OpenAiCli,
    base: tempfile::TempDir,
}

impl Fixture {
    pub(crate) fn new() -> Fixture {
        let base = tempfile::tempdir().unwrap();
        let repo = base.path().join("repo");
        let write = |rel: &str, text: &str| {
            let path = repo.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        write("src/lib.rs", LIB);
        write(".env", &format!("API_TOKEN={SECRET}\n"));
        write(".genai/commands/greet.md", GREET);
        Fixture {
            env: OpenAiCli::new(),
            base,
        }
    }

    pub(crate) fn repo(&self) -> PathBuf {
        self.base.path().join("repo")
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.repo().join(rel)).unwrap()
    }

    /// `genai ARGS` in the repository, on these folders and the fake.
    pub(crate) fn genai(&self, args: &[&str]) -> std::process::Command {
        let mut c = self.env.cmd(args);
        c.current_dir(self.repo());
        c
    }

    /// `genai mcp ARGS` started in the repository, with the SDK's client connected to it;
    /// its stderr goes to a file of the fixture.
    async fn serve(&self, args: &[&str]) -> Served {
        let args: Vec<&str> = std::iter::once("mcp").chain(args.iter().copied()).collect();
        let log = std::fs::File::create(self.base.path().join("mcp-stderr.log")).unwrap();
        let mut command = tokio::process::Command::from(self.genai(&args));
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .kill_on_drop(true);
        let mut child = command.spawn().unwrap();
        let (stdout, stdin) = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
        let client = ().serve((stdout, stdin)).await.unwrap_or_else(|e| {
            panic!("initialize failed: {e}\n{}", self.stderr());
        });
        Served {
            client,
            _child: child,
        }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.base.path().join("mcp-stderr.log")).unwrap_or_default()
    }
}

/// A running `genai mcp` and the client talking to it (the process is killed when dropped).
struct Served {
    client: RunningService<RoleClient, ()>,
    _child: tokio::process::Child,
}

impl Served {
    /// `tools/call`: the result as JSON (`content`, `isError`, `structuredContent`).
    async fn call(&self, tool: &str, arguments: Value) -> Value {
        let Value::Object(arguments) = arguments else {
            panic!("arguments are an object")
        };
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let result = self.client.peer().call_tool(params).await.unwrap();
        serde_json::to_value(result).unwrap()
    }
}

/// The text of a call's result.
pub(crate) fn text(result: &Value) -> String {
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_error(result: &Value) -> bool {
    result["isError"].as_bool() == Some(true)
}

#[tokio::test]
async fn the_workspace_tools_are_listed_with_their_schemas_and_a_secret_file_is_refused() {
    let f = Fixture::new();
    let served = f.serve(&[]).await;
    let tools = served.client.peer().list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for name in SERVED_TOOLS {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    let read = tools.iter().find(|t| t.name == "read_file").unwrap();
    assert_eq!(read.input_schema["required"], json!(["path"]));

    let answer = served
        .call("read_file", json!({"path": "src/lib.rs"}))
        .await;
    assert!(!is_error(&answer), "{answer}");
    assert!(text(&answer).contains("41"), "{answer}");

    let secret = served.call("read_file", json!({"path": ".env"})).await;
    assert!(is_error(&secret), "{secret}");
    assert!(text(&secret).contains("Refused"), "{secret}");
    assert!(!secret.to_string().contains(SECRET), "{secret}");

    let outside = served.call("read_file", json!({"path": "../x"})).await;
    assert!(is_error(&outside), "{outside}");

    // Bad input is the client's error, and the session goes on.
    let unknown = CallToolRequestParams::new("no_such_tool");
    let err = served.client.peer().call_tool(unknown).await.unwrap_err();
    assert!(err.to_string().contains("no_such_tool"), "{err}");
    let again = served
        .call("read_file", json!({"path": "src/lib.rs"}))
        .await;
    assert!(!is_error(&again), "{again}");
}

#[tokio::test]
async fn an_edit_is_checkpointed_and_genai_undo_puts_the_file_back() {
    let f = Fixture::new();
    let served = f.serve(&["--mode", "edit"]).await;
    let edit = json!({"path": "src/lib.rs", "old_text": "41", "new_text": "42"});
    let answer = served.call("edit_file", edit).await;
    assert!(!is_error(&answer), "{answer}\n{}", f.stderr());
    assert!(f.read("src/lib.rs").contains("42"));

    let undo = cli::output(f.genai(&["undo"]));
    assert!(undo.status.success(), "{}", cli::stderr(&undo));
    assert_eq!(f.read("src/lib.rs"), LIB);
}

#[tokio::test]
async fn a_call_that_asks_is_refused_without_elicitation_naming_the_rule_that_allows_it() {
    let f = Fixture::new();
    let edit = json!({"path": "src/lib.rs", "old_text": "41", "new_text": "42"});
    let refused = {
        let served = f.serve(&[]).await;
        served.call("edit_file", edit.clone()).await
    };
    assert!(is_error(&refused), "{refused}");
    assert_eq!(f.read("src/lib.rs"), LIB, "a refused edit changed the file");
    let said = text(&refused);
    let rule = said
        .split("--allow '")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .unwrap_or_else(|| panic!("no rule named in {said}"));
    assert!(rule.contains("edit_file(src/**)"), "{rule}");

    // The rule named is the one that allows the call.
    let served = f.serve(&["--allow", rule]).await;
    let allowed = served.call("edit_file", edit).await;
    assert!(!is_error(&allowed), "{allowed}");
    assert!(f.read("src/lib.rs").contains("42"));
}

#[tokio::test]
async fn the_commands_are_prompts_rendered_as_genai_ask_t_sends_them() {
    let f = Fixture::new();
    let served = f.serve(&[]).await;
    let prompts = served.client.peer().list_all_prompts().await.unwrap();
    let greet = prompts
        .iter()
        .find(|p| p.name == "greet")
        .unwrap_or_else(|| panic!("no greet in {prompts:?}"));
    assert_eq!(greet.description.as_deref(), Some("Greet someone"));
    let arguments = greet.arguments.as_ref().unwrap();
    let who = arguments.iter().find(|a| a.name == "who").unwrap();
    assert_eq!(who.required, Some(true));
    // The built-in commands are there too, as `genai commands list` shows them.
    let listed = cli::output(f.genai(&["commands", "list", "--json"]));
    assert!(listed.status.success(), "{}", cli::stderr(&listed));
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let listed = listed["commands"].as_array().unwrap();
    assert!(listed.iter().any(|c| c["name"] == "greet"), "{listed:?}");
    for c in listed {
        let name = c["name"].as_str().unwrap();
        assert!(
            prompts.iter().any(|p| p.name == name),
            "{name} is no prompt"
        );
    }

    let mut arguments = Map::new();
    arguments.insert("who".into(), json!("Ada"));
    arguments.insert("text".into(), json!("and be brief"));
    let got = served
        .client
        .peer()
        .get_prompt(GetPromptRequestParams::new("greet").with_arguments(arguments))
        .await
        .unwrap();
    let got = serde_json::to_value(&got.messages).unwrap();
    assert_eq!(got[0]["role"], "user");
    let rendered = got[0]["content"]["text"].as_str().unwrap().to_string();

    // What `genai ask -t` sends the model for the same command.
    let asked = cli::output(f.genai(&["ask", "-t", "greet", "who=Ada", "and", "be", "brief"]));
    assert!(asked.status.success(), "{}", cli::stderr(&asked));
    let body = f.env.last_body();
    let sent = body["messages"].as_array().unwrap().last().unwrap()["content"].clone();
    assert_eq!(json!(rendered), sent);
    assert!(rendered.contains("Say hello to Ada."), "{rendered}");

    let missing = GetPromptRequestParams::new("greet");
    let err = served.client.peer().get_prompt(missing).await.unwrap_err();
    assert!(err.to_string().contains("who"), "{err}");
}

#[tokio::test]
async fn ask_answers_through_the_core_and_search_history_finds_the_conversation() {
    let f = Fixture::new();
    let served = f.serve(&[]).await;
    let asked = served
        .call("ask", json!({"prompt": "tell me about zebras"}))
        .await;
    assert!(!is_error(&asked), "{asked}\n{}", f.stderr());
    assert_eq!(text(&asked), "Hello from the fake provider.");
    let id = asked["structuredContent"]["conversationId"]
        .as_str()
        .unwrap()
        .to_string();
    let body = f.env.last_body();
    assert!(body.to_string().contains("tell me about zebras"), "{body}");

    let found = served
        .call("search_history", json!({"query": "zebras"}))
        .await;
    assert!(!is_error(&found), "{found}");
    let matches = found["structuredContent"]["matches"].as_array().unwrap();
    assert!(
        matches.iter().any(|m| m["conversationId"] == id.as_str()),
        "{found}"
    );
    let none = served
        .call("search_history", json!({"query": "okapis"}))
        .await;
    assert_eq!(none["structuredContent"]["matches"], json!([]), "{none}");

    let unknown = served
        .call("ask", json!({"prompt": "hi", "model": "nosuch:model"}))
        .await;
    assert!(is_error(&unknown), "{unknown}");
    assert!(text(&unknown).contains("nosuch"), "{unknown}");
}

/// The repository path as the Python client test gets it.
pub(crate) fn repo_arg(f: &Fixture) -> String {
    Path::new(&f.repo()).display().to_string()
}
