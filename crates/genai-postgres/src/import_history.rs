//! `genai serve migrate`'s second half: a SQLite serve's conversations, each with its
//! messages (their places, times, models, usage and cost), its system message, middleware,
//! schema, permissions and tool-call decisions, copied into the shared database, one
//! conversation per transaction. A conversation the database holds already (an earlier run
//! copied it, or its id is there) is left as it is, so a second run copies nothing twice.
//!
//! It owns that copy. It must never change the SQLite file, never overwrite a conversation of
//! the shared database, and never leave part of a conversation copied.

use std::sync::Arc;

use genai_core::error::Result;
use genai_core::store::{History, ListFilter, NewMessage, Store, StoredMessage};
use genai_protocol::listings::ConversationRecord;

use super::conversations::{self as conv, to_json};
use super::import::{blocking, Imported};
use super::turns::{self, Place, Row};
use super::{db_err, within, Postgres};

/// Conversations read from the SQLite file at a time.
const PAGE: usize = 100;

/// One conversation as the SQLite history holds it.
struct Copy {
    record: ConversationRecord,
    system: Option<String>,
    middleware: Option<String>,
    schema: Option<String>,
    permissions: Option<String>,
    messages: Vec<(StoredMessage, Row)>,
    decisions: Vec<(String, genai_core::store::DecisionRecord)>,
}

/// Reads conversation `rec` whole from `store`.
fn read(store: &Store, record: ConversationRecord) -> Result<Copy> {
    let id = record.id.clone();
    let (system, _) = History::full_history(store, &id)?;
    let (messages, _) = History::history(store, &id, usize::MAX / 2, None)?;
    let messages = messages
        .into_iter()
        .map(|m| {
            let row = Row::of(&NewMessage {
                message: m.message.clone(),
                usage: m.usage,
                cost: m.cost,
            })?;
            Ok((m, row))
        })
        .collect::<Result<_>>()?;
    Ok(Copy {
        system: system
            .as_ref()
            .map(genai_core::store::masked_json)
            .transpose()?,
        middleware: History::middleware(store, &id)?
            .as_deref()
            .map(to_json)
            .transpose()?,
        schema: History::response_schema(store, &id)?
            .as_ref()
            .map(to_json)
            .transpose()?,
        permissions: History::permissions(store, &id)?
            .as_ref()
            .map(to_json)
            .transpose()?,
        messages,
        decisions: History::decisions(store, &id)?,
        record,
    })
}

impl Postgres {
    /// Copies every listed conversation of `store` the database does not hold, into `done`.
    pub(crate) async fn import_conversations(
        &self,
        store: Arc<Store>,
        done: &mut Imported,
    ) -> Result<()> {
        let mut cursor: Option<String> = None;
        loop {
            let (reading, after) = (store.clone(), cursor.take());
            let (page, next) = blocking(move || {
                let filter = ListFilter::default();
                History::list_conversations_where(&*reading, PAGE, after.as_deref(), &filter)
            })
            .await?;
            for record in page {
                let reading = store.clone();
                let copy = blocking(move || read(&reading, record)).await?;
                match self.copy(&copy).await? {
                    true => {
                        done.conversations_added += 1;
                        done.messages_added += copy.messages.len() as u64;
                        done.decisions_added += copy.decisions.len() as u64;
                    }
                    false => done.conversations_present += 1,
                }
            }
            match next {
                Some(n) => cursor = Some(n),
                None => return Ok(()),
            }
        }
    }

    /// Copies one conversation in one transaction; false when the database has its id.
    async fn copy(&self, c: &Copy) -> Result<bool> {
        within(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(db_err)?;
            let id = c.record.id.as_str();
            let exists = tx
                .query_opt(
                    "SELECT 1 FROM conversations WHERE id = $1 FOR UPDATE",
                    &[&id],
                )
                .await
                .map_err(db_err)?;
            if exists.is_some() {
                return Ok(false);
            }
            conv::create(&tx, &c.record).await?;
            tx.execute(
                "UPDATE conversations SET system = $2, middleware = $3, response_schema = $4,
                    permissions = $5 WHERE id = $1",
                &[&id, &c.system, &c.middleware, &c.schema, &c.permissions],
            )
            .await
            .map_err(db_err)?;
            for (m, row) in &c.messages {
                let at = Place {
                    id,
                    seq: m.seq,
                    created_at: m.created_at,
                    provider: m.provider.as_deref(),
                    model: m.model.as_deref(),
                };
                turns::insert(&tx, at, row).await?;
            }
            let decisions = c.decisions.iter().map(|(t, d)| (t.as_str(), d));
            conv::insert_decisions(&tx, id, decisions, c.record.updated_at).await?;
            tx.commit().await.map_err(db_err)?;
            Ok(true)
        })
        .await
    }
}
