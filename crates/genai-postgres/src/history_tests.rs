//! The history's bridge without a database: a call fails within its deadline with the
//! database named and its password masked, and a current-thread runtime is refused, not
//! deadlocked. The SQL itself is tested against a real cluster in `tests/it/serve_history.rs`.

use std::time::{Duration, Instant};

use genai_core::error::ErrorKind;
use genai_core::store::History;

use crate::Postgres;

/// A URL to a loopback port nothing listens on.
fn nowhere() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("postgres://genai:hunter2-secret@127.0.0.1:{port}/genai")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_away_fails_a_call_fast_naming_it_without_its_password() {
    let db = Postgres::new(&nowhere()).unwrap();
    let started = Instant::now();
    let e = db.conversation("01ABC").unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(
        matches!(e.kind, ErrorKind::Store | ErrorKind::Timeout),
        "{e:?}"
    );
    assert!(
        e.message.contains("the shared database postgres://genai:"),
        "{e}"
    );
    assert!(!e.message.contains("hunter2-secret"), "{e}");
    // From a blocking task (where a turn's commit runs) too.
    let db = std::sync::Arc::new(db);
    let e = tokio::task::spawn_blocking(move || db.last_conversation())
        .await
        .unwrap()
        .unwrap_err();
    assert!(!e.message.contains("hunter2-secret"), "{e}");
}

#[test]
fn a_current_thread_runtime_is_refused_rather_than_deadlocked() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let e = rt.block_on(async {
        let db = Postgres::new(&nowhere()).unwrap();
        db.last_conversation().unwrap_err()
    });
    assert!(e.message.contains("multi-thread runtime"), "{e}");
}

#[test]
fn bad_input_is_refused_before_the_database_is_asked() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let db = rt.block_on(async { Postgres::new(&nowhere()).unwrap() });
    let prefix = db.resolve_id("no-such id").unwrap_err();
    assert_eq!(prefix.kind, ErrorKind::UnknownConversation, "{prefix}");
    assert!(db.search("   ", 5, "[", "]").is_err());
    assert!(db.rename_conversation("01ABC", "  ").is_err());
    assert!(db.history("01ABC", 5, Some("not-a-cursor")).is_err());
}

#[test]
fn a_headline_marker_is_quoted_as_postgres_reads_an_option() {
    assert_eq!(crate::turns::option_value("["), "\"[\"");
    assert_eq!(
        crate::turns::option_value("a \"b\", c"),
        "\"a \"\"b\"\", c\""
    );
}

#[test]
fn search_reads_the_text_parts_only() {
    let content = r#"{"role":"assistant","content":[{"type":"text","text":"one"},{"type":"toolCall","id":"c","name":"t","arguments":{"x":"hidden"}},{"type":"text","text":"two"}]}"#;
    assert_eq!(crate::turns::text_of(content), "one two");
}
