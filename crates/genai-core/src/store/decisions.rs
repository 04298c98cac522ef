//! The permission decisions of the tool calls, kept with their turn: which tool, on what, allowed
//! or denied, and by which rule, mode, hook or answer of the user (`genai sessions show` reads
//! them back).
//!
//! It only keeps and reads decisions; it must never make one (the feature's guard does).

use rusqlite::params;

use super::{now_ms, Store};
use crate::error::Result;

/// One decision on one tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionRecord {
    pub call_id: String,
    pub tool: String,
    /// The path, command line or URL; for other tools their arguments (JSON, cut at 200).
    pub argument: String,
    /// `allow` or `deny`.
    pub decision: String,
    /// The rule, the mode, the user's answer or the hook that decided.
    pub by: String,
}

impl DecisionRecord {
    /// The line of the turn's details.
    pub fn detail(&self) -> String {
        format!(
            "permission: {}({}) {} by {}",
            self.tool, self.argument, self.decision, self.by
        )
    }
}

impl Store {
    /// Keeps the decisions of turn `turn_id` of conversation `id` (secrets known to the
    /// redactor are masked in their arguments). `prompt` titles a conversation that has no
    /// title yet: a turn that allowed a call but did not end (cancelled, failed) keeps its
    /// conversation in the listings, since the call may have changed files.
    pub(crate) fn record_decisions(
        &self,
        id: &str,
        turn_id: &str,
        prompt: &str,
        decisions: &[DecisionRecord],
    ) -> Result<()> {
        if decisions.is_empty() {
            return Ok(());
        }
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        tx.execute(
            "UPDATE conversations SET title = ?2 WHERE id = ?1 AND title = ''",
            params![id, super::title_of(prompt)],
        )?;
        {
            let mut insert = tx.prepare_cached(
                "INSERT INTO tool_decisions (conversation_id, turn_id, call_id, tool, argument, decision, decided_by, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?;
            let now = now_ms();
            for d in decisions {
                insert.execute(params![
                    id,
                    turn_id,
                    d.call_id,
                    d.tool,
                    crate::redact::redact(&d.argument),
                    d.decision,
                    crate::redact::redact(&d.by),
                    now
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// The decisions of conversation `id`, oldest first, each with its turn id.
    pub fn decisions(&self, id: &str) -> Result<Vec<(String, DecisionRecord)>> {
        let conn = self.conn()?;
        let mut q = conn.prepare_cached(
            "SELECT turn_id, call_id, tool, argument, decision, decided_by FROM tool_decisions
             WHERE conversation_id = ?1 ORDER BY created_at, rowid",
        )?;
        let rows = q.query_map(params![id], |r| {
            Ok((
                r.get::<_, String>(0)?,
                DecisionRecord {
                    call_id: r.get(1)?,
                    tool: r.get(2)?,
                    argument: r.get(3)?,
                    decision: r.get(4)?,
                    by: r.get(5)?,
                },
            ))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::record;

    #[test]
    fn decisions_are_kept_with_their_turn_and_go_with_their_conversation() {
        let store = Store::in_memory().unwrap();
        store.create_conversation(&record("c1", 1)).unwrap();
        let d = DecisionRecord {
            call_id: "call_1".into(),
            tool: "workspace.read_file".into(),
            argument: ".env".into(),
            decision: "deny".into(),
            by: "secret file: named by no rule".into(),
        };
        store
            .record_decisions("c1", "t1", "Read my .env", std::slice::from_ref(&d))
            .unwrap();
        assert_eq!(store.decisions("c1").unwrap(), vec![("t1".to_string(), d)]);
        store.delete_conversation("c1").unwrap();
        assert!(store.decisions("c1").unwrap().is_empty());
    }

    #[test]
    fn an_allowed_call_of_a_turn_that_did_not_end_keeps_its_conversation_listed() {
        let store = Store::in_memory().unwrap();
        let mut empty = record("c1", 1);
        empty.title = String::new();
        store.create_conversation(&empty).unwrap();
        let mut denied_only = record("c2", 2);
        denied_only.title = String::new();
        store.create_conversation(&denied_only).unwrap();
        let call = |decision: &str| DecisionRecord {
            call_id: "call_1".into(),
            tool: "workspace.edit_file".into(),
            argument: "src/lib.rs".into(),
            decision: decision.into(),
            by: "mode full".into(),
        };
        store
            .record_decisions("c1", "t1", "Bump the answer", &[call("allow")])
            .unwrap();
        store
            .record_decisions("c2", "t1", "Bump it", &[call("deny")])
            .unwrap();
        // No turn was committed to either; only the one whose call ran stays.
        assert!(!store.delete_if_empty("c1").unwrap());
        assert!(store.delete_if_empty("c2").unwrap());
        assert_eq!(store.last_conversation().unwrap().as_deref(), Some("c1"));
        assert_eq!(
            store.conversation("c1").unwrap().unwrap().title,
            "Bump the answer"
        );
    }
}
