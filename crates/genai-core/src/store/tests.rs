//! Tests of the history store: a turn committed and indexed whole, empty conversations kept out
//! of listings, foreign files refused, listings by folder, pages and prefixes.

use super::*;
use crate::message::Role;

/// A conversation record of the built-in `openai` provider, updated at `t`.
pub(crate) fn record(id: &str, t: i64) -> ConversationRecord {
    ConversationRecord {
        id: id.into(),
        title: String::new(),
        feature: "assistant".into(),
        provider: "openai".into(),
        model_configuration: None,
        format: "openai-chat".into(),
        model: "m".into(),
        parameters: Map::new(),
        created_at: t,
        updated_at: t,
        message_count: 0,
        tools: None,
        answered_by: None,
        cwd: None,
    }
}

/// Commits a turn of one user message to conversation `id` at time `t`.
fn with_a_turn(s: &Store, id: &str, t: i64) {
    s.commit_turn_at(id, None, None, None, &[Message::user("hi").into()], t)
        .unwrap();
}

#[test]
fn a_turn_is_indexed_in_one_full_text_segment_and_keeps_its_order_title_and_system() {
    let s = Store::in_memory().unwrap();
    s.create_conversation(&record("01F0", 1)).unwrap();
    let turn: Vec<NewMessage> = vec![
        Message::user("the first question").into(),
        Message::assistant("an answer").into(),
    ];
    let system = Message::system("be brief");
    s.commit_turn_at("01F0", Some(&system), None, Some("m1"), &turn, 5)
        .unwrap();
    s.commit_turn_at(
        "01F0",
        None,
        None,
        None,
        &[Message::user("again").into()],
        6,
    )
    .unwrap();
    // Each statement after the index joined a transaction would flush it into a segment
    // of its own: one per turn means the turn's messages went in one statement, last.
    let segments: i64 = s
        .conn()
        .unwrap()
        .query_row(
            "SELECT count(DISTINCT segid) FROM message_text_idx",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(segments, 2, "one full-text segment per committed turn");
    let c = s.conversation("01F0").unwrap().unwrap();
    assert_eq!((c.title.as_str(), c.updated_at), ("the first question", 6));
    let (sys, messages) = s.full_history("01F0").unwrap();
    assert_eq!(sys.map(|m| m.text()).as_deref(), Some("be brief"));
    let texts: Vec<String> = messages.iter().map(Message::text).collect();
    assert_eq!(texts, ["the first question", "an answer", "again"]);
    assert_eq!(s.search("answer", 10, "[", "]").unwrap().len(), 1);
}

#[test]
fn a_conversation_without_a_turn_is_never_listed_nor_continued_and_goes_when_asked() {
    let s = Store::in_memory().unwrap();
    // An old conversation with a turn, then newer ones without (a first turn that failed,
    // or rows an older genai left), one of them titled by its client.
    s.create_conversation(&record("01E0", 1)).unwrap();
    with_a_turn(&s, "01E0", 1);
    s.create_conversation(&record("01E1", 2)).unwrap();
    let mut titled = record("01E2", 3);
    titled.title = "Named by its client".into();
    s.create_conversation(&titled).unwrap();
    let listed = |f: ListFilter| -> Vec<String> {
        let (page, _) = s.list_conversations_where(10, None, &f).unwrap();
        page.into_iter().map(|c| c.id).collect()
    };
    assert_eq!(listed(ListFilter::default()), ["01E0"]);
    assert_eq!(s.list_conversations_in(None, 10, None).unwrap().0.len(), 1);
    assert_eq!(s.last_conversation().unwrap().as_deref(), Some("01E0"));
    // Still there for whoever holds it open: a later turn commits and lists it.
    assert!(s.conversation("01E2").unwrap().is_some());
    with_a_turn(&s, "01E2", 4);
    assert_eq!(listed(ListFilter::default()), ["01E2", "01E0"]);
    assert_eq!(s.last_conversation().unwrap().as_deref(), Some("01E2"));
    // Deleting the empty ones leaves those with turns.
    assert!(s.delete_if_empty("01E1").unwrap());
    assert!(!s.delete_if_empty("01E2").unwrap());
    assert!(!s.delete_if_empty("nope").unwrap());
    assert!(s.conversation("01E1").unwrap().is_none());
    assert!(s.conversation("01E2").unwrap().is_some());
    let empty = Store::in_memory().unwrap();
    empty.create_conversation(&record("01F", 1)).unwrap();
    assert_eq!(empty.last_conversation().unwrap(), None);
}

#[test]
fn a_foreign_database_or_file_is_one_short_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    let other = Connection::open(&path).unwrap();
    other
        .execute_batch("CREATE TABLE conversations (x); CREATE TABLE notes (y);")
        .unwrap();
    drop(other);
    let e = Store::open(&path)
        .err()
        .expect("a foreign database was opened");
    assert_eq!(e.kind, ErrorKind::Store);
    assert!(!e.message.contains('\n'), "{}", e.message);
    assert!(
        e.message
            .contains("not genai's history: it holds other tables (conversations, notes)"),
        "{}",
        e.message
    );
    let text = dir.path().join("text.db");
    std::fs::write(
        &text,
        "not a database at all, just text that is long enough",
    )
    .unwrap();
    let e = Store::open(&text).err().expect("a text file was opened");
    assert!(!e.message.contains('\n'), "{}", e.message);
    assert!(e.message.contains("text.db"), "{}", e.message);
}

#[test]
fn conversations_are_listed_by_working_directory() {
    let s = Store::in_memory().unwrap();
    for (i, cwd) in [Some("/a"), Some("/b"), None, Some("/a")]
        .iter()
        .enumerate()
    {
        let mut r = record(&format!("01C{i}"), i as i64);
        r.cwd = cwd.map(str::to_string);
        s.create_conversation(&r).unwrap();
        with_a_turn(&s, &r.id, i as i64);
    }
    let (page, next) = s.list_conversations_in(Some("/a"), 1, None).unwrap();
    assert_eq!(page[0].id, "01C3");
    assert_eq!(page[0].cwd.as_deref(), Some("/a"));
    let (page, last) = s
        .list_conversations_in(Some("/a"), 1, next.as_deref())
        .unwrap();
    assert_eq!(page[0].id, "01C0");
    assert!(last.is_none());
    assert_eq!(s.list_conversations_in(None, 10, None).unwrap().0.len(), 4);
    assert!(s
        .list_conversations_in(Some("/c"), 10, None)
        .unwrap()
        .0
        .is_empty());
}

#[test]
fn a_conversation_keeps_its_tool_selection_and_middleware() {
    let s = Store::in_memory().unwrap();
    s.create_conversation(&record("01A", 1)).unwrap();
    let mut with_tools = record("01B", 2);
    with_tools.tools = Some(vec!["calc".into(), "files.read".into()]);
    s.create_conversation(&with_tools).unwrap();
    s.set_middleware("01B", Some(&["hide".to_string()]))
        .unwrap();
    assert_eq!(s.conversation("01A").unwrap().unwrap().tools, None);
    assert_eq!(
        s.conversation("01B").unwrap().unwrap().tools,
        Some(vec!["calc".to_string(), "files.read".to_string()])
    );
    assert_eq!(s.middleware("01A").unwrap(), None);
    assert_eq!(s.middleware("01B").unwrap(), Some(vec!["hide".to_string()]));
}

#[test]
fn turns_titles_pages_and_prefixes() {
    let s = Store::in_memory().unwrap();
    for i in 0..5 {
        s.create_conversation(&record(&format!("01AAA{i}"), i))
            .unwrap();
        if i != 1 {
            with_a_turn(&s, &format!("01AAA{i}"), i);
        }
    }
    s.commit_turn(
        "01AAA1",
        Some(&Message::system("sys")),
        Some("m1"),
        &[
            Message::user("hello   there\nworld").into(),
            NewMessage {
                message: Message::assistant("hi"),
                usage: Some(Usage {
                    input_tokens: 3,
                    output_tokens: 1,
                    cache_read_tokens: None,
                    cache_write_tokens: None,
                    reasoning_tokens: None,
                }),
                cost: Some(0.25),
            },
        ],
    )
    .unwrap();
    let c = s.conversation("01AAA1").unwrap().unwrap();
    assert_eq!(c.title, "hello there world");
    assert_eq!(c.message_count, 2);
    let (sys, msgs) = s.full_history("01AAA1").unwrap();
    assert_eq!(sys.unwrap().text(), "sys");
    assert_eq!(msgs.len(), 2);
    let (page, next) = s.history("01AAA1", 1, None).unwrap();
    assert_eq!(page[0].message.text(), "hello   there\nworld");
    let (page, next2) = s.history("01AAA1", 1, next.as_deref()).unwrap();
    assert_eq!(page[0].usage.unwrap().output_tokens, 1);
    assert_eq!(page[0].cost, Some(0.25));
    assert_eq!(
        page[0].model.as_deref(),
        Some("m1"),
        "each message names its turn's model"
    );
    assert!(next2.is_none());

    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let (page, next) = s.list_conversations(2, cursor.as_deref()).unwrap();
        seen.extend(page.into_iter().map(|c| c.id));
        match next {
            Some(n) => cursor = Some(n),
            None => break,
        }
    }
    assert_eq!(seen.len(), 5);
    assert_eq!(seen[0], "01AAA1", "the updated conversation comes first");
    assert_eq!(s.resolve_id("01aaa3").unwrap(), "01AAA3");
    assert!(s.resolve_id("01AAA").is_err());
    assert!(s.commit_turn("nope", None, None, &[]).is_err());
    let only = |f: ListFilter| -> Vec<String> {
        let (page, _) = s.list_conversations_where(10, None, &f).unwrap();
        page.into_iter().map(|c| c.id).collect()
    };
    let by_model = |m: &str| ListFilter {
        model: Some(m.into()),
        ..Default::default()
    };
    assert_eq!(only(by_model("M1")), ["01AAA1"], "a turn's model");
    assert_eq!(only(by_model("nothing")), Vec::<String>::new());
    let since = ListFilter {
        since: Some(s.conversation("01AAA1").unwrap().unwrap().updated_at),
        ..Default::default()
    };
    assert_eq!(only(since), ["01AAA1"]);

    // Handed over to another model: the conversation says so, and the next turn is marked
    // with it while the earlier ones keep theirs.
    s.switch_model("01AAA1", "p2", None, "claude-messages", "m2")
        .unwrap();
    let c = s.conversation("01AAA1").unwrap().unwrap();
    assert_eq!((c.provider.as_str(), c.model.as_str()), ("p2", "m2"));
    s.commit_turn("01AAA1", None, Some("m2"), &[Message::user("more").into()])
        .unwrap();
    let (all, _) = s.history("01AAA1", 10, None).unwrap();
    let models: Vec<_> = all.iter().map(|m| m.model.as_deref()).collect();
    assert_eq!(models, [Some("m1"), Some("m1"), Some("m2")]);
    assert!(s.switch_model("nope", "p", None, "f", "m").is_err());
    // A turn a fallback answered: its provider kept with each message, and the listing
    // names who answered last beside what the conversation runs on.
    let reply: NewMessage = Message::new(Role::Assistant, "from the fallback").into();
    s.commit_turn_by("01AAA1", None, "spare", "m3", &[reply])
        .unwrap();
    let (all, _) = s.history("01AAA1", 10, None).unwrap();
    let last = all.last().unwrap();
    assert_eq!(
        (last.provider.as_deref(), last.model.as_deref()),
        (Some("spare"), Some("m3"))
    );
    let c = s.conversation("01AAA1").unwrap().unwrap();
    assert_eq!((c.provider.as_str(), c.model.as_str()), ("p2", "m2"));
    let (page, _) = s.list_conversations(1, None).unwrap();
    assert_eq!(page[0].answered_by.as_deref(), Some("spare:m3"));

    s.rename_conversation("01AAA1", "  A new\nname ").unwrap();
    assert_eq!(
        s.conversation("01AAA1").unwrap().unwrap().title,
        "A new name"
    );
    assert!(s.rename_conversation("01AAA1", " ").is_err());
    assert!(s.rename_conversation("nope", "x").is_err());
    assert!(s.delete_conversation("01AAA1").unwrap());
    assert!(s.history("01AAA1", 10, None).unwrap().0.is_empty());
}
