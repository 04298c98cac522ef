//! A user's history across many short `genai ask`s, then backed up as docs/CONFIG.md says.
//! Each ask is its own process, and the history keeps its write-ahead log when one ends (no
//! checkpoint per ask), so the latest turns may live in `history.db-wal`. Every later process
//! still sees every turn; the log is the user's alone (0600); and a copy of the file with its
//! log, opened elsewhere with `GENAI_DATA_DIR`, lists the same conversations.

use crate::home::Home;
use crate::support::fake_openai::{Behavior, FakeOpenAi};

#[test]
fn many_short_asks_are_all_kept_and_a_copy_with_its_log_lists_them_all() {
    let home = Home::new();
    let corp = FakeOpenAi::start(0, Behavior::text("Noted.")).unwrap();
    home.write_config(&format!(
        "[service_providers.corp]\nkind = \"openai\"\nbase_url = \"{}\"\n\
         api_key = \"sk-journey-backup\"\nmax_retries = 0\n",
        corp.base_url()
    ));
    for i in 0..5 {
        let said = home
            .run(&["ask", "-m", "corp:m", &format!("note {i}")])
            .ok();
        assert_eq!(said.stdout().trim(), "Noted.");
    }
    let listed = home.run(&["sessions", "list"]).ok().stdout();
    for i in 0..5 {
        assert!(listed.contains(&format!("note {i}")), "{listed}");
    }

    let data = home.path().join(".local/share/genai");
    let wal = data.join("history.db-wal");
    assert!(
        wal.is_file(),
        "the log is kept between asks: {:?}",
        std::fs::read_dir(&data).unwrap().collect::<Vec<_>>()
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&wal).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    // The backup the docs describe: the file and its log, copied together.
    let copy = home.path().join("backup");
    std::fs::create_dir_all(&copy).unwrap();
    for name in ["history.db", "history.db-wal"] {
        std::fs::copy(data.join(name), copy.join(name)).unwrap();
    }
    let restored = home
        .genai(&["sessions", "list"])
        .env("GENAI_DATA_DIR", &copy)
        .output()
        .unwrap();
    assert!(restored.status.success(), "{restored:?}");
    let restored = String::from_utf8_lossy(&restored.stdout);
    for i in 0..5 {
        assert!(restored.contains(&format!("note {i}")), "{restored}");
    }
}
