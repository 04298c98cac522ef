//! The local model stays warm: a user whose config names another provider by default, after a
//! failed turn, starts `genai serve --background`; `ask -m local` and `chat -m local` then answer
//! through it with the text they gave before it ran (piped into `head` too), the default
//! provider still gets its own requests and nothing of the local ones, `serve --stop` ends it,
//! and the next ask loads the model itself and answers the same.

use crate::home::{Home, Run};

const SERVED: &str = "answered by the genai serve at";
const ASK: [&str; 8] = [
    "ask",
    "-m",
    "local",
    "-p",
    "temperature=0",
    "-p",
    "max_tokens=16",
    "Name three colours.",
];

fn logged(home: &Home, args: &[&str]) -> Run {
    let out = home
        .genai(args)
        .env("GENAI_LOG", "genai_core::provider::local::served=debug")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    Run(out)
}

#[test]
fn a_background_serve_keeps_the_local_model_warm_for_ask_and_chat() {
    let mut home = Home::new();
    let Some(()) = home.install_demo_model() else {
        return;
    };
    // The cloud as the default model, and a turn on it that failed.
    let fake = home.cloud_default_after_a_failed_turn("From the cloud.");

    // Before any serve: the model loads in the process.
    let cold = logged(&home, &ASK).ok();
    assert!(!cold.stderr().contains(SERVED));
    assert!(!cold.stdout().trim().is_empty());

    let serving = home.serve_in_background();
    let started = &serving.started;
    assert!(
        started.stdout().starts_with("listening on ws://127.0.0.1:"),
        "{}",
        started.stdout()
    );
    assert!(started.stderr().contains("genai serve --stop"));
    // The page's address, with its token, is printed as a foreground serve prints it.
    let page = started
        .stderr()
        .lines()
        .find_map(|l| l.split("open the chat page at ").nth(1).map(str::to_string))
        .unwrap_or_else(|| panic!("no page address: {}", started.stderr()));
    assert!(
        page.starts_with("http://127.0.0.1:") && page.contains("/#token="),
        "{page}"
    );
    // A second one is refused: the first is named.
    home.run(&["serve", "--background", "--listen", "127.0.0.1:0"])
        .fails(2, "a genai serve of this user already runs");

    let warm = logged(&home, &ASK).ok();
    assert!(warm.stderr().contains(SERVED), "{}", warm.stderr());
    assert_eq!(warm.stdout(), cold.stdout());

    // Piped into head, quietly.
    let line = ASK.map(|a| format!("'{a}'")).join(" ");
    let head = home.sh(&format!("genai {line} | head -c 4")).ok();
    assert_eq!(
        head.stdout(),
        cold.stdout().chars().take(4).collect::<String>()
    );

    let chat = home
        .run_with_stdin(
            &[
                "chat",
                "-m",
                "local",
                "-p",
                "temperature=0",
                "-p",
                "max_tokens=16",
            ],
            "Name three colours.\n",
        )
        .ok();
    assert!(
        chat.stdout().contains(cold.stdout().trim()),
        "{}",
        chat.stdout()
    );

    // The default provider still answers, and saw nothing of the local conversations.
    let cloud = home.run(&["ask", "hello"]).ok();
    assert_eq!(cloud.stdout().trim(), "From the cloud.");
    let sent: Vec<String> = fake.requests().iter().map(|r| r.body.to_string()).collect();
    assert!(sent.iter().all(|b| !b.contains("colours")), "{sent:?}");

    let listed = home.run(&["sessions", "list"]).ok().stdout();
    assert!(
        listed.matches("Name three colours").count() >= 3,
        "{listed}"
    );

    home.run(&["serve", "--stop"]).ok();
    home.run(&["serve", "--stop"])
        .fails(3, "no genai serve of this user is running");
    let after = logged(&home, &ASK).ok();
    assert!(!after.stderr().contains(SERVED));
    assert_eq!(after.stdout(), cold.stdout());
}
