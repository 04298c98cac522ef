//! What a front-end may ask of the core besides running turns: the history's listings, search
//! and pages, the components added or removed at run time, and the config and tool sources it
//! reads. Each answer is a core type; the front-ends map it to their own wire shapes. This file
//! must never shape an answer for a wire, nor change a conversation's state.

use std::sync::Arc;

use crate::config::{Config, ModelConfigurationConfig, ProviderConfig};
use crate::error::Result;
use crate::message::Message;
use crate::registry::Origin;
use crate::store::{Found, StoredMessage};
use crate::tools::toolbox::Toolbox;
use genai_protocol::listings::ConversationRecord;

use super::Framework;

/// One page of a listing and the cursor of the next, if any.
pub(crate) type Page<T> = (Vec<T>, Option<String>);

impl Framework {
    /// The config the core runs with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The SQLite store: the gateway's keys and ledger when no shared database holds them,
    /// and the history unless `with_history` gave another.
    pub fn store(&self) -> &std::sync::Arc<crate::store::Store> {
        &self.store
    }

    /// The history of conversations the core keeps (the store's, or a shared database's).
    pub fn history(&self) -> &std::sync::Arc<dyn crate::store::History> {
        &self.history
    }

    /// The plugin modules and MCP servers of the config.
    pub fn toolbox(&self) -> &Arc<Toolbox> {
        &self.toolbox
    }

    /// A service provider instance by name.
    pub fn provider(&self, name: &str) -> Result<crate::registry::ProviderInstance> {
        self.registry.provider(name)
    }

    /// Adds a service provider for the life of this process.
    pub fn create_provider(&self, name: &str, c: &ProviderConfig) -> Result<()> {
        self.registry.create_provider(name, c, Origin::Runtime)
    }

    /// Adds a model configuration for the life of this process.
    pub fn create_model_configuration(
        &self,
        name: &str,
        c: &ModelConfigurationConfig,
    ) -> Result<()> {
        self.registry.create_model(name, c, Origin::Runtime)
    }

    /// Removes a provider or model configuration; false when none had that name.
    pub fn remove_component(&self, name: &str) -> Result<bool> {
        self.registry.remove(name)
    }

    /// Conversations newest first, a page at a time.
    pub fn list_conversations(
        &self,
        page_size: usize,
        cursor: Option<&str>,
    ) -> Result<Page<ConversationRecord>> {
        self.history.list_conversations(page_size, cursor)
    }

    /// Conversations started in `cwd` (every one when `None`), newest first.
    pub fn list_conversations_in(
        &self,
        cwd: Option<&str>,
        page_size: usize,
        cursor: Option<&str>,
    ) -> Result<Page<ConversationRecord>> {
        self.history.list_conversations_in(cwd, page_size, cursor)
    }

    /// A conversation's record, if the history has it.
    pub fn conversation_record(&self, id: &str) -> Result<Option<ConversationRecord>> {
        self.history.conversation(id)
    }

    /// The id of the conversation with the latest turn, if any.
    pub fn last_conversation(&self) -> Result<Option<String>> {
        self.history.last_conversation()
    }

    /// Messages matching `query`, best first, with the matches marked by `open` and `close`.
    pub fn search_conversations(
        &self,
        query: &str,
        limit: usize,
        open: &str,
        close: &str,
    ) -> Result<Vec<Found>> {
        self.history.search(query, limit, open, close)
    }

    /// A page of a conversation's messages, oldest first.
    pub fn history_page(
        &self,
        id: &str,
        page_size: usize,
        cursor: Option<&str>,
    ) -> Result<Page<StoredMessage>> {
        self.history.history(id, page_size, cursor)
    }

    /// A conversation's system prompt and every message.
    pub fn full_history(&self, id: &str) -> Result<(Option<Message>, Vec<Message>)> {
        self.history.full_history(id)
    }
}
