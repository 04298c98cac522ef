//! A local model kept warm by `genai serve`: `genai ask` and `genai chat` of the same user send
//! their local requests to it (the debug log says so) and print the same text, fail with the
//! same exit code and message, and keep their history as without it; `--no-connect` and
//! `[serve] connect = false` keep the model in the process; a serve that is gone, or that has
//! no such provider, means the model is loaded here, the answer unchanged.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};

use crate::local_model::test_model;
use crate::support::cli::{message_counts, stderr, stdout, Folders};

const SERVED: &str = "answered by the genai serve at";
const LOG: &str = "genai_core::provider::local::served=debug";

/// A `genai serve` on a free loopback port over these folders, killed when dropped.
struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(dirs: &Folders) -> Serve {
    let mut child = dirs
        .genai(&["serve", "--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("listening on ws://"), "{line:?}");
    Serve(child)
}

fn run(dirs: &Folders, args: &[&str], stdin: &str) -> Output {
    let mut c: Command = dirs.genai(args);
    c.env("GENAI_LOG", LOG);
    crate::support::cli::output_with_stdin(c, Some(stdin))
}

fn config(model: &std::path::Path, name: &str, extra: &str) -> String {
    format!(
        "[defaults]\nmodel = \"{name}\"\n\n[service_providers.{name}]\nkind = \"local\"\nmodel = {:?}\ncontext_size = 512\n{extra}",
        model.display().to_string()
    )
}

const ASK: [&str; 6] = [
    "ask",
    "-p",
    "temperature=0",
    "-p",
    "max_tokens=24",
    "Name three colours.",
];

#[test]
fn ask_and_chat_use_the_serves_warm_model_with_the_same_output_errors_and_history() {
    let Some(model) = test_model() else { return };
    let dirs = Folders::new();
    dirs.write_config(&config(&model, "mine", ""));
    let ask = &ASK[..];

    let cold = run(&dirs, &[ask, &["--no-connect"]].concat(), "");
    assert!(cold.status.success(), "{}", stderr(&cold));
    assert!(!stderr(&cold).contains(SERVED));

    let _serve = serve(&dirs);
    let warm = run(&dirs, ask, "");
    assert_eq!(warm.status.code(), cold.status.code());
    assert!(stderr(&warm).contains(SERVED), "{}", stderr(&warm));
    assert_eq!(stdout(&warm), stdout(&cold));
    assert!(!stdout(&warm).trim().is_empty());

    // A prompt larger than the context fails alike, with the engine's own message.
    let long = "word ".repeat(2000);
    let fail = |extra: &[&str]| {
        let o = run(
            &dirs,
            &[&["ask", "-p", "max_tokens=4"], extra].concat(),
            &long,
        );
        let said = stderr(&o)
            .lines()
            .filter(|l| l.starts_with("genai: "))
            .collect::<Vec<_>>()
            .join("\n");
        (o.status.code(), said, stderr(&o).contains(SERVED))
    };
    let (cold_code, cold_said, _) = fail(&["--no-connect"]);
    let (warm_code, warm_said, _) = fail(&[]);
    assert_ne!(cold_code, Some(0));
    assert_eq!(warm_code, cold_code);
    assert!(cold_said.contains("context"), "{cold_said}");
    assert_eq!(warm_said, cold_said);

    // Chat from a pipe goes through the serve too.
    let chat = run(
        &dirs,
        &["chat", "-p", "temperature=0", "-p", "max_tokens=24"],
        "Name three colours.\n",
    );
    assert!(chat.status.success(), "{}", stderr(&chat));
    assert!(stderr(&chat).contains(SERVED), "{}", stderr(&chat));
    assert!(
        stdout(&chat).contains(stdout(&cold).trim()),
        "{}",
        stdout(&chat)
    );

    // Each conversation is kept once, by the client, as without the serve.
    let list = dirs
        .genai(&["sessions", "list", "--json"])
        .output()
        .unwrap();
    assert_eq!(message_counts(&list), vec![2, 2, 2], "{}", stdout(&list));
}

#[test]
fn without_a_serve_with_it_turned_off_or_without_the_provider_the_model_loads_here() {
    let Some(model) = test_model() else { return };
    let dirs = Folders::new();
    dirs.write_config(&config(&model, "mine", ""));
    let ask = &ASK[..];
    let reference = run(&dirs, &[ask, &["--no-connect"]].concat(), "");
    assert!(reference.status.success(), "{}", stderr(&reference));

    // The config turns it off.
    let serve_running = serve(&dirs);
    dirs.write_config(&config(&model, "mine", "\n[serve]\nconnect = false\n"));
    let off = run(&dirs, ask, "");
    assert!(!stderr(&off).contains(SERVED), "{}", stderr(&off));
    assert_eq!(stdout(&off), stdout(&reference));

    // A provider the serve does not have (its config names it otherwise): loaded here.
    dirs.write_config(&config(&model, "other", ""));
    let other = dirs
        .genai(ask)
        .env("GENAI_LOG", "genai_core::provider::local::served=info")
        .output()
        .unwrap();
    assert!(
        stderr(&other).contains("does not run this model"),
        "{}",
        stderr(&other)
    );
    assert_eq!(stdout(&other), stdout(&reference));

    // The serve is killed and leaves its serve.json behind: the refused connection says so.
    drop(serve_running);
    assert!(dirs.config.path().join("serve.json").is_file());
    dirs.write_config(&config(&model, "mine", ""));
    let gone = dirs
        .genai(ask)
        .env("GENAI_LOG", "genai_core::provider::local::served=info")
        .output()
        .unwrap();
    assert!(gone.status.success(), "{}", stderr(&gone));
    assert!(
        stderr(&gone).contains("no genai serve answered"),
        "{}",
        stderr(&gone)
    );
    assert_eq!(stdout(&gone), stdout(&reference));
}
