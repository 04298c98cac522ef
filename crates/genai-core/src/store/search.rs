//! Full-text search over every stored message (`genai sessions search`): SQLite FTS5 over the
//! text parts, kept up to date by triggers of the schema (migration 6), ranked by bm25, with a
//! snippet around the matches.
//!
//! This file only reads the index; it must never write messages (that is `commit_turn`) nor
//! decide how a front-end shows the highlights (it takes the markers to put around them).

use rusqlite::params;

use super::Store;
use crate::error::Result;

/// One message that matches.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub conversation_id: String,
    pub title: String,
    pub seq: i64,
    pub role: String,
    /// The text around the matches, each match between the markers asked for.
    pub snippet: String,
    /// bm25 rank: lower is better.
    pub rank: f64,
}

/// The words of `query` as an FTS5 query: each a quoted string (so no character of the query
/// is FTS syntax), all of them required.
fn fts_query(query: &str) -> String {
    query
        .split_whitespace()
        .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Refuses a query without a word.
pub fn something_to_search(query: &str) -> Result<()> {
    if query.split_whitespace().next().is_none() {
        return Err(crate::error::Error::invalid_params("nothing to search for"));
    }
    Ok(())
}

impl Store {
    /// The best `limit` messages containing every word of `query`, best first; matches are
    /// put between `open` and `close` in the snippets.
    pub fn search(&self, query: &str, limit: usize, open: &str, close: &str) -> Result<Vec<Found>> {
        something_to_search(query)?;
        let q = fts_query(query);
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT m.conversation_id, c.title, m.seq, m.role,
                    snippet(message_text, 0, ?2, ?3, '…', 12), bm25(message_text) AS rank
             FROM message_text
             JOIN messages m ON m.rowid = message_text.rowid
             JOIN conversations c ON c.id = m.conversation_id
             WHERE message_text MATCH ?1
             ORDER BY rank LIMIT ?4",
        )?;
        let rows = stmt
            .query_map(params![q, open, close, limit as i64], |r| {
                Ok(Found {
                    conversation_id: r.get(0)?,
                    title: r.get(1)?,
                    seq: r.get(2)?,
                    role: r.get(3)?,
                    snippet: r.get(4)?,
                    rank: r.get(5)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;

    fn conversation(s: &Store, id: &str, texts: &[&str]) {
        s.create_conversation(&crate::store::tests::record(id, 1))
            .unwrap();
        let rows: Vec<_> = texts.iter().map(|t| Message::user(*t).into()).collect();
        s.commit_turn(id, None, Some("m"), &rows).unwrap();
    }

    #[test]
    fn finds_every_word_ranked_with_highlighted_snippets() {
        let s = Store::in_memory().unwrap();
        conversation(
            &s,
            "01A",
            &["The borrow checker rejects this code", "unrelated"],
        );
        conversation(
            &s,
            "01B",
            &["borrow borrow checker checker, the borrow checker again"],
        );
        let found = s.search("Borrow checker", 10, "[", "]").unwrap();
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].conversation_id, "01B", "more matches rank first");
        assert_eq!(found[1].snippet, "The [borrow] [checker] rejects this code");
        assert_eq!((found[1].seq, found[1].role.as_str()), (1, "user"));
        assert_eq!(found[1].title, "The borrow checker rejects this code");
        // Every word is needed; FTS syntax in the query is plain text.
        assert!(s.search("borrow nothing", 10, "[", "]").unwrap().is_empty());
        assert!(s.search("\"checker OR", 10, "[", "]").unwrap().is_empty());
        assert!(s.search("  ", 10, "[", "]").is_err());
        // Deleted conversations leave the index.
        assert!(s.delete_conversation("01B").unwrap());
        assert_eq!(s.search("checker", 10, "[", "]").unwrap().len(), 1);
    }
}
