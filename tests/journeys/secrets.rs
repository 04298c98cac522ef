//! Secrets stay home: a user keeps a company server's key in the key file, has a serve token,
//! and asks about their config folder and a project with `-f`. genai's own secret files and
//! the project's keys are left out and said so, a secret file named alone is refused with the
//! way to send it on purpose, and a reply that echoes the key (streamed in small pieces) never
//! shows it: not on the terminal, in `--json`, in the history or its search. The history is the
//! user's alone.

use std::os::unix::fs::PermissionsExt;

use crate::home::Home;
use crate::support::fake_openai::{Behavior, FakeOpenAi};

const KEY: &str = "sk-corp-journey-7f3a9c0d5e1b";

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn secret_files_are_not_sent_and_an_echoed_key_is_masked_everywhere() {
    let home = Home::new();
    let corp = FakeOpenAi::start(0, Behavior::text("Looks fine.")).unwrap();
    home.write_config(&format!(
        "[service_providers.corp]\nkind = \"openai\"\nbase_url = \"{}\"\n\n[keys]\nstore = \"file\"\n",
        corp.base_url()
    ));
    home.run_with_stdin(&["keys", "set", "corp", "--file"], KEY)
        .ok();
    let token = home.run(&["serve", "--print-token"]).ok().stdout();
    let token = token.trim().to_string();
    assert_eq!(token.len(), 64, "{token}");

    // The config folder: its key file and serve token stay home, and stderr says so.
    let asked = home
        .run(&[
            "ask",
            "-m",
            "corp:m",
            "-f",
            ".config/genai/",
            "Why does my config not work?",
        ])
        .ok();
    let said = asked.stderr();
    assert!(
        said.contains("-f skipped .config/genai/keys.toml") && said.contains("genai's own"),
        "{said}"
    );
    assert!(
        said.contains("-f skipped .config/genai/serve-token"),
        "{said}"
    );
    let sent = || -> String {
        corp.requests()
            .iter()
            .map(|r| String::from_utf8_lossy(&r.raw).into_owned())
            .collect()
    };
    assert!(
        sent().contains("config.toml"),
        "the config went: {}",
        sent()
    );
    assert!(!sent().contains(KEY), "the key reached the server's prompt");
    assert!(
        !sent().contains(&token),
        "the serve token reached the server"
    );

    // A project: its keys are left out of a folder, and refused when named alone.
    let project = home.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("main.py"), "print('hi')\n").unwrap();
    std::fs::write(project.join("server.key"), "-----BEGIN PRIVATE KEY-----\n").unwrap();
    std::fs::write(
        project.join("credentials.json"),
        "{\"secret\": \"cred-42\"}\n",
    )
    .unwrap();
    std::fs::write(project.join(".env"), "DB_PASSWORD=hunter2-journey\n").unwrap();
    let in_project = |line: &str| home.sh(&format!("cd project && {line}"));
    let folder = in_project("genai ask -m corp:m -f . 'Review this'").ok();
    for skipped in ["./credentials.json", "./server.key"] {
        assert!(
            folder.stderr().contains(&format!("-f skipped {skipped}")),
            "{}",
            folder.stderr()
        );
    }
    assert!(sent().contains("print('hi')"));
    for secret in ["PRIVATE KEY", "cred-42", "hunter2-journey"] {
        assert!(!sent().contains(secret), "{secret} was sent");
    }
    let refused = in_project("genai ask -m corp:m -f .env 'Why does the app not start?'");
    assert_eq!(refused.code(), Some(2), "{}", refused.stderr());
    assert!(
        refused.stderr().contains("--allow 'read_file(.env)'"),
        "{}",
        refused.stderr()
    );
    assert!(!sent().contains("hunter2-journey"));
    // Named by a rule, on purpose: it goes.
    in_project("genai ask -m corp:m --allow 'read_file(.env)' -f .env 'Why does it not start?'")
        .ok();
    assert!(sent().contains("hunter2-journey"));

    // The model echoes the key, in small streamed pieces: masked on stdout and in --json.
    let echo = format!("Your key is {KEY}, keep it safe.");
    corp.push(Behavior::reply(&echo, 12));
    let shown = home.run(&["ask", "-m", "corp:m", "What is my key?"]).ok();
    assert_eq!(shown.stdout().trim(), "Your key is ********, keep it safe.");
    corp.push(Behavior::text(&echo));
    let json = home
        .run(&["ask", "-m", "corp:m", "--json", "And again?"])
        .ok()
        .stdout();
    assert!(json.contains("Your key is ********"), "{json}");
    assert!(!json.contains(KEY), "{json}");

    // Nor does the history keep it, or find it.
    let found = home
        .run(&["sessions", "search", "sk-corp-journey"])
        .stdout();
    assert!(!found.contains(KEY), "{found}");
    let list = home.run(&["sessions", "list", "--json"]).ok().stdout();
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    let exported: String = list
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let id = c["id"].as_str().unwrap();
            home.run(&["sessions", "export", id, "--format", "md"])
                .ok()
                .stdout()
        })
        .collect();
    assert!(exported.contains("Your key is ********"), "{exported}");
    assert!(!exported.contains(KEY), "{exported}");

    // The history and the data folder are the user's alone.
    let data = home.path().join(".local/share/genai");
    assert_eq!(mode(&data), 0o700);
    assert_eq!(mode(&data.join("history.db")), 0o600);
    let wal = data.join("history.db-wal");
    if wal.exists() {
        assert_eq!(mode(&wal), 0o600);
    }
}
