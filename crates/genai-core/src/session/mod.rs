//! The core's entry point: the running conversations, agents and prompts of one genai process,
//! reached by every front-end through the same calls and answered through each caller's
//! [`ClientPort`].
//!
//! This module opens, resumes, closes and deletes conversations (a conversation closed for
//! good with no committed turn leaves the history); their agents are built in `agents`, the
//! conversation task (queue, order, cancel) is in `conversation`, following one turn to its
//! end ([`TurnStream`]) in `turn_stream`, changing an open one's feature or model in `choice`,
//! prompts to agents in `prompts`, fill-in-the-middle completion in `infill`, embeddings in `embed`, the tables of
//! what runs (open conversations, agents, prompts, work in flight) in `running`, the clients
//! hosting features and middleware in `hosted`, the workspace's tools a client calls itself in
//! `served_tools`, and every rule of which model runs in `crate::select`. It must never speak a wire format: front-ends translate for it.

mod acting;
mod agents;
mod choice;
mod commands;
mod conversation;
mod embed;
mod handover;
mod hosted;
mod infill;
mod middleware;
mod prompts;
mod queries;
mod resume;
mod running;
mod served_tools;
mod turn_stream;

pub use acting::PermissionFlags;
pub use agents::RequestModel;
pub use commands::{command_conversation, mcp_command_name};
pub use embed::{Embedded, DEFAULT_EMBEDDING_MODEL};

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::agent::Persistence;
use crate::config::{Config, McpServerConfig};
use crate::error::{Error, ErrorKind, Result};
use crate::feature::port::ClientPort;
use crate::feature::{self, Feature, FeatureContext};
use crate::registry::{Origin, Registry};
use crate::select::{ModelChoice, Selector};
use crate::store::{now_ms, History, Store};
use crate::tools::toolbox::Toolbox;
pub use choice::Choice;
use genai_protocol::listings::ConversationRecord;
pub use hosted::FeatureReply;
pub use served_tools::{ServedTools, ToolAnswer};
pub use turn_stream::TurnStream;

/// What a client asks for when it opens a conversation.
#[derive(Debug, Clone, Default)]
pub struct ConversationSpec {
    /// The feature; default: `tools` when tools are named, else the agent's, else
    /// `[defaults] feature`, else `assistant`.
    pub feature: Option<String>,
    pub model: ModelChoice,
    pub title: Option<String>,
    /// Replaces the agent's and the feature's system prompt.
    pub system_prompt: Option<String>,
    /// Model parameters, checked like `set_parameter`.
    pub parameters: Option<Map<String, Value>>,
    /// Keep the conversation out of the history store.
    pub ephemeral: bool,
    /// The tool sources or single tools the model may call.
    pub tools: Option<Vec<String>>,
    /// The working directory the client works in (stored, for listing by directory).
    pub cwd: Option<String>,
    /// MCP servers the client brings for this conversation only: they join the config's tool
    /// sources, enabled, and make `tools` the default feature.
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    /// The JSON Schema every reply must match (structured output).
    pub response_schema: Option<crate::format::ResponseSchema>,
    /// The client's permission mode and rules for this conversation's tool calls.
    pub permissions: PermissionFlags,
}

/// An open conversation as its client sees it.
#[derive(Debug, Clone)]
pub struct OpenConversation {
    pub conversation_id: String,
    pub agent_id: String,
    pub feature: String,
    pub service_provider: String,
    pub format: String,
    pub model: String,
    /// Its root: the folder its workspace tools work in (the `cwd` it was started with).
    pub cwd: Option<String>,
}

/// What `cancel` stops: a turn (by conversation, turn, or both) or a prompt (by request id).
#[derive(Debug, Clone, Default)]
pub struct CancelTarget {
    pub conversation_id: Option<String>,
    pub turn_id: Option<String>,
    pub request_id: Option<String>,
}

pub struct Framework {
    registry: Registry,
    config: Config,
    /// The SQLite file the gateway keeps its keys and ledger in when no shared database does.
    store: Arc<Store>,
    /// The conversations and their turns: `store` unless `with_history` gave another.
    history: Arc<dyn History>,
    /// The open conversations, the agents, the running prompts, the work in flight.
    running: Arc<running::Running>,
    /// The clients hosting features and middleware.
    hosts: hosted::Hosts,
    /// The longest one prompt may take (`genai ask --timeout`).
    prompt_timeout: Option<Duration>,
    /// The plugin modules and MCP servers of the config.
    toolbox: Arc<Toolbox>,
    /// What helper agents wrote for middleware (image descriptions, summaries).
    texts: Arc<crate::middleware::TextCache>,
    /// The prices of models (the config's over the built-in table), for each turn's cost.
    prices: crate::pricing::Prices,
    /// Where checkpoints and saved permission rules live (`with_home`).
    home: Option<crate::feature::guard::GuardHome>,
}

fn new_id() -> String {
    ulid::Ulid::new().to_string()
}

fn poisoned() -> Error {
    Error::internal("framework lock poisoned")
}

fn unknown_conversation(id: &str) -> Error {
    Error::new(
        ErrorKind::UnknownConversation,
        format!("no open conversation {id} (create it, or ResumeConversation)"),
    )
}

impl Framework {
    /// The core over a config, its registry and a store; the built-in features join the
    /// registry here.
    pub fn new(config: Config, registry: Registry, store: Arc<Store>) -> Framework {
        feature::register_builtin(&registry);
        // `Config::parse` checked the prices already.
        let prices = crate::pricing::Prices::new(&config.pricing).unwrap_or_default();
        Framework {
            toolbox: Arc::new(Toolbox::new(
                config.plugins.clone(),
                config.mcp_servers.clone(),
            )),
            registry,
            config,
            history: store.clone(),
            store,
            running: Arc::default(),
            hosts: hosted::Hosts::default(),
            prompt_timeout: None,
            texts: Arc::new(Default::default()),
            prices,
            home: None,
        }
    }

    /// Keeps the conversations in `history` (a shared database's) rather than the store.
    pub fn with_history(mut self, history: Arc<dyn History>) -> Framework {
        self.history = history;
        self
    }

    /// Sets the longest one prompt may take, end to end.
    pub fn with_prompt_timeout(mut self, timeout: Option<Duration>) -> Framework {
        self.prompt_timeout = timeout;
        self
    }

    /// The selection rules over this config and registry.
    pub fn selector(&self) -> Selector<'_> {
        Selector {
            config: &self.config,
            registry: &self.registry,
        }
    }

    /// Waits until no turn or prompt is queued or running.
    pub async fn idle(&self) {
        self.running.idle().await;
    }

    /// Cancels every queued and running turn and every prompt (each still ends with its final
    /// event); used at shutdown.
    pub fn cancel_all(&self) {
        self.running.cancel_all();
    }

    /// The tool sources of a conversation: the config's, and beside them (enabled) the MCP
    /// servers its client brings. A client's server may not take a configured one's name.
    fn toolbox_for(
        &self,
        client_servers: &BTreeMap<String, McpServerConfig>,
    ) -> Result<Arc<Toolbox>> {
        if client_servers.is_empty() {
            return Ok(self.toolbox.clone());
        }
        let mut servers = self.config.mcp_servers.clone();
        for (name, c) in client_servers {
            if servers.contains_key(name) || self.config.plugins.contains_key(name) {
                return Err(Error::invalid_params(format!(
                    "the MCP server name `{name}` is already a tool source of the config; give it another name"
                )));
            }
            let server = McpServerConfig {
                enabled: true,
                ..c.clone()
            };
            servers.insert(name.clone(), server);
        }
        Ok(Arc::new(Toolbox::new(self.config.plugins.clone(), servers)))
    }

    /// The feature of a conversation, with the system prompt its config gives; `tools` is the
    /// conversation's tool selection (only a feature that takes tools accepts one).
    /// `cwd` is the conversation's root and `flags` the client's permission flags, for the
    /// guard of a feature that takes tools.
    fn feature(
        self: &Arc<Self>,
        name: &str,
        tools: Option<&[String]>,
        toolbox: &Arc<Toolbox>,
        cwd: Option<&str>,
        flags: &PermissionFlags,
    ) -> Result<(Arc<dyn Feature>, Option<String>)> {
        let info = self.registry.feature(name)?;
        let config = self.config.features.get(name);
        let system = config.and_then(|f| f.system_prompt.clone());
        let builtin = feature::builtin(name).filter(|_| info.origin == Origin::Builtin);
        if tools.is_some() && !builtin.is_some_and(|b| b.takes_tools) {
            return Err(Error::invalid_params(format!(
                "tools are given to the model by the `{}` feature, not `{name}`",
                feature::tools::NAME
            )));
        }
        let guard = match builtin {
            Some(b) if b.takes_tools => Some(self.guard(cwd, tools, flags)?),
            _ => None,
        };
        let f = match builtin {
            Some(b) => (b.build)(&FeatureContext {
                config,
                toolbox,
                tools,
                guard: guard.as_ref(),
                subagent_models: &self.subagent_models(),
            })?,
            None => self.hosted_feature(name)?,
        };
        Ok((f, system))
    }

    /// Opens a new conversation driven by `port`.
    pub fn create_conversation(
        self: &Arc<Self>,
        spec: ConversationSpec,
        port: Arc<dyn ClientPort>,
    ) -> Result<OpenConversation> {
        let mut sel = self.selector().select(&spec.model)?;
        let feature_name = spec
            .feature
            .clone()
            .or_else(|| {
                spec.tools
                    .is_some()
                    .then(|| feature::tools::NAME.to_string())
            })
            .or(sel.feature.clone())
            .or(self.config.defaults.feature.clone())
            .or_else(|| (!spec.mcp_servers.is_empty()).then(|| feature::tools::NAME.to_string()))
            .unwrap_or_else(|| feature::assistant::NAME.to_string());
        let toolbox = self.toolbox_for(&spec.mcp_servers)?;
        let (feature, feature_system) = self.feature(
            &feature_name,
            spec.tools.as_deref(),
            &toolbox,
            spec.cwd.as_deref(),
            &spec.permissions,
        )?;
        sel.response_schema = spec.response_schema.clone();
        sel.system_prompt = spec
            .system_prompt
            .clone()
            .or(sel.system_prompt.take())
            .or(feature_system);
        let id = new_id();
        let persistence = (!spec.ephemeral).then(|| Persistence {
            store: self.history.clone(),
            conversation_id: id.clone(),
        });
        let agent = self.build_agent(
            &sel,
            spec.parameters.as_ref(),
            persistence,
            None,
            Vec::new(),
        )?;
        let (format, model, parameters) = agent.binding().model_info();
        if !spec.ephemeral {
            let now = now_ms();
            let rec = ConversationRecord {
                id: id.clone(),
                title: spec
                    .title
                    .as_deref()
                    .map(crate::store::title_of)
                    .unwrap_or_default(),
                feature: feature_name.clone(),
                provider: sel.provider.clone(),
                model_configuration: sel.model_configuration.clone(),
                format: format.to_string(),
                model,
                parameters,
                created_at: now,
                updated_at: now,
                message_count: 0,
                tools: spec.tools.clone(),
                answered_by: None,
                cwd: spec.cwd.clone(),
            };
            let stored = self
                .history
                .create_conversation(&rec)
                .and_then(|()| match &sel.middleware {
                    Some(m) => self.history.set_middleware(&id, Some(m)),
                    None => Ok(()),
                })
                .and_then(|()| match &spec.response_schema {
                    Some(s) => self.history.set_response_schema(&id, Some(&s.stored())),
                    None => Ok(()),
                })
                .and_then(|()| self.store_permissions(&id, &spec.permissions));
            if let Err(e) = stored {
                self.forget_agent(&agent.id);
                return Err(e);
            }
        }
        self.open(
            id,
            agent,
            (feature_name, feature),
            sel.system_prompt.clone(),
            toolbox,
            port,
            (sel.provider, spec.cwd),
        )
    }

    /// An open conversation's id, or a stored one's from its id or unique prefix.
    pub fn resolve_conversation(&self, id_or_prefix: &str) -> Result<String> {
        if self.running.conversation(id_or_prefix, |_| ())?.is_some() {
            return Ok(id_or_prefix.to_string());
        }
        self.history.resolve_id(id_or_prefix)
    }

    /// Closes a conversation: its running turn is cancelled and its task ends.
    pub fn remove_conversation(&self, id: &str) -> Result<bool> {
        Ok(match self.running.remove_conversation(id)? {
            Some(c) => {
                c.closed.cancel();
                self.forget_agent(&c.agent.id);
                true
            }
            None => false,
        })
    }

    /// Closes a conversation for good (its client is done with it): as
    /// [`Framework::remove_conversation`], and a conversation no turn was committed to (its
    /// first failed, or none was sent) leaves the history, so that none lingers empty.
    pub fn close_conversation(&self, id: &str) -> Result<bool> {
        let open = self.remove_conversation(id)?;
        self.history.delete_if_empty(id)?;
        Ok(open)
    }

    /// Closes every open conversation for good ([`Framework::close_conversation`]), once its
    /// turns have ended: the end of a process. A history that fails here is only logged: what
    /// it keeps is an empty conversation, which listings do not show.
    pub fn close_all(&self) {
        let Ok(ids) = self.running.conversation_ids() else {
            return;
        };
        for id in ids {
            if let Err(e) = self.close_conversation(&id) {
                tracing::warn!(conversation = %id, "closing the conversation failed: {}", e.message);
            }
        }
    }

    /// Closes a conversation and deletes it from the history.
    pub fn delete_conversation(&self, id_or_prefix: &str) -> Result<()> {
        let id = self.resolve_conversation(id_or_prefix)?;
        self.remove_conversation(&id)?;
        if !self.history.delete_conversation(&id)? {
            return Err(unknown_conversation(&id));
        }
        Ok(())
    }

    /// The tool sources of an open conversation (the config's, with the MCP servers its
    /// client brought).
    pub fn toolbox_of(&self, id: &str) -> Result<Arc<Toolbox>> {
        self.running
            .conversation(id, |c| c.toolbox.clone())?
            .ok_or_else(|| unknown_conversation(id))
    }

    /// Compacts an open conversation now, whatever its size (`/compact`): every turn but the
    /// last `[compaction] keep_turns` is sent as a summary from its next request on; the
    /// history keeps them all. Waits for a running turn.
    pub async fn compact_conversation(&self, id: &str) -> Result<crate::compaction::Compacted> {
        let agent = self
            .running
            .conversation(id, |c| c.agent.clone())?
            .ok_or_else(|| unknown_conversation(id))?;
        agent.compact_now().await
    }

    #[cfg(test)]
    pub(crate) fn open_conversations(&self) -> usize {
        self.running.open_conversations()
    }
}

/// A core with the in-memory store and one provider instance, `scripted`, answering from
/// `answers` (for tests: the `testing` feature).
#[cfg(any(test, feature = "testing"))]
pub fn scripted(
    answers: Vec<crate::provider::scripted::Answer>,
) -> (
    Arc<Framework>,
    Arc<crate::provider::scripted::ScriptedProvider>,
) {
    let registry = Registry::new();
    let provider = crate::provider::scripted::ScriptedProvider::new(answers);
    registry.insert_provider("scripted", "openai", provider.clone());
    let store = Arc::new(Store::in_memory().expect("an in-memory store"));
    let fw = Framework::new(Config::default(), registry, store);
    (Arc::new(fw), provider)
}

#[cfg(test)]
mod tests;
