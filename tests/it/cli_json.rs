//! The `--json` listings of `genai sessions` print the store's records, which are the
//! daemon's listing types (`genai-protocol`), byte for byte: each output is compared with
//! those types' rendering of the same stored rows.

use genai_core::store::{ListFilter, Store};

use crate::support::cli::{stderr, stdout, OpenAiCli as Env};
use crate::support::fake_openai::Behavior;

fn pretty(v: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(v).unwrap() + "\n"
}

#[test]
fn sessions_json_prints_what_the_daemons_listing_types_print() {
    let env = Env::new();
    env.fake.set_default(Behavior {
        reply: "Paris.".into(),
        ..Default::default()
    });
    for args in [
        &["ask", "-m", "openai:gpt-4o-mini", "Capital of France?"][..],
        &["ask", "-c", "And of Italy?"],
        &[
            "ask",
            "-m",
            "openai:gpt-4o",
            "--param",
            "temperature=0.5",
            "Hi",
        ],
    ] {
        let o = env.run(args, None);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    }
    let store = Store::open(&env.dirs.data.path().join("history.db")).unwrap();
    let (list, _) = store
        .list_conversations_where(20, None, &ListFilter::default())
        .unwrap();
    assert_eq!(list.len(), 2);
    let id = list[1].id.clone();
    let listed = stdout(&env.run(&["sessions", "list", "--json"], None));
    assert_eq!(listed, pretty(&list));

    let rec = store.conversation(&id).unwrap();
    let (messages, _) = store.history(&id, usize::MAX / 2, None).unwrap();
    assert_eq!(messages.len(), 4);
    let whole = pretty(&serde_json::json!({"conversation": rec, "messages": messages}));
    assert!(whole.contains("\"usage\""), "{whole}");
    let shown = stdout(&env.run(&["sessions", "show", &id, "--json"], None));
    assert_eq!(shown, whole);
    let exported = stdout(&env.run(&["sessions", "export", &id, "--format", "json"], None));
    assert_eq!(exported, whole);
}
