//! The serve's conversations in the shared database: [`Postgres`] implements the core's
//! [`History`], so a conversation a client started on one replica is listed, read, searched,
//! continued and deleted through any other. The SQL is `conversations.rs`'s (conversations,
//! listing, decisions) and `turns.rs`'s (a turn's commit, messages, search).
//!
//! The bridge: `History` is synchronous (the sessions call it inside async code, a turn's
//! commit from `spawn_blocking`), and the pool is tokio's. Each call runs its queries with
//! `Handle::block_on` inside `tokio::task::block_in_place`, which hands the worker's other
//! tasks to the runtime's other workers while this one waits; on a thread outside the runtime
//! (a blocking task's) it is the same `block_on` on the handle taken when the pool was made.
//! `genai serve` runs on the multi-thread runtime (`cli::runtime`); on a current-thread
//! runtime, where nothing could hand the work over, a call is refused, never deadlocked. Every
//! call ends within [`within`]'s deadline (`QUERY_TIMEOUT` twice): Postgres away fails it
//! with `ErrorKind::Store` or `Timeout`, naming the database without its password.
//!
//! It owns that bridge. It must never wait without a deadline, never block a current-thread
//! runtime, and never show the URL's password.

use std::future::Future;

use genai_core::error::{Error, ErrorKind, Result};
use genai_core::message::Message;
use genai_core::store::{
    DecisionRecord, Found, History, ListFilter, NewMessage, Page, StoredMessage,
};
use genai_protocol::listings::ConversationRecord;
use serde_json::{Map, Value};
use tokio::runtime::{Handle, RuntimeFlavor};

use super::{conversations as conv, turns, within, Postgres};

impl Postgres {
    /// Runs `work` to its end within the deadline, from synchronous code (see the module).
    fn wait<T>(&self, work: impl Future<Output = Result<T>>) -> Result<T> {
        let work = async {
            within(work).await.map_err(|e| match e.kind {
                ErrorKind::Store | ErrorKind::Timeout => self.named(e),
                _ => e,
            })
        };
        match Handle::try_current() {
            Ok(h) if h.runtime_flavor() == RuntimeFlavor::CurrentThread => Err(Error::internal(
                "the shared database's history needs tokio's multi-thread runtime",
            )),
            Ok(h) => tokio::task::block_in_place(|| h.block_on(work)),
            Err(_) => match &self.handle {
                Some(h) => h.block_on(work),
                None => Err(Error::internal(
                    "the shared database's history was made outside a tokio runtime",
                )),
            },
        }
    }
}

impl History for Postgres {
    fn create_conversation(&self, c: &ConversationRecord) -> Result<()> {
        self.wait(async { conv::create(&self.client().await?, c).await })
    }
    fn rename_conversation(&self, id: &str, title: &str) -> Result<()> {
        let title = genai_core::store::new_title(title)?;
        self.wait(async {
            let client = self.client().await?;
            conv::set_text(&client, id, "title", Some(&title)).await
        })
    }
    fn switch_model(
        &self,
        id: &str,
        provider: &str,
        model_configuration: Option<&str>,
        format: &str,
        model: &str,
    ) -> Result<()> {
        let to = [
            Some(provider),
            model_configuration,
            Some(format),
            Some(model),
        ];
        self.wait(async { conv::switch_model(&self.client().await?, id, to).await })
    }
    fn update_parameters(&self, id: &str, parameters: &Map<String, Value>) -> Result<()> {
        let json = conv::to_json(parameters)?;
        self.wait(async {
            let client = self.client().await?;
            // As SQLite's: a conversation gone in the meantime is no error here.
            conv::set_text(&client, id, "parameters", Some(&json))
                .await
                .or_else(|e| match e.kind {
                    ErrorKind::UnknownConversation => Ok(()),
                    _ => Err(e),
                })
        })
    }
    fn update_choice(&self, c: &ConversationRecord) -> Result<()> {
        self.wait(async { conv::update_choice(&self.client().await?, c).await })
    }
    fn set_middleware(&self, id: &str, middleware: Option<&[String]>) -> Result<()> {
        self.set_json(id, "middleware", middleware.map(conv::to_json).transpose()?)
    }
    fn middleware(&self, id: &str) -> Result<Option<Vec<String>>> {
        self.json(id, "middleware")
    }
    fn set_response_schema(&self, id: &str, schema: Option<&Value>) -> Result<()> {
        self.set_json(
            id,
            "response_schema",
            schema.map(conv::to_json).transpose()?,
        )
    }
    fn response_schema(&self, id: &str) -> Result<Option<Value>> {
        self.json(id, "response_schema")
    }
    fn set_permissions(&self, id: &str, permissions: &Value) -> Result<()> {
        self.set_json(id, "permissions", Some(conv::to_json(permissions)?))
    }
    fn permissions(&self, id: &str) -> Result<Option<Value>> {
        self.json(id, "permissions")
    }
    fn conversation(&self, id: &str) -> Result<Option<ConversationRecord>> {
        self.wait(async { conv::record(&self.client().await?, id).await })
    }
    fn resolve_id(&self, prefix: &str) -> Result<String> {
        let p = genai_core::store::id_prefix(prefix)?;
        let ids = self.wait(async { conv::ids_starting(&self.client().await?, &p).await })?;
        genai_core::store::the_one_id(prefix, &ids)
    }
    fn delete_conversation(&self, id: &str) -> Result<bool> {
        self.wait(async { conv::delete(&self.client().await?, id, false).await })
    }
    fn delete_if_empty(&self, id: &str) -> Result<bool> {
        self.wait(async { conv::delete(&self.client().await?, id, true).await })
    }
    fn commit_turn_at(
        &self,
        id: &str,
        system: Option<&Message>,
        provider: Option<&str>,
        model: Option<&str>,
        messages: &[NewMessage],
        now: i64,
    ) -> Result<()> {
        let turn = turns::Turn::new(system, (provider, model), messages, now)?;
        self.wait(async { turns::commit(&mut self.client().await?, id, &turn).await })
    }
    fn history(
        &self,
        id: &str,
        page_size: usize,
        cursor: Option<&str>,
    ) -> Result<Page<StoredMessage>> {
        let after = genai_core::store::message_cursor(cursor)?;
        let rows = self.wait(async {
            turns::messages(
                &self.client().await?,
                id,
                after,
                page_size.saturating_add(1),
            )
            .await
        })?;
        Ok(genai_core::store::page_of(rows, page_size, |m| {
            m.seq.to_string()
        }))
    }
    fn full_history(&self, id: &str) -> Result<(Option<Message>, Vec<Message>)> {
        self.wait(async {
            let client = self.client().await?;
            let system = conv::json_column(&client, id, "system").await?;
            let all = turns::messages(&client, id, 0, usize::MAX).await?;
            Ok((system, all.into_iter().map(|m| m.message).collect()))
        })
    }
    fn last_conversation(&self) -> Result<Option<String>> {
        self.wait(async { conv::last(&self.client().await?).await })
    }
    fn list_conversations_where(
        &self,
        page_size: usize,
        cursor: Option<&str>,
        filter: &ListFilter,
    ) -> Result<Page<ConversationRecord>> {
        let before = genai_core::store::listing_cursor(cursor)?;
        let rows = self.wait(async {
            let client = self.client().await?;
            conv::list(&client, &before, page_size.saturating_add(1), filter).await
        })?;
        Ok(genai_core::store::page_of(
            rows,
            page_size,
            genai_core::store::listing_next,
        ))
    }
    fn search(&self, query: &str, limit: usize, open: &str, close: &str) -> Result<Vec<Found>> {
        genai_core::store::something_to_search(query)?;
        self.wait(async { turns::search(&self.client().await?, query, limit, (open, close)).await })
    }
    fn record_decisions(
        &self,
        id: &str,
        turn_id: &str,
        prompt: &str,
        decisions: &[DecisionRecord],
    ) -> Result<()> {
        if decisions.is_empty() {
            return Ok(());
        }
        self.wait(async {
            let mut client = self.client().await?;
            conv::record_decisions(&mut client, id, turn_id, prompt, decisions).await
        })
    }
    fn decisions(&self, id: &str) -> Result<Vec<(String, DecisionRecord)>> {
        self.wait(async { conv::decisions(&self.client().await?, id).await })
    }
}

impl Postgres {
    /// Writes a conversation's JSON column (`None`: NULL).
    fn set_json(&self, id: &str, column: &'static str, json: Option<String>) -> Result<()> {
        self.wait(async {
            let client = self.client().await?;
            conv::set_text(&client, id, column, json.as_deref()).await
        })
    }

    /// A conversation's JSON column, parsed.
    fn json<T: serde::de::DeserializeOwned>(
        &self,
        id: &str,
        column: &'static str,
    ) -> Result<Option<T>> {
        self.wait(async { conv::json_column(&self.client().await?, id, column).await })
    }
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;
