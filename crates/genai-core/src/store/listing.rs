//! Listing stored conversations: most recently updated first, a page at a time behind an
//! opaque cursor, filtered by last update, model or working directory. A conversation no turn
//! was committed to (its first turn failed, or its client has sent none yet) is never listed,
//! nor is it the last conversation that `genai ask -c` continues.
//!
//! It only reads conversation rows; it must never write them nor decide how a front-end shows
//! a listing.

use rusqlite::{params, OptionalExtension};

use super::{ConversationRecord, Store};
use crate::error::{Error, Result};

/// Which conversations a listing shows.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    /// Updated at or after this time (milliseconds since the Unix epoch).
    pub since: Option<i64>,
    /// Run on a model whose `provider:model` (or a turn's model) contains this, ignoring case.
    pub model: Option<String>,
    /// Opened in this working directory (an ACP session's `cwd`).
    pub cwd: Option<String>,
}

/// The condition on a conversation `c` that a turn was committed to it, or that a tool call
/// of a turn that did not end was allowed (it may have changed files: the history keeps it).
pub const HAS_TURNS: &str = "(EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id)
     OR EXISTS (SELECT 1 FROM tool_decisions d WHERE d.conversation_id = c.id AND d.decision = 'allow'))";

/// Where a listing's page starts: before this update time and id (`(i64::MAX, "")`: the
/// first page), from its cursor.
pub fn listing_cursor(cursor: Option<&str>) -> Result<(i64, String)> {
    let Some(c) = cursor else {
        return Ok((i64::MAX, String::new()));
    };
    let (t, id) = c
        .split_once('.')
        .ok_or_else(|| Error::invalid_params("invalid cursor"))?;
    let t = t
        .parse()
        .map_err(|_| Error::invalid_params("invalid cursor"))?;
    Ok((t, id.to_string()))
}

/// The cursor of the page after the one that ends with `last`.
pub fn listing_next(last: &ConversationRecord) -> String {
    format!("{}.{}", last.updated_at, last.id)
}

impl Store {
    /// The most recently updated conversation that a turn was committed to (what `-c` means).
    pub fn last_conversation(&self) -> Result<Option<String>> {
        Ok(self
            .conn()?
            .query_row(
                &format!(
                    "SELECT c.id FROM conversations c WHERE {HAS_TURNS}
                     ORDER BY c.updated_at DESC, c.id DESC LIMIT 1"
                ),
                [],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// `Store::list_conversations` of the conversations that `filter` lets through.
    pub fn list_conversations_where(
        &self,
        page_size: usize,
        cursor: Option<&str>,
        filter: &ListFilter,
    ) -> Result<(Vec<ConversationRecord>, Option<String>)> {
        let (before_time, before_id) = listing_cursor(cursor)?;
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(&format!(
            "{} WHERE (?2 = '' OR c.updated_at < ?1 OR (c.updated_at = ?1 AND c.id < ?2))
             AND {}
             AND c.updated_at >= ?4
             AND (?5 IS NULL OR instr(lower(c.provider || ':' || c.model), lower(?5)) > 0
                  OR EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id
                             AND instr(lower(m.model), lower(?5)) > 0))
             AND (?6 IS NULL OR c.cwd = ?6)
             ORDER BY c.updated_at DESC, c.id DESC LIMIT ?3",
            Self::SELECT,
            HAS_TURNS
        ))?;
        let rows = stmt
            .query_map(
                params![
                    before_time,
                    before_id,
                    (page_size + 1) as i64,
                    filter.since.unwrap_or(i64::MIN),
                    filter.model,
                    filter.cwd
                ],
                Self::row_to_record,
            )?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let records = rows
            .into_iter()
            .map(Self::finish_record)
            .collect::<Result<Vec<_>>>()?;
        Ok(super::page_of(records, page_size, listing_next))
    }
}
