//! [`History`]: what the sessions ask of the history — conversations, their whole turns, the
//! listings, search and the tool calls' decisions — whatever holds it. The SQLite [`Store`]
//! is the embedded one (`ask`, `chat`, a single `genai serve`); `genai-postgres` holds it in
//! Postgres for replicas of `genai serve` that must share their conversations.
//!
//! It owns the contract only: every implementation stores whole turns (all of one or
//! nothing), masks the secrets genai knows before a message is kept (`stored_json`), lists a
//! conversation only once a turn was committed to it (or a tool call of one was allowed),
//! pages behind opaque cursors, and says a conversation it does not hold with
//! `ErrorKind::UnknownConversation`. It must never hold a conversation's live state, nor the
//! gateway's keys and ledger (those stay on [`Store`] and the gateway's `SharedState`).
//!
//! The calls are synchronous: the sessions call them inside async code, off the workers where
//! a call may wait (a turn's commit runs in `spawn_blocking`). An implementation that waits on
//! the network bounds each call with a deadline and fails it with `ErrorKind::Store` or
//! `ErrorKind::Timeout`, never hangs.

use serde_json::{Map, Value};

use super::{DecisionRecord, Found, ListFilter, NewMessage, Store, StoredMessage};
use crate::error::Result;
use crate::message::Message;
use genai_protocol::listings::ConversationRecord;

/// A conversation page and the cursor of the next (`None`: the last page).
pub type Page<T> = (Vec<T>, Option<String>);

/// The history of conversations the sessions keep (see the module's doc for the contract).
pub trait History: Send + Sync {
    /// Stores a new conversation; its `messageCount` and `answeredBy` are read from its
    /// messages, never written.
    fn create_conversation(&self, c: &ConversationRecord) -> Result<()>;
    /// Gives a conversation a new title (one line, as `title_of` makes it; empty: refused).
    fn rename_conversation(&self, id: &str, title: &str) -> Result<()>;
    /// Hands a conversation over to another provider and model: later turns run there.
    fn switch_model(
        &self,
        id: &str,
        provider: &str,
        model_configuration: Option<&str>,
        format: &str,
        model: &str,
    ) -> Result<()>;
    fn update_parameters(&self, id: &str, parameters: &Map<String, Value>) -> Result<()>;
    /// Records another feature or model for a conversation (the client changed its choice).
    fn update_choice(&self, c: &ConversationRecord) -> Result<()>;
    /// The middleware a conversation's agent listed (`None`: its model configuration's).
    fn set_middleware(&self, id: &str, middleware: Option<&[String]>) -> Result<()>;
    fn middleware(&self, id: &str) -> Result<Option<Vec<String>>>;
    /// The schema a client gave a conversation (JSON `{"name", "schema"}`; `None`: none).
    fn set_response_schema(&self, id: &str, schema: Option<&Value>) -> Result<()>;
    fn response_schema(&self, id: &str) -> Result<Option<Value>>;
    /// The permission mode and rules a client gave a conversation (JSON `{mode, allow, deny}`).
    fn set_permissions(&self, id: &str, permissions: &Value) -> Result<()>;
    fn permissions(&self, id: &str) -> Result<Option<Value>>;
    fn conversation(&self, id: &str) -> Result<Option<ConversationRecord>>;
    /// The full id of the one conversation whose id starts with `prefix` (case-insensitive).
    fn resolve_id(&self, prefix: &str) -> Result<String>;
    /// Deletes a conversation with its messages and decisions; true when there was one.
    fn delete_conversation(&self, id: &str) -> Result<bool>;
    /// Deletes conversation `id` if no turn was committed to it (nor a tool call of one
    /// allowed); true when it did.
    fn delete_if_empty(&self, id: &str) -> Result<bool>;
    /// Commits one turn atomically at time `now` (see [`Store::commit_turn_at`]).
    fn commit_turn_at(
        &self,
        id: &str,
        system: Option<&Message>,
        provider: Option<&str>,
        model: Option<&str>,
        messages: &[NewMessage],
        now: i64,
    ) -> Result<()>;
    /// The messages of a conversation in order, from the cursor on.
    fn history(
        &self,
        id: &str,
        page_size: usize,
        cursor: Option<&str>,
    ) -> Result<Page<StoredMessage>>;
    /// The stored system message and every message, for rebuilding an agent.
    fn full_history(&self, id: &str) -> Result<(Option<Message>, Vec<Message>)>;
    /// The most recently updated conversation that a turn was committed to.
    fn last_conversation(&self) -> Result<Option<String>>;
    /// The most recently updated conversations that `filter` lets through, first.
    fn list_conversations_where(
        &self,
        page_size: usize,
        cursor: Option<&str>,
        filter: &ListFilter,
    ) -> Result<Page<ConversationRecord>>;
    /// The best `limit` messages containing every word of `query`, best first; matches are
    /// put between `open` and `close` in the snippets.
    fn search(&self, query: &str, limit: usize, open: &str, close: &str) -> Result<Vec<Found>>;
    /// Keeps the decisions of a turn's tool calls (see [`Store::record_decisions`]).
    fn record_decisions(
        &self,
        id: &str,
        turn_id: &str,
        prompt: &str,
        decisions: &[DecisionRecord],
    ) -> Result<()>;
    /// The decisions of conversation `id`, oldest first, each with its turn id.
    fn decisions(&self, id: &str) -> Result<Vec<(String, DecisionRecord)>>;

    /// A turn answered by `provider`'s `model`, committed now.
    fn commit_turn_by(
        &self,
        id: &str,
        system: Option<&Message>,
        provider: &str,
        model: &str,
        messages: &[NewMessage],
    ) -> Result<()> {
        let now = super::now_ms();
        self.commit_turn_at(id, system, Some(provider), Some(model), messages, now)
    }

    /// Every conversation, most recently updated first.
    fn list_conversations(
        &self,
        page_size: usize,
        cursor: Option<&str>,
    ) -> Result<Page<ConversationRecord>> {
        self.list_conversations_where(page_size, cursor, &ListFilter::default())
    }

    /// As `list_conversations`, only those opened in the working directory `cwd` when given.
    fn list_conversations_in(
        &self,
        cwd: Option<&str>,
        page_size: usize,
        cursor: Option<&str>,
    ) -> Result<Page<ConversationRecord>> {
        let filter = ListFilter {
            cwd: cwd.map(str::to_string),
            ..Default::default()
        };
        self.list_conversations_where(page_size, cursor, &filter)
    }
}

/// The SQLite history, as it always was: each call is the store's own.
impl History for Store {
    fn create_conversation(&self, c: &ConversationRecord) -> Result<()> {
        Store::create_conversation(self, c)
    }
    fn rename_conversation(&self, id: &str, title: &str) -> Result<()> {
        Store::rename_conversation(self, id, title)
    }
    fn switch_model(
        &self,
        id: &str,
        provider: &str,
        model_configuration: Option<&str>,
        format: &str,
        model: &str,
    ) -> Result<()> {
        Store::switch_model(self, id, provider, model_configuration, format, model)
    }
    fn update_parameters(&self, id: &str, parameters: &Map<String, Value>) -> Result<()> {
        Store::update_parameters(self, id, parameters)
    }
    fn update_choice(&self, c: &ConversationRecord) -> Result<()> {
        Store::update_choice(self, c)
    }
    fn set_middleware(&self, id: &str, middleware: Option<&[String]>) -> Result<()> {
        Store::set_middleware(self, id, middleware)
    }
    fn middleware(&self, id: &str) -> Result<Option<Vec<String>>> {
        Store::middleware(self, id)
    }
    fn set_response_schema(&self, id: &str, schema: Option<&Value>) -> Result<()> {
        Store::set_response_schema(self, id, schema)
    }
    fn response_schema(&self, id: &str) -> Result<Option<Value>> {
        Store::response_schema(self, id)
    }
    fn set_permissions(&self, id: &str, permissions: &Value) -> Result<()> {
        Store::set_permissions(self, id, permissions)
    }
    fn permissions(&self, id: &str) -> Result<Option<Value>> {
        Store::permissions(self, id)
    }
    fn conversation(&self, id: &str) -> Result<Option<ConversationRecord>> {
        Store::conversation(self, id)
    }
    fn resolve_id(&self, prefix: &str) -> Result<String> {
        Store::resolve_id(self, prefix)
    }
    fn delete_conversation(&self, id: &str) -> Result<bool> {
        Store::delete_conversation(self, id)
    }
    fn delete_if_empty(&self, id: &str) -> Result<bool> {
        Store::delete_if_empty(self, id)
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
        Store::commit_turn_at(self, id, system, provider, model, messages, now)
    }
    fn history(
        &self,
        id: &str,
        page_size: usize,
        cursor: Option<&str>,
    ) -> Result<Page<StoredMessage>> {
        Store::history(self, id, page_size, cursor)
    }
    fn full_history(&self, id: &str) -> Result<(Option<Message>, Vec<Message>)> {
        Store::full_history(self, id)
    }
    fn last_conversation(&self) -> Result<Option<String>> {
        Store::last_conversation(self)
    }
    fn list_conversations_where(
        &self,
        page_size: usize,
        cursor: Option<&str>,
        filter: &ListFilter,
    ) -> Result<Page<ConversationRecord>> {
        Store::list_conversations_where(self, page_size, cursor, filter)
    }
    fn search(&self, query: &str, limit: usize, open: &str, close: &str) -> Result<Vec<Found>> {
        Store::search(self, query, limit, open, close)
    }
    fn record_decisions(
        &self,
        id: &str,
        turn_id: &str,
        prompt: &str,
        decisions: &[DecisionRecord],
    ) -> Result<()> {
        Store::record_decisions(self, id, turn_id, prompt, decisions)
    }
    fn decisions(&self, id: &str) -> Result<Vec<(String, DecisionRecord)>> {
        Store::decisions(self, id)
    }
}
